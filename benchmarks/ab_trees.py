"""Paired A/B of two source trees of ``hackmatrix_env`` in one process (host script).

    git worktree add ../base <commit>
    uv run hm-bench ab ../base/packages/hackmatrix-env/src packages/hackmatrix-env/src \
        --envs 4096 --rounds 10

Imports the package from each ``src`` directory in turn (the module cache is
cleared between them), compiles ``hm-bench``'s rollout (``jit(scan(vmap(env.step)))``,
auto-reset, uniform masked policy) for each, then times the compiled rollouts
alternately, ``--rounds`` calls each with the same fresh key per round. Prints
steps/s (best and median), the geometric mean and median of the per-round time
ratios B/A and the XLA kernel count of each. On this project's shared 2-core VM, separate
processes differ by ±25 % from one run to the next; alternating calls in one
process cancel most of that drift (the same tree as A and B: median ratio 1.007,
single rounds 0.93-1.07). The pair's order alternates per round (ABBA...): with A
always first, a control gave 1.095 (the first call of a pair runs faster); read the
geometric mean, and |ratio - 1| < 0.05 as noise. Compile seconds are printed but
favour the second tree (JAX's caches of library jaxprs are warm by then):
compare compile times with ``hm-bench env`` runs in separate processes.
``--devices N`` splits the envs of both rollouts over N CPU devices (both trees
need ``make_rollout(..., devices)``, commit fa8db6f on).
"""

from __future__ import annotations

import argparse
import sys
import time

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def _load(src: str, num_envs: int, steps: int, sharded: bool = False):
    """(compiled rollout, obs, state, compile s, kernels) from the package under ``src``."""
    for name in [
        m for m in sys.modules if m == "hackmatrix_env" or m.startswith("hackmatrix_env.")
    ]:
        del sys.modules[name]
    sys.path.insert(0, src)
    try:
        from hackmatrix_bench.bench import kernel_count, make_rollout
        from hackmatrix_env.env import HackMatrix
    finally:
        sys.path.remove(src)
    env = HackMatrix()
    params = env.default_params
    keys = jax.random.split(jax.random.key(0), num_envs)
    obs, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    if sharded:
        devices = jax.local_devices()
        mesh = Mesh(np.array(devices), ("envs",))
        obs, state = jax.device_put((obs, state), NamedSharding(mesh, P("envs")))
        rollout = make_rollout(env, num_envs, steps, devices=devices)
    else:  # trees before commit fa8db6f have no devices argument
        rollout = make_rollout(env, num_envs, steps)
    t0 = time.perf_counter()
    compiled = rollout.lower(obs, state, jax.random.key(1)).compile()
    seconds = time.perf_counter() - t0
    jax.block_until_ready(compiled(obs, state, jax.random.key(1)))  # warm-up
    return compiled, obs, state, seconds, kernel_count(compiled.as_text())


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("tree_a", help="src directory of tree A (the one holding hackmatrix_env/)")
    p.add_argument("tree_b", help="src directory of tree B")
    p.add_argument("--envs", type=int, default=4096)
    p.add_argument("--steps", type=int, default=32, help="env steps per timed call")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--devices", type=int, default=1, help="CPU devices to split the envs over")
    args = p.parse_args(argv)
    if args.devices < 1 or args.envs % args.devices:
        p.error("--devices must be positive and divide --envs")
    jax.config.update("jax_num_cpu_devices", args.devices)  # before anything starts JAX
    runs = {}
    for label, src in (("A", args.tree_a), ("B", args.tree_b)):
        compiled, obs, state, seconds, kernels = _load(
            src, args.envs, args.steps, sharded=args.devices > 1
        )
        runs[label] = (compiled, obs, state)
        print(f"{label}: {src}: compile {seconds:.1f} s, {kernels} XLA kernels", flush=True)
    times = {label: [] for label in runs}
    for r in range(args.rounds):
        key = jax.random.key(2 + r)
        # A first in even rounds, B first in odd ones: the first call of a pair runs
        # measurably faster on this VM (with the same tree as A and B, a fixed order gave a
        # median ratio of 1.095 with A always first).
        for label in ("A", "B") if r % 2 == 0 else ("B", "A"):
            compiled, obs, state = runs[label]
            t0 = time.perf_counter()
            jax.block_until_ready(compiled(obs, state, key))
            times[label].append(time.perf_counter() - t0)
    per_call = args.envs * args.steps
    for label, t in times.items():
        t = np.asarray(t)
        print(
            f"{label}: best {per_call / t.min():,.0f} steps/s, median {per_call / np.median(t):,.0f}"
        )
    ratio = np.asarray(times["B"]) / np.asarray(times["A"])
    # The geometric mean over the alternating rounds cancels a first-call bias that
    # the median of a bimodal set of ratios does not.
    print(
        f"time B/A per round: geometric mean {np.exp(np.mean(np.log(ratio))):.3f}, "
        f"median {np.median(ratio):.3f} (min {ratio.min():.3f}, max {ratio.max():.3f})"
    )


if __name__ == "__main__":
    main()
