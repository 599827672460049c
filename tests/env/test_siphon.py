"""siphon.py: the siphon cross (rules §5) and siphon quality (interface §4.6)."""

from __future__ import annotations

import jax
import numpy as np
from builders import E2_SUBOPTIMAL_SIPHON, make_state
from hackmatrix_env import siphon
from hackmatrix_env.constants import Content, Program, Resource

_apply = jax.jit(siphon.apply_siphon)
_quality = jax.jit(siphon.siphon_quality)


def make_game(player=(0, 0), **kwargs):
    """The game of ``make_state(...)``: the rule functions take a ``GameState``."""
    return make_state(player, **kwargs).game


def _owned(s):
    return [int(x) for x in s.owned_list[: int(s.num_owned)]]


def test_rules_worked_example():
    # rules §5: player (2,2) on credits x2; data p=7 at (3,2); program X (spawn 4, not owned)
    # at (2,1); energy x1 at (1,2); (2,3) already siphoned.
    s = make_game(
        (2, 2),
        siphons=1,
        blocks=[
            ("data", (3, 2), 7),
            ("program", (2, 1), "crash", {"spawnCount": 4}),
        ],
        resources=[("credits", (2, 2), 2), ("energy", (1, 2), 1), ("credits", (2, 3), 3)],
    )
    g = s.grid
    s = s.replace(grid=g.replace(siphoned=g.siphoned.at[2, 3].set(True)))
    out = _apply(s)
    p = out.player
    assert int(p.score) == 7 and int(p.credits) == 2 and int(p.energy) == 1
    assert int(p.siphons) == 0
    assert _owned(out) == [Program.CRASH]
    assert int(out.pending_siphon_spawns) == 11
    sip = np.asarray(out.grid.siphoned)
    assert sip[2, 2] and sip[3, 2] and sip[2, 1] and sip[1, 2] and sip[2, 3]
    assert sip.sum() == 5
    assert int(out.grid.resource_amount[2, 3]) == 3  # already siphoned: untouched
    assert int(out.grid.content[3, 2]) == Content.BLOCK and int(out.grid.block_spawn[3, 2]) == 0
    assert int(out.grid.block_spawn[2, 1]) == 0 and int(out.grid.block_points[3, 2]) == 7
    assert int(out.grid.resource_kind[2, 2]) == Resource.NONE
    assert bool(out.grid.center[2, 2]) and int(np.asarray(out.grid.center).sum()) == 1
    assert int(out.task_interval) == 11 and int(out.next_task_turn) == 17


def test_owned_program_still_spawns_and_interval_floor():
    s = make_game((0, 0), siphons=2, blocks=[("program", (1, 0), "wait")], owned=["wait"])
    s = s.replace(task_interval=s.task_interval * 0 + 4)
    out = _apply(s)
    assert _owned(out) == [Program.WAIT]  # no duplicate
    assert int(out.pending_siphon_spawns) == 2  # setState program spawn default
    assert int(out.task_interval) == 4 and int(out.next_task_turn) == 17
    assert int(out.player.siphons) == 1


def test_question_block_revealed():
    s = make_game((0, 0), siphons=1, blocks=[("data", (0, 1), 6)])
    g = s.grid
    s = s.replace(grid=g.replace(block_question=g.block_question.at[0, 1].set(True)))
    out = _apply(s)
    assert int(out.player.score) == 6 and not bool(out.grid.block_question[0, 1])


def test_e2_quality():
    # interface §4.8 E2: missedCredits = 1, missedEnergy = 1
    s = make_game(**E2_SUBOPTIMAL_SIPHON)
    mc, me = _quality(s)
    assert (int(mc), int(me)) == (1, 1)


def test_quality_ties_and_no_candidates_better():
    # Only equal alternatives: never "better".
    s = make_game((2, 2), siphons=1, resources=[("credits", (2, 1), 2), ("credits", (4, 4), 2)])
    assert tuple(int(v) for v in _quality(s)) == (0, 0)
    # Nothing valued at P: every non-block cell is a candidate; (4,4) has more credits.
    s = make_game((2, 2), siphons=1, resources=[("credits", (2, 1), 1), ("credits", (4, 4), 3)])
    assert tuple(int(v) for v in _quality(s)) == (2, 0)


def test_quality_max_taken_independently():
    # P yields (1 c, 1 e); one spot gives (3 c, 1 e), another (1 c, 4 e): missed (2, 3).
    s = make_game(
        (0, 0),
        siphons=1,
        resources=[
            ("credits", (0, 1), 1),
            ("energy", (1, 0), 1),
            ("credits", (3, 3), 3),
            ("energy", (3, 4), 1),
            ("credits", (5, 0), 1),
            ("energy", (4, 0), 4),
        ],
    )
    assert tuple(int(v) for v in _quality(s)) == (2, 3)


def test_quality_owned_program_block_restricts_candidates():
    # V* = [5] from (3,2); B also holds an owned program block at (2,1), so candidates must
    # cover both. Without that restriction (4,2) (V = [5], 3 credits) would dominate.
    s = make_game(
        (2, 2),
        siphons=1,
        owned=["wait"],
        blocks=[("data", (3, 2), 5), ("program", (2, 1), "wait")],
        resources=[("credits", (4, 2), 3), ("credits", (3, 3), 3)],
    )
    # (3,1) covers (2,1) and (3,2) but yields nothing extra; (4,2)/(3,3) do not cover (2,1).
    assert tuple(int(v) for v in _quality(s)) == (0, 0)
