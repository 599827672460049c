"""Probe environments for the PPO trainer (after rejax's ``tests/environments.py``).

``ProbeSuite`` is one tiny gymnax 1.0 ``Environment`` holding six probes; each episode draws a
probe kind at random and shows it one-hot in the observation. One compiled trainer therefore
checks them all, and the analytic value / best action of each kind is known:

====  ===============  =====================================================  ==================
kind  name             dynamics                                               analytic result
====  ===============  =====================================================  ==================
0     constant         one step, reward 1                                     V = 1
1     obs-dependent    x = ±1 observed, one step, reward x                    V(x) = x
2     two-step         phase 0 reward 0, phase 1 reward 1 (terminal)          V0 = gamma, V1 = 1
3     action-dependent actions 0/1 valid; 1 pays +1, 0 pays -1                pi(1) -> 1, V = 1
4     masked-best      action 0 would pay +10 but is masked; 1 pays 1, 2 pays 0  pi(1) -> 1, V = 1
5     endless          reward 1 per step, never terminates, truncated at T    V = 1 / (1 - gamma)
====  ===============  =====================================================  ==================

Treating truncation as death would give kind 5 a value well below 1 / (1 - gamma). Taking a
masked action is invalid (reward 0, terminated), like HackMatrix, and is reported in
``info["invalid_action"]``. The observation is a NamedTuple with ``action_mask``, the same family
as ``hackmatrix_env.Observation``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment, spaces

NUM_KINDS = 6
CONSTANT, OBS_DEPENDENT, TWO_STEP, ACTION_DEPENDENT, MASKED_BEST, ENDLESS = range(NUM_KINDS)
NUM_ACTIONS = 3
# valid actions per kind
MASKS = jnp.array(
    [
        [True, False, False],
        [True, False, False],
        [True, False, False],
        [True, True, False],
        [False, True, True],
        [True, False, False],
    ]
)


class ProbeObs(NamedTuple):
    kind: jax.Array  # f32[NUM_KINDS]  one-hot probe kind
    features: jax.Array  # f32[2]  (x, phase)
    action_mask: jax.Array  # bool[NUM_ACTIONS]


@struct.dataclass
class ProbeState(environment.EnvState):
    kind: jax.Array  # int32[]
    x: jax.Array  # f32[]
    phase: jax.Array  # int32[]


@struct.dataclass
class ProbeParams(environment.EnvParams):
    max_steps_in_episode: int = 4


def probe_obs(kind: int, x: float = 0.0, phase: int = 0) -> ProbeObs:
    """The observation of a given probe situation (batch of one)."""
    return ProbeObs(
        jax.nn.one_hot(jnp.array([kind]), NUM_KINDS),
        jnp.array([[x, phase]], jnp.float32),
        MASKS[jnp.array([kind])],
    )


class ProbeSuite(environment.Environment):
    @property
    def default_params(self):
        return ProbeParams()

    @property
    def num_actions(self) -> int:
        return NUM_ACTIONS

    def action_space(self, params=None):
        return spaces.Discrete(NUM_ACTIONS)

    def _obs(self, s: ProbeState) -> ProbeObs:
        return ProbeObs(
            jax.nn.one_hot(s.kind, NUM_KINDS),
            jnp.stack([s.x, s.phase.astype(jnp.float32)]),
            MASKS[s.kind],
        )

    def reset_env(self, key, params):
        k_kind, k_x = jax.random.split(key)
        kind = jax.random.randint(k_kind, (), 0, NUM_KINDS)
        x = jnp.where((kind == OBS_DEPENDENT) & jax.random.bernoulli(k_x), 1.0, -1.0).astype(
            jnp.float32
        )
        x = jnp.where(kind == OBS_DEPENDENT, x, 0.0)
        s = ProbeState(time=jnp.int32(0), kind=kind, x=x, phase=jnp.int32(0))
        return self._obs(s), s

    def step_env(self, key, state, action, params):
        k = state.kind
        invalid = ~MASKS[k][action]
        reward = jnp.select(
            [
                k == CONSTANT,
                k == OBS_DEPENDENT,
                k == TWO_STEP,
                k == ACTION_DEPENDENT,
                k == MASKED_BEST,
            ],
            [
                1.0,
                state.x,
                jnp.where(state.phase == 1, 1.0, 0.0),
                jnp.where(action == 1, 1.0, -1.0),
                jnp.select([action == 0, action == 1], [10.0, 1.0], 0.0),
            ],
            1.0,  # ENDLESS
        )
        reward = jnp.where(invalid, 0.0, reward).astype(jnp.float32)
        terminated = (
            invalid | ((k != TWO_STEP) & (k != ENDLESS)) | ((k == TWO_STEP) & (state.phase == 1))
        )
        state = state.replace(time=state.time + 1, phase=state.phase + 1)
        info = {"invalid_action": invalid}
        return self._obs(state), state, reward, terminated, info
