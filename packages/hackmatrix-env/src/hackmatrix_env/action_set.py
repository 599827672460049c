"""The agent's action set: some actions taken out of the mask, the game left as it is.

``allowed_actions`` turns action indices into a ``bool[28]`` set, ``restrict_mask`` narrows a
mask to it (never to nothing), and ``DisabledActionsWrapper`` narrows every observation of an
env. The trainer, the evaluators and the search use them (``hm-train --disabled-programs undo``
trains a policy that never runs UNDO, rules §11.4); ``adapters`` re-exports them.

The wrapper keeps gymnax's wrapper contract (``GymnaxWrapper``: the env in ``_env``, every
other attribute read through to it), so gymnax's ``LogWrapper`` and the rest stack on it, but
it does not subclass gymnax's class: ``gymnax.wrappers`` imports gymnax's whole package, and a
command that only evaluates a policy would pay that import (``gymnax_base``).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hackmatrix_env.constants import NUM_ACTIONS
from hackmatrix_env.types import EnvParams, Observation


def restrict_mask(mask: jax.Array, allowed: jax.Array) -> jax.Array:
    """``mask & allowed``, except where that leaves no legal action: there ``mask`` itself.

    The fallback keeps every row playable (a policy over an empty mask has nothing to pick):
    a disabled action stays offered only where no other action is legal.
    """
    narrowed = jnp.logical_and(mask, allowed)
    return jnp.where(narrowed.any(axis=-1, keepdims=True), narrowed, mask)


def allowed_actions(disabled) -> np.ndarray:
    """bool[28]: False at each action index of ``disabled``; a clear error for a bad index."""
    allowed = np.ones(NUM_ACTIONS, bool)
    for a in disabled:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)) or not 0 <= a < NUM_ACTIONS:
            raise ValueError(
                f"disabled actions must be action indices 0..{NUM_ACTIONS - 1}, got {a!r}"
            )
        allowed[int(a)] = False
    return allowed


class MapObservations:
    """A wrapper mixin: every observation the env returns, ``info["final_observation"]``
    included, goes through ``self.map_observation``; the rest of ``reset`` and ``step`` is the
    env's (``self._env``). ``DisabledActionsWrapper`` and ``adapters.BoxObservationWrapper``."""

    def map_observation(self, obs: Observation):
        raise NotImplementedError

    def reset(self, key: jax.Array, params: EnvParams | None = None) -> tuple[Any, Any]:
        obs, state = self._env.reset(key, params)
        return self.map_observation(obs), state

    def step(
        self,
        key: jax.Array,
        state: Any,
        action: int | jax.Array,
        params: EnvParams | None = None,
    ) -> tuple[Any, Any, jax.Array, jax.Array, jax.Array, dict[str, Any]]:
        obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, params)
        info = {**info, "final_observation": self.map_observation(info["final_observation"])}
        return self.map_observation(obs), state, reward, terminated, truncated, info


class DisabledActionsWrapper(MapObservations):
    """The env with some actions taken out of the agent's mask (``restrict_mask``).

    Every observation's ``action_mask`` (``info["final_observation"]``'s too) loses the
    disabled actions, unless nothing else would be legal. The game is not changed: a
    disabled action sent anyway is played by the canonical rules, as the unwrapped env
    would. It is an ablation of the agent, not of the game: ``hm-train
    --disabled-programs undo`` trains and evaluates a policy that never runs UNDO.
    """

    def __init__(self, env, disabled):
        self._env = env
        self.allowed = allowed_actions(disabled)
        self.disabled = tuple(int(a) for a in np.flatnonzero(~self.allowed))

    def __getattr__(self, name: str):
        # read through to the env, as gymnax's wrappers do; ``_env`` itself is never read
        # through (a half-built copy would otherwise recurse without end)
        if name == "_env":
            raise AttributeError(name)
        return getattr(self._env, name)

    def map_observation(self, obs: Observation) -> Observation:
        return obs._replace(action_mask=restrict_mask(obs.action_mask, jnp.asarray(self.allowed)))

    def get_obs(self, state: Any, params: EnvParams | None = None, key=None) -> Observation:
        return self.map_observation(self._env.get_obs(state, params))
