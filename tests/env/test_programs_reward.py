"""Program steps through the real pipeline (transition.advance: the game step and the
UNDO ring; reward.py).

Expected rewards from programs.md §8 / interface.md §4.8 E6; the UNDO worked example of
programs.md §4.10 with real enemy phases; cross-stage UNDO after a real stage completion.
"""

from __future__ import annotations

import numpy as np
import pytest
from builders import make_state
from hackmatrix_env.constants import Action, Content
from programs_testlib import enemies, player
from reward_testlib import check_reward, step


def test_row_killing_one_virus():
    s = make_state((2, 0), credits=3, energy=1, owned=["row"], enemies=[("virus", (2, 4), 1)])
    after, ev, bd, total = step(s, "row")
    check_reward(bd, total, {"step_penalty": -0.01, "kills": 0.3, "resource_gain": -0.2}, 0.09)
    assert not bool(ev.enemy_phase_ran) and int(after.game.turn) == 0


def test_exch():
    _, _, bd, total = step(make_state((0, 0), credits=4, owned=["exch"]), "exch")
    check_reward(bd, total, {"step_penalty": -0.01}, -0.01)


@pytest.mark.parametrize(
    ("hp", "expected", "total"),
    [
        (1, {"step_penalty": -0.01, "resource_gain": -0.2, "hp_recovery": 2.0}, 1.79),
        (
            2,
            {
                "step_penalty": -0.01,
                "resource_gain": -0.2,
                "hp_recovery": 1.0,
                "program_waste": -0.3,
            },
            0.49,
        ),
    ],
)
def test_reset(hp, expected, total):
    s = make_state((0, 0), hp=hp, energy=4, owned=["reset"])
    after, _, bd, t = step(s, "reset")
    check_reward(bd, t, expected, total)
    assert int(after.game.player.hp) == 3


def test_siph_plus():
    s = make_state((3, 3), credits=5, owned=["siph+"])
    after, _, bd, total = step(s, "siph+")
    check_reward(bd, total, {"step_penalty": -0.01, "resource_gain": -0.25}, -0.26)
    assert int(after.game.player.siphons) == 1


def test_score_stage_one():
    s = make_state((0, 0), energy=5, owned=["score"])
    _, _, bd, total = step(s, "score")
    check_reward(
        bd, total, {"step_penalty": -0.01, "score_gain": 3.5, "resource_gain": -0.25}, 3.24
    )


def test_crash_shortens_path_gives_shaping():
    # Exit (5,5); blocks (4,3),(4,4),(4,5) force a detour: D0 = 7 from (3,4). CRASH removes
    # all three (8-neighbourhood), D1 = 3 (Manhattan): shaping 0.05 * 4.
    s = make_state(
        (3, 4),
        credits=3,
        energy=2,
        owned=["crash"],
        blocks=[("data", (4, 3)), ("data", (4, 4)), ("data", (4, 5))],
    )
    _, ev, bd, total = step(s, "crash")
    assert int(ev.dist_before) == 7
    check_reward(
        bd, total, {"step_penalty": -0.01, "distance_shaping": 0.2, "resource_gain": -0.25}, -0.06
    )


def test_warp_onto_exit_completes_stage():
    s = make_state(
        (0, 0), hp=2, credits=2, energy=2, owned=["warp"], transmissions=[("virus", (5, 5))]
    )
    after, ev, bd, total = step(s, "warp")
    assert bool(ev.exit_reached) and not bool(ev.enemy_phase_ran)
    assert int(after.game.stage) == 2
    check_reward(
        bd,
        total,
        {
            "step_penalty": -0.01,
            "stage_completion": 1.0,
            "kills": 0.3,
            "distance_shaping": 0.5,  # D0 = 10
            "resource_gain": -0.2,
            "hp_recovery": 1.0,
        },
        2.59,
    )


def test_undo_after_reset_restores_lower_hp():
    s = make_state((0, 0), hp=1, energy=4, credits=1, owned=["reset", "undo"])
    s, ev, _, _ = step(s, Action.UP)  # real enemy phase -> snapshot (hp 1, energy 4)
    assert bool(ev.enemy_phase_ran) and int(s.history.size) == 1
    s, _, _, _ = step(s, "reset")
    after, ev, bd, total = step(s, "undo")
    check_reward(
        bd, total, {"step_penalty": -0.01, "resource_gain": 0.2, "damage_penalty": -2.0}, -1.81
    )
    assert int(after.game.player.hp) == 1 and int(ev.kills) == 0


def test_undo_worked_example_through_the_game():
    """programs.md §4.10 worked example with real enemy phases."""
    s = make_state(
        (0, 0), credits=4, energy=6, owned=["undo", "push"], enemies=[("daemon", (3, 3))]
    )
    _, ev, _, _ = step(s, "undo")
    assert bool(ev.invalid)  # 1. empty history: UNDO masked
    s1, ev, _, _ = step(s, Action.UP)  # 2. move -> enemy phase 1 -> S1
    assert bool(ev.enemy_phase_ran) and int(s1.game.turn) == 1 and int(s1.history.size) == 1
    pushed, _, _, _ = step(s1, "push")  # 3. PUSH, then UNDO
    assert enemies(pushed) != enemies(s1)
    undone, ev, _, _ = step(pushed, "undo")
    assert not bool(ev.invalid)
    assert enemies(undone) == enemies(s1) and player(undone) == player(s1)
    assert int(undone.history.size) == 0
    _, ev, _, _ = step(undone, "undo")
    assert bool(ev.invalid)
    s2, _, _, _ = step(undone, Action.UP)  # 4. move -> S2, move -> S3
    s3, _, _, _ = step(s2, Action.UP)
    assert int(s3.game.turn) == 3
    u1, _, _, _ = step(s3, "undo")
    assert player(u1) == player(s3) and int(u1.game.turn) == 3
    u2, _, _, _ = step(u1, "undo")
    assert int(u2.game.turn) == 2 and player(u2)["pos"] == player(s2)["pos"]


def test_step_then_move_pushes_nothing_and_undo_goes_further_back():
    s = make_state((0, 0), credits=1, energy=3, owned=["undo", "step"])
    s1, _, _, _ = step(s, Action.UP)  # S1 at (1,0)
    s2, _, _, _ = step(s1, "step")
    s3, ev, _, _ = step(s2, Action.UP)  # skipped phase: no snapshot
    assert not bool(ev.enemy_phase_ran) and int(s3.history.size) == 1
    u, _, _, _ = step(s3, "undo")
    assert player(u)["pos"] == (1, 0) and player(u)["energy"] == 3


def test_cross_stage_undo_through_the_game():
    s = make_state((5, 3), credits=1, owned=["undo"], blocks=[("data", (2, 2))])
    s1, _, _, _ = step(s, Action.RIGHT)  # (5,4), snapshot S1 of stage 1
    s2, ev, _, _ = step(s1, Action.RIGHT)  # onto the exit: stage 2 generated
    assert bool(ev.exit_reached) and int(s2.game.stage) == 2
    u, _, _, _ = step(s2, "undo")
    assert int(u.game.stage) == 2
    np.testing.assert_array_equal(np.asarray(u.game.exit_pos), np.asarray(s2.game.exit_pos))
    assert int(u.game.task_interval) == int(s2.game.task_interval)
    assert player(u)["pos"] == (5, 4)
    assert (
        int(u.game.grid.content[5, 5]) == Content.EXIT
        and int(u.game.grid.content[2, 2]) == Content.BLOCK
    )
