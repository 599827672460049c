"""Fixed-depth UNDO history: a ring buffer of snapshots (rules §11).

The reference stack is unbounded. We keep the newest ``HISTORY_DEPTH``
snapshots; a push onto a full ring drops the oldest and counts it in
``History.lost``. Behaviour is exact while no more than ``HISTORY_DEPTH``
UNDOs are chained without an enemy phase in between that would have popped a
dropped snapshot (see specs/ for the argument and the measured rates).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hackmatrix_env.constants import HISTORY_DEPTH
from hackmatrix_env.types import EnvState, History, Snapshot


def take_snapshot(state: EnvState) -> Snapshot:
    """The part of the state a snapshot holds (rules §11.1)."""
    return Snapshot(
        player=state.player,
        turn=state.turn,
        owned_list=state.owned_list,
        num_owned=state.num_owned,
        enemies=state.enemies,
        transmissions=state.transmissions,
        grid=state.grid,
        show_flag=state.show_flag,
        calm_flag=state.calm_flag,
        atk_uses=state.atk_uses,
    )


def push_snapshot(state: EnvState) -> EnvState:
    """Push the current state (rules §7.2 step 8, §11.2)."""
    hist = state.history
    snap = take_snapshot(state)
    slot = hist.top
    stacked = jax.tree.map(lambda buf, x: buf.at[slot].set(x), hist.snapshots, snap)
    full = hist.size >= HISTORY_DEPTH
    hist = History(
        snapshots=stacked,
        top=(slot + 1) % HISTORY_DEPTH,
        size=jnp.minimum(hist.size + 1, HISTORY_DEPTH),
        lost=hist.lost + full.astype(jnp.int32),
    )
    return state.replace(history=hist)


def has_snapshot(state: EnvState) -> jax.Array:
    """bool[]: the UNDO mask's history condition (programs §4.10)."""
    return state.history.size > 0


def pop_snapshot(state: EnvState) -> tuple[EnvState, Snapshot]:
    """Remove and return the newest snapshot. Callers must check ``has_snapshot``."""
    hist = state.history
    slot = (hist.top - 1) % HISTORY_DEPTH
    snap = jax.tree.map(lambda buf: buf[slot], hist.snapshots)
    hist = hist.replace(top=slot, size=jnp.maximum(hist.size - 1, 0))
    return state.replace(history=hist), snap
