"""Masked-categorical PPO for HackMatrix (flax + optax + distrax), PureJaxRL style.

Public entry points: ``TrainConfig``, ``make_train`` (inject any gymnax env whose observation is
a NamedTuple with an ``action_mask``), and the ``hm-train`` / ``hm-eval`` commands.
"""

from hackmatrix_train.config import TrainConfig, plan
from hackmatrix_train.trainer import Trainer, make_train

__all__ = ["TrainConfig", "Trainer", "make_train", "plan"]
