"""Steps/s of the Gymnasium envs: the JAX vector env at N games next to the Swift ``SwiftEnv`` (host script).

    uv run hm-bench gym
    uv run hm-bench gym --num-envs 64 1024 4096 --steps 200

All rows play a uniform random *masked* policy drawn on the host with numpy
(Gumbel-max over ``action_masks()``), numpy in and numpy out, as a PyTorch
learner would drive them, with the flat ``float32[1545]`` observation:

* ``HackMatrixVectorEnv(N)``: one jitted ``vmap`` call per ``step`` for all N games
  (``SAME_STEP`` autoreset), timed over ``--steps`` steps after one warm-up step
  (the compile, printed apart). The env's share (``step`` alone) is printed too.
* ``HackMatrixEnv``: one game, one jitted unbatched gymnax ``step`` per call.
* ``SwiftEnv`` (``hackmatrix_parity.gym_env``): one game in the Swift headless
  binary over a pipe, built first if missing (``swift build -c release``);
  ``--no-swift`` skips it.

The compilation cache is left off, so compile times are cold ones.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import jax
import numpy as np
from hackmatrix_env.gymnasium import HackMatrixEnv, HackMatrixVectorEnv


def masked_actions(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """int64[N]: uniform over each row's valid actions (Gumbel-max; row 0 action if none)."""
    g = rng.gumbel(size=masks.shape)
    return np.argmax(np.where(masks, g, -np.inf), axis=-1)


def bench_vector(num_envs: int, steps: int, seed: int) -> None:
    env = HackMatrixVectorEnv(num_envs, flatten=True)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    env.reset(seed=seed)
    env.step(masked_actions(rng, env.action_masks()))
    compile_s = time.perf_counter() - t0
    in_step, ends = 0.0, 0
    t0 = time.perf_counter()
    for _ in range(steps):
        actions = masked_actions(rng, env.action_masks())
        t1 = time.perf_counter()
        _, _, term, trunc, _ = env.step(actions)
        in_step += time.perf_counter() - t1
        ends += int(np.sum(term | trunc))
    secs = time.perf_counter() - t0
    print(
        f"HackMatrixVectorEnv  N={num_envs:>5}  {num_envs * steps / secs:>10,.0f} steps/s  "
        f"(step alone {num_envs * steps / in_step:>10,.0f} steps/s, "
        f"{in_step / steps * 1e3:6.2f} ms per call; warm-up incl. compile {compile_s:5.1f} s; "
        f"{ends} episode ends)"
    )
    env.close()


def _play_single(env, rng: np.random.Generator, steps: int) -> tuple[float, int]:
    """``(seconds, episode ends)`` of ``steps`` uniform masked steps of one game, resetting at ends."""
    ends = 0
    t0 = time.perf_counter()
    for _ in range(steps):
        _, _, term, trunc, _ = env.step(int(masked_actions(rng, env.action_masks()[None])[0]))
        if term or trunc:
            ends += 1
            env.reset()
    return time.perf_counter() - t0, ends


def bench_single(steps: int, seed: int) -> None:
    env = HackMatrixEnv(flatten=True)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    env.reset(seed=seed)
    env.step(int(masked_actions(rng, env.action_masks()[None])[0]))
    compile_s = time.perf_counter() - t0
    secs, ends = _play_single(env, rng, steps)
    print(
        f"HackMatrixEnv        1 game   {steps / secs:>10,.0f} steps/s  "
        f"(warm-up incl. compile {compile_s:5.1f} s; {ends} episode ends)"
    )


def bench_swift(steps: int, seed: int) -> None:
    from hackmatrix_parity.build import ensure_swift_binary
    from hackmatrix_parity.gym_env import SwiftEnv

    binary = ensure_swift_binary()
    env = SwiftEnv(str(binary), flatten=True)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    secs, ends = _play_single(env, rng, steps)
    print(f"SwiftEnv             1 game   {steps / secs:>10,.0f} steps/s  ({ends} episode ends)")
    env.close()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--num-envs", type=int, nargs="+", default=[64, 1024])
    p.add_argument("--steps", type=int, default=100, help="timed vector steps per N")
    p.add_argument("--single-steps", type=int, default=2000, help="timed steps of the 1-game envs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-swift", action="store_true", help="skip SwiftEnv")
    args = p.parse_args(argv)
    if min(args.num_envs) < 1 or args.steps < 1 or args.single_steps < 1:
        p.error("--num-envs, --steps and --single-steps must be positive")
    print(
        f"gym_vector: jax {jax.__version__}, {jax.default_backend()} ({os.cpu_count()} cpus, "
        f"{platform.processor() or platform.machine()}), random masked policy on the host, "
        f"flat observations"
    )
    for n in args.num_envs:
        bench_vector(n, args.steps, args.seed)
    bench_single(args.single_steps, args.seed)
    if not args.no_swift:
        bench_swift(args.single_steps, args.seed)


if __name__ == "__main__":
    main()
