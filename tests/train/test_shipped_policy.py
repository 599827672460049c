"""The policies shipped in ``policies/``: they load, they are the recipes they say, and they play."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hackmatrix_train.cli import evaluate_checkpoint
from hackmatrix_train.config import PRESETS, RUN_BOOKKEEPING, TrainConfig

POLICY = Path(__file__).resolve().parents[2] / "policies" / "depth-h200-579m"  # the depth recipe
SHORTER_POLICY = POLICY.parent / "depth-h200-257m"
QUIRK_POLICY = POLICY.parent / "bonus2-h200-593m"
PROGRAMS_POLICY = POLICY.parent / "programs-cpu-25m"
NO_UNDO_POLICY = POLICY.parent / "noundo-h100-487m"
DEFAULT_CPU_POLICY = POLICY.parent / "default-cpu-25m"
DEFAULT_BUDGET_POLICY = POLICY.parent / "default-cpu-52m"
CONSTANT_LR_GPU_POLICY = POLICY.parent / "constlr-h100-480m"
DEFAULT_GPU_POLICY = POLICY.parent / "default-h100-579m"
DEFAULT_GPU_POLICY_SEED1 = POLICY.parent / "default-h100-507m-s1"
DEFAULT_HALF_VALUE_POLICY = POLICY.parent / "default-cpu-42m-s1"
DEFAULT_POLICY = POLICY.parent / "default-cpu-42m-s1-vf0125"
# the value weights the default had before its quarter: the policies trained with them
FORMER_VF_COEF = {"vf_coef": 0.5}
HALF_VF_COEF = {"vf_coef": 0.25}


def recipe_of(policy: Path, preset: str, **but) -> TrainConfig:
    """The policy's training config, checked to be ``preset`` (with the fields ``but`` names
    replaced) in every field but the length (which ``--time-budget`` sets) and the run's
    bookkeeping (its name, say)."""
    cfg = TrainConfig.from_dict(json.loads((policy / "params.json").read_text())["config"])
    for key, value in {**PRESETS[preset], **but}.items():
        if key not in ("total_timesteps", "time_budget") and key not in RUN_BOOKKEEPING:
            assert getattr(cfg, key) == value, key
    return cfg


def test_the_depth_policies_are_the_depth_recipe_at_gpu_scale():
    cfg = recipe_of(POLICY, "depth")
    assert cfg.num_envs == 65536 and cfg.time_budget is not None
    assert cfg.program_potential == 0 and cfg.program_bonus == 0
    assert cfg.total_timesteps == 578_813_952
    shorter = recipe_of(SHORTER_POLICY, "depth")
    assert shorter.num_envs == 16384 and shorter.time_budget is not None
    assert shorter.program_potential == 0 and shorter.program_bonus == 0
    assert shorter.total_timesteps == 256_901_120


@pytest.fixture(scope="module")
def greedy_and_random():
    kw = {"episodes": 16, "seed": 0}
    return (
        evaluate_checkpoint(str(POLICY), greedy=True, **kw),
        evaluate_checkpoint(str(POLICY), random=True, **kw),
    )


def test_the_shipped_policy_plays_deep_where_random_play_dies(greedy_and_random):
    """Its README figures are 256 episodes (stage 5.11, stage 5+ 70 %); 16 episodes of the same
    key must stay far from the random masked policy (stage 1.16)."""
    greedy, random = greedy_and_random
    assert greedy["stage_mean"] >= 4.0 > 1.5 >= random["stage_mean"]
    assert greedy["return_mean"] > random["return_mean"] + 10
    assert greedy["siphons_per_episode"] >= 1.5
    assert greedy["unfinished"] == 0


def test_the_quirk_policy_is_the_recipe_with_the_program_bonus_at_65536_envs():
    cfg = recipe_of(QUIRK_POLICY, "depth")
    assert cfg.num_envs == 65536 and cfg.time_budget is not None and cfg.program_bonus == 2
    assert cfg.total_timesteps == 593_494_016


def test_the_quirk_policy_completes_stages_through_the_undo_quirk(greedy_and_random):
    """Its README figures are 256 episodes (7 % wins, every one through the UNDO cross-stage
    quirk, rules §11.4; 14.8 UNDO uses per episode); 16 episodes of the same key must show the
    quirk at work, which the depth policy never uses."""
    quirk = evaluate_checkpoint(str(QUIRK_POLICY), greedy=True, episodes=16, seed=0)
    depth, random = greedy_and_random
    assert quirk["stage_completions_by_undo_quirk"] >= 1
    assert depth["stage_completions_by_undo_quirk"] == 0
    assert quirk["program_use"]["undo"] >= 5 * 16
    assert quirk["return_mean"] > random["return_mean"] + 10
    assert quirk["unfinished"] == 0


def test_the_programs_policy_is_the_programs_preset_on_the_cpu():
    cfg = recipe_of(PROGRAMS_POLICY, "programs")
    assert cfg.num_envs == 256 and cfg.total_timesteps == 25_000_000 and cfg.seed == 0


def test_the_programs_policy_siphons_blocks_and_uses_programs(greedy_and_random):
    """Its README figures are 256 episodes: outside the 16 that run to the step limit (most
    farm a program block with UNDO), 0.36 block siphons and 0.57 non-UNDO programs per
    episode. 16 episodes of the same key (no farm among them) must show both, where the
    depth policy shows neither."""
    programs = evaluate_checkpoint(str(PROGRAMS_POLICY), greedy=True, episodes=16, seed=0)
    depth, random = greedy_and_random
    assert programs["block_siphons_per_episode"] >= 0.25 > depth["block_siphons_per_episode"]
    assert programs["non_undo_programs_per_episode"] >= 0.125
    assert depth["non_undo_programs_per_episode"] <= 0.0625
    assert programs["return_mean"] > random["return_mean"] + 5
    assert programs["unfinished"] == 0


def test_the_no_undo_policy_is_the_early_floor_recipe_without_undo():
    cfg = TrainConfig.from_dict(json.loads((NO_UNDO_POLICY / "params.json").read_text())["config"])
    assert cfg.disabled_programs == ("undo",)
    assert (cfg.explore_floor, cfg.explore_floor_end, cfg.explore_floor_start) == (0.003, 0.001, 0)
    assert cfg.program_bonus == 2 and cfg.program_terms_skip_undo and cfg.network == "grid"
    assert cfg.num_envs == 65536 and cfg.total_timesteps == 486_539_264


def test_the_no_undo_policy_plays_deep_without_undo(greedy_and_random):
    """Its README figures are 256 episodes (stage 5.19, stage 5+ 74 %, no program run); 16
    episodes of the same key must play deep, and its evaluation must keep UNDO out of its mask."""
    no_undo = evaluate_checkpoint(str(NO_UNDO_POLICY), greedy=True, episodes=16, seed=0)
    _, random = greedy_and_random
    assert no_undo["disabled_programs"] == ["undo"] and no_undo["program_use"]["undo"] == 0
    assert no_undo["stage_mean"] >= 4.0 and no_undo["return_mean"] > random["return_mean"] + 10
    assert no_undo["unfinished"] == 0


def test_the_default_cpu_policy_is_the_default_recipe_on_the_cpu():
    cfg = recipe_of(DEFAULT_CPU_POLICY, "default", **FORMER_VF_COEF)
    assert cfg.num_envs == 256 and cfg.seed == 0
    assert cfg.total_timesteps == 25_000_000 and cfg.time_budget is None  # a fixed length


def test_the_default_cpu_policy_takes_blocks_and_runs_other_programs(greedy_and_random):
    """Its README figures are 256 episodes (stage 4.10, 0.50 block siphons, 1.35 non-UNDO
    programs per episode, 17 distinct); 16 episodes of the same key must show block siphons
    and several programs run, none of them UNDO, where the depth policy shows neither."""
    policy = evaluate_checkpoint(str(DEFAULT_CPU_POLICY), greedy=True, episodes=16, seed=0)
    depth, random = greedy_and_random
    assert policy["disabled_programs"] == ["undo"] and policy["program_use"]["undo"] == 0
    assert policy["block_siphons_per_episode"] >= 0.5 > depth["block_siphons_per_episode"]
    assert policy["non_undo_programs_per_episode"] >= 0.5 and policy["stage_mean"] >= 3.5
    assert depth["non_undo_programs_per_episode"] <= 0.0625
    assert policy["distinct_programs_used"] >= 3
    assert policy["return_mean"] > random["return_mean"] + 5
    assert policy["unfinished"] == 0


def test_the_default_cpu_policy_is_the_default_recipe_for_55_minutes():
    """`hm-train --time-budget 55 --seed 1`: every field of the recipe, its own budget and the
    length its probe planned."""
    cfg = recipe_of(DEFAULT_BUDGET_POLICY, "default", **FORMER_VF_COEF)
    assert cfg.num_envs == 256 and cfg.seed == 1 and cfg.time_budget == 55.0
    assert cfg.total_timesteps == 51_798_016  # the length its probe planned


def test_the_default_budget_policy_plays_deep_runs_programs_and_wins_by_the_exit(
    greedy_and_random,
):
    """Its README figures are 256 episodes (stage 4.71, 2.53 non-UNDO programs per episode over
    14 programs, 3 wins by the exit); the first 64 episodes of the same key hold two of the
    wins."""
    policy = evaluate_checkpoint(str(DEFAULT_BUDGET_POLICY), greedy=True, episodes=64, seed=0)
    depth, random = greedy_and_random
    assert policy["disabled_programs"] == ["undo"] and policy["program_use"]["undo"] == 0
    assert policy["stage_mean"] >= 4.5 and policy["return_mean"] > random["return_mean"] + 20
    assert policy["non_undo_programs_per_episode"] >= 2.0
    assert policy["distinct_programs_used"] >= 8
    assert policy["block_siphons_per_episode"] > depth["block_siphons_per_episode"]
    assert policy["win_rate_without_quirk"] >= 1 / 64
    assert policy["stage_completions_by_undo_quirk"] == 0 and policy["unfinished"] == 0


def test_the_gpu_policy_is_the_default_recipe_at_a_constant_rate_at_65536_envs():
    """It ran before the default annealed its learning rate: ``--lr 5e-4 --no-anneal-lr``."""
    cfg = recipe_of(CONSTANT_LR_GPU_POLICY, "default", lr=5e-4, anneal_lr=False, **FORMER_VF_COEF)
    assert cfg.num_envs == 65536 and cfg.time_budget is not None and cfg.seed == 0
    assert cfg.total_timesteps == 480_247_808


def test_the_gpu_policy_plays_deep_runs_programs_and_wins_by_the_exit(greedy_and_random):
    """Its README figures are 256 episodes (stage 4.98, stage 5+ 65 %, 2.41 non-UNDO programs
    per episode, 15 distinct, 2 wins by the exit, the first in episode 46, which
    policies/README.md names); the first 64 episodes of the same key must play deep, run several
    programs, none of them UNDO, and hold that win, with no stage completed through the quirk."""
    policy = evaluate_checkpoint(str(CONSTANT_LR_GPU_POLICY), greedy=True, episodes=64, seed=0)
    depth, random = greedy_and_random
    assert policy["disabled_programs"] == ["undo"] and policy["program_use"]["undo"] == 0
    assert policy["stage_mean"] >= 4.0 and policy["return_mean"] > random["return_mean"] + 10
    assert policy["non_undo_programs_per_episode"] >= 1.0
    assert depth["non_undo_programs_per_episode"] <= 0.0625
    assert policy["distinct_programs_used"] >= 5
    assert policy["block_siphons_per_episode"] > depth["block_siphons_per_episode"]
    assert policy["win_rate_without_quirk"] >= 1 / 64
    assert policy["stage_completions_by_undo_quirk"] == 0 and policy["unfinished"] == 0


def test_the_default_gpu_policy_is_the_default_recipe_at_65536_envs():
    """`hm-train --num-envs 65536 --time-budget 8.6`: every field of the default recipe (the
    rate 1e-3 annealed to 0 included), its budget and the length its probe planned."""
    cfg = recipe_of(DEFAULT_GPU_POLICY, "default", **FORMER_VF_COEF)
    assert cfg.num_envs == 65536 and cfg.seed == 0 and cfg.time_budget == 8.6
    assert cfg.lr == 1e-3 and cfg.anneal_lr
    assert cfg.total_timesteps == 578_813_952  # the length its probe planned


def test_the_default_gpu_policy_reaches_stage_5_runs_programs_and_wins_by_the_exit(
    greedy_and_random,
):
    """Its README figures are 256 episodes (stage 5.03, stage 5+ 68 %, 1.96 non-UNDO programs
    per episode over 14 programs, 4 wins by the exit, the first in episode 87, which the
    README's hm-watch command shows); the first 128 episodes of the same key hold two of the
    wins."""
    policy = evaluate_checkpoint(str(DEFAULT_GPU_POLICY), greedy=True, episodes=128, seed=0)
    assert_deep_with_programs_without_undo(policy, *greedy_and_random, 4.8, 25, 1.5)
    assert policy["win_rate_without_quirk"] >= 2 / 128


def assert_deep_with_programs_without_undo(policy, depth, random, stage, gain, programs):
    """A GPU-scale default policy's evaluation: UNDO out of its mask, at least ``stage`` deep
    with stage 5+ in 60 %, ``gain`` over random play's return, ``programs`` non-UNDO programs
    per episode over 8 or more, more block siphons than the depth recipe, no quirk, no
    unfinished episode."""
    assert policy["disabled_programs"] == ["undo"] and policy["program_use"]["undo"] == 0
    assert policy["stage_mean"] >= stage and policy["stage_5plus_frac"] >= 0.6
    assert policy["return_mean"] > random["return_mean"] + gain
    assert policy["non_undo_programs_per_episode"] >= programs
    assert policy["distinct_programs_used"] >= 8
    assert policy["block_siphons_per_episode"] > depth["block_siphons_per_episode"]
    assert policy["stage_completions_by_undo_quirk"] == 0 and policy["unfinished"] == 0


def test_the_second_default_gpu_seed_is_the_default_recipe_and_plays_deep_with_programs(
    greedy_and_random,
):
    """`hm-train --num-envs 65536 --time-budget 7.6 --seed 1 --final-eval-episodes 0`: the
    default recipe, the length its probe planned; its README figures are 256 episodes (stage
    4.92, stage 5+ 64 %, 2.18 non-UNDO programs per episode over 17 programs, no win); the first
    64 of the same key reach stage 5.17 with 3.17 programs per episode over 14 programs."""
    cfg = recipe_of(DEFAULT_GPU_POLICY_SEED1, "default", **FORMER_VF_COEF)
    assert cfg.num_envs == 65536 and cfg.seed == 1 and cfg.time_budget == 7.6
    assert cfg.total_timesteps == 507_510_784  # the length its probe planned
    policy = evaluate_checkpoint(str(DEFAULT_GPU_POLICY_SEED1), greedy=True, episodes=64, seed=0)
    assert_deep_with_programs_without_undo(policy, *greedy_and_random, 4.9, 20, 2.0)


def test_the_default_cpu_policy_with_half_the_value_weight_plays_deeper_with_more_programs(
    greedy_and_random,
):
    """`hm-train --vf-coef 0.25 --seed 1 --total-timesteps 42262528` (the default when its
    value weight was 0.25, for the length its former 50-min budget planned on seed 1): every
    field of that recipe; its figures are 256 episodes (stage 4.88, stage 5+ 58 %, 3.83
    non-UNDO programs per episode over 14 programs, 4 wins by the exit); the first 64 of the
    same key reach stage 5.06 with 3.86 programs per episode over 11 programs."""
    cfg = recipe_of(DEFAULT_HALF_VALUE_POLICY, "default", **HALF_VF_COEF)
    assert cfg.num_envs == 256 and cfg.seed == 1 and cfg.vf_coef == 0.25
    assert cfg.total_timesteps == 42_262_528 and cfg.time_budget is None
    policy = evaluate_checkpoint(str(DEFAULT_HALF_VALUE_POLICY), greedy=True, episodes=64, seed=0)
    assert_deep_with_programs_without_undo(policy, *greedy_and_random, 4.8, 20, 3.0)


def test_the_default_cpu_policy_plays_deep_with_programs_and_wins_by_the_exit(greedy_and_random):
    """`hm-train --seed 1 --total-timesteps 42262528` (the default, a quarter of the value
    weight, for the length an earlier default's 50-min budget planned on seed 1): every field
    of the recipe; its README figures are 256 episodes (stage 5.09, stage 5+ 61 %, 3.85
    non-UNDO programs per episode over 16 programs, 8 wins by the exit); the first 64 of the
    same key reach stage 5.05 with 4.17 programs per episode over 12 programs and win 2
    (episodes 4 and 13, which the README's hm-watch line shows)."""
    cfg = recipe_of(DEFAULT_POLICY, "default")
    assert cfg.num_envs == 256 and cfg.seed == 1 and cfg.vf_coef == 0.125
    assert cfg.total_timesteps == 42_262_528 and cfg.time_budget is None
    policy = evaluate_checkpoint(str(DEFAULT_POLICY), greedy=True, episodes=64, seed=0)
    assert_deep_with_programs_without_undo(policy, *greedy_and_random, 4.9, 20, 3.5)
    assert policy["win_rate_without_quirk"] >= 2 / 64
