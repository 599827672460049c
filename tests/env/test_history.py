"""UNDO history ring (rules §11) and the UNDO program (programs.md §4.10).

The enemy phase's push is modelled here by the shell's ring update after a real enemy
phase (``programs_testlib.push``: ``history.record_step``) on a hand-edited state (the rules
say a snapshot is the game right after a real enemy phase); the same scenarios through the
real step live in test_programs_reward.py.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from builders import make_state
from hackmatrix_env.constants import HISTORY_DEPTH, Content
from hackmatrix_env.history import has_snapshot, push_snapshot, take_snapshot
from programs_testlib import (
    enemies,
    enemy_field,
    mask,
    player,
    pop,
    push,
    replace_game,
    run,
    transmissions,
    trees_equal,
)


def _enemy_phase(state, **player_changes):
    """Stand-in for a real enemy phase: turn + 1, status cleared, snapshot pushed."""
    g = state.game
    pl = g.player.replace(
        **{k: jnp.asarray(v, getattr(g.player, k).dtype) for k, v in player_changes.items()}
    )
    e = g.enemies
    state = replace_game(
        state,
        player=pl,
        turn=g.turn + 1,
        enemies=e.replace(disabled=jnp.zeros_like(e.disabled), stunned=jnp.zeros_like(e.stunned)),
    )
    return push(state)


def test_ring_keeps_newest_and_counts_lost():
    s = make_state((0, 0))
    for t in range(HISTORY_DEPTH + 4):
        s = push(replace_game(s, turn=jnp.int32(t)))
    assert int(s.history.size) == HISTORY_DEPTH and int(s.history.lost) == 4
    turns = []
    for _ in range(HISTORY_DEPTH):
        assert bool(has_snapshot(s.history)) and not bool(s.game.overflow)
        s, snap = pop(s)
        turns.append(int(snap.turn))
    assert turns == list(range(HISTORY_DEPTH + 3, 3, -1))
    # Emptied with lost snapshots: the reference would still offer UNDO -> marked inexact.
    assert not bool(has_snapshot(s.history)) and bool(s.game.overflow)


def test_pop_without_loss_is_exact():
    s = make_state((0, 0))
    for t in range(3):
        s = push(replace_game(s, turn=jnp.int32(t)))
    for _ in range(3):
        s, _ = pop(s)
    assert int(s.history.size) == 0 and not bool(s.game.overflow)


def test_disabled_push_changes_nothing():
    s = push(replace_game(make_state((0, 0)), turn=jnp.int32(4)))
    snap = take_snapshot(s.game.replace(turn=jnp.int32(9)))
    out = jax.jit(push_snapshot)(s.history, snap, jnp.bool_(False))
    assert trees_equal(out, s.history)


def test_snapshot_is_slim_and_pushed_state_round_trips():
    s = make_state(
        (1, 2),
        credits=5,
        enemies=[("virus", (3, 3), 1, {"isFromScheduledTask": True, "spawnedFromSiphon": True})],
        transmissions=[("glitch", (4, 4), 2)],
        blocks=[("data", (0, 3), 4)],
        owned=["undo", "wait"],
        show=True,
    )
    snap = take_snapshot(s.game)
    assert not hasattr(snap.enemies, "from_task") and not hasattr(snap.enemies, "stunned")
    s1 = push(s)
    s2, _, _ = run(s1, "undo")
    # Everything restored; provenance cleared; history popped.
    assert player(s2) == player(s)
    assert enemies(s2) == enemies(s) and transmissions(s2) == transmissions(s)
    assert enemy_field(s2, "from_task") == [False] and enemy_field(s2, "from_siphon") == [False]
    assert trees_equal(s2.game.grid, s.game.grid) and bool(s2.game.show_flag)
    assert int(s2.history.size) == 0


def test_undo_worked_example():
    """programs.md §4.10 worked example."""
    s = make_state((0, 0), credits=4, energy=6, owned=["undo", "push"], enemies=[("virus", (2, 2))])
    # 1. Start of episode: history is empty, UNDO masked.
    assert not mask(s)["undo"]
    # 2. Move -> enemy phase 1 -> S1.
    s1 = _enemy_phase(s, pos=[1, 0])
    assert int(s1.game.turn) == 1 and int(s1.history.size) == 1 and mask(s1)["undo"]
    # 3. PUSH (-2 E), then UNDO: enemies back, energy +2, credits back, history empty.
    pushed, _, _ = run(s1, "push")
    assert enemies(pushed) == [("virus", (3, 3), 2)] and player(pushed)["energy"] == 4
    undone, kills, _ = run(pushed, "undo")
    assert kills == 0
    assert enemies(undone) == [("virus", (2, 2), 2)]
    assert player(undone) == player(s1)  # energy 6, credits 4 (the UNDO credit refunded)
    assert int(undone.history.size) == 0 and not mask(undone)["undo"]
    # 4. Move -> S2, move -> S3. UNDO restores S3 (no change); UNDO again restores S2 (turn 2).
    s2 = _enemy_phase(undone, pos=[2, 0])
    s3 = _enemy_phase(s2, pos=[3, 0])
    assert int(s3.game.turn) == 3
    u1, _, _ = run(s3, "undo")
    assert player(u1) == player(s3) and int(u1.game.turn) == 3 and enemies(u1) == enemies(s3)
    u2, _, _ = run(u1, "undo")
    assert int(u2.game.turn) == 2 and player(u2)["pos"] == (2, 0)
    assert int(u2.history.size) == 0


def test_undo_loses_origin_flags_and_status():
    s = make_state(
        (2, 0),
        credits=4,
        energy=2,
        owned=["undo", "row"],
        enemies=[
            ("virus", (2, 4), 1, {"isFromScheduledTask": True}),
            ("daemon", (2, 5), 3, {"spawnedFromSiphon": True}),
        ],
    )
    # Before UNDO, killing the scheduled virus earns nothing.
    _, kills, _ = run(s, "row")
    assert kills == 0
    s = push(s)
    e = s.game.enemies
    s = replace_game(
        s, enemies=e.replace(stunned=e.stunned.at[1].set(True), disabled=e.disabled.at[1].set(1))
    )
    u, _, _ = run(s, "undo")
    assert enemy_field(u, "from_task") == [False, False]
    assert enemy_field(u, "from_siphon") == [False, False]
    assert enemy_field(u, "stunned") == [False, False] and enemy_field(u, "disabled") == [0, 0]
    # [FLAG] the restored scheduled enemy is now a reward-eligible kill.
    _, kills, _ = run(u, "row")
    assert kills == 1


def test_step_survives_undo():
    s = push(make_state((0, 0), credits=1, energy=3, owned=["undo", "step"]))
    stepped, _, _ = run(s, "step")
    assert bool(stepped.game.step_flag) and player(stepped)["energy"] == 0
    u, _, _ = run(stepped, "undo")
    assert bool(u.game.step_flag)  # not in the snapshot
    assert player(u)["energy"] == 3 and player(u)["credits"] == 1  # a free STEP


def test_undo_keeps_non_snapshot_fields():
    s = push(make_state((0, 0), credits=1, owned=["undo"], turn=4))
    later = replace_game(
        s,
        turn=jnp.int32(6),
        task_interval=jnp.int32(9),
        next_task_turn=jnp.int32(20),
        pending_siphon_spawns=jnp.int32(7),
        calm_flag=jnp.bool_(True),
        atk_uses=jnp.int8(2),
        stage=jnp.int8(3),
    )
    u = run(later, "undo")[0].game
    assert int(u.turn) == 4  # restored
    assert not bool(u.calm_flag) and int(u.atk_uses) == 0  # restored
    # Not restored (rules §11.1): the scheduled-task drift and queued spawns stay.
    assert (int(u.task_interval), int(u.next_task_turn), int(u.pending_siphon_spawns)) == (9, 20, 7)
    assert int(u.stage) == 3


def test_undo_restores_owned_programs_and_attack():
    s = push(make_state((0, 0), credits=1, owned=["undo"], attack=1))
    g = s.game
    grown = replace_game(
        s,
        owned_list=g.owned_list.at[1].set(3),
        num_owned=jnp.int8(2),
        player=g.player.replace(attack=jnp.int8(3)),
    )
    u = run(grown, "undo")[0].game
    assert int(u.num_owned) == 1 and int(u.player.attack) == 1


def test_cross_stage_undo_quirk():
    """rules §11.4: old grid/entities/position, new stage number and exit coordinate."""
    old = make_state(
        (5, 4),
        credits=3,
        energy=2,
        owned=["undo", "warp"],
        blocks=[("data", (3, 3))],
        enemies=[("virus", (0, 5))],
    )
    old = push(old)  # last snapshot of stage 1 (exit at (5,5))
    # Stage completed: stage 2, new exit at (0,0), new grid (no blocks), turn 0, new interval.
    g = old.game.grid
    new_content = np.zeros((6, 6), np.int8)
    new_content[0, 0] = Content.EXIT
    new = replace_game(
        old,
        stage=jnp.int8(2),
        exit_pos=jnp.asarray([0, 0], jnp.int8),
        grid=g.replace(content=jnp.asarray(new_content), block_spawn=jnp.zeros_like(g.block_spawn)),
        player=old.game.player.replace(pos=jnp.asarray([5, 5], jnp.int8)),
        turn=jnp.int32(0),
        task_interval=jnp.int32(11),
        next_task_turn=jnp.int32(11),
    )
    undone, _, _ = run(new, "undo")
    u = undone.game
    assert int(u.stage) == 2 and np.asarray(u.exit_pos).tolist() == [0, 0]
    assert (int(u.task_interval), int(u.next_task_turn)) == (11, 11)
    assert player(u)["pos"] == (5, 4)
    assert int(u.grid.content[5, 5]) == Content.EXIT and int(u.grid.content[3, 3]) == Content.BLOCK
    assert int(u.grid.content[0, 0]) == Content.EMPTY
    # WARP completion uses the coordinate: warping onto the enemy at (0,5) is not the exit,
    # although the restored exit *cell* is (5,5).
    _, _, exit_reached = run(undone, "warp")
    assert not exit_reached


def test_run_program_reads_the_ring_only_through_undo_snapshot():
    """UNDO restores exactly the snapshot it is given; the other programs ignore it."""
    from hackmatrix_env.history import peek_snapshot, restore_snapshot
    from hackmatrix_env.programs import run_program

    s = make_state((0, 0), credits=3, energy=4, owned=["undo", "push"], enemies=[("virus", (2, 2))])
    s = push(replace_game(push(replace_game(s, turn=jnp.int32(1))), turn=jnp.int32(2)))
    s, _, _ = run(s, "push")
    newest, other = peek_snapshot(s.history), take_snapshot(s.game)
    run_jit = jax.jit(run_program)
    for snap in (newest, other):
        out, kills, exit_reached = run_jit(jax.random.key(3), s.game, jnp.int32(9), snap)  # UNDO
        assert trees_equal(out, restore_snapshot(s.game, snap))
        assert int(kills) == 0 and not bool(exit_reached)
    pushes = [run_jit(jax.random.key(3), s.game, jnp.int32(0), x) for x in (newest, other)]
    assert trees_equal(*pushes)  # PUSH
    assert player(pushes[0][0])["energy"] == 0  # it ran (paid its 2 energy)
