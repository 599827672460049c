"""Start-stage curriculum wrapper (``--start-stage-max``): draws, key pass-through, wiring."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct
from gymnax.environments import environment
from hackmatrix_train.cli import build_parser, config_from_args, default_run_name
from hackmatrix_train.curriculum import StageCurriculum


@struct.dataclass
class StageParams(environment.EnvParams):
    start_stage: int = 1


class StageEcho:
    """Minimal env: reset/step report the start stage and the key they were given."""

    default_params = StageParams()
    num_actions = 2

    def __eq__(self, other):
        return type(other) is type(self)

    def __hash__(self):
        return hash(type(self))

    def reset(self, key, params):
        return (jnp.asarray(params.start_stage, jnp.int32), jax.random.key_data(key)), None

    def step(self, key, state, action, params):
        del state, action
        return self.reset(key, params)


CURRICULUM = StageCurriculum(StageEcho(), max_stage=5)
KEYS = jax.random.split(jax.random.key(0), 4000)
PARAMS = StageParams(start_stage=2)


@jax.jit
def reset_all(keys, params):
    return jax.vmap(CURRICULUM.reset, in_axes=(0, None))(keys, params)[0]


@jax.jit
def step_all(keys, params):
    return jax.vmap(CURRICULUM.step, in_axes=(0, None, None, None))(keys, None, 0, params)[0]


def test_stages_cover_exactly_start_to_max_uniformly():
    stages, _ = reset_all(KEYS, PARAMS)
    counts = np.bincount(np.asarray(stages), minlength=9)
    assert counts[:2].sum() == 0 and counts[6:].sum() == 0  # only 2..5
    # 4 stages x ~1000 draws each: every count within 5 binomial sd of 1000
    assert np.all(np.abs(counts[2:6] - 1000) < 5 * np.sqrt(4000 * 0.25 * 0.75))


def test_step_draws_like_reset_and_passes_the_key_through():
    s_reset, k_reset = reset_all(KEYS, PARAMS)
    s_step, k_step = step_all(KEYS, PARAMS)
    np.testing.assert_array_equal(s_reset, s_step)  # same key -> same stage (deterministic)
    np.testing.assert_array_equal(k_reset, jax.random.key_data(KEYS))  # env sees the same key
    np.testing.assert_array_equal(k_step, jax.random.key_data(KEYS))


def test_max_equal_to_start_is_the_bare_env():
    env = StageCurriculum(StageEcho(), max_stage=3)
    (stages, _), _ = jax.vmap(env.reset, in_axes=(0, None))(KEYS[:50], StageParams(start_stage=3))
    assert np.all(np.asarray(stages) == 3)


def test_wrapper_delegates_and_is_hashable():
    assert CURRICULUM.num_actions == 2 and CURRICULUM.unwrapped == StageEcho()
    same, other = StageCurriculum(StageEcho(), 5), StageCurriculum(StageEcho(), 4)
    assert same == CURRICULUM and other != CURRICULUM
    assert hash(CURRICULUM) == hash(StageCurriculum(StageEcho(), 5))
    with pytest.raises(ValueError, match=r"1\.\.8"):
        StageCurriculum(StageEcho(), 9)


def test_cli_flag_and_run_name():
    cfg, explicit = config_from_args(build_parser().parse_args(["--start-stage-max", "4"]))
    assert cfg.start_stage_max == 4 and "start_stage_max" in explicit
    assert default_run_name(cfg) == "ppo-grid-256x32-s0-to4"
    cfg, _ = config_from_args(build_parser().parse_args([]))
    assert cfg.start_stage_max is None and default_run_name(cfg) == "ppo-grid-256x32-s0"
