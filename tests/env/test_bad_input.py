"""Bad input to the env is loud: params checked on the host, non-integer actions refused.

Out-of-range *integer* actions keep their documented meaning (an invalid action: reward 0,
terminated, interface §2); a float action is a ``TypeError`` at trace time, never rounded.
Traced with ``jax.eval_shape`` where possible, so nothing new compiles.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_env import EnvParams, HackMatrix
from hackmatrix_env.adapters import make_legacy_env
from hackmatrix_env.gymnasium import make_params
from hackmatrix_env.jumanji import HackMatrixJumanji

ENV = HackMatrix()
KEY = jax.random.key(0)


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"start_stage": 9}, r"start_stage must be in 1\.\.8, got 9"),
        ({"start_stage": 0}, r"start_stage must be in 1\.\.8, got 0"),
        ({"start_stage": -1}, r"start_stage must be in 1\.\.8"),
        ({"start_stage": 2.5}, "start_stage must be an integer"),
        ({"start_stage": np.array([1, 9])}, r"start_stage must be in 1\.\.8"),
        ({"max_steps_in_episode": 0}, "max_steps_in_episode must be >= 1, got 0"),
        ({"max_steps_in_episode": -5}, "max_steps_in_episode must be >= 1"),
        ({"max_steps_in_episode": 10.0}, "max_steps_in_episode must be an integer"),
        ({"max_steps_in_episode": True}, "max_steps_in_episode must be an integer"),
        ({"max_steps_in_episode": "100"}, "max_steps_in_episode must be an integer"),
        ({"history_depth": 0}, "history_depth"),
    ],
)
def test_env_params_are_checked_on_the_host(fields, match):
    with pytest.raises(ValueError, match=match):
        EnvParams(**fields)
    with pytest.raises(ValueError, match=match):
        EnvParams().replace(**fields)


def test_wrappers_and_adapters_refuse_what_they_used_to_truncate():
    with pytest.raises(ValueError, match="start_stage must be an integer"):
        make_legacy_env(start_stage=2.5)
    with pytest.raises(ValueError, match="start_stage must be an integer"):
        HackMatrixJumanji(start_stage=2.5)
    with pytest.raises(ValueError, match="max_episode_steps must be an integer"):
        make_params(10.5, 1)


def test_traced_and_vmapped_params_are_not_checked():
    """jit, vmap over params, and a tree of axes (zeros) rebuild EnvParams unchecked."""
    params = EnvParams(max_steps_in_episode=np.array([3, 4]), start_stage=np.array([1, 2]))
    axes = jax.tree.map(lambda _: 0, params)  # zeros: would fail the host check
    assert axes.start_stage == 0 and axes.max_steps_in_episode == 0
    keys = jax.random.split(KEY, 2)
    _, states = jax.eval_shape(jax.vmap(ENV.reset, in_axes=(0, axes)), keys, params)
    assert states.game.stage.shape == (2,)
    made_inside = jax.eval_shape(lambda s: EnvParams(start_stage=s).start_stage, jnp.int32(3))
    assert made_inside.shape == ()
    assert jax.tree_util.keystr(jax.tree_util.tree_flatten_with_path(params)[0][1][0]) == (
        ".start_stage"
    )


def _stepped(action, env=ENV):
    _obs, state = jax.eval_shape(env.reset, KEY, env.default_params)
    return jax.eval_shape(env.step, KEY, state, action, env.default_params)


@pytest.mark.parametrize("action", [2.7, 2.0, jnp.float32(1.0), np.float64(3.0), True])
def test_a_non_integer_action_is_a_type_error(action):
    with pytest.raises(TypeError, match="action must have an integer dtype"):
        _stepped(action)
    _obs, state = jax.eval_shape(ENV.reset, KEY, ENV.default_params)
    with pytest.raises(TypeError, match=r"HackMatrix\.step_env: the action must have an integer"):
        jax.eval_shape(ENV.step_env, KEY, state, action, ENV.default_params)
    jumanji = HackMatrixJumanji()
    jstate, _ = jax.eval_shape(jumanji.reset, KEY)
    with pytest.raises(TypeError, match=r"HackMatrixJumanji\.step: the action must have"):
        jax.eval_shape(jumanji.step, jstate, action)


def test_a_batch_of_float_actions_is_a_type_error_under_vmap():
    keys = jax.random.split(KEY, 3)
    _, states = jax.eval_shape(jax.vmap(ENV.reset, in_axes=(0, None)), keys, ENV.default_params)
    step = jax.vmap(ENV.step, in_axes=(0, 0, 0, None))
    with pytest.raises(TypeError, match="integer dtype"):
        jax.eval_shape(step, keys, states, jnp.array([1.0, 2.0, 3.0]), ENV.default_params)
    out = jax.eval_shape(step, keys, states, jnp.array([1, 2, 3], jnp.uint8), ENV.default_params)
    assert out[2].shape == (3,)


def test_out_of_range_integer_actions_are_invalid_actions():
    _obs, state = ENV.reset(KEY, ENV.default_params)
    for action in (-1, 28, 99, np.int64(1000)):
        _, _after, reward, terminated, _, info = ENV.step(KEY, state, action, ENV.default_params)
        assert bool(info["invalid_action"]) and bool(terminated) and float(reward) == 0.0
