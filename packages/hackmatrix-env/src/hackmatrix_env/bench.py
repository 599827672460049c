"""``hm-bench``: throughput and compile-time figures for the JAX env (host script, not a test).

    uv run hm-bench env                         # 1,024 and 4,096 envs
    uv run hm-bench env --num-envs 4096 --steps 128 --repeats 5

For each batch size it prints the compile time and the env steps per second
of a uniform random *masked* policy (``uniform_masked_actions``: one 32-bit draw
per env; ``--policy gumbel`` for the Gumbel-max policy used before session 5)
under ``jit(scan(vmap(env.step)))`` with gymnax auto-reset, then the cost of
``jit(vmap(reset))`` alone; ``--no-reset`` also times the step without auto-reset
(``step_env``), so the reset's share is visible. The compile line is split into
trace, lower and XLA seconds, with the compiled graph's size in kernels
(``kernel_count``; specs/env-shell.md §7.6).

On a CPU with several cores it then times the same rollout with the envs split
over one JAX device per core (``devices.sharded_vmap``; ``--devices N`` to choose,
``--devices 1`` to skip) and checks that both runs played the same games
(specs/env-shell.md §7.8).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import time
from functools import partial
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from hackmatrix_env.devices import batch_sharding, sharded_vmap, use_cpu_cores

if TYPE_CHECKING:
    from hackmatrix_env.env import HackMatrix


def gumbel_masked_actions(key: jax.Array, mask: jax.Array) -> jax.Array:
    """int32[B]: uniform over the valid actions (Gumbel-max over the mask; 28 draws per row)."""
    g = jax.random.gumbel(key, mask.shape)
    return jnp.argmax(jnp.where(mask, g, -jnp.inf), axis=-1).astype(jnp.int32)


def uniform_masked_actions(key: jax.Array, mask: jax.Array) -> jax.Array:
    """int32[B]: uniform over each row's valid actions from one 32-bit draw per row.

    The draw ``r`` picks the ``k = r mod n``-th valid action (``n`` valid ones): the
    valid actions strictly before it are the positions whose inclusive count of valid
    actions is ``<= k``, so the action index is that number of positions. The counts come
    from a float dot with a constant triangular matrix (exact: at most 28), not a
    ``cumsum`` (a slow ``reduce_window`` on XLA:CPU). The Gumbel-max policy costs 28
    draws and two logs per row: 3-11 % of the benchmark's step in same-run A/Bs
    (specs/env-shell.md §7.4).
    Bias: ``2**32 mod n`` of ``2**32`` draws, below 1e-8. A row with no valid action
    gets action 0.
    """
    n_actions = mask.shape[-1]
    upper = jnp.triu(jnp.ones((n_actions, n_actions), jnp.float32))  # [a', a]: a' <= a
    counts = jnp.dot(mask.astype(jnp.float32), upper).astype(jnp.int32)  # valid in [0, a]
    n_valid = counts[..., -1]
    r = jax.random.bits(key, mask.shape[:-1], jnp.uint32)
    k = (r % jnp.maximum(n_valid, 1).astype(jnp.uint32)).astype(jnp.int32)
    action = jnp.sum(counts <= k[..., None], axis=-1)
    return jnp.where(n_valid > 0, action, 0).astype(jnp.int32)


POLICIES = {"uniform": uniform_masked_actions, "gumbel": gumbel_masked_actions}


def make_rollout(
    env: HackMatrix,
    num_envs: int,
    steps: int,
    auto_reset: bool = True,
    policy: str = "uniform",
    devices=None,
):
    """A jitted ``(obs, state, key) -> (obs, state, reward_sum, episodes)`` running ``steps`` steps.

    ``devices``: split the envs over these devices (``sharded_vmap``; the inputs
    may be placed with ``devices.batch_sharding(devices)``); default: one ``vmap``.
    """
    params = env.default_params
    batch = jax.vmap if devices is None else partial(sharded_vmap, devices=devices)

    def one(carry, key):
        obs, state = carry
        k_act, k_env = jax.random.split(key)
        actions = POLICIES[policy](k_act, obs.action_mask)
        keys = jax.random.split(k_env, num_envs)
        if auto_reset:
            obs, state, reward, term, trunc, _ = batch(env.step, in_axes=(0, 0, 0, None))(
                keys, state, actions, params
            )
            done = term | trunc
        else:
            obs, state, reward, done, _ = batch(env.step_env, in_axes=(0, 0, 0, None))(
                keys, state, actions, params
            )
        return (obs, state), (jnp.sum(reward), jnp.sum(done))

    @jax.jit
    def rollout(obs, state, key):
        (obs, state), (rewards, dones) = jax.lax.scan(
            one, (obs, state), jax.random.split(key, steps)
        )
        return obs, state, jnp.sum(rewards), jnp.sum(dones)

    return rollout


_NOT_KERNELS = frozenset(
    {"parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all", "call"}
)


def kernel_count(hlo_text: str) -> int:
    """Kernels in a compiled XLA module's text (``compiled.as_text()``).

    Counts the instructions of every computation the runtime executes (the entry,
    ``while`` bodies and conditions, ``conditional`` branches), leaving out those
    that emit no code (parameters, constants, tuples, bitcasts, the ``call``
    wrapping a loop) and the bodies of fusions, reducers and comparators (compiled
    into the instruction that uses them); a ``while`` or ``conditional`` counts once.
    XLA:CPU compiles each such kernel separately (LLVM), so the count tracks the
    cold compile time and, unlike it, does not depend on the machine's load.
    """
    inner = set(re.findall(r"(?:calls|to_apply)=%([\w.\-]+)", hlo_text))
    inner -= set(re.findall(r"\bcall\(.*?to_apply=%([\w.\-]+)", hlo_text))
    count, counting = 0, False
    for line in hlo_text.splitlines():
        head = re.match(r"^(?:ENTRY )?%([\w.\-]+) .*\{\s*$", line)
        if head:
            counting = head.group(1) not in inner
            continue
        op = re.match(r"\s*(?:ROOT )?%[\w.\-]+ = .*?\s([a-z][\w\-]*)\(", line)
        if counting and op and op.group(1) not in _NOT_KERNELS:
            count += 1
    return count


def _time(fn, *args, repeats: int) -> float:
    out = fn(*args)
    jax.block_until_ready(out)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t0)
    return best


def _timed_rollout(rollout, obs, state, key, num_envs: int, steps: int, repeats: int, label: str):
    """Compile (timed, split), time and print one rollout; returns its outputs."""
    t0 = time.perf_counter()
    traced = rollout.trace(obs, state, key)
    t1 = time.perf_counter()
    lowered = traced.lower()
    t2 = time.perf_counter()
    compiled = lowered.compile()
    t3 = time.perf_counter()
    kernels = kernel_count(compiled.as_text())
    secs = _time(compiled, obs, state, key, repeats=repeats)
    out = compiled(obs, state, key)
    print(
        f"num_envs={num_envs:>5}  {label:<20} compile {t3 - t0:6.1f} s  "
        f"{num_envs * steps / secs:>11,.0f} steps/s  "
        f"({secs / steps * 1e3:.2f} ms per batched step, {int(out[3])} episode ends)"
    )
    print(
        f"{'':>16}compile = trace {t1 - t0:.1f} s + lower {t2 - t1:.1f} s + XLA "
        f"{t3 - t2:.1f} s; {kernels:,} XLA kernels (deterministic size of the graph)"
    )
    return out


def same_games(a, b) -> bool:
    """Two rollouts' outputs agree: every leaf equal, except float scalars to rtol 1e-5.

    The final observations, states and episode counts must be equal bit for bit.
    The reward sum (a float32 scalar) is summed over the envs in another order
    when they are split over devices (partial sums per device), so it may differ
    in its last bits although every game is the same.
    """

    def host(x):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        return np.asarray(jax.device_get(x))

    def same(x, y):
        x, y = host(x), host(y)
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if x.ndim == 0 and np.issubdtype(x.dtype, np.floating):
            return bool(np.isclose(x, y, rtol=1e-5, atol=0.0))
        return np.array_equal(x, y)

    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb) and all(same(x, y) for x, y in zip(la, lb, strict=True))


def bench_env(
    num_envs_list: list[int],
    steps: int,
    repeats: int,
    seed: int,
    no_reset: bool = False,
    policies: tuple[str, ...] = ("uniform",),
) -> None:
    from hackmatrix_env.env import HackMatrix

    env = HackMatrix()
    params = env.default_params
    devices = jax.local_devices()
    print(
        f"hm-bench env: jax {jax.__version__}, {jax.default_backend()} "
        f"({os.cpu_count()} cpus, {platform.processor() or platform.machine()}, "
        f"{len(devices)} device(s)), random masked policy ({', '.join(policies)}), "
        f"{steps} steps per timed call, best of {repeats}"
    )
    reset_batch = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    for num_envs in num_envs_list:
        key = jax.random.key(seed)
        keys = jax.random.split(key, num_envs)
        t0 = time.perf_counter()
        reset_c = reset_batch.lower(keys, params).compile()
        reset_compile = time.perf_counter() - t0
        obs, state = reset_c(keys, params)
        runs = [(a, p) for a in ((True, False) if no_reset else (True,)) for p in policies]
        for auto_reset, policy in runs:
            label = "step + auto-reset" if auto_reset else "step_env (no reset)"
            if len(policies) > 1:
                label += f" [{policy}]"
            rollout = make_rollout(env, num_envs, steps, auto_reset, policy)
            out = _timed_rollout(rollout, obs, state, key, num_envs, steps, repeats, label)
            if len(devices) > 1 and num_envs % len(devices):
                print(
                    f"{'':>16}(not sharded: {num_envs} envs do not split over {len(devices)} devices)"
                )
            elif len(devices) > 1:
                placed = jax.device_put((obs, state), batch_sharding(devices))
                rollout = make_rollout(env, num_envs, steps, auto_reset, policy, devices)
                shard_label = f"  over {len(devices)} devices"
                out_sharded = _timed_rollout(
                    rollout, *placed, key, num_envs, steps, repeats, shard_label
                )
                same = same_games(out, out_sharded)
                print(
                    f"{'':>16}sharded_vmap over {len(devices)} devices: "
                    f"{'the same games (final leaves equal, reward sum to rtol 1e-5)' if same else 'DIFFERENT GAMES'}"
                )
                if not same:
                    raise SystemExit("hm-bench: the sharded rollout differs from the plain one")
        secs = _time(reset_c, keys, params, repeats=repeats)
        print(
            f"num_envs={num_envs:>5}  {'reset only':<28} compile {reset_compile:6.1f} s  "
            f"{num_envs / secs:>11,.0f} resets/s  ({secs * 1e3:.2f} ms per batched reset, "
            f"{secs / num_envs * 1e6:.2f} µs per env)"
        )


def main(argv: list[str] | None = None) -> None:
    """Entry point of ``hm-bench``."""
    parser = argparse.ArgumentParser(prog="hm-bench", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("env", help="env steps/s and compile time under jit(vmap) with auto-reset")
    p.add_argument("--num-envs", type=int, nargs="+", default=[1024, 4096])
    p.add_argument("--steps", type=int, default=64, help="steps per timed call (scan length)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--no-reset", action="store_true", help="also time step_env alone (no auto-reset)"
    )
    p.add_argument(
        "--policy",
        nargs="+",
        choices=sorted(POLICIES),
        default=["uniform"],
        help="random masked policy: uniform (one draw per env, default) and/or gumbel "
        "(Gumbel-max, 28 draws per env; the policy before session 5)",
    )
    p.add_argument(
        "--devices",
        type=int,
        default=None,
        help="CPU devices to split the envs over in the second timing (default: one per "
        "core; 1: skip it). Must be set before JAX starts, so only from this command line",
    )
    args = parser.parse_args(argv)
    if any(n < 1 for n in args.num_envs) or args.steps < 1 or args.repeats < 1:
        parser.error("--num-envs, --steps and --repeats must be positive")
    if args.devices is not None and args.devices < 1:
        parser.error("--devices must be positive")
    try:
        use_cpu_cores(args.devices)
    except RuntimeError as e:  # JAX already running (hm-bench called from Python): keep it
        print(f"hm-bench: {e}; using the devices JAX has")
    if args.what == "env":
        bench_env(
            args.num_envs, args.steps, args.repeats, args.seed, args.no_reset, tuple(args.policy)
        )


if __name__ == "__main__":
    main()
