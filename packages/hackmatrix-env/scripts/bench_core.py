"""Throughput of the step core: jit(vmap(step_game)) on reset states, random masked actions.

    uv run python packages/hackmatrix-env/scripts/bench_core.py [--envs 4096] [--steps 16]
        [--part step|enemy|mask]

Prints compile time, wall time and process CPU time per batched step, and
steps/s. No auto-reset and no observation: that is the env's (bench.py) job.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
from hackmatrix_env import enemies, game, mask, reward, stage
from hackmatrix_env.types import EnvParams


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--envs", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--part", default="step", choices=["step", "enemy", "mask"])
    ap.add_argument("--warmup", type=int, default=1, help="untimed calls played on first")
    args = ap.parse_args()
    b = args.envs

    states = jax.jit(jax.vmap(lambda k: stage.reset_game(k, EnvParams())))(
        jax.random.split(jax.random.key(0), b)
    )

    def one(key, s):
        k_act, k_step = jax.random.split(key)
        if args.part == "enemy":
            return enemies.run_enemy_phase(k_step, s)[0], jnp.float32(0)
        m = mask.action_mask(s)
        if args.part == "mask":
            return s, jnp.sum(m).astype(jnp.float32)
        logits = jnp.where(m[:4], 0.0, -1e9)  # move/shoot only: keeps episodes going
        a = jax.random.categorical(k_act, logits)
        out, ev = game.step_game(k_step, s, a)
        r = reward.total_reward(reward.reward_breakdown(s, out, ev))
        return out, r

    def run(key, s):
        def body(s, k):
            s, r = jax.vmap(one)(jax.random.split(k, b), s)
            return s, jnp.sum(r)

        return jax.lax.scan(body, s, jax.random.split(key, args.steps))

    f = jax.jit(run)
    t0 = time.perf_counter()
    f = f.lower(jax.random.key(1), states).compile()
    compile_s = time.perf_counter() - t0
    for i in range(args.warmup):  # play on from the reset states (more enemies)
        states, _ = jax.block_until_ready(f(jax.random.key(100 + i), states))
    w0, c0 = time.perf_counter(), time.process_time()
    jax.block_until_ready(f(jax.random.key(3), states))
    wall = (time.perf_counter() - w0) / args.steps
    cpu = (time.process_time() - c0) / args.steps
    print(
        f"part={args.part} envs={b} warmup_steps={args.warmup * args.steps} "
        f"compile={compile_s:.1f}s "
        f"wall={wall * 1e3:.2f}ms cpu={cpu * 1e3:.2f}ms per batched step -> "
        f"{b / wall:,.0f} steps/s (wall), {b / cpu:,.0f} steps/s per CPU-second"
    )


if __name__ == "__main__":
    main()
