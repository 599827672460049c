"""A params export of a tiny freshly initialised network, for the search viewers' tests."""

from __future__ import annotations

import hashlib
import json

import jax
import numpy as np
from flax import serialization
from hackmatrix_env import EnvParams, HackMatrix
from hackmatrix_train import checkpoint as ckpt
from hackmatrix_train.config import TrainConfig
from hackmatrix_train.network import make_network


def write_tiny_policy(
    path, max_steps: int, seed: int = 1, network: str = "mlp", res_blocks: int = 0
):
    """``path/params.msgpack`` as ``save_checkpoint`` writes it: a 16-wide one-layer network
    (an MLP unless ``network`` names another, with ``res_blocks`` residual blocks) whose run
    kept UNDO out of its mask (the default's ``disabled_programs``)."""
    cfg = TrainConfig(network=network, hidden_dim=16, num_layers=1, res_blocks=res_blocks,
                      max_steps_in_episode=max_steps, no_wandb=True)  # fmt: skip
    obs, _ = jax.eval_shape(HackMatrix().reset, jax.random.key(0), EnvParams())
    net = make_network(cfg.network, 28, cfg.hidden_dim, cfg.num_layers, cfg.res_blocks)
    one = jax.tree.map(lambda s: np.zeros((1, *s.shape), s.dtype), obs)
    params = net.init(jax.random.key(seed), one)
    blob = serialization.msgpack_serialize(ckpt.flatten_state(params))
    path.mkdir(parents=True, exist_ok=True)
    (path / "params.msgpack").write_bytes(blob)
    meta = {"format": ckpt.PARAMS_FORMAT, "update": 3, "config": cfg.to_dict()}
    meta["sha256"] = hashlib.sha256(blob).hexdigest()
    (path / "params.json").write_text(json.dumps(meta))
    return path / "params.msgpack"
