"""The action mask (interface §2), layer 4: the same validity functions the step uses."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hackmatrix_env import programs
from hackmatrix_env.movement import direction_mask
from hackmatrix_env.types import EnvState


def action_mask(state: EnvState) -> jax.Array:
    """bool[28]: directions (interface §2.2) ++ siphon (§2.3) ++ programs (programs.md §2)."""
    dirs = direction_mask(state)
    siphon = (state.player.siphons > 0)[None]
    return jnp.concatenate([dirs, siphon, programs.program_mask(state)])
