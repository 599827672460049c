"""Start-stage curriculum: a gymnax wrapper whose resets start at a random stage.

``StageCurriculum(env, max_stage)`` draws, for every reset (explicit or gymnax's auto-reset inside
``step``), a start stage uniformly from ``params.start_stage .. max_stage`` and passes it to the
wrapped env as ``params.start_stage`` (HackMatrix: ``EnvParams.start_stage``, rules §10 with
``task_interval = 13 - stage``). The draw uses ``fold_in(key, _STAGE_SITE)``, so the wrapped env
sees the very same key as without the wrapper: with ``max_stage == params.start_stage`` the
trajectory is identical to the bare env's.

Evaluation should use the bare env at stage 1 (the real game); training curves of a curriculum
run mix start stages.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

_STAGE_SITE = 0x5747  # fold_in site of the start-stage draw


class StageCurriculum:
    """Wrap a gymnax env whose params have ``start_stage``; resets start in ``start_stage..max_stage``."""

    def __init__(self, env, max_stage: int):
        if not 1 <= int(max_stage) <= 8:
            raise ValueError(f"curriculum max stage must be in 1..8, got {max_stage}")
        self._env = env
        self.max_stage = int(max_stage)

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and other._env == self._env
            and other.max_stage == self.max_stage
        )

    def __hash__(self) -> int:
        return hash((type(self), self._env, self.max_stage))

    @property
    def unwrapped(self):
        """The bare env underneath (evaluate on it: the real game starts at ``params.start_stage``)."""
        return getattr(self._env, "unwrapped", self._env)

    def __getattr__(self, name):  # default_params, num_actions, spaces, name, ...
        return getattr(self.__dict__["_env"], name)

    def draw_params(self, key: jax.Array, params):
        """``params`` with ``start_stage`` drawn uniformly from ``start_stage..max_stage``."""
        lo = jnp.asarray(params.start_stage, jnp.int32)
        hi = jnp.maximum(lo, self.max_stage)
        stage = jax.random.randint(jax.random.fold_in(key, _STAGE_SITE), (), lo, hi + 1)
        return params.replace(start_stage=stage)

    def reset(self, key: jax.Array, params=None):
        params = self._env.default_params if params is None else params
        return self._env.reset(key, self.draw_params(key, params))

    def step(self, key: jax.Array, state, action, params=None):
        params = self._env.default_params if params is None else params
        return self._env.step(key, state, action, self.draw_params(key, params))
