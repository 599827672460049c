"""game.py: the step pipeline (interface §1, rules §3).

Steps run as the env shell runs them (``transition.advance``: ``game.step_game`` with the
UNDO ring's top, then the ring's update), so the snapshot pushes are checked too.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
from builders import make_state
from hackmatrix_env import transition
from hackmatrix_env.constants import Action, ActionKind
from hackmatrix_env.history import peek_snapshot, take_snapshot
from programs_testlib import replace_game, trees_equal

_step = jax.jit(transition.advance)


def _run(state, action, seed=0):
    return _step(jax.random.key(seed), state, jnp.int32(action))


def _cells(state):
    e = state.game.enemies
    return [tuple(int(v) for v in e.pos[i]) for i in range(len(e.alive)) if e.alive[i]]


def test_invalid_action_leaves_state_untouched():
    s = make_state((0, 0), enemies=[("daemon", (3, 3))], transmissions=[("virus", (4, 4))])
    for action in (Action.DOWN, Action.LEFT, Action.SIPHON, Action.WAIT, Action.HACK):
        out, ev = _run(s, action)
        assert bool(ev.invalid) and int(ev.action_kind) == ActionKind.INVALID
        chex.assert_trees_all_equal(out, s)
        assert int(ev.kills) == 0 and not bool(ev.enemy_phase_ran)


def test_action_kinds_and_turn_ending():
    s = make_state((0, 0), siphons=1, credits=5, owned=["show"], enemies=[("daemon", (0, 5))])
    out, ev = _run(s, Action.UP)
    assert int(ev.action_kind) == ActionKind.MOVE and bool(ev.enemy_phase_ran)
    assert int(out.game.turn) == 1 and int(out.history.size) == 1
    # The phase's snapshot is the step's final game (rules §7.2 step 8).
    assert trees_equal(peek_snapshot(out.history), take_snapshot(out.game))
    out, ev = _run(s, Action.RIGHT)
    assert int(ev.action_kind) == ActionKind.ATTACK and int(out.game.turn) == 1
    out, ev = _run(s, Action.SIPHON)
    assert int(ev.action_kind) == ActionKind.SIPHON and int(out.game.turn) == 1
    out, ev = _run(s, Action.SHOW)
    assert int(ev.action_kind) == ActionKind.PROGRAM and not bool(ev.enemy_phase_ran)
    assert int(out.game.turn) == 0 and bool(out.game.show_flag) and _cells(out) == [(0, 5)]
    assert int(out.history.size) == 0  # free actions push no snapshot


def test_exit_step_has_no_enemy_phase():
    s = make_state((5, 4), enemies=[("daemon", (4, 4))], transmissions=[("virus", (0, 3))])
    s = replace_game(s, pending_siphon_spawns=jnp.int32(3))
    out, ev = _run(s, Action.RIGHT)
    assert bool(ev.exit_reached) and not bool(ev.enemy_phase_ran)
    assert int(out.game.player.hp) == 3 and int(out.game.stage) == 2
    assert _cells(out) == [(4, 4)]  # the daemon kept its place and did not attack
    assert int(out.game.pending_siphon_spawns) == 3  # still owed (rules §9.1)
    assert int(out.history.size) == 0


def test_owed_spawn_timeline():
    # rules §5: placed at the end of this step's phase (turn t), hatch at t+1, act at t+2
    s = make_state((0, 0), siphons=1, blocks=[("data", (1, 0), 2)], calm=True)
    siphoned, _ = _run(s, Action.SIPHON)
    s1 = siphoned.game
    assert int(s1.turn) == 1 and int(jnp.sum(s1.transmissions.alive)) == 2
    assert int(jnp.sum(s1.enemies.alive)) == 0
    s2 = _run(siphoned, Action.RIGHT, 1)[0].game  # (0,0) -> (0,1)
    assert int(jnp.sum(s2.enemies.alive)) == 2 and int(jnp.sum(s2.transmissions.alive)) == 0
    assert bool(jnp.all(s2.enemies.from_siphon[:2]))


def test_step_program_skips_next_phase():
    s = make_state((0, 0), energy=3, owned=["step"], enemies=[("daemon", (3, 3))], calm=True)
    s1, ev = _run(s, Action.STEP)
    assert not bool(ev.invalid) and bool(s1.game.step_flag)
    s2, ev = _run(s1, Action.UP)
    assert not bool(ev.enemy_phase_ran) and int(s2.game.turn) == 0 and not bool(s2.game.step_flag)
    assert _cells(s2) == [(3, 3)] and int(s2.history.size) == 0  # a skipped phase pushes none


def test_death_and_siphon_enemy_flag():
    # moves to (1,0); the siphon daemon at (1,1) is now adjacent and attacks: dead
    s = make_state(
        (0, 0),
        hp=1,
        enemies=[("daemon", (1, 1), 3, {"spawnedFromSiphon": True}), ("daemon", (0, 1), 3)],
    )
    out, ev = _run(s, Action.UP)
    assert int(out.game.player.hp) == 0 and bool(ev.died_to_siphon_enemy)
    # killed by a normal enemy, the siphon enemy far away: no siphon-death flag
    s = make_state(
        (0, 0),
        hp=1,
        siphons=1,
        enemies=[("daemon", (0, 1), 3), ("daemon", (3, 3), 3, {"spawnedFromSiphon": True})],
    )
    out, ev = _run(s, Action.SIPHON)
    assert int(out.game.player.hp) == 0 and not bool(ev.died_to_siphon_enemy)


def test_adjacent_siphon_enemy_need_not_be_attacker():
    # interface §1 step 7: any adjacent siphon enemy counts, even a stunned one
    s = make_state(
        (2, 2),
        hp=1,
        siphons=1,
        enemies=[
            ("daemon", (2, 3), 3),
            ("daemon", (3, 2), 3, {"spawnedFromSiphon": True, "stunned": True}),
        ],
    )
    out, ev = _run(s, Action.SIPHON)
    assert int(out.game.player.hp) == 0 and bool(ev.died_to_siphon_enemy)


def test_transmission_on_block_next_to_player_quirk():
    # interface §2.2 edge case: masked out, yet Swift's step hits the transmission
    s = make_state((0, 0), blocks=[("data", (0, 1), 3)], transmissions=[("virus", (0, 1), 2)])
    out, ev = _run(s, Action.RIGHT)
    assert not bool(ev.invalid) and int(ev.action_kind) == ActionKind.ATTACK
    assert int(jnp.sum(out.game.transmissions.alive)) == 0


def test_vmap_matches_single_steps():
    states = [
        make_state((0, 0), enemies=[("virus", (3, 0))], siphons=1),
        make_state(
            (2, 2), enemies=[("daemon", (2, 5)), ("glitch", (4, 4))], blocks=[("data", (3, 2), 4)]
        ),
        make_state((5, 4), hp=2, stage=3),
    ]
    actions = jnp.array([Action.SIPHON, Action.RIGHT, Action.RIGHT], jnp.int32)
    keys = jax.random.split(jax.random.key(3), 3)
    batch = jax.tree.map(lambda *x: jnp.stack(x), *states)
    out_b, ev_b = jax.jit(jax.vmap(transition.advance))(keys, batch, actions)
    for i, s in enumerate(states):
        out, ev = _step(keys[i], s, actions[i])
        chex.assert_trees_all_equal(jax.tree.map(lambda x, i=i: x[i], (out_b, ev_b)), (out, ev))
    assert out_b.game.player.hp.dtype == jnp.int8 and np.asarray(ev_b.kills).dtype == np.int32
