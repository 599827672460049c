"""Data parallelism over 2 forced host devices (XLA flags must precede the jax import: subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    """
    import json, sys, tempfile
    import jax, numpy as np
    from hackmatrix_train import checkpoint as ckpt
    from hackmatrix_train.trainer import make_train
    from train.recipes import plain_ppo
    from train.train_probes import ProbeParams, ProbeSuite

    assert jax.device_count() == 2, jax.devices()
    cfg = plain_ppo(num_envs=16, num_steps=8, total_timesteps=16 * 8 * 3, num_minibatches=2,
                    update_epochs=2, hidden_dim=16, num_layers=1, no_wandb=True)
    trainer = make_train(cfg, ProbeSuite(), ProbeParams())
    runner = trainer.init()
    runner, metrics = trainer.run_chunk(runner, 3)
    metrics = {k: float(v) for k, v in jax.device_get(metrics).items()}
    # params replicated: both device copies identical; env batch split 8 + 8
    leaf = jax.tree.leaves(runner.params)[0]
    copies = [np.asarray(s.data) for s in leaf.addressable_shards]
    env_leaf = jax.tree.leaves(runner.env_state)[0]
    shards = sorted(s.data.shape[0] for s in env_leaf.addressable_shards)
    keys = np.asarray(jax.random.key_data(runner.key))
    with tempfile.TemporaryDirectory() as d:
        path = ckpt.save_checkpoint(d, runner, cfg.to_dict(), {})
        back, _ = ckpt.load_checkpoint(path, trainer.abstract_runner())
        placed = trainer.place(back)
        again, _ = trainer.run_chunk(placed, 1)
        cont, _ = trainer.run_chunk(runner, 1)
        same = all(np.array_equal(a, b) for a, b in zip(
            jax.tree.leaves(jax.device_get(again.params)), jax.tree.leaves(jax.device_get(cont.params))))
    print(json.dumps({
        "num_devices": trainer.num_devices,
        "replicated": bool(np.array_equal(copies[0], copies[1])) and len(copies) == 2,
        "env_shards": shards,
        "distinct_keys": bool(not np.array_equal(keys[0], keys[1])),
        "metrics": metrics,
        "resume_exact": same,
    }))
    """
)


def test_two_device_data_parallel():
    env = dict(os.environ)
    env["XLA_FLAGS"] = env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = str(TESTS) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["num_devices"] == 2
    assert out["replicated"]
    assert out["env_shards"] == [8, 8]
    assert out["distinct_keys"]
    assert out["resume_exact"]
    m = out["metrics"]
    # 16 envs x 8 steps x 3 updates; every probe episode lasts 1..4 steps
    assert m["train/num_episodes"] >= 16 * 8 * 3 / 4
    assert 1.0 <= m["train/episode_length"] <= 4.0
    assert all(v == v for v in m.values())  # no NaN


SAME_STEP_SCRIPT = textwrap.dedent(
    """
    import json
    from functools import partial
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, PartitionSpec as P
    from hackmatrix_env import HackMatrix
    from hackmatrix_train.config import TrainConfig
    from hackmatrix_train.network import make_network
    from hackmatrix_train.ppo import minibatch_step
    from hackmatrix_train.schedules import make_optimizer
    from hackmatrix_train.rollout import Transition

    assert jax.device_count() == 2, jax.devices()
    cfg = TrainConfig(hidden_dim=16, num_layers=1)  # the default recipe: grid net, floor on
    env, n = HackMatrix(), 16
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    obs, _ = reset(jax.random.split(jax.random.key(1), n), env.default_params)
    net = make_network(cfg.network, 28, cfg.hidden_dim, cfg.num_layers)
    params = net.init(jax.random.key(2), jax.tree.map(lambda x: x[:1], obs))
    tx = make_optimizer(cfg, 10)
    opt = tx.init(params)
    k = jax.random.split(jax.random.key(3), 5)
    action = jax.random.categorical(k[0], jnp.where(obs.action_mask, 0.0, -1e9)).astype(jnp.int32)
    zeros = jnp.zeros(n)
    batch = Transition(obs, action, jax.random.normal(k[1], (n,)) - 2.0,
                       jax.random.normal(k[2], (n,)), zeros, zeros > 0, zeros > 0, zeros, zeros)
    mb = (batch, 3.0 + 2.0 * jax.random.normal(k[3], (n,)), jax.random.normal(k[4], (n,)))
    step = partial(minibatch_step, apply_fn=net.apply, tx=tx, cfg=cfg,
                   ent_coef=jnp.float32(0.02), floor=jnp.float32(0.01),
                   floor_weight=jnp.float32(0.1))
    one, _, _ = jax.jit(step)(params, opt, mb)
    mesh = Mesh(np.array(jax.devices()), ("d",))
    sharded = jax.shard_map(lambda p, o, m: step(p, o, m, axis_name="d")[0], mesh=mesh,
                            in_specs=(P(), P(), P("d")), out_specs=P(), check_vma=False)
    two = jax.jit(sharded)(params, opt, mb)
    diff = max(float(jnp.abs(a - b).max()) for a, b in zip(jax.tree.leaves(one), jax.tree.leaves(two)))
    moved = max(float(jnp.abs(a - b).max()) for a, b in zip(jax.tree.leaves(one), jax.tree.leaves(params)))
    print(json.dumps({"diff": diff, "moved": moved}))
    """
)


def test_two_device_minibatch_step_equals_one_device_step_on_the_same_batch():
    """Advantages normalised over the whole minibatch and gradients averaged: same update."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
    env["JAX_PLATFORMS"] = "cpu"
    proc = subprocess.run(
        [sys.executable, "-c", SAME_STEP_SCRIPT], env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["moved"] > 1e-4  # the step changed the params (Adam: ~lr per coordinate)
    assert out["diff"] < 1e-6 * max(1.0, out["moved"] * 100)
