"""JSON -> tensor (interface §3.7) and breakdown mapping (§5.5), values from the spec."""

from __future__ import annotations

import numpy as np
import pytest
from hackmatrix_parity.client import SwiftGame
from hackmatrix_parity.tensor import (
    REWARD_COMPONENTS,
    SWIFT_BREAKDOWN_KEYS,
    breakdown15,
    flatten_tensor,
    swift_tensor,
)


def test_breakdown_tables_match_env_constants():
    from hackmatrix_env import constants

    assert SWIFT_BREAKDOWN_KEYS == constants.SWIFT_BREAKDOWN_KEYS
    assert REWARD_COMPONENTS == constants.REWARD_COMPONENTS


def test_breakdown15_derives_step_penalty():
    info = {"reward_breakdown": dict.fromkeys(SWIFT_BREAKDOWN_KEYS, 0.0) | {"distance": 0.05}}
    bd = breakdown15(0.04, info)  # interface §4.8 E1
    assert bd["step_penalty"] == -0.01 and bd["distance_shaping"] == 0.05
    assert (
        breakdown15(0.0, {"reward_breakdown": dict.fromkeys(SWIFT_BREAKDOWN_KEYS, 0)})[
            "step_penalty"
        ]
        == 0.0
    )
    # a total that is neither -0.01 nor 0 off the sum stays visible
    assert abs(breakdown15(0.5, info)["step_penalty"] - 0.45) < 1e-12


def _cell(r, c, **kw):
    return {"row": r, "col": c, "isDataSiphon": False, "isExit": False, "siphonCenter": False, **kw}


def test_tensor_encoding_by_hand():
    cells = [[_cell(r, c) for c in range(6)] for r in range(6)]
    cells[1][2] = _cell(
        1, 2,
        enemy={"type": "daemon", "hp": 2, "isStunned": True},  # spawnedFromSiphon missing
        block={"blockType": "program", "isSiphoned": True, "points": 0, "programType": "hack",
               "programActionIndex": 27, "transmissionSpawnCount": 0},
        transmission={"turnsUntilSpawn": 7}, credits=5, siphonCenter=True,
    )  # fmt: skip
    cells[5][5] = _cell(5, 5, isExit=True, block={"blockType": "question", "isSiphoned": False})
    obs = {
        "playerRow": 4,
        "playerCol": 1,
        "playerHP": 2,
        "credits": 75,
        "energy": 10,
        "dataSiphons": 12,
        "stage": 8,
        "turn": 3,
        "baseAttack": 5,
        "score": 0,
        "ownedPrograms": [5, 27, 27, 3],
        "cells": cells,
        "cryptogHints": [],
    }  # fmt: skip  (SHOW/CALM missing -> false)
    player, programs, grid = swift_tensor(obs)
    assert player.dtype == np.float32 and programs.dtype == np.int32 and grid.dtype == np.float32
    np.testing.assert_array_equal(
        player, np.float32([4 / 5, 1 / 5, 2 / 3, 1.0, 10 / 50, 1.0, 1.2, 2.0, 0, 0])
    )
    assert programs.tolist() == [1] + [0] * 21 + [1]
    f = grid[1, 2]
    assert f[1] == 1 and f[4] == np.float32(2 / 3) and f[5] == 1 and f[6] == 0
    assert f[8] == 1 and f[10] == 0 and f[11] == 1 and f[12 + 22] == 1 and f[35] == 0
    assert f[36] == 1.0 and f[37] == np.float32(5 / 3) and f[41] == 1
    q = grid[5, 5]
    assert q[9] == 1 and q[40] == 1 and q[10] == 0 and q[35] == 0 and q[12:35].sum() == 0
    assert grid.sum() == pytest.approx(f.sum() + q.sum())
    flat = flatten_tensor(player, programs, grid)
    assert flat.shape == (1545,) and flat[33 + (1 * 6 + 2) * 42 + 36] == 1.0


def test_worked_example_e2_through_swift(swift_bin):
    """interface §4.8 E2: the siphon reward and the post-siphon tensor values."""
    sc = {
        "player": {"row": 2, "col": 2, "dataSiphons": 1},
        "blocks": [{"row": 3, "col": 2, "type": "data", "points": 4}],
        "resources": [
            {"row": 2, "col": 1, "credits": 2}, {"row": 1, "col": 2, "energy": 1},
            {"row": 4, "col": 1, "credits": 3}, {"row": 5, "col": 2, "energy": 2},
        ],
    }  # fmt: skip
    with SwiftGame(swift_bin) as g:
        g.set_state(sc)
        r = g.step(4)
    assert r["reward"] == pytest.approx(2.09, abs=1e-9)
    bd = breakdown15(r["reward"], r["info"])
    assert bd["step_penalty"] == -0.01
    assert bd["score_gain"] == pytest.approx(2.0) and bd["siphon_quality"] == pytest.approx(-0.05)
    player, _, grid = swift_tensor(r["observation"])
    assert grid[3, 2, 7] == 1 and grid[3, 2, 10] == np.float32(4 / 9) and grid[3, 2, 11] == 1
    assert grid[3, 2, 35] == 0 and grid[2, 2, 41] == 1
    assert grid[2, 1, 37] == 0 and grid[1, 2, 38] == 0
    assert int((grid[:, :, 36] == np.float32(0.25)).sum()) == 4
    assert player[6] == 0
