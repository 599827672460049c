"""Masked-categorical PPO for HackMatrix (flax + optax + distrax), PureJaxRL style.

Public entry points: ``TrainConfig``, ``make_train`` (inject any gymnax env whose observation is
a NamedTuple with an ``action_mask``), and the ``hm-train`` / ``hm-eval`` commands.
"""

import importlib

__all__ = ["TrainConfig", "Trainer", "make_train", "plan"]

# Imported on first use (PEP 562), so `import hackmatrix_train.progress` and the commands' first
# line do not wait for jax and flax to load.
_HOMES = {"TrainConfig": "config", "plan": "config", "Trainer": "trainer", "make_train": "trainer"}


def __getattr__(name: str):
    if name in _HOMES:
        return getattr(importlib.import_module(f"hackmatrix_train.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'hackmatrix_train' has no attribute {name!r}")
