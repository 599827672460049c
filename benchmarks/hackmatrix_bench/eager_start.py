"""``hm-bench eager``: the env's eager calls compiled quick (``hackmatrix_env.eager``) against
XLA's defaults, from a cold process each.

Two programs, each in a fresh process with no compilation cache, as a new user's first run:

- ``loop``: one game in a Python loop: the first ``reset`` and the first ``step`` (each its
  compile), then ``--steps`` more steps with masked uniform actions, timed per step; it prints a
  digest of the rewards and observations, so the two ways can be checked to play the same game;
- ``snippet``: the README's gymnax quickstart, end to end (imports and compile included).

"Plain" rebinds ``HackMatrix.step`` and ``reset`` to their plain ``jit`` (XLA's defaults,
what every eager call compiled with before); "quick" is the env as shipped. The two ways
alternate (``--pairs`` pairs, the order flipped every pair) so a drift in the machine's load
falls on both. Printed: the seconds of each run, medians, ratios, and whether both ways played
the same game and printed the same line.

    uv run hm-bench eager              # 3 pairs
    uv run hm-bench eager --pairs 1 --steps 50
"""

from __future__ import annotations

import json
import statistics
import sys

from hackmatrix_env.argparsing import Parser, fail

from hackmatrix_bench.import_start import readme_snippet, run_once

PLAIN = """
from hackmatrix_env.env import HackMatrix
HackMatrix.step, HackMatrix.reset = HackMatrix.step.plain, HackMatrix.reset.plain
"""
LOOP = """
import hashlib, json, time
import jax, jax.numpy as jnp, numpy as np
from hackmatrix_env import HackMatrix
env, key = HackMatrix(), jax.random.key(0)
t0 = time.perf_counter()
obs, state = env.reset(key, env.default_params)
jax.block_until_ready(obs)
t1 = time.perf_counter()
digest, times = hashlib.sha256(), []
for i in range({steps} + 1):
    k_act, k_step = jax.random.split(jax.random.fold_in(key, i))
    action = jax.random.categorical(k_act, jnp.where(obs.action_mask, 0.0, -jnp.inf))
    t = time.perf_counter()
    obs, state, reward, terminated, truncated, info = env.step(k_step, state, action)
    jax.block_until_ready(obs)
    times.append(time.perf_counter() - t)
    for leaf in jax.tree.leaves((obs, reward, info["reward_breakdown"])):
        digest.update(np.asarray(leaf).tobytes())
print(json.dumps({{"reset": t1 - t0, "first_step": times[0],
                  "per_step_ms": 1e3 * float(np.median(times[1:])), "digest": digest.hexdigest()}}))
"""
WAYS = ("plain", "quick")


def main(argv: list[str] | None = None) -> int:
    p = Parser(prog="hm-bench eager", description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=3, help="pairs of cold runs (default: 3)")
    p.add_argument("--steps", type=int, default=200, help="steps of the loop after the first")
    args = p.parse_args(argv)
    if args.pairs < 1:
        return fail("hm-bench eager", "--pairs must be >= 1")
    if args.steps < 1:
        return fail("hm-bench eager", "--steps must be >= 1")
    programs = {"loop": LOOP.format(steps=args.steps), "snippet": readme_snippet()}
    times: dict[tuple[str, str], list[float]] = {}
    loops: dict[str, list[dict]] = {way: [] for way in WAYS}
    printed: dict[str, set[str]] = {way: set() for way in WAYS}
    for i in range(args.pairs):
        order = list(WAYS) if i % 2 == 0 else list(WAYS)[::-1]
        for what, code in programs.items():
            for way in order:
                seconds, out = run_once((PLAIN if way == "plain" else "") + code)
                times.setdefault((what, way), []).append(seconds)
                if what == "loop":
                    row = json.loads(out.strip().splitlines()[-1])
                    loops[way].append(row)
                    detail = (f"reset {row['reset']:4.1f} s, first step {row['first_step']:4.1f} s, "
                              f"then {row['per_step_ms']:.2f} ms a step")  # fmt: skip
                else:
                    printed[way].add(out)
                    detail = "end to end"
                print(f"pair {i + 1}: {what:7} {way:5}: {seconds:5.1f} s ({detail})", flush=True)
    for what in programs:
        plain, quick = (statistics.median(times[(what, way)]) for way in WAYS)
        print(f"median {what:7}: plain {plain:5.1f} s, quick {quick:5.1f} s: x{plain / quick:.2f}")
    for field, unit in (("reset", "s"), ("first_step", "s"), ("per_step_ms", "ms")):
        plain, quick = (statistics.median(r[field] for r in loops[way]) for way in WAYS)
        print(f"median loop {field}: plain {plain:.2f} {unit}, quick {quick:.2f} {unit}")
    same_game = len({r["digest"] for way in WAYS for r in loops[way]}) == 1
    same_line = len(set().union(*printed.values())) == 1
    print(f"the loop played the same game both ways, bit for bit: {same_game}")
    print(f"the snippet printed the same line both ways: {same_line}")
    return 0 if same_game and same_line else 1


if __name__ == "__main__":
    sys.exit(main())
