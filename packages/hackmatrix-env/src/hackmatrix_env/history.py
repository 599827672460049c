"""Fixed-depth UNDO history: a ring buffer of snapshots (rules §11).

The reference stack is unbounded. We keep the newest ``History.depth``
snapshots (``EnvParams.history_depth``, default ``HISTORY_DEPTH`` = 16); a push onto a full ring overwrites the oldest and counts it in
``History.lost``. Because UNDO only ever pops the top, the ring agrees with the
reference stack exactly until the ring is emptied while ``lost > 0``: from then
on the reference would still offer UNDO and we do not. ``pop_snapshot`` sets
``EnvState.overflow`` at that moment (specs/programs.md §5 has the depth
argument and the measured rates).

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
    History,
    SnapEnemies,
    Snapshot,
    SnapTransmissions,
    Transmissions,
)


def take_snapshot(state: EnvState) -> Snapshot:
    """The part of the state a snapshot holds (rules §11.1)."""
    e, t = state.enemies, state.transmissions
    return Snapshot(
        player=state.player,
        turn=state.turn,
        owned_list=state.owned_list,
        num_owned=state.num_owned,
        enemies=SnapEnemies(
            kind=e.kind, pos=e.pos, hp=e.hp, last_known=e.last_known, alive=e.alive
        ),
        transmissions=SnapTransmissions(
            pos=t.pos, countdown=t.countdown, kind=t.kind, alive=t.alive
        ),
        grid=state.grid,
        show_flag=state.show_flag,
        calm_flag=state.calm_flag,
        atk_uses=state.atk_uses,
    )


def push_snapshot(state: EnvState, enabled: jax.Array | bool = True) -> EnvState:
    """Push the current state if ``enabled`` (rules §7.2 step 8, §11.2).

    ``enabled`` lets the enemy phase skip the push (STEP) without a select over
    the whole buffer: a skipped push writes to slot ``depth``, one past the end,
    which the scatter drops (``mode="drop"``): one scatter per leaf, no read of
    the old slot and no select.
    """
    hist = state.history
    enabled = jnp.asarray(enabled, jnp.bool_)
    snap = take_snapshot(state)
    slot = hist.top
    depth = hist.depth
    target = jnp.where(enabled, slot, depth)

    def write(buf, x):
        return buf.at[target].set(x, mode="drop")

    stacked = jax.tree.map(write, hist.snapshots, snap)
    full = hist.size >= depth
    inc = enabled.astype(jnp.int32)
    hist = History(
        snapshots=stacked,
        top=jnp.where(enabled, (slot + 1) % depth, slot).astype(jnp.int32),
        size=jnp.minimum(hist.size + inc, depth).astype(jnp.int32),
        lost=hist.lost + (full & enabled).astype(jnp.int32),
        depth=depth,
    )
    return state.replace(history=hist)


def has_snapshot(state: EnvState) -> jax.Array:
    """bool[]: the UNDO mask's history condition (programs §4.10)."""
    return state.history.size > 0


def peek_snapshot(state: EnvState) -> Snapshot:
    """The newest snapshot, read from one slot (garbage when the ring is empty)."""
    hist = state.history
    slot = (hist.top - 1) % hist.depth
    return jax.tree.map(
        lambda buf: jax.lax.dynamic_index_in_dim(buf, slot, keepdims=False), hist.snapshots
    )


def drop_snapshot(state: EnvState) -> EnvState:
    """Remove the newest snapshot: ring counters only, the buffer is not read or written.

    Sets ``overflow`` when this pop empties a ring that has dropped snapshots:
    from then on the reference's UNDO mask would be True where ours is False.
    Works on a state whose ``history.snapshots`` was stripped (None).
    """
    hist = state.history
    slot = (hist.top - 1) % hist.depth
    size = jnp.maximum(hist.size - 1, 0)
    hist = hist.replace(top=slot.astype(jnp.int32), size=size.astype(jnp.int32))
    diverged = (size == 0) & (hist.lost > 0)
    return state.replace(history=hist, overflow=state.overflow | diverged)


def pop_snapshot(state: EnvState) -> tuple[EnvState, Snapshot]:
    """Remove and return the newest snapshot. Callers must check ``has_snapshot``."""
    return drop_snapshot(state), peek_snapshot(state)


def restore_snapshot(state: EnvState, snap: Snapshot) -> EnvState:
    """Overwrite every snapshot field (rules §11.3); the rest keeps its current value.

    Restored enemies get disabled 0, not stunned, no provenance; restored
    transmissions get no provenance. Not restored: stage, exit_pos,
    task_interval, next_task_turn, pending_siphon_spawns, step_flag, history.
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
