"""The policy shipped in ``policies/``: it loads, it is the default recipe, and it plays deep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hackmatrix_train.cli import evaluate_checkpoint
from hackmatrix_train.config import PRESETS, TrainConfig

POLICY = Path(__file__).resolve().parents[2] / "policies" / "default-h200-257m"


def test_the_shipped_policy_is_the_default_recipe_at_gpu_scale():
    cfg = TrainConfig.from_dict(json.loads((POLICY / "params.json").read_text())["config"])
    for key, value in PRESETS["default"].items():
        if key != "total_timesteps":  # set by --time-budget
            assert getattr(cfg, key) == value, key
    assert cfg.num_envs == 16384 and cfg.time_budget is not None and cfg.program_potential == 0
    assert cfg.total_timesteps == 256_901_120


@pytest.fixture(scope="module")
def greedy_and_random():
    kw = {"episodes": 16, "seed": 0}
    return (
        evaluate_checkpoint(str(POLICY), greedy=True, **kw),
        evaluate_checkpoint(str(POLICY), random=True, **kw),
    )


def test_the_shipped_policy_plays_deep_where_random_play_dies(greedy_and_random):
    """Its README figures are 256 episodes (stage 4.89, stage 5+ 62 %); 16 episodes of the same
    key must stay far from the random masked policy (stage 1.16)."""
    greedy, random = greedy_and_random
    assert greedy["stage_mean"] >= 3.5 > 1.5 >= random["stage_mean"]
    assert greedy["return_mean"] > random["return_mean"] + 10
    assert greedy["siphons_per_episode"] >= 1.5
    assert greedy["unfinished"] == 0
