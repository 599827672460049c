"""The policies in ``policies/`` (those the README uses): they load, they are the recipe they say,
and they play as policies/README.md says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hackmatrix_train.config import RUN_BOOKKEEPING, TrainConfig
from hackmatrix_train.policy import SHIPPED_POLICY, evaluate_checkpoint
from hackmatrix_train.recipe import apply_recipe, load_recipe

POLICIES = Path(__file__).resolve().parents[2] / "policies"
DEFAULT_POLICY = POLICIES / "default-cpu-42m-s1-vf0125"  # the default recipe on the 2-core CPU
GPU_POLICY = POLICIES / "default-h100-579m"  # the default recipe, value weight 0.5, one H100
# the guided rounds before the fourth left the tree (experiments/policies.md); r4's sidecar names
# the third as its start
REVERSE_R3_POLICY = POLICIES / "guided-r3-reverse-cpu-6m-s3"
GAMMA_R4_POLICY = POLICIES / "guided-r4-g997-cpu-6m-s3"
GAMMA_R5_POLICY = POLICIES / "guided-r5-g997-cpu-6m-s3"
# Set per run, not by the recipe: its length, seed, batch width (and what auto-scaling made of it)
PER_RUN = {"total_timesteps", "time_budget", "seed", "num_envs", "num_minibatches",
           "update_epochs", "notes", "run_name", "init_params", "final_eval_episodes"}  # fmt: skip


def test_the_shipped_policies_are_the_ones_the_readme_uses():
    assert sorted(p.name for p in POLICIES.iterdir() if p.is_dir()) == sorted(
        [p.name for p in (DEFAULT_POLICY, GPU_POLICY, GAMMA_R4_POLICY, GAMMA_R5_POLICY)]
    )  # fmt: skip
    assert GAMMA_R5_POLICY.name == SHIPPED_POLICY


def recipe_of(policy: Path, recipe: TrainConfig | None = None, **but) -> TrainConfig:
    """The policy's training config, checked to be ``recipe`` (default: the default recipe,
    ``TrainConfig()``), with the fields ``but`` names replaced, in every field but those set
    per run and bookkeeping."""
    cfg = TrainConfig.from_dict(json.loads((policy / "params.json").read_text())["config"])
    want = (recipe or TrainConfig()).replace(**but)
    for key in TrainConfig.__dataclass_fields__:
        if key not in PER_RUN and key not in RUN_BOOKKEEPING and not key.startswith("search_"):
            assert getattr(cfg, key) == getattr(want, key), key
    return cfg


@pytest.fixture(scope="module")
def random_play():
    return evaluate_checkpoint(str(DEFAULT_POLICY), random=True, episodes=16, seed=0)


@pytest.fixture(scope="module")
def default_play():
    """The default CPU policy's first 64 greedy episodes of key 0."""
    return evaluate_checkpoint(str(DEFAULT_POLICY), greedy=True, episodes=64, seed=0)


def assert_deep_with_programs_without_undo(policy, random, stage, gain, programs):
    """A default-recipe policy's evaluation: UNDO out of its mask, at least ``stage`` deep with
    stage 5+ in 60 %, ``gain`` over random play's return, ``programs`` non-UNDO programs per
    episode over 8 or more, block siphons, no quirk, no unfinished episode."""
    assert policy["disabled_programs"] == ["undo"] and policy["program_use"]["undo"] == 0
    assert policy["stage_mean"] >= stage and policy["stage_5plus_frac"] >= 0.6
    assert policy["return_mean"] > random["return_mean"] + gain
    assert policy["non_undo_programs_per_episode"] >= programs
    assert policy["distinct_programs_used"] >= 8
    assert policy["block_siphons_per_episode"] > 0.25
    assert policy["stage_completions_by_undo_quirk"] == 0 and policy["unfinished"] == 0


def test_the_default_cpu_policy_plays_deep_with_programs_and_wins_by_the_exit(
    random_play, default_play
):
    """`hm-train --seed 1 --total-timesteps 42262528` (the default recipe, for the length an
    earlier default's 50-min budget planned on seed 1): its figures are 256 episodes (stage 5.09,
    stage 5+ 61 %, 3.85 non-UNDO programs per episode over 16 programs, 8 wins by the exit); the
    first 64 of the same key reach stage 5.05 with 4.17 programs per episode over 12 programs
    and win 2 (episodes 4 and 13, which the README's hm-watch line shows)."""
    cfg = recipe_of(DEFAULT_POLICY)
    assert cfg.num_envs == 256 and cfg.seed == 1 and cfg.vf_coef == 0.125
    assert cfg.total_timesteps == 42_262_528 and cfg.time_budget is None
    assert_deep_with_programs_without_undo(default_play, random_play, 4.9, 20, 3.5)
    assert default_play["win_rate_without_quirk"] >= 2 / 64


def guided_recipe(policy: Path, start: Path, **but) -> TrainConfig:
    """``recipe_of`` for a run of ``--recipe guided --seed 3`` from ``start``, with ``but``."""
    guided = apply_recipe(TrainConfig(), load_recipe("guided"))
    cfg = recipe_of(policy, guided, **but)
    assert cfg.search == guided.search  # the teacher: 16 simulations, 2 trees, all actions
    assert cfg.seed == 3 and cfg.total_timesteps == guided.total_timesteps
    assert cfg.init_params == f"policies/{start.name}"
    return cfg


@pytest.mark.parametrize(
    "policy_path, start, stage, wins",
    [(GAMMA_R4_POLICY, REVERSE_R3_POLICY, 4.6, 5), (GAMMA_R5_POLICY, GAMMA_R4_POLICY, 4.5, 4)],
    ids=["r4", "r5"],
)
def test_the_fourth_and_fifth_rounds_run_at_gamma_0997(
    random_play, policy_path, start, stage, wins
):
    """The third round's command with `--gamma 0.997`, a value that sees the end game, for the
    search: from r3 (r4, the shipped agent's start), then from r4 (r5, the shipped agent). Over
    keys 0, 1 and 13 (256 episodes a key) r4 searches 36.6 % at 32 simulations and 27.9 % at 8
    (r3: 29.7 % and 20.8 %) and acquires 1.53 programs per searched game (r3: 1.23); greedy it
    wins 6.6 % at stage 5.01 (r3: 8.3 %, 5.26). r5 searches 41.5 % and 32.1 %, acquires 1.70
    programs and siphons 1.85 blocks per searched game (r4: 1.67), and wins 8.1 % greedy at
    stage 4.79. The first 64 greedy games of key 0: r4 reaches stage 4.72 (stage 5+ 55 %), wins
    5, runs 4.20 programs over 14 and acquires 1.09 per game; r5 stage 4.64 (48 %), 4 wins,
    4.61 programs over 11, 1.02 acquired."""
    cfg = guided_recipe(
        policy_path, start, guide_bonus=5.0, guide_divergence="reverse", gamma=0.997
    )
    assert cfg.gamma == 0.997
    policy = evaluate_checkpoint(str(policy_path), greedy=True, episodes=64, seed=0)
    assert policy["disabled_programs"] == ["undo"] and policy["program_use"]["undo"] == 0
    assert policy["stage_mean"] >= stage and policy["win_rate_without_quirk"] >= wins / 64
    assert policy["return_mean"] > random_play["return_mean"] + 25
    assert policy["non_undo_programs_per_episode"] >= 4 and policy["distinct_programs_used"] >= 8
    assert policy["programs_acquired_per_episode"] > 1.0
    assert policy["stage_completions_by_undo_quirk"] == 0 and policy["unfinished"] == 0


def test_the_gpu_policy_reaches_stage_5_runs_programs_and_wins_by_the_exit(random_play):
    """`hm-train --vf-coef 0.5 --num-envs 65536 --time-budget 8.6` (the default recipe with the
    value weight it had then, one H100): its figures are 256 episodes (stage 5.03, stage 5+
    68 %, 1.96 non-UNDO programs per episode over 14 programs, 4 wins by the exit, the first in
    episode 87); the first 128 episodes of the same key hold two of the wins."""
    cfg = recipe_of(GPU_POLICY, vf_coef=0.5)
    assert cfg.num_envs == 65536 and cfg.seed == 0 and cfg.time_budget == 8.6
    assert cfg.total_timesteps == 578_813_952  # the length its probe planned
    policy = evaluate_checkpoint(str(GPU_POLICY), greedy=True, episodes=128, seed=0)
    assert_deep_with_programs_without_undo(policy, random_play, 4.8, 25, 1.5)
    assert policy["win_rate_without_quirk"] >= 2 / 128
