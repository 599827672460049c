"""The 23 programs: validity mask and effects (programs.md). SKELETON: real version follows."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hackmatrix_env.constants import NUM_PROGRAMS, Program
from hackmatrix_env.types import EnvState


def program_mask(state: EnvState) -> jax.Array:
    """bool[23]: owned, affordable and applicable (programs.md §2). Skeleton: all False."""
    del state
    return jnp.zeros(NUM_PROGRAMS, jnp.bool_)


def is_turn_ending(prog_idx: jax.Array) -> jax.Array:
    """bool[]: the program ends the turn (WAIT only; programs.md §4.6)."""
    return prog_idx == Program.WAIT


def run_program(
    key: jax.Array, state: EnvState, prog_idx: jax.Array
) -> tuple[EnvState, jax.Array, jax.Array]:
    """Pay the cost, apply the effect (programs.md §3-§4). Returns (state, kills, exit_reached)."""
    del key, prog_idx
    return state, jnp.int32(0), jnp.bool_(False)
