"""The Jumanji adapter: specs, key discipline, timesteps, Jumanji's own smoke checks and wrappers."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_env.jumanji import HackMatrixJumanji, State
from hackmatrix_env.scenario import state_from_json
from hackmatrix_env.types import Observation
from jumanji import specs
from jumanji.testing.env_not_smoke import check_env_does_not_smoke, check_env_specs_does_not_smoke
from jumanji.types import StepType
from jumanji.wrappers import AutoResetWrapper, VmapWrapper

ENV = HackMatrixJumanji()
_step = jax.jit(ENV.step)


def test_specs():
    check_env_specs_does_not_smoke(ENV)
    assert isinstance(ENV.action_spec, specs.DiscreteArray) and ENV.action_spec.num_values == 28
    _, ts = ENV.reset(jax.random.key(0))
    ENV.observation_spec.validate(ts.observation)
    assert isinstance(ts.observation, Observation)
    assert ts.step_type == StepType.FIRST and float(ts.discount) == 1.0
    assert set(ts.extras) == {"reward_breakdown", "action_kind", "invalid_action"}
    with pytest.raises(ValueError):
        HackMatrixJumanji(start_stage=9)


def test_does_not_smoke():
    check_env_does_not_smoke(ENV)  # random unmasked actions, legacy PRNGKey


def _game_state(d, key=0):
    return State(env_state=state_from_json(d), key=jax.random.key(key))


def test_step_key_discipline_and_transition():
    state = _game_state({"player": {"row": 0, "col": 0}})
    nxt, ts = _step(state, jnp.int32(0))
    expected_key, _ = jax.random.split(state.key)
    assert np.array_equal(jax.random.key_data(nxt.key), jax.random.key_data(expected_key))
    assert ts.step_type == StepType.MID and float(ts.discount) == 1.0
    assert float(ts.reward) == pytest.approx(0.04, abs=1e-6)  # interface §4.8 E1
    assert nxt.env_state.game.player.pos.tolist() == [1, 0] and int(nxt.env_state.time) == 1
    assert int(nxt.env_state.history.size) == 1  # the real enemy phase's snapshot


def test_invalid_action_terminates_with_zero_discount():
    state = _game_state({"player": {"row": 0, "col": 0}})
    nxt, ts = _step(state, jnp.int32(1))
    assert ts.step_type == StepType.LAST and float(ts.discount) == 0.0
    assert float(ts.reward) == 0.0 and bool(ts.extras["invalid_action"])
    assert nxt.env_state.game.player.pos.tolist() == [0, 0]  # no auto-reset inside the env


@pytest.mark.slow
def test_truncation():
    env = HackMatrixJumanji(max_steps=1)
    state = _game_state({"player": {"row": 0, "col": 0}})
    _, ts = jax.jit(env.step)(state, jnp.int32(0))
    assert ts.step_type == StepType.LAST and float(ts.discount) == 1.0


@pytest.mark.slow
def test_auto_reset_and_vmap_wrappers():
    env = VmapWrapper(AutoResetWrapper(ENV))
    n = 4
    state, ts = jax.jit(env.reset)(jax.random.split(jax.random.key(1), n))
    step = jax.jit(env.step)
    # First an invalid action everywhere (terminates), then masked random actions.
    bad = jnp.argmin(ts.observation.action_mask, axis=-1).astype(jnp.int32)
    state, ts = step(state, bad)
    assert (np.asarray(ts.step_type) == StepType.LAST).all()
    assert (np.asarray(state.env_state.time) == 0).all()  # reset by the wrapper
    key = jax.random.key(2)
    for _ in range(3):
        key, sub = jax.random.split(key)
        g = jax.random.gumbel(sub, ts.observation.action_mask.shape)
        actions = jnp.argmax(jnp.where(ts.observation.action_mask, g, -jnp.inf), -1)
        state, ts = step(state, actions.astype(jnp.int32))
        assert not np.asarray(ts.extras["invalid_action"]).any()
        assert ts.observation.grid.shape == (n, 6, 6, 42)
