"""The action mask (interface §2), layer 4: the same validity functions the step uses."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hackmatrix_env import programs
from hackmatrix_env.movement import direction_mask
from hackmatrix_env.types import GameState


def action_mask(state: GameState, undo_available: jax.Array | bool) -> jax.Array:
    """bool[28]: directions (interface §2.2) ++ siphon (§2.3) ++ programs (programs.md §2).

    ``undo_available``: the UNDO ring holds a snapshot (``history.has_snapshot``).
    """
    dirs = direction_mask(state)
    siphon = (state.player.siphons > 0)[None]
    return jnp.concatenate([dirs, siphon, programs.program_mask(state, undo_available)])
