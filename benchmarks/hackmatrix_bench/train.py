"""``hm-bench train``: end-to-end training throughput (env + policy + PPO update) and compile time.

For each ``--num-envs`` value: build the trainer (``hm-train``'s defaults otherwise,
auto-scaling applied), time the init jit, the AOT compile of the update chunk, one warm-up chunk,
then ``--updates`` timed updates. Prints a table; ``--json`` also writes the figures.

``--cpu-devices 2 1`` runs the whole benchmark once per CPU device count, each in its own process
(the count must be set before JAX starts), one after the other in this one run, and prints the
steps/s ratio of each count to the last: all cores vs one device on the same machine.
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
    update_epochs: int | None = None,
    num_minibatches: int | None = None,
    res_blocks: int = 0,
) -> dict:
    import jax
    from hackmatrix_train.config import TrainConfig, plan
    from hackmatrix_train.trainer import make_train

    # the batch shape asked for; what is left unset stays the default's, auto-scaled by plan()
    shape = {"update_epochs": update_epochs, "num_minibatches": num_minibatches}
    shape = {k: v for k, v in shape.items() if v is not None}
    cfg = TrainConfig().replace(
        num_envs=num_envs, num_steps=num_steps, network=network, hidden_dim=hidden_dim,
        res_blocks=res_blocks, **shape,
    )  # fmt: skip
    if env_name == "probe":  # no siphon/program groups, no programs to own or to mask out
        cfg = cfg.replace(
            explore_floor=0.0, explore_floor_end=None, program_bonus=0.0, program_potential=0.0,
            program_terms_skip_undo=False, disabled_programs=(),
        )  # fmt: skip
    cfg = cfg.replace(total_timesteps=cfg.batch_size * (updates + 1) * 4)
    fixed = frozenset({"num_steps", "network", "hidden_dim", "res_blocks", *shape})
    cfg = plan(cfg, fixed, jax.device_count(), jax.default_backend())
    env = env_params = None
    if env_name == "probe":  # for machines without hackmatrix_env.HackMatrix
        import sys

        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
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
        "res_blocks": res_blocks,
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
    from hackmatrix_train.config import NETWORKS

    p = argparse.ArgumentParser(prog="hm-bench train", description=__doc__)
    p.add_argument("--num-envs", type=int, nargs="+", default=[256, 1024])
    p.add_argument("--num-steps", type=int, default=32)
    p.add_argument("--updates", type=int, default=5, help="timed updates per setting")
    p.add_argument("--network", nargs="+", default=["grid"], choices=list(NETWORKS))
    p.add_argument(
        "--hidden-dim", type=int, nargs="+", default=[256], help="network width(s) (default 256)"
    )
    p.add_argument(
        "--res-blocks", type=int, nargs="+", default=[0],
        help="residual blocks of a grid network (default 0), e.g. 0 1 for a paired figure",
    )  # fmt: skip
    p.add_argument(
        "--update-epochs", type=int, nargs="+", default=[None],
        help="PPO epochs per update (default: the defaults', auto-scaled)",
    )  # fmt: skip
    p.add_argument(
        "--num-minibatches", type=int, nargs="+", default=[None],
        help="minibatches per epoch (default: the defaults', auto-scaled)",
    )  # fmt: skip
    p.add_argument("--env", default="hackmatrix", choices=["hackmatrix", "probe"])
    p.add_argument("--warmup", type=int, default=1, help="untimed updates after compiling")
    p.add_argument("--json", default=None)
    p.add_argument(
        "--cpu-devices", type=int, nargs="+", default=None,
        help="run once per CPU device count, each in its own process (e.g. 2 1), and compare",
    )  # fmt: skip
    args = p.parse_args(argv)
    if args.cpu_devices:
        return compare_device_counts(args, argv)
    import jax

    rows = []
    print(
        f"jax {jax.__version__} backend={jax.default_backend()} devices={jax.device_count()} "
        f"cpus={os.cpu_count()} {platform.processor() or platform.machine()}"
    )
    hdr = f"{'network':>7} {'hidden':>6} {'blocks':>6} {'envs':>6} {'mb':>3} {'ep':>3} {'init s':>7} {'compile s':>9} {'steps/s':>10}"
    print(hdr)
    settings = [
        (net, h, b, ep, mb, n)
        for net in args.network
        for h in args.hidden_dim
        for b in args.res_blocks
        for ep in args.update_epochs
        for mb in args.num_minibatches
        for n in args.num_envs
    ]
    for net, hidden, blocks, epochs, minibatches, n in settings:
        r = bench_one(
            n, args.updates, net, args.num_steps, args.env, args.warmup, hidden, epochs,
            minibatches, blocks,
        )  # fmt: skip
        rows.append(r)
        print(
            f"{net:>7} {hidden:>6} {blocks:>6} {n:>6} {r['num_minibatches']:>3} {r['update_epochs']:>3} "
            f"{r['init_seconds']:>7.1f} {r['compile_seconds']:>9.1f} {r['steps_per_second']:>10,.0f}",
            flush=True,
        )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"jax": jax.__version__, "rows": rows}, indent=1))
    return 0


def without_flags(argv: list[str], flags: tuple[str, ...]) -> list[str]:
    """``argv`` less the given flags and their values (``--flag v ...`` or ``--flag=v``)."""
    rest, dropping = [], False
    for a in argv:
        if a.startswith("-"):
            dropping = a.split("=", 1)[0] in flags
            if dropping:
                continue
        elif dropping:
            continue
        rest.append(a)
    return rest


def compare_device_counts(args, argv) -> int:
    """Each CPU device count in a child process (this module, one count each), then the ratios."""
    import subprocess
    import sys
    import tempfile

    if any(n < 1 for n in args.cpu_devices):
        raise SystemExit("error: --cpu-devices counts must be >= 1")
    rest = without_flags(sys.argv[1:] if argv is None else argv, ("--cpu-devices", "--json"))
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.cpu_devices:
            out = Path(tmp) / f"d{n}.json"
            code = (
                "import sys; from hackmatrix_env.devices import use_cpu_cores; "
                f"use_cpu_cores({n}); from hackmatrix_bench.train import main; "
                "sys.exit(main(sys.argv[1:]))"
            )
            print(f"--- {n} CPU device(s) ---", flush=True)
            subprocess.run([sys.executable, "-c", code, *rest, "--json", str(out)], check=True)
            results[n] = json.loads(out.read_text())["rows"]
    base = args.cpu_devices[-1]
    print(f"steps/s ratio to {base} device(s), same run:")
    for n, rows in results.items():
        for row, ref in zip(rows, results[base], strict=True):
            ratio = row["steps_per_second"] / ref["steps_per_second"]
            print(
                f"  {n} device(s) {row['network']} {row['num_envs']} envs: "
                f"{row['steps_per_second']:,.0f} steps/s  x{ratio:.2f}"
            )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({str(n): r for n, r in results.items()}, indent=1))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
