"""The wrappers the README names work over ``HackMatrix``, or say which adapter to use.

Traced with ``jax.eval_shape`` (nothing compiles): running the stacks is covered by
``test_adapters.py`` (``make_legacy_env``) and ``test_jumanji.py`` (Jumanji's wrappers).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from gymnax.environments import spaces
from gymnax.wrappers.gym import GymnaxToGymWrapper
from gymnax.wrappers.purerl import FlattenObservationWrapper, LogWrapper
from hackmatrix_env import HackMatrix
from hackmatrix_env.adapters import (
    FLAT_WITH_MASK,
    BoxObservationWrapper,
    DisabledActionsWrapper,
    LegacyStepWrapper,
    make_legacy_env,
)
from hackmatrix_env.constants import Action
from hackmatrix_env.observation import flatten_observation

PARAMS = HackMatrix().default_params
KEY = jax.random.key(0)


def _shapes(env):
    """``(reset obs, step obs, step info)`` shapes of ``env``, traced only."""
    obs, state = jax.eval_shape(env.reset, KEY, PARAMS)
    out = jax.eval_shape(env.step, KEY, state, jnp.int32(int(Action.SIPHON)), PARAMS)
    return obs, out[0], out[-1]


FLATTEN_OVER_DICT = {
    "flatten": lambda: FlattenObservationWrapper(HackMatrix()),
    "log-over-flatten": lambda: LogWrapper(FlattenObservationWrapper(HackMatrix())),
}


@pytest.mark.parametrize("make", FLATTEN_OVER_DICT.values(), ids=FLATTEN_OVER_DICT.keys())
def test_flatten_wrapper_over_the_dict_observation_names_the_adapter(make):
    env = make()
    for call in (lambda: env.reset(KEY, PARAMS), lambda: _shapes(env)):
        with pytest.raises(TypeError, match="BoxObservationWrapper") as err:
            call()
        assert "make_legacy_env" in str(err.value) and "flatten_observation" in str(err.value)


@pytest.mark.parametrize("make", FLATTEN_OVER_DICT.values(), ids=FLATTEN_OVER_DICT.keys())
def test_flatten_wrapper_observation_space_over_the_dict_names_the_adapter(make):
    with pytest.raises(TypeError, match="BoxObservationWrapper") as err:
        make().observation_space(PARAMS)
    assert "make_legacy_env" in str(err.value) and "flatten_observation" in str(err.value)
    assert "Only Box spaces" not in str(err.value)


def test_the_observation_space_is_a_dict_that_names_the_adapter_when_used_as_a_box():
    space = HackMatrix().observation_space(PARAMS)
    assert isinstance(space, spaces.Dict) and not isinstance(space, (spaces.Box, spaces.Discrete))
    assert set(space.spaces) == {"player", "programs", "grid", "action_mask"}
    assert not hasattr(space, "shape")  # duck typing still reads it as no Box
    for name in ("shape", "low", "high", "dtype"):
        with pytest.raises(AttributeError, match="BoxObservationWrapper"):
            getattr(space, name)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        space.nothing  # noqa: B018
    # gymnax's conversion to a gym space reads it as the Dict it is
    gym_space = GymnaxToGymWrapper(HackMatrix()).observation_space
    assert set(gym_space.spaces) == set(space.spaces)
    assert gym_space["grid"].shape == (6, 6, 42)


def test_the_observation_is_never_silently_one_array():
    obs, _ = jax.eval_shape(HackMatrix().reset, KEY, PARAMS)
    with pytest.raises(TypeError, match="NamedTuple of four arrays"):
        jax.eval_shape(jnp.asarray, obs)
    assert jax.eval_shape(flatten_observation, obs).shape == (1545,)


def test_flatten_and_log_wrappers_over_the_box_adapter():
    env = LogWrapper(FlattenObservationWrapper(BoxObservationWrapper(HackMatrix())))
    reset_obs, step_obs, info = _shapes(env)
    assert reset_obs.shape == step_obs.shape == (FLAT_WITH_MASK,)
    assert info["final_observation"].shape == (FLAT_WITH_MASK,)
    assert {"returned_episode_returns", "returned_episode_lengths", "returned_episode"} <= set(info)
    assert env.observation_space(PARAMS).shape == (FLAT_WITH_MASK,)


def test_log_wrapper_directly_over_hackmatrix_keeps_the_observation():
    reset_obs, step_obs, info = _shapes(LogWrapper(HackMatrix()))
    assert reset_obs.grid.shape == step_obs.grid.shape == (6, 6, 42)
    assert info["returned_episode_returns"].shape == ()


def test_legacy_stack_and_disabled_actions_wrapper():
    env, params = make_legacy_env()
    assert params == PARAMS
    obs, state = jax.eval_shape(env.reset, KEY, params)
    out = jax.eval_shape(env.step, KEY, state, jnp.int32(0), params)
    assert obs.shape == out[0].shape == (FLAT_WITH_MASK,) and len(out) == 5
    assert isinstance(env, LegacyStepWrapper)
    reset_obs, _, info = _shapes(LogWrapper(DisabledActionsWrapper(HackMatrix(), [Action.UNDO])))
    assert reset_obs.action_mask.shape == (28,)
    assert info["final_observation"].action_mask.shape == (28,)
