"""Fixed-depth UNDO history: a ring buffer of snapshots (rules §11), kept by the env shell.

The reference stack is unbounded. We keep the newest ``History.depth``
snapshots (``EnvParams.history_depth``, default ``HISTORY_DEPTH`` = 16); a push onto a full
ring overwrites the oldest and counts it in ``History.lost``. Because UNDO only ever pops the
top, the ring agrees with the reference stack exactly until the ring is emptied while
``lost > 0``: from then on the reference would still offer UNDO and we do not, and
``record_step`` reports it so the shell sets ``GameState.overflow`` (specs/programs.md §5 has
the depth argument and the measured rates).

The game never holds the ring: a step reads ``undo_top(history)`` (is a snapshot held, and
the newest one, which the UNDO program restores) and reports in its events whether UNDO
popped and whether a real enemy phase ended the turn; ``record_step`` then pops and pushes
(rules §7.2 step 8: the push is the enemy phase's last act, so the snapshot is the step's
final game).

Snapshots are slim (``SnapEnemies``/``SnapTransmissions``): at push time every
enemy has disabled = 0 and stunned = False (the push follows status clearing,
rules §7.2 step 8), and provenance flags are cleared on restore (rules §11.3),
so none of them is stored.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hackmatrix_env.types import (
    Enemies,
    EnvState,
    GameState,
    History,
    Snapshot,
    Transmissions,
    UndoTop,
)


def take_snapshot(state: GameState) -> Snapshot:
    """The part of the state a snapshot holds (rules §11.1)."""
    return Snapshot.of(state)


def push_snapshot(hist: History, snap: Snapshot, enabled: jax.Array | bool = True) -> History:
    """``hist`` with ``snap`` pushed if ``enabled`` (rules §7.2 step 8, §11.2).

    A skipped push writes to slot ``depth``, one past the end, which the scatter drops
    (``mode="drop"``): one scatter per leaf, no read of the old slot and no select over the
    buffer.
    """
    enabled = jnp.asarray(enabled, jnp.bool_)
    slot = hist.top
    depth = hist.depth
    target = jnp.where(enabled, slot, depth)
    stacked = jax.tree.map(lambda buf, x: buf.at[target].set(x, mode="drop"), hist.snapshots, snap)
    full = hist.size >= depth
    inc = enabled.astype(jnp.int32)
    return History(
        snapshots=stacked,
        top=jnp.where(enabled, (slot + 1) % depth, slot).astype(jnp.int32),
        size=jnp.minimum(hist.size + inc, depth).astype(jnp.int32),
        lost=hist.lost + (full & enabled).astype(jnp.int32),
        depth=depth,
    )


def has_snapshot(hist: History) -> jax.Array:
    """bool[]: the UNDO mask's history condition (programs §4.10)."""
    return hist.size > 0


def peek_snapshot(hist: History) -> Snapshot:
    """The newest snapshot, read from one slot (garbage when the ring is empty)."""
    slot = (hist.top - 1) % hist.depth
    return jax.tree.map(
        lambda buf: jax.lax.dynamic_index_in_dim(buf, slot, keepdims=False), hist.snapshots
    )


def undo_top(hist: History) -> UndoTop:
    """What a game step reads of the ring: whether UNDO has a snapshot, and the newest one."""
    return UndoTop(available=has_snapshot(hist), snapshot=peek_snapshot(hist))


def drop_snapshot(hist: History, enabled: jax.Array | bool = True) -> tuple[History, jax.Array]:
    """``(hist without its newest snapshot if enabled, diverged)``; counters only.

    The buffer is neither read nor written. ``diverged`` (bool[]) is True when this pop
    empties a ring that has dropped snapshots: from then on the reference's UNDO mask
    would be True where ours is False.
    """
    enabled = jnp.asarray(enabled, jnp.bool_)
    slot = (hist.top - 1) % hist.depth
    size = jnp.maximum(hist.size - 1, 0)
    popped = hist.replace(
        top=jnp.where(enabled, slot, hist.top).astype(jnp.int32),
        size=jnp.where(enabled, size, hist.size).astype(jnp.int32),
    )
    return popped, enabled & (size == 0) & (hist.lost > 0)


def record_step(
    hist: History, game: GameState, undone: jax.Array, pushed: jax.Array
) -> tuple[History, jax.Array]:
    """The ring after a step: pop if the step's UNDO ran, then push ``game`` if a real
    enemy phase ran (``StepEvents.undone``, ``StepEvents.enemy_phase_ran``).

    Returns ``(history, diverged)`` (``drop_snapshot``); ``game`` is the step's final game,
    which is what the enemy phase's push holds (it is the phase's last act, and stage
    completion never follows a phase).
    """
    hist, diverged = drop_snapshot(hist, undone)
    return push_snapshot(hist, take_snapshot(game), pushed), diverged


def restore_snapshot(state: GameState, snap: Snapshot) -> GameState:
    """Overwrite every snapshot field (rules §11.3); the rest keeps its current value.

    Restored enemies get disabled 0, not stunned, no provenance; restored
    transmissions get no provenance. Not restored: stage, exit_pos,
    task_interval, next_task_turn, pending_siphon_spawns, step_flag, overflow.
    """
    se, st = snap.enemies, snap.transmissions
    zero_e = jnp.zeros_like(se.alive)
    enemies = Enemies(
        kind=se.kind,
        pos=se.pos,
        hp=se.hp,
        disabled=jnp.zeros_like(se.hp),
        stunned=zero_e,
        last_known=se.last_known,
        from_task=zero_e,
        from_siphon=zero_e,
        alive=se.alive,
    )
    zero_t = jnp.zeros_like(st.alive)
    transmissions = Transmissions(
        pos=st.pos,
        countdown=st.countdown,
        kind=st.kind,
        from_task=zero_t,
        from_siphon=zero_t,
        alive=st.alive,
    )
    return state.replace(
        player=snap.player,
        turn=snap.turn,
        owned_list=snap.owned_list,
        num_owned=snap.num_owned,
        enemies=enemies,
        transmissions=transmissions,
        grid=snap.grid,
        show_flag=snap.show_flag,
        calm_flag=snap.calm_flag,
        atk_uses=snap.atk_uses,
    )


def without_snapshots(state: EnvState) -> EnvState:
    """``state`` with the ring's buffer left out (a ``None`` subtree): the counters stay.

    For host transfers of many states (replays, evaluation): the buffer is most of a state's
    bytes and nothing but UNDO reads it.
    """
    return state.replace(history=state.history.replace(snapshots=None))
