"""``hm-bench``: the one front door to every benchmark of the project (host script, not a test).

    uv run hm-bench                             # the list: what each benchmark prints, how long
    uv run hm-bench env                         # env steps/s and compile, 1,024 and 4,096 envs
    uv run hm-bench env --num-envs 4096 --steps 128 --repeats 5
    uv run hm-bench train | learn | parity | programs | profile | ...   (``hm-bench <what> -h``)

``env`` runs here. For each batch size it prints the compile time and the env steps
per second of a uniform random *masked* policy (``uniform_masked_actions``: one
32-bit draw per env; ``--policy gumbel`` for the Gumbel-max policy) under
``jit(scan(vmap(env.step)))`` with gymnax auto-reset, then the cost of
``jit(vmap(reset))`` alone; ``--no-reset`` also times the step without auto-reset
(``step_env``), so the reset's share is visible. The compile line is split into
trace, lower and XLA seconds, with the compiled graph's size in kernels
(``kernel_count``). On a CPU with several cores it then times the same rollout with
the envs split over one JAX device per core (``devices.sharded_vmap``; ``--devices N``
to choose, ``--devices 1`` to skip) and checks that both runs played the same games.

Every other benchmark is listed in ``BENCHMARKS`` and started by name: the trainer's
and the parity harness's by module name (imported only when asked for), the host scripts
from this package's folder, the repository's ``benchmarks/`` (its README says what each
prints and how long it takes). This package is a development member of the workspace:
no published wheel holds it (``tests/env/test_wheel.py``).
"""

from __future__ import annotations

import importlib
import os
import platform
import re
import runpy
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np
from hackmatrix_env.argparsing import Parser, fail
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


@dataclass(frozen=True)
class Benchmark:
    """One ``hm-bench`` subcommand: where it lives, what it prints, how long it runs.

    Exactly one of ``module`` (a package module with ``main(argv)``) and ``script``
    (a file in the repository's ``benchmarks/`` folder) is set; ``env`` has neither
    (it runs in this module). ``default_args`` go before the user's arguments, so a
    flag given on the command line overrides them (argparse keeps the last one).
    """

    prints: str
    duration: str
    module: str | None = None
    script: str | None = None
    default_args: tuple[str, ...] = ()


BENCHMARKS: dict[str, Benchmark] = {
    "env": Benchmark(
        "env steps/s and compile (trace/lower/XLA, kernels), plain vmap and over the CPU cores",
        "2-3 min on 2 CPU cores",
    ),
    "compile": Benchmark(
        "cold compile per program (env reset/step, PPO, search, evaluators): trace, lower and "
        "XLA seconds, optimized-HLO instructions and kernels; --phases: the env step's parts",
        "5-10 min on 2 CPU cores (--tiny: 3-5 min)",
        module="hackmatrix_bench.compile_bench",
    ),
    "eval-start": Benchmark(
        "a cold hm-eval --search from launch to its table, the search's compile beside the "
        "greedy evaluation's and one after the other, in alternating fresh processes",
        "5-8 min on 2 CPU cores (2 pairs)",
        module="hackmatrix_bench.eval_start",
    ),
    "import-start": Benchmark(
        "cold starts (import hackmatrix_env, hm-eval's imports, the README's gymnax snippet) "
        "with gymnax's whole package and distrax imported first and without, alternating",
        "3-5 min on 2 CPU cores (3 pairs)",
        module="hackmatrix_bench.import_start",
    ),
    "eager": Benchmark(
        "one game in a Python loop and the README's gymnax snippet, cold, the env's eager calls "
        "compiled quick and with XLA's defaults, alternating: compile, per-step time, same game",
        "3-5 min on 2 CPU cores (3 pairs)",
        module="hackmatrix_bench.eager_start",
    ),
    "train": Benchmark(
        "PPO end to end: init, compile and steps/s per env count",
        "3-5 min on 2 CPU cores",
        module="hackmatrix_bench.train",
    ),
    "learn": Benchmark(
        "learning: train N seeds, evaluate whole episodes vs random, curves",
        "minutes to hours: set by --total-timesteps",
        module="hackmatrix_bench.learn",
    ),
    "parity": Benchmark(
        "JAX vs Swift, 1,000 scenarios x 30 steps: steps compared, matches, mismatches",
        "5-8 min on 2 CPU cores, plus the Swift build if the binary is missing",
        module="hackmatrix_parity.cli",
        default_args=("--scenarios", "1000", "--steps", "30", "--seed", "10", "--workers", "2"),
    ),
    "programs": Benchmark(
        "run_program / program_mask calls/s; --env: env steps/s with and without programs",
        "1-2 min",
        script="bench_programs.py",
    ),
    "profile": Benchmark(
        "per-part run time and compile of the step (enemy phase, observe, reset, ...)",
        "5-10 min: one compile per part",
        script="profile_step.py",
    ),
    "kernels": Benchmark(
        "per-kernel self time of the rollout, attributed to source lines (profiler trace)",
        "1-2 min",
        script="trace_profile.py",
    ),
    "ab": Benchmark(
        "paired A/B of two source trees in one process: time ratio B/A, kernels",
        "2-4 min: two compiles, then --rounds",
        script="ab_trees.py",
    ),
    "digest": Benchmark(
        "SHA-256 digests of a fixed random rollout (same digests = same games)",
        "under 1 min",
        script="rollout_digest.py",
    ),
    "parity-modes": Benchmark(
        "hm-parity in canonical mode (our binary behind the proxy) and extended mode on the "
        "same scenarios, alternating blocks: steps, matches by kind, mismatches, steps/s",
        "set by --scenarios (2,000 x 30: about 8 min)",
        script="canonical_vs_extended.py",
    ),
    "parity-chunks": Benchmark(
        "a long hm-parity run in resumable chunks merged into one summary (experiments/parity/)",
        "set by --target-steps (1,000,000 steps: hours)",
        script="parity_chunks.py",
    ),
    "gym": Benchmark(
        "the Gymnasium vector env's steps/s at 64 and 1,024 games next to SwiftEnv, one run",
        "1-3 min, plus the Swift build if the binary is missing",
        script="gym_vector.py",
    ),
    "undo-depth": Benchmark(
        "how often a fixed-depth UNDO ring would differ from the unbounded stack",
        "2-5 min",
        script="undo_depth.py",
    ),
    "swift": Benchmark(
        "Swift game loop in-process and over the pipe (steps/s); --soak N checks every reply",
        "under 1 min once the binary is built",
        script="swift_bench.py",
    ),
    "transitions": Benchmark(
        "Swift leads, JAX must reproduce each transition (parity diagnosis)",
        "minutes: set by --scenarios",
        script="transition_support.py",
    ),
    "search": Benchmark(
        "where a search step spends its time: env step, observe, network, resample; whole "
        "searches (honest, oracle) and their simulations/s",
        "2-5 min: one compile per search size",
        script="search_bench.py",
    ),
    "search-teacher": Benchmark(
        "the search as a teacher: its policy target against the prior (entropy, KL, noise "
        "between keys) and whether its overrides raise the greedy policy's own return",
        "3-8 min: set by --batches, --games and --reps",
        script="search_teacher.py",
    ),
    "winnable": Benchmark(
        "how winnable the game is: a study-budget search (hundreds of simulations, every "
        "legal action considered) plays whole games, oracle and honest; wins, stage, economy",
        "set by --games and --simulations (128 games x 256 on a shared 2-core CPU: oracle 85 "
        "min, honest 25 min)",
        module="hackmatrix_bench.winnable",
    ),
    "siphon-bias": Benchmark(
        "a checkpoint's greedy return with extra siphon/program logit bias",
        "minutes: set by --episodes and --biases",
        script="siphon_bias.py",
    ),
}


def benchmarks_dir() -> Path:
    """The repository's ``benchmarks/`` folder, which holds this package and the host scripts."""
    return Path(__file__).resolve().parents[1]


def list_benchmarks() -> str:
    """The table ``hm-bench`` prints without arguments."""
    width = max(map(len, BENCHMARKS))
    lines = ["usage: hm-bench <what> [args]   (hm-bench <what> -h for its options)", ""]
    for name, b in BENCHMARKS.items():
        lines.append(f"  {name:<{width}}  {b.prints}")
        lines.append(f"  {'':<{width}}  ({b.duration})")
    return "\n".join(lines)


def run_benchmark(name: str, args: list[str]) -> int:
    """Run benchmark ``name`` with command-line ``args``; returns its exit status."""
    bench = BENCHMARKS[name]
    argv = [*bench.default_args, *args]
    if bench.module is not None:
        try:
            module = importlib.import_module(bench.module)
        except ModuleNotFoundError as e:
            raise SystemExit(
                f"hm-bench {name}: needs {bench.module} ({e.name} is not installed; "
                "run `uv sync` in the repository)"
            ) from e
        return _exit_status(lambda: module.main(argv))
    path = benchmarks_dir() / bench.script
    saved = sys.argv
    sys.argv = [str(path), *argv]
    try:
        return _exit_status(lambda: runpy.run_path(str(path), run_name="__main__"))
    finally:
        sys.argv = saved


def _exit_status(run) -> int:
    """``run()``'s exit status: its ``SystemExit`` code (argparse's ``-h`` and errors too)."""
    try:
        result = run()
    except SystemExit as e:
        result = e.code
    if result is None or isinstance(result, dict):  # run_path returns the module's globals
        return 0
    return result if isinstance(result, int) else 1


def env_main(argv: list[str] | None = None) -> None:
    """``hm-bench env``: the env's throughput and compile time."""
    parser = Parser(
        prog="hm-bench env",
        description="env steps/s and compile time under jit(vmap) with auto-reset",
    )
    parser.add_argument("--num-envs", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--steps", type=int, default=64, help="steps per timed call (scan length)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--no-reset", action="store_true", help="also time step_env alone (no auto-reset)"
    )
    parser.add_argument(
        "--policy",
        nargs="+",
        choices=sorted(POLICIES),
        default=["uniform"],
        help="random masked policy: uniform (one draw per env, default) and/or gumbel "
        "(Gumbel-max, 28 draws per env)",
    )
    parser.add_argument(
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
    bench_env(args.num_envs, args.steps, args.repeats, args.seed, args.no_reset, tuple(args.policy))


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``hm-bench``: ``hm-bench <what> [args]``; no ``<what>`` lists them."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help", "list"):
        print(list_benchmarks())
        return 0
    what, rest = argv[0], argv[1:]
    if what not in BENCHMARKS:
        return fail("hm-bench", f"unknown benchmark {what!r} (hm-bench list shows them)")
    if what == "env":
        env_main(rest)
        return 0
    return run_benchmark(what, rest)


if __name__ == "__main__":
    sys.exit(main())
