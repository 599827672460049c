"""The rollout (``rollout.collect_rollout``): the pre-step observation and its mask, truncation's
bootstrap value, and HackMatrix's episode sums (``stats.track_episodes``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_env import EnvParams, HackMatrix
from hackmatrix_env.constants import NUM_REWARD_COMPONENTS
from hackmatrix_train.rollout import collect_rollout
from hackmatrix_train.stats import init_episode_acc, track_episodes
from train.train_probes import ENDLESS, ProbeParams, ProbeSuite

N, T = 16, 24
FINAL_VALUE = 7.0


def seen_actor(params, obs, env_state, key):
    """Uniform over the valid actions; as ``extra``, the mask and features it chose from."""
    del params, env_state
    action = jax.random.categorical(key, jnp.where(obs.action_mask, 0.0, -1e9)).astype(jnp.int32)
    return action, jnp.zeros(action.shape), jnp.ones(action.shape), obs


def constant_value(params, obs):
    del params
    return jnp.full(obs.action_mask.shape[:-1], FINAL_VALUE)


def reset(env, env_params, n, seed=1):
    return jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(jax.random.key(seed), n), env_params
    )


@pytest.fixture(scope="module")
def probe_rollout():
    """Two rollouts of T steps on the probe suite, the second continuing the first."""
    env, env_params = ProbeSuite(), ProbeParams(max_steps_in_episode=4)

    @jax.jit
    def run():
        obs, state = reset(env, env_params, N)
        first = collect_rollout(
            seen_actor, constant_value, jax.random.key(2), None, env, env_params, state, obs,
            None, T,
        )  # fmt: skip
        state2, obs2 = first[0], first[1]
        second = collect_rollout(
            seen_actor, constant_value, jax.random.key(3), None, env, env_params, state2, obs2,
            None, T,
        )  # fmt: skip
        return obs, first, second

    return jax.device_get(run())


def test_the_stored_observation_is_the_one_the_action_was_chosen_from(probe_rollout):
    obs0, first, second = probe_rollout
    traj, extras = first[3], first[4]
    np.testing.assert_array_equal(traj.obs.action_mask, extras.action_mask)
    np.testing.assert_array_equal(traj.obs.features, extras.features)
    np.testing.assert_array_equal(traj.obs.action_mask[0], obs0.action_mask)  # pre-step at t=0
    np.testing.assert_array_equal(traj.obs.kind[0], obs0.kind)
    # the rollout returns the observation after its last step: where the next one starts
    np.testing.assert_array_equal(second[3].obs.kind[0], first[1].kind)
    np.testing.assert_array_equal(second[3].obs.features[0], first[1].features)


def test_every_action_is_valid_under_its_stored_mask(probe_rollout):
    for part in probe_rollout[1:]:
        traj = part[3]
        assert np.take_along_axis(traj.obs.action_mask, traj.action[..., None], -1).all()


def test_truncated_steps_bootstrap_from_the_final_observations_value(probe_rollout):
    """``final_value`` is V(final observation) exactly where the episode was truncated."""
    traj = probe_rollout[1][3]
    truncated, terminated = np.asarray(traj.truncated), np.asarray(traj.terminated)
    assert truncated.any() and terminated.any()
    np.testing.assert_array_equal(traj.final_value, np.where(truncated, FINAL_VALUE, 0.0))
    # only the endless probe (kind 5) runs into the step limit
    assert (traj.obs.kind[truncated].argmax(-1) == ENDLESS).all()


def test_no_tracker_gives_no_sums_and_leaves_the_accumulator_alone(probe_rollout):
    _, first, _ = probe_rollout
    assert first[2] is None and first[5] == {}
    assert not np.asarray(first[3].shaping).any()  # no shaping: 0 on every step


def test_episode_sums_add_up_to_the_episodes_rewards():
    """From fresh games, every completed episode lies inside the rollout: its sums are the
    rewards, lengths and reward components of the steps up to each episode's end."""
    env, env_params = HackMatrix(), EnvParams(max_steps_in_episode=12)

    @jax.jit
    def run():
        obs, state = reset(env, env_params, N)
        acc = init_episode_acc(N, NUM_REWARD_COMPONENTS)
        return collect_rollout(
            seen_actor, constant_value, jax.random.key(4), None, env, env_params, state, obs,
            acc, T, track=track_episodes,
        )  # fmt: skip

    _, _, acc, traj, _, sums = jax.device_get(run())
    reward = np.asarray(traj.reward)
    done = np.asarray(traj.terminated | traj.truncated)
    # per env: the reward so far in the episode in progress, cut where an episode ends
    completed_return, completed_length, running, length = 0.0, 0, np.zeros(N), np.zeros(N)
    for t in range(T):
        running += reward[t]
        length += 1
        completed_return += running[done[t]].sum()
        completed_length += length[done[t]].sum()
        running[done[t]], length[done[t]] = 0.0, 0
    assert sums["ep_count"] == done.sum() > 0
    assert sums["ep_return"] == pytest.approx(completed_return, abs=1e-3)
    assert sums["ep_length"] == completed_length
    assert sums["ep_breakdown"].sum() == pytest.approx(completed_return, abs=1e-3)
    np.testing.assert_allclose(acc.ret, running, atol=1e-4)  # the episodes still in progress
    np.testing.assert_array_equal(acc.length, length)
    assert sums["action_counts"].sum() == N * T
    assert sums["action_counts"].shape == (traj.obs.action_mask.shape[-1],)
