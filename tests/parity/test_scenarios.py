"""The scenario generator covers the state space, and setState agrees on both sides."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hackmatrix_parity import compare as cmp
from hackmatrix_parity import jax_side, swift_full
from hackmatrix_parity.client import SwiftGame
from hackmatrix_parity.scenarios import THEMES, generate_scenario, scenario_stream
from hackmatrix_parity.tensor import swift_tensor

SCENARIOS = list(scenario_stream(seed=11, n=400))


def test_generator_is_reproducible():
    a = generate_scenario(np.random.default_rng(3))
    b = generate_scenario(np.random.default_rng(3))
    assert a == b


def test_a_chunk_of_a_run_is_the_slice_of_the_whole_run():
    """``hm-parity --start-index``: chunks run apart are the same scenarios as one long run."""
    from hackmatrix_parity.engine import random_scenarios

    whole = random_scenarios(9, seed=11)
    assert whole == SCENARIOS[:9]
    assert random_scenarios(4, seed=11, start=5) == whole[5:]
    assert random_scenarios(5, seed=11) + random_scenarios(4, seed=11, start=5) == whole
    assert random_scenarios(9, seed=12) != whole


def test_generator_covers_every_area():
    seen: Counter = Counter()
    for sc in SCENARIOS:
        p = sc["player"]
        assert 0 <= p["row"] <= 5 and 0 <= p["col"] <= 5
        assert 1 <= sc.get("stage", 1) <= 8
        seen[f"stage{sc.get('stage', 1)}"] += 1
        seen[f"hp{p.get('hp', 3)}"] += 1
        for a in sc.get("ownedPrograms", []):
            seen[f"prog{a}"] += 1
        cells = Counter()
        for e in sc.get("enemies", []):
            assert 0 <= e["row"] <= 5 and 0 <= e["col"] <= 5
            seen[e["type"].lower()] += 1
            seen["stunned"] += e.get("stunned", False)
            seen["from_siphon"] += e.get("spawnedFromSiphon", False)
            seen["from_task"] += e.get("isFromScheduledTask", False)
            cells[(e["row"], e["col"])] += 1
        seen["stacked"] += any(n > 1 for n in cells.values())
        blocks = {(b["row"], b["col"]) for b in sc.get("blocks", [])}
        seen["enemy_on_block"] += any(c in blocks for c in cells)
        for t in sc.get("transmissions", []):
            seen["countdown>1" if t["turnsRemaining"] > 1 else "countdown1"] += 1
        for b in sc.get("blocks", []):
            seen[f"block_{b['type']}"] += 1
            seen["block_siphoned"] += b.get("siphoned", False)
            seen["block_default_points"] += b["type"] == "data" and "points" not in b
        for r in sc.get("resources", []):
            seen["data_siphon"] += r.get("dataSiphon", False)
            seen["credits"] += r.get("credits", 0) > 0
            seen["energy"] += r.get("energy", 0) > 0
        seen["show"] += sc.get("showActivated", False)
        seen["calm"] += sc.get("scheduledTasksDisabled", False)
        seen["turn>=11"] += sc.get("turn", 0) >= 11
        seen["near_exit"] += abs(p["row"] - 5) + abs(p["col"] - 5) == 1
    need = (
        [f"stage{s}" for s in range(1, 9)] + ["hp1", "hp2", "hp3"]
        + [f"prog{a}" for a in range(5, 28)]
        + ["virus", "daemon", "glitch", "cryptog", "stunned", "from_siphon", "from_task",
           "stacked", "enemy_on_block", "countdown>1", "countdown1", "block_data",
           "block_program", "block_question", "block_siphoned", "block_default_points",
           "data_siphon", "credits", "energy", "show", "calm", "turn>=11", "near_exit"]
    )  # fmt: skip
    missing = [k for k in need if seen[k] < 5]
    assert not missing, missing
    assert len(THEMES) >= 8


@pytest.fixture(scope="module")
def swift(swift_bin):
    with SwiftGame(swift_bin) as g:
        yield g


def test_setstate_parity(swift):
    """Initial observation JSON, tensors, internal and full state agree after setState."""
    for sc in SCENARIOS:
        obs = swift.set_state(sc)
        st = jax_side.load_scenario(sc)
        diffs = cmp.json_diffs(obs, jax_side.observation_json(st), "obs")
        diffs += cmp.json_diffs(
            swift.internal_state(), jax_side.internal_state_json(st), "internal"
        )
        if swift.supports_full_state:
            diffs += cmp.json_diffs(swift.full_state(), swift_full.from_jax(st), "full")
        assert not diffs, (sc, diffs[:5])


def test_full_state_round_trip(swift):
    """Swift full state -> EnvState -> Swift schema is the identity, history included."""
    if not swift.supports_full_state:
        pytest.skip("canonical binary: no getFullState")
    rng = np.random.default_rng(5)
    for sc in SCENARIOS[:40]:
        swift.set_state(sc)
        for _ in range(4):  # a few turns so that the history is not empty
            valid = swift.valid_actions()
            if not valid:
                break
            r = swift.step(int(rng.choice(valid)))
            if r["done"]:
                break
        full = swift.full_state(include_history=True)
        back = swift_full.from_jax(swift_full.to_jax(full), include_history=True)
        # snapshots in JAX do not store disabled/stun/provenance (cleared on restore)
        for snap in full.get("history", []):
            for e in snap["enemies"]:
                e.update(disabled=0, stunned=False, fromTask=False, fromSiphon=False)
            for t in snap["transmissions"]:
                t.update(fromTask=False, fromSiphon=False)
        assert not cmp.json_diffs(full, back, "full")
        obs = swift.set_full_state(full)
        assert np.array_equal(
            swift_tensor(obs)[2],
            swift_tensor(jax_side.observation_json(swift_full.to_jax(full)))[2],
        )
