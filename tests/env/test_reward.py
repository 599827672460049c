"""reward.py: the 15 components (interface §4), checked on the spec's worked examples.

Every expected total comes from interface §4.8; the step runs through transition.advance
(game.step_game and the UNDO ring).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from builders import E2_SUBOPTIMAL_SIPHON, make_state
from hackmatrix_env import reward
from hackmatrix_env.constants import Action
from hackmatrix_env.types import StepEvents, blank_game
from reward_testlib import IDX, check_reward, step


def test_e1_plain_move():
    after, ev, bd, total = step(make_state((0, 0)), Action.UP)
    check_reward(bd, total, {"step_penalty": -0.01, "distance_shaping": 0.05}, 0.04)
    assert int(ev.dist_before) == 10 and int(after.game.turn) == 1


def test_e2_suboptimal_siphon():
    s = make_state(**E2_SUBOPTIMAL_SIPHON)
    after, _ev, bd, total = step(s, Action.SIPHON)
    expected = {
        "step_penalty": -0.01,
        "score_gain": 2.0,
        "resource_gain": 0.15,
        "siphon_quality": -0.05,
    }
    check_reward(bd, total, expected, 2.09)
    # The 4 owed transmissions were placed at the end of the enemy turn.
    assert int(after.game.turn) == 1 and int(after.game.pending_siphon_spawns) == 0
    assert int(jnp.sum(after.game.transmissions.alive)) == 4
    assert bool(jnp.all(after.game.transmissions.from_siphon[:4]))
    assert int(after.game.task_interval) == 11 and int(after.game.next_task_turn) == 17


def test_e3_long_range_kill():
    s = make_state((3, 3), credits=5, enemies=[("virus", (5, 3), 1)], owned=[16])
    after, _ev, bd, total = step(s, Action.UP)
    check_reward(bd, total, {"step_penalty": -0.01, "kills": 0.3}, 0.29)
    assert int(after.game.turn) == 1


def test_e4_death_to_siphon_enemy_stage3():
    s = make_state(
        (3, 3),
        hp=1,
        energy=1,
        enemies=[("virus", (4, 3), 2, {"spawnedFromSiphon": True})],
        owned=["wait"],
        stage=3,
    )
    after, ev, bd, total = step(s, Action.WAIT)
    assert not bool(ev.invalid)  # WAIT (1 energy, owned) is valid here
    expected = {
        "step_penalty": -0.01,
        "resource_gain": -0.05,
        "damage_penalty": -1.0,
        "death_penalty": -1.5,
        "siphon_death_penalty": -10.0,
    }
    check_reward(bd, total, expected, -12.56)
    assert bool(ev.died_to_siphon_enemy) and int(after.game.player.hp) == 0


def test_e5a_stage_completion():
    s = make_state((5, 4), hp=2, credits=10, energy=5, stage=2)
    after, ev, bd, total = step(s, Action.RIGHT)
    expected = {
        "step_penalty": -0.01,
        "stage_completion": 2.0,
        "distance_shaping": 0.05,
        "resource_holding": 0.15,
        "hp_recovery": 1.0,
    }
    check_reward(bd, total, expected, 3.19)
    assert bool(ev.exit_reached) and not bool(ev.victory) and not bool(ev.enemy_phase_ran)
    assert (
        int(after.game.stage) == 3
        and int(after.game.task_interval) == 10
        and int(after.game.turn) == 0
    )


def test_e5b_victory():
    s = make_state((5, 4), hp=3, score=10, stage=8)
    after, ev, bd, total = step(s, Action.RIGHT)
    expected = {
        "step_penalty": -0.01,
        "stage_completion": 64.0,
        "distance_shaping": 0.05,
        "victory": 1500.0,
    }
    check_reward(bd, total, expected, 1564.04)
    assert bool(ev.victory) and int(after.game.stage) == 8
    assert tuple(int(v) for v in after.game.player.pos) == (5, 5)


def test_invalid_action_all_zero():
    s = make_state((0, 0))
    _after, ev, bd, total = step(s, Action.DOWN)
    assert bool(ev.invalid) and float(total) == 0.0
    np.testing.assert_array_equal(np.asarray(bd), np.zeros(15, np.float32))


@pytest.mark.parametrize(
    "stage, penalty",
    [(1, 0.0), (2, -0.5), (3, -1.5), (4, -3.5), (5, -7.5), (6, -15.5), (7, -31.5), (8, -63.5)],
)
def test_death_penalty_table(stage, penalty):
    # interface §4.4; stage 1 is encoded as -0.0
    assert float(reward.DEATH_PENALTY[stage]) == penalty
    before = blank_game().replace(stage=jnp.int8(stage))
    after = before.replace(player=before.player.replace(hp=jnp.int8(0)))
    ev = _events()
    bd = reward.reward_breakdown(before, after, ev)
    assert float(bd[IDX["death_penalty"]]) == penalty
    assert float(bd[IDX["damage_penalty"]]) == -3.0
    if stage == 1:
        assert np.signbit(float(bd[IDX["death_penalty"]]))


def test_death_penalty_injected_stage_above_8():
    # setState may inject stage 9: the sum stops at the 8 entries of T (as the Swift twin)
    assert float(reward.DEATH_PENALTY[9]) == -113.5


def _events(**kw):
    base = dict(
        invalid=jnp.bool_(False),
        action_kind=jnp.int8(0),
        kills=jnp.int32(0),
        data_siphon_collected=jnp.bool_(False),
        exit_reached=jnp.bool_(False),
        victory=jnp.bool_(False),
        enemy_phase_ran=jnp.bool_(True),
        died_to_siphon_enemy=jnp.bool_(False),
        siphon_missed_credits=jnp.int32(0),
        siphon_missed_energy=jnp.int32(0),
        reset_wasteful=jnp.bool_(False),
        dist_before=jnp.int32(0),
        undone=jnp.bool_(False),
    )
    base.update(kw)
    return StepEvents(**base)


def test_distance_no_path_quirks():
    # reachable -> unreachable: Δ = D0 - 0 > 0 gives a positive reward (interface §4.5)
    s = make_state((0, 0)).game
    walled = s.grid.replace(content=s.grid.content.at[4, 5].set(1).at[5, 4].set(1))
    after = s.replace(grid=walled)
    bd = reward.reward_breakdown(s, after, _events(dist_before=jnp.int32(10)))
    assert float(bd[IDX["distance_shaping"]]) == pytest.approx(0.5)
    # unreachable -> reachable: Δ = 0 - D1 < 0 gives 0
    bd = reward.reward_breakdown(after, s, _events(dist_before=jnp.int32(0)))
    assert float(bd[IDX["distance_shaping"]]) == 0.0
    # death zeroes the shaping
    dead = s.replace(player=s.player.replace(hp=jnp.int8(0), pos=jnp.array([4, 4], jnp.int8)))
    bd = reward.reward_breakdown(s, dead, _events(dist_before=jnp.int32(10)))
    assert float(bd[IDX["distance_shaping"]]) == 0.0


def test_data_siphon_pickup_reward():
    s = make_state((0, 0), resources=[("siphon", (0, 1))])
    _, ev, bd, total = step(s, Action.RIGHT)
    assert float(bd[IDX["data_siphon"]]) == 1.0 and bool(ev.data_siphon_collected)
    # D0 = 10, D1 = 9 from (0,1)
    check_reward(
        bd, total, {"step_penalty": -0.01, "data_siphon": 1.0, "distance_shaping": 0.05}, 1.04
    )
