"""The observation tensor (interface §3): channels, visibility, exactness.

Two independent routes are compared: ``observe`` (the jitted tensor) and the
JSON observation of interface §5.4 converted as interface §3.7 prescribes
(``observation_from_json``, plain Python float64 arithmetic). Expected values
of single channels come from the spec text.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from builders import make_state, scenario
from hackmatrix_env.constants import FLAT_OBS_SIZE
from hackmatrix_env.observation import flatten_observation, observe
from hackmatrix_env.scenario import observation_from_json, observation_json, state_from_json
from hackmatrix_env.transition import reset_state
from hackmatrix_env.types import EnvParams
from programs_testlib import replace_game

_observe = jax.jit(observe)


def _obs(**kw):
    return _observe(make_state(**kw))


def _json_tensors(state):
    return observation_from_json(observation_json(state))


def _assert_same(state):
    o = _observe(state)
    t = _json_tensors(state)
    np.testing.assert_array_equal(np.asarray(o.player), t["player"])
    np.testing.assert_array_equal(np.asarray(o.programs), t["programs"])
    np.testing.assert_array_equal(np.asarray(o.grid), t["grid"])


def test_player_vector():
    o = _obs(player=(3, 4), hp=2, credits=70, energy=25, siphons=15, attack=6, stage=4, show=True)
    expected = np.float32([3 / 5, 4 / 5, 2 / 3, 1.0, 25 / 50, 3 / 7, 1.5, 2.5, 1.0, 0.0])
    np.testing.assert_array_equal(np.asarray(o.player), expected)


def test_programs_vector_with_duplicates():
    o = _obs(owned=[27, 5, 27, "show"])
    assert np.asarray(o.programs).tolist() == [1.0 if i in (0, 13, 22) else 0.0 for i in range(23)]


def test_e2_observation_after_state():
    # interface §4.8 E2 observation notes, applied to the post-siphon cells.
    s = make_state(
        (2, 2),
        blocks=[("data", (3, 2), 4, {"siphoned": True, "spawnCount": 0})],
        resources=[("credits", (4, 1), 3), ("energy", (5, 2), 2)],
        transmissions=[("virus", (0, 4)), ("daemon", (1, 0))],
    )
    g = s.game.grid
    s = replace_game(s, grid=g.replace(center=g.center.at[2, 2].set(True)))
    g = np.asarray(_observe(s).grid)
    assert g[3, 2, 7] == 1 and g[3, 2, 10] == np.float32(4 / 9) and g[3, 2, 11] == 1
    assert g[3, 2, 35] == 0
    assert g[2, 2, 41] == 1 and g[2, 1, 37] == 0 and g[1, 2, 38] == 0
    assert (g[..., 36] == 0.25).sum() == 2
    assert g[4, 1, 37] == 1.0 and g[5, 2, 38] == np.float32(2 / 3)


def test_enemy_channels_and_cryptog_visibility():
    kw = dict(
        enemies=[
            ("daemon", (0, 3), 2, {"stunned": True, "spawnedFromSiphon": True}),
            ("cryptog", (4, 4)),  # hidden: not in row 2 / col 2
            ("cryptog", (2, 5), 1),  # same row: visible
            ("glitch", (5, 2)),
        ]
    )
    g = np.asarray(_obs(player=(2, 2), **kw).grid)
    assert g[0, 3, :7].tolist() == [0, 1, 0, 0, np.float32(2 / 3), 1, 1]
    assert not g[4, 4, :7].any()
    assert g[2, 5, :7].tolist() == [0, 0, 0, 1, np.float32(1 / 3), 0, 0]
    assert g[5, 2, 2] == 1 and g[5, 2, 4] == np.float32(2 / 3)
    g = np.asarray(_obs(player=(2, 2), show=True, **kw).grid)
    assert g[4, 4, 3] == 1  # SHOW reveals every cryptog


def test_first_enemy_on_a_cell_is_shown():
    g = np.asarray(_obs(enemies=[("glitch", (3, 3), 1), ("daemon", (3, 3))]).grid)
    assert g[3, 3, :5].tolist() == [0, 0, 1, 0, np.float32(1 / 3)]
    # a hidden cryptog first on the cell hides the cell entirely
    g = np.asarray(_obs(player=(0, 0), enemies=[("cryptog", (3, 3)), ("virus", (3, 3))]).grid)
    assert not g[3, 3, :7].any()


def test_block_channels():
    g = np.asarray(
        _obs(
            blocks=[
                ("data", (1, 1), 7),
                ("program", (1, 2), "d_bom", {"spawnCount": 4}),
                ("program", (1, 3), "hack", {"siphoned": True, "spawnCount": 0}),
            ]
        ).grid
    )
    assert g[1, 1, 7:12].tolist() == [1, 0, 0, np.float32(7 / 9), 0]
    assert g[1, 1, 35] == np.float32(7 / 9) and not g[1, 1, 12:35].any()
    assert g[1, 2, 7:12].tolist() == [0, 1, 0, 0, 0]
    assert g[1, 2, 12 + 16] == 1 and g[1, 2, 12:35].sum() == 1  # d_bom = action 21
    assert g[1, 2, 35] == np.float32(4 / 9)
    assert g[1, 3, 11] == 1 and g[1, 3, 12 + 22] == 1 and g[1, 3, 35] == 0


def test_question_block_hides_contents():
    s = make_state(blocks=[("program", (2, 3), "warp", {"spawnCount": 5}), ("data", (3, 3), 8)])
    q = s.game.grid.block_question.at[2, 3].set(True).at[3, 3].set(True)
    g = np.asarray(_observe(replace_game(s, grid=s.game.grid.replace(block_question=q))).grid)
    for cell in [(2, 3), (3, 3)]:
        assert g[cell][7:10].tolist() == [0, 0, 1]
        assert g[cell][10] == 0 and not g[cell][12:36].any()


def test_resources_under_blocks():
    kw = dict(resources=[("credits", (1, 1), 5), ("energy", (2, 2), 4)])
    g = np.asarray(
        _obs(blocks=[("data", (1, 1)), ("data", (2, 2), 3, {"siphoned": True})], **kw).grid
    )
    assert g[1, 1, 37] == 0  # hidden under an unsiphoned block
    assert g[2, 2, 38] == np.float32(4 / 3)  # visible after the siphon, > 1 allowed


def test_transmission_channel_and_flags():
    g = np.asarray(
        _obs(
            transmissions=[("virus", (1, 4), 2), ("glitch", (1, 4), 7), ("daemon", (0, 2), 9)],
            resources=[("siphon", (0, 5))],
        ).grid
    )
    assert g[1, 4, 36] == 0.5 and g[0, 2, 36] == 1.0  # first in list order; min(t/4, 1)
    assert g[0, 5, 39] == 1 and g[5, 5, 40] == 1 and g[..., 40].sum() == 1
    assert not g[1, 4, :7].any()  # a transmission is not an enemy


def test_player_cell_not_marked():
    g = np.asarray(_obs(player=(3, 3)).grid)
    assert not g[3, 3].any()


def test_flatten_layout():
    o = _obs(player=(1, 2), enemies=[("daemon", (4, 5))], owned=[7])
    flat = np.asarray(flatten_observation(o))
    assert flat.shape == (FLAT_OBS_SIZE,) and flat.dtype == np.float32
    assert (flat[:10] == np.asarray(o.player)).all()
    assert (flat[10:33] == np.asarray(o.programs)).all()
    assert flat[33 + (4 * 6 + 5) * 42 + 1] == 1.0  # daemon one-hot at (4,5)
    batched = jax.tree.map(lambda x: jnp.stack([x, x]), o)
    assert flatten_observation(batched).shape == (2, FLAT_OBS_SIZE)


def _random_scenario(rng) -> dict:
    cells = [(r, c) for r in range(6) for c in range(6) if (r, c) != (5, 5)]
    picks = rng.permutation(len(cells))
    take = iter(cells[i] for i in picks)
    player = next(take)
    kinds = ["virus", "daemon", "glitch", "cryptog"]
    enemies = [
        (
            kinds[rng.integers(4)],
            next(take),
            int(rng.integers(1, 4)),
            {"stunned": bool(rng.random() < 0.3)},
        )
        for _ in range(rng.integers(0, 5))
    ]
    transmissions = [
        (kinds[rng.integers(4)], next(take), int(rng.integers(1, 6)))
        for _ in range(rng.integers(0, 3))
    ]
    blocks = []
    for _ in range(rng.integers(0, 8)):
        cell = next(take)
        extra = {"siphoned": bool(rng.random() < 0.3)}
        if rng.random() < 0.5:
            blocks.append(("data", cell, int(rng.integers(1, 10)), extra))
        else:
            blocks.append(
                ("program", cell, ["push", "warp", "show", "atk+"][rng.integers(4)], extra)
            )
    resources = [
        (["credits", "energy"][rng.integers(2)], cell, int(rng.integers(1, 4)))
        for cell in [next(take) for _ in range(rng.integers(0, 6))]
    ]
    if rng.random() < 0.5:
        resources.append(("siphon", next(take)))
    return scenario(
        player,
        hp=int(rng.integers(0, 4)),
        credits=int(rng.integers(0, 80)),
        energy=int(rng.integers(0, 80)),
        siphons=int(rng.integers(0, 14)),
        attack=int(rng.integers(1, 6)),
        enemies=enemies,
        transmissions=transmissions,
        blocks=blocks,
        resources=resources,
        owned=[int(x) for x in rng.choice(np.arange(5, 28), rng.integers(0, 5), replace=False)],
        stage=int(rng.integers(1, 9)),
        show=bool(rng.random() < 0.3),
        calm=bool(rng.random() < 0.3),
    )


def test_tensor_equals_json_route_on_random_scenarios():
    rng = np.random.default_rng(0)
    for _ in range(60):
        _assert_same(state_from_json(_random_scenario(rng)))


@pytest.mark.parametrize("start", [1, 6])
def test_tensor_equals_json_route_on_generated_stages(start):
    keys = jax.random.split(jax.random.key(start), 12)
    states = jax.jit(jax.vmap(reset_state, in_axes=(0, None)))(keys, EnvParams(start_stage=start))
    for i in range(12):
        _assert_same(jax.tree.map(lambda x, i=i: x[i], states))
