"""The recipe files of ``experiments/recipes/`` for tests, and plain PPO for the probe tests."""

from __future__ import annotations

from pathlib import Path

from hackmatrix_train.config import TrainConfig, apply_recipe, load_recipe

RECIPES = Path(__file__).resolve().parents[2] / "experiments" / "recipes"


def recipe(name: str) -> dict:
    """The fields of ``experiments/recipes/<name>.toml``."""
    return load_recipe(RECIPES / f"{name}.toml")


def plain_ppo(**fields) -> TrainConfig:
    """Plain PPO (``reference.toml``: any gymnax env) with ``fields`` replaced."""
    return apply_recipe(TrainConfig(), recipe("reference")).replace(**fields)
