"""The Swift package on the test path: release build, ``swift test``, a
random-policy soak over the pipe, the protocol (interface §5) incl. malformed
input, and the constants cross-check against constants.py.
"""

from __future__ import annotations

import importlib.util
import json
import math
import random
import subprocess
from pathlib import Path

import pytest
from swift_harness import PKG, SwiftPipe, build_release

BREAKDOWN_KEYS = {
    "stage", "score", "kills", "dataSiphon", "distance", "victory", "death", "resourceGain",
    "resourceHolding", "damagePenalty", "hpRecovery", "siphonQuality", "programWaste",
    "siphonDeathPenalty",
}  # fmt: skip
CONSTANTS_PY = PKG.parent / "hackmatrix-env" / "src" / "hackmatrix_env" / "constants.py"


def test_release_build(swift_bin: Path) -> None:
    proc = build_release()
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert swift_bin.is_file()
    p = SwiftPipe(swift_bin)
    assert p.send({"action": "version"})["implementation"] == "hackmatrix-swift"
    assert p.close() == 0


@pytest.mark.slow
def test_swift_test_passes() -> None:
    proc = subprocess.run(
        ["swift", "test", "--package-path", str(PKG)],
        capture_output=True,
        text=True,
        timeout=1500,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert "with 0 failures" in out


def soak(binary: Path, steps: int, seed: int) -> dict[str, int]:
    """Random masked policy over the pipe; checks every reply; returns counters."""
    rng = random.Random(seed)
    p = SwiftPipe(binary, "--seed", str(seed))
    obs = p.send({"action": "reset"})
    assert "observation" in obs
    episodes = 0
    stages = 0
    for _ in range(steps):
        valid = p.send({"action": "getValidActions"})
        assert "error" not in valid, valid
        actions = valid["validActions"]
        assert actions == sorted(actions) and actions, valid
        a = rng.choice(actions)
        r = p.send({"action": "step", "actionIndex": a})
        assert "error" not in r, r
        info = r["info"]
        assert set(info["reward_breakdown"]) == BREAKDOWN_KEYS
        assert "invalid_action" not in info  # masked policy: every action succeeds
        gap = r["reward"] - math.fsum(info["reward_breakdown"].values())
        assert abs(gap + 0.01) < 1e-9, (a, r["reward"], info)
        assert 1 <= r["observation"]["stage"] <= 8
        stages += "stage_complete" in info
        if r["done"]:
            assert ("death" in info) or ("stage_complete" in info)
            episodes += 1
            assert "observation" in p.send({"action": "reset"})
    assert p.alive()
    assert p.close() == 0
    return {"episodes": episodes, "stage_completions": stages}


@pytest.mark.slow
def test_soak_random_masked_policy(swift_bin: Path) -> None:
    stats = soak(swift_bin, steps=100_000, seed=20_240_101)
    assert stats["episodes"] > 50


def test_protocol_errors_keep_serving(pipe: SwiftPipe) -> None:
    """Where the canonical binary aborts, ours answers one error line (specs/swift.md)."""
    assert pipe.send({"action": "step", "actionIndex": 0})["error"].startswith("No game")
    assert pipe.send({"action": "getValidActions"}) == {"validActions": []}
    internal = pipe.send({"action": "getInternalState"})
    assert internal == {
        "scheduledTaskInterval": 0, "nextScheduledTaskTurn": 0, "pendingSiphonTransmissions": 0,
        "turnCount": 0, "enemies": [],
    }  # fmt: skip
    pipe.send({"action": "setState", "state": {"player": {"row": 0, "col": 0}}})
    for bad in ["garbage", "", "{", '{"action":"step","actionIndex":', "[]", "{} {}", '{"action":5}',
                '{"actionIndex":1}', "\x00\x01", '{"action":"step","actionIndex":true}',
                '{"action":"step","actionIndex":1e400}', '{"action":"step","actionIndex":1.5}',
                '{"action":"setState","state":{"player":{"row":"0","col":0}}}',
                '{"action":"reset","state":{}}']:  # fmt: skip
        assert pipe.send(bad) == {"error": "Invalid command"}, bad
    for n in [-1, 28, 10**18]:
        assert "out of range" in pipe.send({"action": "step", "actionIndex": n})["error"]
    huge = pipe.send('{"action":"step","actionIndex":123456789012345678901234567890}')
    assert huge == {"error": "Invalid command"}
    assert pipe.send({"action": "step"}) == {"error": "Missing actionIndex"}
    assert pipe.send({"action": "setState"}) == {"error": "Missing state data for setState command"}
    assert pipe.send({"action": "dance"}) == {"error": "Unknown command: dance"}
    assert pipe.send({"action": "getActionSpace"}) == {"actionSpaceSize": 28}
    assert pipe.send({"action": "getObservationSpace"}) == {
        "gridSize": 6, "playerFeatures": 9, "cellFeatures": 20,
    }  # fmt: skip
    # Still serving: a normal step works, with a trailing \r stripped.
    r = pipe.send('{"action":"step","actionIndex":0,"seed":"ignored?"}\r')
    assert r["observation"]["playerRow"] == 1
    assert r["done"] is False
    assert pipe.alive()


def test_protocol_step_fields(pipe: SwiftPipe) -> None:
    """interface §5.5 step response; E1 and an invalid action (§2.5)."""
    pipe.send({"action": "setState", "state": {"player": {"row": 0, "col": 0}}})
    r = pipe.send({"action": "step", "actionIndex": 0})
    assert set(r) == {"observation", "reward", "done", "info"}
    assert r["reward"] == pytest.approx(0.04)
    assert set(r["info"]) == {"reward_breakdown"}
    assert r["info"]["reward_breakdown"]["distance"] == pytest.approx(0.05)
    bad = pipe.send({"action": "step", "actionIndex": 1 + 0})  # down from (1,0): valid
    assert "invalid_action" not in bad["info"]
    inv = pipe.send({"action": "step", "actionIndex": 1})  # down from (0,0): off board
    assert inv["done"] is True and inv["reward"] == 0
    assert inv["info"]["invalid_action"] is True
    assert all(v == 0 for v in inv["info"]["reward_breakdown"].values())
    # E4 over the wire: death flags.
    pipe.send({"action": "setState", "state": {
        "player": {"row": 3, "col": 3, "hp": 1, "energy": 1},
        "enemies": [{"type": "virus", "row": 4, "col": 3, "hp": 2, "spawnedFromSiphon": True}],
        "ownedPrograms": [10], "stage": 3}})  # fmt: skip
    d = pipe.send({"action": "step", "actionIndex": 10})
    assert d["done"] is True and d["info"]["death"] is True
    assert d["reward"] == pytest.approx(-12.56)


def test_seeded_runs_are_reproducible(swift_bin: Path) -> None:
    def run(args: list[str], reset: dict) -> list[str]:
        p = SwiftPipe(swift_bin, *args)
        lines = [p.raw(json.dumps(reset))]
        rng = random.Random(3)
        for _ in range(200):
            valid = json.loads(p.raw('{"action":"getValidActions"}'))["validActions"]
            line = p.raw(json.dumps({"action": "step", "actionIndex": rng.choice(valid)}))
            lines.append(line)
            if json.loads(line)["done"]:
                lines.append(p.raw('{"action":"reset"}'))
        p.close()
        return lines

    a = run(["--seed", "77"], {"action": "reset"})
    assert a == run(["--seed", "77"], {"action": "reset"})
    b = run([], {"action": "reset", "seed": 5})
    assert b == run(["--seed", "1"], {"action": "reset", "seed": 5})
    assert a != b


def test_full_state_round_trip(pipe: SwiftPipe) -> None:
    pipe.send({"action": "reset", "seed": 9})
    rng = random.Random(9)
    for _ in range(30):
        valid = pipe.send({"action": "getValidActions"})["validActions"]
        if pipe.send({"action": "step", "actionIndex": rng.choice(valid)})["done"]:
            pipe.send({"action": "reset"})
    full = pipe.send({"action": "getFullState", "includeHistory": True})
    obs = pipe.send({"action": "render"})
    assert full["historyDepth"] == len(full["history"])
    assert "observation" in pipe.send({"action": "setFullState", "state": full})
    assert pipe.send({"action": "getFullState", "includeHistory": True}) == full
    assert pipe.send({"action": "render"}) == obs
    bad = pipe.send({"action": "setFullState", "state": {**full, "player": {"row": 0}}})
    assert bad["error"].startswith("Invalid full state: state.player.col")


def test_ten_thousand_commands_no_leak(pipe: SwiftPipe) -> None:
    """10,000 mixed commands (valid, garbage, truncated, huge, unknown) in a row."""
    cmds = [
        '{"action":"setState","state":{"player":{"row":2,"col":2,"dataSiphons":1}}}',
        '{"action":"step","actionIndex":4}',
        "garbage", '{"action":"step","actionIndex":', '{"action":"step","actionIndex":99999999999999999999}',
        '{"action":"frobnicate"}', '{"action":"getValidActions"}', '{"action":"reset"}',
        '{"action":"step","actionIndex":3}', '{"action":"getInternalState"}',
    ]  # fmt: skip
    for k in range(1000):
        pipe.raw(cmds[k % len(cmds)])
    rss0 = pipe.rss_kib()
    for k in range(10_000):
        reply = pipe.raw(cmds[k % len(cmds)])
        assert reply.startswith("{")
    rss1 = pipe.rss_kib()
    assert rss1 - rss0 < 8 * 1024, (rss0, rss1)
    assert pipe.alive()


def _load_constants():
    spec = importlib.util.spec_from_file_location("hm_constants_for_swift", CONSTANTS_PY)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_constants_match_python(swift_bin: Path) -> None:
    """Constants.swift tables equal constants.py, row for row (style.md §5)."""
    out = subprocess.run(
        [str(swift_bin), "--dump-constants"], capture_output=True, text=True, timeout=60
    )
    swift = json.loads(out.stdout)
    py = _load_constants()
    for name, value in swift.items():
        if name.startswith("ENUM_"):
            members = [[m.name, int(m.value)] for m in getattr(py, name.removeprefix("ENUM_"))]
            assert value == members, name
            continue
        ours = getattr(py, name)
        if hasattr(ours, "tolist"):
            ours = ours.tolist()
        if isinstance(ours, tuple):
            ours = [list(x) if isinstance(x, tuple) else x for x in ours]
        if name == "SETSTATE_EXIT":
            ours = list(ours)
        assert value == ours, name
    assert list(swift["SWIFT_BREAKDOWN_KEYS"]) == list(py.SWIFT_BREAKDOWN_KEYS)


def test_dev_mode_program_pool(swift_bin: Path) -> None:
    """interface §5.1: --dev-mode --programs= restricts program blocks; no valid name -> all 23."""

    def program_types(args: list[str]) -> set[str]:
        p = SwiftPipe(swift_bin, "--headless-cli", *args)
        seen: set[str] = set()
        for seed in range(40):
            obs = p.send({"action": "reset", "seed": seed})["observation"]
            for row in obs["cells"]:
                for cell in row:
                    if cell.get("block", {}).get("blockType") == "program":
                        seen.add(cell["block"]["programType"])
        p.close()
        return seen

    assert program_types(["--dev-mode", "--programs=wait,HACK,bogus"]) == {"wait", "hack"}
    assert len(program_types(["--dev-mode", "--programs=bogus"])) > 2
    assert len(program_types(["--programs=wait"])) > 2  # ignored without --dev-mode
