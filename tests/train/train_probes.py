"""Probe environments for the PPO trainer (after rejax's ``tests/environments.py``).

Each probe is a tiny gymnax 1.0 ``Environment`` whose observation is a NamedTuple with an
``action_mask`` (the same family as ``hackmatrix_env.Observation``), so the trainer runs on it
unchanged. The analytic value of each probe is known, so a correct PPO must learn it.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment, spaces


class ProbeObs(NamedTuple):
    features: jax.Array  # f32[2]
    action_mask: jax.Array  # bool[A]


@struct.dataclass
class ProbeState(environment.EnvState):
    x: jax.Array  # f32[]  observed feature
    phase: jax.Array  # int32[]


@struct.dataclass
class ProbeParams(environment.EnvParams):
    max_steps_in_episode: int = 100


class _Probe(environment.Environment):
    n_actions = 1

    @property
    def default_params(self):
        return ProbeParams()

    @property
    def num_actions(self) -> int:
        return self.n_actions

    def action_space(self, params=None):
        return spaces.Discrete(self.n_actions)

    def mask(self, state) -> jax.Array:
        return jnp.ones(self.n_actions, bool)

    def obs(self, state) -> ProbeObs:
        return ProbeObs(jnp.stack([state.x, state.phase.astype(jnp.float32)]), self.mask(state))

    def reset_env(self, key, params):
        state = ProbeState(time=jnp.int32(0), x=jnp.float32(0.0), phase=jnp.int32(0))
        return self.obs(state), state

    def _finish(self, state, reward, terminated):
        state = state.replace(time=state.time + 1)
        info = {"invalid_action": jnp.bool_(False)}
        return self.obs(state), state, jnp.float32(reward), jnp.bool_(terminated), info


class ConstantReward(_Probe):
    """One step, reward 1: V = 1."""

    def step_env(self, key, state, action, params):
        return self._finish(state, 1.0, True)


class ObsDependentReward(_Probe):
    """Observation x = ±1 at random, one step, reward x: V(x) = x."""

    def reset_env(self, key, params):
        x = jnp.where(jax.random.bernoulli(key), 1.0, -1.0).astype(jnp.float32)
        state = ProbeState(time=jnp.int32(0), x=x, phase=jnp.int32(0))
        return self.obs(state), state

    def step_env(self, key, state, action, params):
        return self._finish(state, state.x, True)


class TwoStepDiscount(_Probe):
    """Phase 0 (reward 0) then phase 1 (reward 1, terminal): V0 = gamma, V1 = 1."""

    def step_env(self, key, state, action, params):
        reward = jnp.where(state.phase == 1, 1.0, 0.0)
        term = state.phase == 1
        state = state.replace(phase=state.phase + 1, x=jnp.float32(1.0))
        return self._finish(state, reward, term)


class ActionDependentReward(_Probe):
    """Two actions, one step: action 1 pays +1, action 0 pays -1. Optimal V = 1."""

    n_actions = 2

    def step_env(self, key, state, action, params):
        return self._finish(state, jnp.where(action == 1, 1.0, -1.0), True)


class MaskedBestAction(_Probe):
    """Three actions; action 0 would pay +10 but is always masked; 1 pays +1, 2 pays 0.

    Taking the masked action counts as invalid (reward 0, terminated), like HackMatrix.
    """

    n_actions = 3

    def mask(self, state):
        return jnp.array([False, True, True])

    def step_env(self, key, state, action, params):
        reward = jnp.select([action == 0, action == 1], [10.0, 1.0], 0.0)
        state2 = state.replace(time=state.time + 1)
        info = {"invalid_action": action == 0}
        return self.obs(state2), state2, jnp.float32(reward), jnp.bool_(True), info


class EndlessReward(_Probe):
    """Never terminates, reward 1 per step, truncated by max_steps: V = 1 / (1 - gamma).

    Treating truncation as death would instead give a value well below 1 / (1 - gamma).
    """

    def step_env(self, key, state, action, params):
        return self._finish(state, 1.0, False)
