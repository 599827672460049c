"""SwiftEnv: Gymnasium contract, masks, and the same tensors as the JAX observation."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hackmatrix_env.gymnasium import HackMatrixEnv
from hackmatrix_parity import jax_side
from hackmatrix_parity.gym_env import SwiftEnv


@pytest.fixture
def env(swift_bin):
    e = SwiftEnv(swift_bin)
    yield e
    e.close()


def test_gymnasium_checker(swift_bin):
    e = SwiftEnv(swift_bin, flatten=True)
    try:
        check_env(e, skip_render_check=True)
    finally:
        e.close()


def test_render_metadata_matches_the_jax_env():
    # render keys only: gymnasium's SyncVectorEnv writes "autoreset_mode" into its first
    # sub-env's (class-level) metadata, so other tests may have added that key
    for key in ("render_modes", "render_fps"):
        assert SwiftEnv.metadata[key] == HackMatrixEnv.metadata[key], key


def test_masked_random_episode(env):
    obs, info = env.reset(seed=3)
    assert env.observation_space.contains(obs) or obs["grid"].max() > 1  # bounds can exceed 1
    rng = np.random.default_rng(0)
    for _ in range(200):
        mask = env.action_masks()
        assert mask.dtype == bool and mask.shape == (28,)
        if not mask.any():
            break
        obs, r, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        assert "invalid_action" not in info  # an unmasked action never fails
        bd = info["reward_breakdown_15"]
        assert bd["step_penalty"] == -0.01
        assert sum(bd.values()) == pytest.approx(r, abs=1e-9)
        if term or trunc:
            obs, info = env.reset()


def test_invalid_action_terminates_with_zero_reward(env):
    env.reset(options={"state": {"player": {"row": 0, "col": 0}}})
    assert not env.action_masks()[1]
    _, r, term, _, info = env.step(1)  # down from row 0
    assert r == 0.0 and term and info["invalid_action"] is True


def test_tensor_equals_jax_observation(env):
    sc = {
        "player": {"row": 2, "col": 2, "credits": 60, "energy": 3, "dataSiphons": 11},
        "enemies": [{"type": "cryptog", "row": 2, "col": 5, "hp": 1, "stunned": True}],
        "blocks": [{"row": 3, "col": 2, "type": "program", "programType": "warp"}],
        "transmissions": [{"row": 0, "col": 0, "turnsRemaining": 6, "enemyType": "virus"}],
        "ownedPrograms": [8, 12],
        "stage": 4,
    }
    from hackmatrix_env.observation import observe

    obs, _info = env.reset(options={"state": sc})

    o = observe(jax_side.load_scenario(sc))
    np.testing.assert_array_equal(obs["player"], np.asarray(o.player))
    np.testing.assert_array_equal(obs["grid"], np.asarray(o.grid))
    np.testing.assert_array_equal(obs["programs"], np.asarray(o.programs).astype(np.int32))
    np.testing.assert_array_equal(env.action_masks(), np.asarray(o.action_mask))
