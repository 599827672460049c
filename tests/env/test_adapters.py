"""The gymnax adapters: Box observation, pre-1.0 5-tuple step, gymnax's own wrappers, rejax's PPO.

One compile of its own: a tiny rejax PPO training run (a few updates over ``vmap``
of the full stack, gymnax's ``LogWrapper`` and ``FlattenObservationWrapper``
included). The eager wrapper checks reuse the plain ``HackMatrix.step`` program,
which the suite compiles anyway.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments import spaces
from hackmatrix_env import EnvParams, HackMatrix, flatten_observation
from hackmatrix_env.adapters import (
    FLAT_WITH_MASK,
    MASK_SLICE,
    BoxObservationWrapper,
    LegacyStepWrapper,
    make_legacy_env,
)

PLAIN = HackMatrix()
ENV, PARAMS = make_legacy_env(max_steps_in_episode=3)
PLAIN_PARAMS = EnvParams(max_steps_in_episode=3)


def _plain_box(obs) -> np.ndarray:
    return np.concatenate(
        [np.asarray(flatten_observation(obs)), np.asarray(obs.action_mask, np.float32)]
    )


def test_spaces_are_what_purejaxrl_and_rejax_read():
    box = ENV.observation_space(PARAMS)
    assert isinstance(box, spaces.Box) and box.shape == (FLAT_WITH_MASK,) == (1573,)
    assert (
        isinstance(ENV.action_space(PARAMS), spaces.Discrete) and ENV.action_space(PARAMS).n == 28
    )
    assert ENV.default_params == PLAIN.default_params  # attribute access passes through
    with pytest.raises(ValueError, match="max_steps_in_episode"):
        make_legacy_env(max_steps_in_episode=0)
    with pytest.raises(ValueError, match="start_stage"):
        make_legacy_env(start_stage=0)


def test_legacy_step_plays_the_plain_game_and_keeps_truncation():
    """Same key, same actions: the 5-tuple env equals ``HackMatrix.step`` field for field.

    Called eagerly, the wrappers run the plain env's compiled ``step`` (no new program);
    gymnax's ``LogWrapper`` and ``FlattenObservationWrapper`` (jitted) are covered by the
    rejax test and by ``tests/examples/test_purejaxrl_ppo.py``.
    """
    box = BoxObservationWrapper(PLAIN)
    env = LegacyStepWrapper(box)
    key = jax.random.key(7)  # legacy uint32[2] keys: the rejax test below
    obs, state = env.reset(key, PLAIN_PARAMS)
    p_obs, p_state = PLAIN.reset(key, PLAIN_PARAMS)
    np.testing.assert_array_equal(np.asarray(obs), _plain_box(p_obs))
    assert obs.dtype == jnp.float32 and obs.shape == (FLAT_WITH_MASK,)
    assert len(box.step(key, state, 0, PLAIN_PARAMS)) == 6  # the gymnax 1.0 tuple, flattened
    outcomes = []
    # First an invalid action (terminates at time 1), then valid steps in the next game
    # until its 3-step limit truncates it.
    for t in range(5):
        mask = np.asarray(p_obs.action_mask)
        action = int(np.flatnonzero(~mask)[0]) if t == 0 else int(np.flatnonzero(mask)[0])
        key, k = jax.random.split(key)
        obs, state, reward, done, info = env.step(k, state, action, PLAIN_PARAMS)
        p_obs, p_state, p_rew, p_term, p_trunc, p_info = PLAIN.step(
            k, p_state, action, PLAIN_PARAMS
        )
        np.testing.assert_array_equal(np.asarray(obs), _plain_box(p_obs))
        np.testing.assert_array_equal(
            np.asarray(obs[MASK_SLICE]), np.asarray(p_obs.action_mask, np.float32)
        )
        np.testing.assert_array_equal(
            np.asarray(info["final_observation"]), _plain_box(p_info["final_observation"])
        )
        assert float(reward) == float(p_rew)
        assert bool(done) == (bool(p_term) or bool(p_trunc))
        assert (bool(info["terminated"]), bool(info["truncated"])) == (bool(p_term), bool(p_trunc))
        assert float(info["discount"]) == (0.0 if bool(p_term) else 1.0)
        outcomes.append((bool(p_term), bool(p_trunc)))
    assert outcomes[0] == (True, False)  # the invalid action
    assert outcomes[3] == (False, True)  # a truncation, kept apart from termination


def test_rejax_ppo_trains_through_the_adapter():
    """rejax 0.1.x's PPO, unchanged, for two updates of 4 envs x 8 steps."""
    from rejax import PPO

    algo = PPO.create(
        env=ENV,
        env_params=EnvParams(max_steps_in_episode=20),
        num_envs=4,
        num_steps=8,
        num_epochs=1,
        num_minibatches=2,
        total_timesteps=64,
        eval_freq=64,
        skip_initial_evaluation=True,
        agent_kwargs={"hidden_layer_sizes": (16,)},
    )
    # rejax's default evaluation plays 128 full episodes; count the steps instead.
    algo = algo.replace(eval_callback=lambda algo, ts, rng: ts.global_step)
    key = jax.random.PRNGKey(0)
    init = algo.init_state(key)
    ts, evaluation = jax.jit(algo.train)(train_state=init)
    assert int(ts.global_step) == 64 and evaluation.tolist() == [64]
    before = jax.tree.leaves(init.actor_ts.params)
    after = jax.tree.leaves(ts.actor_ts.params)
    assert all(bool(jnp.all(jnp.isfinite(a))) for a in after)
    assert any(not bool(jnp.array_equal(a, b)) for a, b in zip(before, after, strict=True))
    assert ts.last_obs.shape == (4, FLAT_WITH_MASK)
