"""Start-kit curriculum (``--kit-*``): what a kitted reset adds, and that nothing else changes."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_env import EnvParams, HackMatrix
from hackmatrix_env.constants import FIRST_PROGRAM, NUM_PROGRAMS, PROGRAM_NAMES
from hackmatrix_train.cli import build_parser, config_from_args, default_run_name
from hackmatrix_train.config import TrainConfig, validate
from hackmatrix_train.curriculum import StageCurriculum
from hackmatrix_train.loop import make_train
from hackmatrix_train.startkit import StartKit

PARAMS = EnvParams()
KEYS = jax.random.split(jax.random.key(7), 256)
KIT = StartKit(siphons=2, credits=5, energy=6, programs=3)
HALF = StartKit(siphons=1, prob=0.5)
BARE = HackMatrix()


def _reset_all(env):
    return jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(KEYS, PARAMS)


BARE_OBS, BARE_STATE = _reset_all(BARE)


def test_kit_adds_exactly_the_stock_and_programs():
    obs, state = _reset_all(KIT)
    bp, kp = BARE_STATE.player, state.player
    np.testing.assert_array_equal(kp.siphons, bp.siphons + 2)
    np.testing.assert_array_equal(kp.credits, bp.credits + 5)
    np.testing.assert_array_equal(kp.energy, bp.energy + 6)
    assert kp.siphons.dtype == bp.siphons.dtype and state.num_owned.dtype == jnp.int8
    np.testing.assert_array_equal(state.num_owned, 3)
    owned = np.asarray(state.owned_list)
    assert np.all(owned[:, 3:] == -1)
    for row in owned[:, :3]:  # three distinct real programs
        assert len(set(row.tolist())) == 3 and all(0 <= p < NUM_PROGRAMS for p in row)
    # the observation is the kitted state's: owned flags, and the siphon action is valid
    np.testing.assert_array_equal(np.asarray(obs.programs).sum(1), 3)
    assert np.all(np.asarray(obs.action_mask)[:, 4])
    # different resets draw different programs (not one fixed set)
    assert len({tuple(sorted(r)) for r in owned[:, :3].tolist()}) > 100


def test_kit_leaves_the_board_and_everything_else_alone():
    _, state = _reset_all(KIT)
    for name in ("grid", "enemies", "transmissions", "stage", "exit_pos", "task_interval"):
        leaves = jax.tree.leaves(getattr(state, name))
        bare = jax.tree.leaves(getattr(BARE_STATE, name))
        for a, b in zip(leaves, bare, strict=True):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(state.player.pos, BARE_STATE.player.pos)
    np.testing.assert_array_equal(state.player.hp, BARE_STATE.player.hp)


def test_pool_restricts_the_programs_handed_out():
    _, state = _reset_all(StartKit(credits=1, programs=1, pool=("undo",)))
    np.testing.assert_array_equal(state.owned_list[:, 0], PROGRAM_NAMES.index("undo"))
    np.testing.assert_array_equal(state.num_owned, 1)
    _, state = _reset_all(StartKit(programs=2, pool=("warp", "score", "d_bom")))
    allowed = {PROGRAM_NAMES.index(n) for n in ("warp", "score", "d_bom")}
    pairs = {tuple(r) for r in np.asarray(state.owned_list)[:, :2].tolist()}
    assert all(set(p) <= allowed and p[0] != p[1] for p in pairs) and len(pairs) == 6


def test_prob_draws_the_kit_for_a_fraction_of_resets():
    _, state = _reset_all(HALF)
    extra = np.asarray(state.player.siphons - BARE_STATE.player.siphons)
    assert set(np.unique(extra).tolist()) == {0, 1}
    # 256 resets at p = 0.5: within 5 binomial sd of 128
    assert abs(extra.sum() - 128) < 5 * np.sqrt(256 * 0.25)
    _, none = _reset_all(StartKit(siphons=3, prob=0.0))
    for a, b in zip(jax.tree.leaves(none), jax.tree.leaves(BARE_STATE), strict=True):
        np.testing.assert_array_equal(a, b)


def test_auto_reset_inside_step_gets_the_kit():
    env = StartKit(siphons=4)
    obs, state = env.reset(KEYS[0], PARAMS)
    # a program the player does not own is an invalid action: terminated, then auto-reset
    action = FIRST_PROGRAM + int(np.flatnonzero(~np.asarray(obs.action_mask)[FIRST_PROGRAM:])[0])
    obs2, state2, reward, terminated, _, _ = jax.jit(env.step)(KEYS[1], state, action, PARAMS)
    assert bool(terminated) and float(reward) == 0.0
    assert int(state2.player.siphons) >= 4 and int(state2.time) == 0
    assert bool(np.asarray(obs2.action_mask)[4])


def test_bad_kits_are_refused_and_wrappers_compare_by_kit():
    with pytest.raises(ValueError, match=">= 0"):
        StartKit(siphons=-1)
    with pytest.raises(ValueError, match="<= 23"):
        StartKit(programs=24)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        StartKit(prob=1.5)
    with pytest.raises(ValueError, match="program names"):
        StartKit(programs=1, pool=("undo", "nope"))
    with pytest.raises(ValueError, match="program names"):
        StartKit(programs=1, pool=("undo", "undo"))
    with pytest.raises(ValueError, match="<= 1"):
        StartKit(programs=2, pool=("undo",))
    same, other = StartKit(2, 5, 6, 3), StartKit(2, 5, 6, 2)
    assert same == KIT and other != KIT and KIT != BARE
    assert hash(KIT) == hash(StartKit(2, 5, 6, 3))
    assert KIT.unwrapped == BARE and StageCurriculum(KIT, 3).unwrapped == BARE
    for bad, flag in (
        ({"kit_energy": -2}, "--kit-energy"),
        ({"kit_programs": 30}, "--kit-programs"),
        ({"kit_prob": -0.1}, "--kit-prob"),
    ):
        with pytest.raises(ValueError, match=flag):
            validate(TrainConfig(**bad))


def test_cli_flags_build_the_kitted_training_env():
    argv = ["--kit-siphons", "3", "--kit-programs", "2", "--kit-prob", "0.5"]
    argv += ["--start-stage-max", "2"]
    cfg, explicit = config_from_args(build_parser().parse_args(argv))
    assert (cfg.kit_siphons, cfg.kit_programs, cfg.kit_prob) == (3, 2, 0.5) and cfg.has_kit
    assert {"kit_siphons", "kit_programs", "kit_prob"} <= explicit
    assert default_run_name(cfg) == "ppo-grid-256x32-s0-to2-kit"
    trainer = make_train(cfg.replace(num_envs=4, num_steps=4, total_timesteps=16))
    assert trainer.env.unwrapped == BARE
    assert trainer.env._env == StartKit(siphons=3, programs=2, prob=0.5)
    cfg, _ = config_from_args(
        build_parser().parse_args(["--kit-programs", "1", "--kit-pool", "undo"])
    )
    trainer = make_train(cfg.replace(num_envs=4, num_steps=4, total_timesteps=16))
    assert trainer.env == StartKit(programs=1, pool=("undo",)) != StartKit(programs=1)
    plain, _ = config_from_args(build_parser().parse_args([]))
    assert not plain.has_kit and not TrainConfig(kit_siphons=2, kit_prob=0.0).has_kit
    assert make_train(plain.replace(num_envs=4, num_steps=4, total_timesteps=16)).env == BARE
