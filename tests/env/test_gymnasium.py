"""The Gymnasium envs: env_checker, registered ids, SAME_STEP autoreset, same games as gymnax, bad input.

Compiles two programs of its own (the batched reset and step of ``hackmatrix_env.vector``
at ``N`` games); the single env and the gymnax reference call ``HackMatrix.reset``/``step``
unbatched, which the rest of the suite compiles too.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import jax
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from hackmatrix_env import EnvParams, HackMatrix
from hackmatrix_env.gymnasium import ENV_ID, HackMatrixEnv, HackMatrixVectorEnv

N = 3
MAX_STEPS = 7  # short episodes, so truncations happen within a few steps
SEED = 11
NUM_STEPS = 16
GYMNAX = HackMatrix()
PARAMS = EnvParams(max_steps_in_episode=MAX_STEPS)
OBS_KEYS = ("player", "programs", "grid", "action_mask")


def _obs_dict(obs) -> dict[str, np.ndarray]:
    """A gymnax ``Observation`` in the Gymnasium Dict layout."""
    return {
        "player": np.asarray(obs.player),
        "programs": np.asarray(obs.programs),
        "grid": np.asarray(obs.grid),
        "action_mask": np.asarray(obs.action_mask).astype(np.int8),
    }


def _assert_obs_equal(got: dict, want: dict) -> None:
    for k in OBS_KEYS:
        assert got[k].dtype == want[k].dtype, k
        np.testing.assert_allclose(got[k], want[k], rtol=0, atol=1e-6, err_msg=k)


def _masked_action(rng: np.random.Generator, mask: np.ndarray) -> int:
    """A uniform random valid action, or the first invalid one with probability 1/8."""
    if rng.random() < 0.125 and not mask.all():
        return int(np.flatnonzero(~mask)[0])  # an invalid action terminates (interface §2)
    return int(rng.choice(np.flatnonzero(mask)))


@pytest.fixture(scope="module")
def vector_run():
    """A trajectory of ``HackMatrixVectorEnv(N)``: reset output, then per step actions and outputs."""
    env = HackMatrixVectorEnv(N, max_episode_steps=MAX_STEPS)
    rng = np.random.default_rng(0)
    first = env.reset(seed=SEED)
    steps = []
    for _ in range(NUM_STEPS):
        masks = env.action_masks()
        actions = np.array([_masked_action(rng, m) for m in masks], np.int64)
        steps.append((actions, masks, env.step(actions)))
    env.close()
    return first, steps


def test_check_env_passes():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any other finding of the checker fails the test
        warnings.filterwarnings("ignore", message=".*infinity.*")  # Box(0, inf): interface §3.6
        warnings.filterwarnings("ignore", message=".*spec.*")
        check_env(HackMatrixEnv(render_mode="ansi"), skip_render_check=False)
        check_env(HackMatrixEnv(flatten=True))


def test_registered_ids_build_both_envs():
    env = gym.make(ENV_ID, max_episode_steps=50)  # gymnasium.make's TimeLimit takes this one
    assert isinstance(env.unwrapped, HackMatrixEnv) and env.spec.max_episode_steps == 50
    assert isinstance(gym.make(f"hackmatrix_env.gymnasium:{ENV_ID}").unwrapped, HackMatrixEnv)
    vec = gym.make_vec(ENV_ID, num_envs=4, flatten=True, max_episode_steps=50)
    assert isinstance(vec, HackMatrixVectorEnv) and vec.num_envs == 4 and vec.flatten
    assert vec.params.max_steps_in_episode == 50
    assert gym.make_vec(ENV_ID, num_envs=2).params.max_steps_in_episode == 1000
    assert vec.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert vec.observation_space.shape == (4, 1545) and vec.action_space.shape == (4,)
    sync = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="sync")
    assert isinstance(sync, SyncVectorEnv) and isinstance(sync.envs[0].unwrapped, HackMatrixEnv)


def test_vector_env_plays_the_gymnax_games(vector_run):
    """Row i equals gymnax's ``HackMatrix`` started from ``key(SEED + i)`` with the documented chain."""
    (obs0, _), steps = vector_run
    ended = 0
    for i in range(N):
        chain, k = jax.random.split(jax.random.key(SEED + i))
        obs, state = GYMNAX.reset(k, PARAMS)
        _assert_obs_equal({k_: v[i] for k_, v in obs0.items()}, _obs_dict(obs))
        for actions, masks, (v_obs, v_rew, v_term, v_trunc, v_info) in steps:
            np.testing.assert_array_equal(masks[i], np.asarray(obs.action_mask))
            chain, k = jax.random.split(chain)
            obs, state, reward, term, trunc, info = GYMNAX.step(k, state, int(actions[i]), PARAMS)
            _assert_obs_equal({k_: v[i] for k_, v in v_obs.items()}, _obs_dict(obs))
            assert v_rew[i] == pytest.approx(float(reward), abs=1e-6)
            assert (v_term[i], v_trunc[i]) == (bool(term), bool(trunc))
            done = bool(term) or bool(trunc)
            assert v_info["_final_obs"][i] == done if "_final_obs" in v_info else not done
            if done:  # SAME_STEP: the ended episode's last observation and info ride along
                ended += 1
                _assert_obs_equal(v_info["final_obs"][i], _obs_dict(info["final_observation"]))
                final = v_info["final_info"]
                np.testing.assert_allclose(final["reward_breakdown"][i], info["reward_breakdown"])
                assert final["invalid_action"][i] == bool(info["invalid_action"])
                assert np.sum(final["reward_breakdown"][i]) == pytest.approx(v_rew[i], abs=1e-5)
            else:
                np.testing.assert_allclose(v_info["reward_breakdown"][i], info["reward_breakdown"])
                assert v_info["invalid_action"][i] == bool(info["invalid_action"])
    assert ended >= N  # every game ended at least once (truncation at 7 steps)


def test_vector_env_equals_sync_vector_env_in_same_step_mode(vector_run):
    """Gymnasium's own SAME_STEP vectoriser over ``HackMatrixEnv``: same arrays, same info layout."""
    (obs0, info0), steps = vector_run
    sync = SyncVectorEnv(
        [lambda: HackMatrixEnv(max_episode_steps=MAX_STEPS) for _ in range(N)],
        autoreset_mode=AutoresetMode.SAME_STEP,
    )
    s_obs, s_info = sync.reset(seed=SEED)
    _assert_obs_equal(obs0, s_obs)
    _assert_info_equal(info0, s_info)
    for actions, _, (v_obs, v_rew, v_term, v_trunc, v_info) in steps:
        s_obs, s_rew, s_term, s_trunc, s_info = sync.step(actions)
        _assert_obs_equal(v_obs, s_obs)
        np.testing.assert_allclose(v_rew, s_rew, atol=1e-6)
        np.testing.assert_array_equal(v_term, s_term)
        np.testing.assert_array_equal(v_trunc, s_trunc)
        _assert_info_equal(v_info, s_info)
    sync.close()


def _assert_info_equal(ours: dict, theirs: dict) -> None:
    assert set(ours) == set(theirs)
    for k, v in theirs.items():
        if k == "final_obs":
            for a, b in zip(ours[k], v, strict=True):
                assert (a is None) == (b is None)
                if b is not None:
                    _assert_obs_equal(a, b)
        elif isinstance(v, dict):
            _assert_info_equal(ours[k], v)
        else:
            assert ours[k].dtype == v.dtype, k
            np.testing.assert_allclose(ours[k], v, atol=1e-6, err_msg=k)


def test_flat_observation_is_the_dict_flattened():
    env = HackMatrixVectorEnv(N, flatten=True, max_episode_steps=MAX_STEPS)
    flat, _ = env.reset(seed=SEED)
    d, _ = HackMatrixVectorEnv(N, max_episode_steps=MAX_STEPS).reset(seed=SEED)
    want = np.concatenate([d["player"], d["programs"], d["grid"].reshape(N, -1)], axis=1)
    assert flat.shape == (N, 1545) and flat.dtype == np.float32
    np.testing.assert_array_equal(flat, want)
    assert env.observation_space.contains(flat)
    np.testing.assert_array_equal(env.action_masks(), d["action_mask"].astype(bool))


def test_same_seed_same_games(vector_run):
    (obs0, _), steps = vector_run
    env = HackMatrixVectorEnv(N, max_episode_steps=MAX_STEPS)
    again, _ = env.reset(seed=SEED)
    _assert_obs_equal(again, obs0)
    for actions, _, (v_obs, v_rew, *_) in steps[:4]:
        o, r, *_ = env.step(actions)
        _assert_obs_equal(o, v_obs)
        np.testing.assert_array_equal(r, v_rew)
    other, _ = env.reset(seed=SEED + 100)
    assert not np.array_equal(other["grid"], obs0["grid"])


@pytest.mark.parametrize(
    ("actions", "match"),
    [
        (np.zeros(N + 1, np.int64), r"shape \(3,\)"),
        (np.zeros((N, 1), np.int64), r"shape \(3,\)"),
        (np.zeros(N, np.float32), "integers"),
        (np.array([0, 28, 0]), "env 1 got 28"),
        (np.array([0, 0, -1]), "env 2 got -1"),
    ],
)
def test_vector_env_rejects_bad_actions(actions, match):
    env = HackMatrixVectorEnv(N)
    env._state = object()  # past the reset check; the actions are refused before any JAX call
    with pytest.raises(ValueError, match=match):
        env.step(actions)


@pytest.mark.parametrize("action", [28, -1, 1.5, np.array([0, 1]), True, "0"])
def test_single_env_rejects_bad_actions(action):
    env = HackMatrixEnv()
    env._state = object()
    env._chain = object()
    with pytest.raises(ValueError, match="action must be"):
        env.step(action)


def test_bad_construction_and_order_errors():
    with pytest.raises(RuntimeError, match="reset"):
        HackMatrixEnv().step(0)
    with pytest.raises(RuntimeError, match="reset"):
        HackMatrixVectorEnv(2).step(np.zeros(2, np.int64))
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="num_envs"):
            HackMatrixVectorEnv(bad)
    with pytest.raises(ValueError, match="max_episode_steps"):
        HackMatrixEnv(max_episode_steps=0)
    with pytest.raises(ValueError, match="start_stage"):
        HackMatrixVectorEnv(2, start_stage=9)
    with pytest.raises(ValueError, match="render_mode"):
        HackMatrixEnv(render_mode="human")
    with pytest.raises(ValueError, match="seed"):
        HackMatrixVectorEnv(2).reset(seed=[1, 2, 3])
    with pytest.raises(ValueError, match="seed"):
        HackMatrixEnv().reset(seed=-1)


def test_single_env_restart_is_kept_only_until_the_next_step():
    """After an episode end, ``reset()`` returns the restarted game, unless play went on in it."""

    def ended(env):
        obs, _ = env.reset(seed=SEED)
        invalid = int(np.flatnonzero(obs["action_mask"] == 0)[0])
        *_, terminated, _, info = env.step(invalid)
        assert terminated and info["invalid_action"]
        return env

    restarted, _ = ended(HackMatrixEnv()).reset()
    env = ended(HackMatrixEnv())
    env.step(int(np.flatnonzero(env.action_masks())[0]))  # a move in the restarted game
    fresh, _ = env.reset()  # the next game of the key chain, not the stale restart
    assert not np.array_equal(fresh["grid"], restarted["grid"])
