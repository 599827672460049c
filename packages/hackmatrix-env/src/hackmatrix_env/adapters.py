"""gymnax wrappers for JAX RL code written against other gymnax conventions (layer 7).

Most JAX PPO code in the wild (purejaxrl, rejax 0.1.x) wants two things this
env does not give directly: a flat ``Box`` observation (``observation_space(p).shape``
sizes the network) and gymnax's *pre-1.0* 5-tuple ``step``. The two wrappers
below supply them, and gymnax 1.0's own ``FlattenObservationWrapper`` and
``LogWrapper`` fit between them::

    from gymnax.wrappers.purerl import FlattenObservationWrapper, LogWrapper
    from hackmatrix_env.adapters import BoxObservationWrapper, LegacyStepWrapper
    env = LegacyStepWrapper(LogWrapper(FlattenObservationWrapper(BoxObservationWrapper(HackMatrix()))))
    obs, state = env.reset(key, params)                      # obs float32[1573]
    obs, state, reward, done, info = env.step(key, state, action, params)

(``make_legacy_env()`` builds exactly this stack.)

* ``BoxObservationWrapper``: the observation becomes ``float32[1573]`` =
  ``flatten_observation`` (1545: player, programs, grid; interface §3.1) followed
  by the action mask as 0/1 (28), so a policy that knows nothing of masks still
  sees which actions are valid (``MASK_SLICE`` cuts it out again). The space is
  ``Box(0, inf)``: some features exceed 1 (interface §3.6). ``info["final_observation"]``
  is flattened the same way.
* ``DisabledActionsWrapper`` (from ``action_set``, re-exported here): the agent's action set
  without some actions (e.g. UNDO, to study learning without the cross-stage quirk, rules
  §11.4). It narrows the mask only; the game is unchanged. See its docstring.
* ``LegacyStepWrapper``: ``step`` returns ``(obs, state, reward, done, info)`` with
  ``done = terminated | truncated``. Nothing is lost: ``info`` keeps gymnax 1.0's
  ``terminated``, ``truncated`` and ``final_observation``, and gains the pre-1.0
  ``discount`` (0.0 on termination, else 1.0). Code that bootstraps on ``done``
  (purejaxrl, rejax) treats a time-limit truncation as a death; read
  ``info["truncated"]`` to do better.

An invalid action (one the mask forbids) terminates the episode with reward 0
(interface §2), so a mask-unaware learner is taught to avoid it by the episode
ending. Both wrappers are pure (jittable, ``vmap``-able) and keep the wrapped
env's key handling: legacy ``uint32[2]`` keys (``jax.random.PRNGKey``) work as
well as typed ones. They are not jitted themselves (the learner's ``jit`` covers
them): called eagerly, the wrapped env's own jitted ``step`` runs and only the
few wrapping operations run op by op, so no new program is compiled.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments import spaces
from gymnax.wrappers.purerl import FlattenObservationWrapper, GymnaxWrapper, LogWrapper

from hackmatrix_env.action_set import (  # noqa: F401 (re-exported: the action set's home)
    DisabledActionsWrapper,
    MapObservations,
    allowed_actions,
    restrict_mask,
)
from hackmatrix_env.constants import NUM_ACTIONS
from hackmatrix_env.env import HackMatrix
from hackmatrix_env.observation import flatten_observation
from hackmatrix_env.types import EnvParams, Observation, check_integer

FLAT_FEATURES = 1545  # flatten_observation: player 10 + programs 23 + grid 6*6*42
FLAT_WITH_MASK = FLAT_FEATURES + NUM_ACTIONS  # 1573
MASK_SLICE = slice(FLAT_FEATURES, FLAT_WITH_MASK)  # the mask's place in the Box observation


def flatten_with_mask(obs: Observation) -> jax.Array:
    """float32[..., 1573]: ``flatten_observation(obs)`` then ``obs.action_mask`` as 0/1."""
    return jnp.concatenate([flatten_observation(obs), obs.action_mask.astype(jnp.float32)], axis=-1)


class _StatelessWrapper(GymnaxWrapper):
    """A gymnax wrapper that copies as itself.

    It holds nothing but the wrapped env, so a copy may be the same object. rejax's
    ``Algorithm.create`` deep-copies its config, env included, and gymnax's
    ``GymnaxWrapper.__getattr__`` recurses without end on a half-built copy (it looks
    up ``_env`` before it exists). Keeping the object also keeps jit caches warm
    (the wrapper is a static argument, hashed by identity).
    """

    def __copy__(self):
        return self

    def __deepcopy__(self, memo: dict) -> _StatelessWrapper:
        return self


class BoxObservationWrapper(MapObservations, _StatelessWrapper):
    """gymnax 1.0 env whose observation is the ``float32[1573]`` vector (module docstring)."""

    def observation_space(self, params: EnvParams | None = None) -> spaces.Box:
        del params
        return spaces.Box(0.0, np.inf, (FLAT_WITH_MASK,), jnp.float32)

    def map_observation(self, obs: Observation) -> jax.Array:
        return flatten_with_mask(obs)


class LegacyStepWrapper(_StatelessWrapper):
    """The gymnax pre-1.0 API over a gymnax 1.0 env: ``step`` returns a 5-tuple.

    ``(obs, state, reward, done, info)``, ``done = terminated | truncated``; ``info``
    keeps ``terminated``, ``truncated``, ``final_observation`` and adds ``discount``.
    ``reset`` and everything else pass through unchanged.
    """

    def step(
        self,
        key: jax.Array,
        state: Any,
        action: int | jax.Array,
        params: EnvParams | None = None,
    ) -> tuple[Any, Any, jax.Array, jax.Array, dict[str, Any]]:
        obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, params)
        done = jnp.logical_or(terminated, truncated)
        info = {
            **info,
            "terminated": terminated,
            "truncated": truncated,
            "discount": jnp.where(terminated, 0.0, 1.0).astype(jnp.float32),
        }
        return obs, state, reward, done, info


def make_legacy_env(
    max_steps_in_episode: int = 1000, start_stage: int = 1
) -> tuple[LegacyStepWrapper, EnvParams]:
    """``(env, params)`` for purejaxrl/rejax-style code: Box obs, episode logging, 5-tuple step.

    The stack is ``LegacyStepWrapper(LogWrapper(FlattenObservationWrapper(
    BoxObservationWrapper(HackMatrix()))))``; ``info`` carries LogWrapper's
    ``returned_episode_returns``/``_lengths``/``returned_episode``.
    """
    if check_integer("max_steps_in_episode", max_steps_in_episode) < 1:
        raise ValueError(f"max_steps_in_episode must be positive, got {max_steps_in_episode}")
    if not 1 <= check_integer("start_stage", start_stage) <= 8:
        raise ValueError(f"start_stage must be in 1..8, got {start_stage}")
    env = LegacyStepWrapper(
        LogWrapper(FlattenObservationWrapper(BoxObservationWrapper(HackMatrix())))
    )
    params = EnvParams(max_steps_in_episode=int(max_steps_in_episode), start_stage=int(start_stage))
    return env, params
