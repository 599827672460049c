"""Key-chained games: the jitted core of the Gymnasium envs, free of Gymnasium (layer 7).

Host-driven APIs (Gymnasium, SB3) keep no JAX key of their own, so each game
carries one, a *chain*: every step splits it as ``chain, k = split(chain)`` and
runs the gymnax 1.0 ``HackMatrix.step(k, ...)`` (auto-reset included: the fresh
game after an episode end comes from ``k`` as in gymnax). A game started from
``key`` does ``chain, k = split(key)`` and ``HackMatrix.reset(k)``. So a game is
fixed by its start key and its actions, whether it runs alone
(``hackmatrix_env.gymnasium.HackMatrixEnv``) or as row ``i`` of a batch
(``HackMatrixVectorEnv``): the same key gives the same trajectory.

``reset_batch`` and ``step_batch`` are ``jit(vmap(...))`` of ``start_game`` and
``step_chained``: one compiled call per batch size steps every game; ``reset_one`` and
``step_one`` are the single env's ``reset`` and ``step``, jitted.
"""

from __future__ import annotations

from typing import Any

import jax

from hackmatrix_env.env import HackMatrix
from hackmatrix_env.types import EnvParams, EnvState, Observation

ENV = HackMatrix()


def start_game(key: jax.Array, params: EnvParams) -> tuple[jax.Array, Observation, EnvState]:
    """``(chain, obs, state)`` of a fresh game started from ``key`` (rules §10.1)."""
    chain, k_reset = jax.random.split(key)
    obs, state = ENV.reset(k_reset, params)
    return chain, obs, state


def step_chained(
    chain: jax.Array, state: EnvState, action: jax.Array, params: EnvParams
) -> tuple[jax.Array, Observation, EnvState, jax.Array, jax.Array, jax.Array, dict[str, Any]]:
    """``(chain, obs, state, reward, terminated, truncated, info)``: one gymnax 1.0 step.

    Auto-resets on ``terminated | truncated`` (then ``obs``/``state`` are the
    fresh game's and ``info["final_observation"]`` the ended one's).
    """
    chain, k_step = jax.random.split(chain)
    obs, state, reward, terminated, truncated, info = ENV.step(k_step, state, action, params)
    return chain, obs, state, reward, terminated, truncated, info


reset_batch = jax.jit(jax.vmap(start_game, in_axes=(0, None)))
step_batch = jax.jit(jax.vmap(step_chained, in_axes=(0, 0, 0, None)))

# The single env's own programs: a library drives it for as many steps as it trains, so its
# step compiles with XLA's defaults like the batched ones, not as an eager call (quick to
# compile, about twice as slow a step: specs/env-shell.md §7.14).
reset_one = jax.jit(lambda key, params: ENV.reset(key, params))
step_one = jax.jit(lambda key, state, action, params: ENV.step(key, state, action, params))
