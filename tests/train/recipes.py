"""The recipes shipped with the trainer (``hackmatrix_train/recipes``) for tests, and plain PPO
for the probe tests."""

from __future__ import annotations

from hackmatrix_train.config import TrainConfig
from hackmatrix_train.recipe import SHIPPED as RECIPES
from hackmatrix_train.recipe import apply_recipe, load_recipe

__all__ = ["RECIPES", "plain_ppo", "recipe"]


def recipe(name: str) -> dict:
    """The settings of the shipped recipe ``name``."""
    return load_recipe(name)


def plain_ppo(**fields) -> TrainConfig:
    """Plain PPO (``reference.toml``: any gymnax env) with ``fields`` replaced."""
    return apply_recipe(TrainConfig(), recipe("reference")).replace(**fields)
