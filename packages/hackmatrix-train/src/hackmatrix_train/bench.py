"""``hm-train-bench``: end-to-end training throughput (env + policy + PPO update) and compile time.

For each ``--num-envs`` value: build the trainer (default config otherwise, auto-scaling applied),
time the init jit, the AOT compile of the update chunk, one warm-up chunk, then ``--updates``
timed updates. Prints a table; ``--json`` also writes the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path


def bench_one(
    num_envs: int,
    updates: int,
    network: str,
    num_steps: int,
    env_name: str,
    warmup: int = 1,
    hidden_dim: int = 256,
) -> dict:
    import jax

    from hackmatrix_train.config import TrainConfig, plan
    from hackmatrix_train.loop import make_train

    cfg = TrainConfig(
        num_envs=num_envs, num_steps=num_steps, network=network, hidden_dim=hidden_dim
    )
    cfg = cfg.replace(total_timesteps=cfg.batch_size * (updates + 1) * 4)
    fixed = frozenset({"num_steps", "network", "hidden_dim"})
    cfg = plan(cfg, fixed, jax.device_count(), jax.default_backend())
    env = env_params = None
    if env_name == "probe":  # for machines without hackmatrix_env.HackMatrix
        import sys

        sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests"))
        from train.train_probes import ProbeParams, ProbeSuite

        env, env_params = ProbeSuite(), ProbeParams()
    trainer = make_train(cfg, env, env_params)
    t0 = time.perf_counter()
    runner = jax.block_until_ready(trainer.init())
    t_init = time.perf_counter() - t0
    t0 = time.perf_counter()
    trainer.compile(runner)
    t_compile = time.perf_counter() - t0
    t0 = time.perf_counter()
    if warmup:
        runner, m = trainer.run_chunk(runner, warmup)
        jax.block_until_ready((runner, m))
    t_warm = time.perf_counter() - t0
    t0 = time.perf_counter()
    runner, m = trainer.run_chunk(runner, updates)
    jax.block_until_ready((runner, m))
    dt = time.perf_counter() - t0
    steps = updates * cfg.batch_size
    return {
        "num_envs": num_envs,
        "num_steps": cfg.num_steps,
        "network": network,
        "hidden_dim": hidden_dim,
        "num_minibatches": cfg.num_minibatches,
        "update_epochs": cfg.update_epochs,
        "devices": trainer.num_devices,
        "init_seconds": round(t_init, 2),
        "compile_seconds": round(t_compile, 2),
        "warmup_updates": warmup,
        "warmup_seconds": round(t_warm, 3),
        "timed_updates": updates,
        "timed_env_steps": steps,
        "seconds": round(dt, 3),
        "steps_per_second": round(steps / dt, 1),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="hm-train-bench", description=__doc__)
    p.add_argument("--num-envs", type=int, nargs="+", default=[256, 1024])
    p.add_argument("--num-steps", type=int, default=128)
    p.add_argument("--updates", type=int, default=5, help="timed updates per setting")
    p.add_argument("--network", nargs="+", default=["mlp"], choices=["mlp", "grid"])
    p.add_argument(
        "--hidden-dim", type=int, nargs="+", default=[256], help="network width(s) (default 256)"
    )
    p.add_argument("--env", default="hackmatrix", choices=["hackmatrix", "probe"])
    p.add_argument("--warmup", type=int, default=1, help="untimed updates after compiling")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    import jax

    rows = []
    print(
        f"jax {jax.__version__} backend={jax.default_backend()} devices={jax.device_count()} "
        f"cpus={os.cpu_count()} {platform.processor() or platform.machine()}"
    )
    hdr = f"{'network':>7} {'hidden':>6} {'envs':>6} {'mb':>3} {'ep':>3} {'init s':>7} {'compile s':>9} {'steps/s':>10}"
    print(hdr)
    settings = [(net, h, n) for net in args.network for h in args.hidden_dim for n in args.num_envs]
    for net, hidden, n in settings:
        r = bench_one(n, args.updates, net, args.num_steps, args.env, args.warmup, hidden)
        rows.append(r)
        print(
            f"{net:>7} {hidden:>6} {n:>6} {r['num_minibatches']:>3} {r['update_epochs']:>3} "
            f"{r['init_seconds']:>7.1f} {r['compile_seconds']:>9.1f} {r['steps_per_second']:>10,.0f}",
            flush=True,
        )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"jax": jax.__version__, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
