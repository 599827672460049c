"""``hm-bench eval-start``: a cold ``hm-eval --search`` from launch to its table, in two of
``evaluate_checkpoint``'s layouts: ``shared`` (every row on one compiled game step,
``policy.play_shared``), ``beside`` (whole programs, the search's compiled beside the greedy
one, ``policy.compile_beside``) and ``sequential`` (whole programs one after the other). A
layout named with ``-defaults`` compiles every program with XLA's defaults, the programs of
the game alone for a few games included (``hackmatrix_env.eager.FEW_GAMES`` set to 0), so
``--layouts shared-defaults shared`` measures their quick compile. ``--search 0``: the greedy
row alone.

Each run is a fresh process with no compilation cache, so every compile is cold, as a new user's
first run is. The two ways alternate (``--pairs`` pairs, the order flipped every pair) so a
drift in the machine's load falls on both; the figures are the seconds from launch to the
summary, and the ratio of the medians. The summaries must be equal (the same games).

    uv run hm-bench eval-start                       # beside against shared, 2 pairs
    uv run hm-bench eval-start --pairs 3 --episodes 16 --search 8 --layouts sequential shared
    uv run hm-bench eval-start --episodes 8 --search 0 --layouts shared-defaults shared
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

from hackmatrix_env.argparsing import Parser, fail

# One cold evaluation in a fresh process: the shipped agent, the protocol's key 0, stage 1.
CHILD = """
import json, sys
import hackmatrix_env.eager
from hackmatrix_train.policy import evaluate_checkpoint
hackmatrix_env.eager.FEW_GAMES = {few_games}
s = evaluate_checkpoint(None, {episodes}, seed=0, search={rows}, layout="{layout}")
json.dump(s, sys.stdout)
"""
LAYOUTS = ("shared", "beside", "sequential")
CHOICES = (*LAYOUTS, *(f"{layout}-defaults" for layout in LAYOUTS))
TIMING = {"compile_seconds", "seconds", "seconds_per_decision"}


def child_code(variant: str, episodes: int, search: int) -> str:
    """The child's program for one cold evaluation of ``variant`` (a layout, ``-defaults``)."""
    import hackmatrix_env.eager

    layout = variant.removesuffix("-defaults")
    few = 0 if variant.endswith("-defaults") else hackmatrix_env.eager.FEW_GAMES
    rows = [{"num_simulations": search}] if search else []
    return CHILD.format(episodes=episodes, rows=rows, layout=layout, few_games=few)


def run_once(variant: str, episodes: int, search: int) -> tuple[float, dict]:
    """Seconds from launch to the summary of one cold evaluation, and the summary."""
    code = child_code(variant, episodes, search)
    env = {**os.environ, "HACKMATRIX_JAX_CACHE": "off"}  # no cache: every compile is cold
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=False)  # fmt: skip
    seconds = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"the evaluation failed:\n{out.stderr[-2000:]}")
    return seconds, json.loads(out.stdout)


def strip_timing(summary: dict) -> dict:
    """The summary without its wall-clock fields (the games' figures only)."""
    rows = [{k: v for k, v in r.items() if k not in TIMING} for r in summary.get("search", ())]
    return {**{k: v for k, v in summary.items() if k != "search"}, "search": rows}


def main(argv: list[str] | None = None) -> int:
    p = Parser(prog="hm-bench eval-start", description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=2, help="pairs of cold runs (default: 2)")
    p.add_argument("--episodes", type=int, default=16, help="episodes per row (default: 16)")
    p.add_argument(
        "--search",
        type=int,
        default=8,
        help="simulations per move (default: 8; 0: the greedy row alone)",
    )
    p.add_argument("--layouts", nargs=2, default=("beside", "shared"), metavar=("A", "B"),
                   choices=CHOICES,
                   help="the two layouts compared (default: beside shared); LAYOUT-defaults: "
                   "every program at XLA's defaults")  # fmt: skip
    args = p.parse_args(argv)
    if args.pairs < 1 or args.episodes < 1 or args.search < 0:
        return fail("hm-bench eval-start", "--pairs and --episodes must be >= 1, --search >= 0")
    a, b = args.layouts
    times: dict[str, list[float]] = {a: [], b: []}
    summaries = []
    for i in range(args.pairs):
        for layout in (a, b) if i % 2 == 0 else (b, a):
            seconds, summary = run_once(layout, args.episodes, args.search)
            times[layout].append(seconds)
            summaries.append(strip_timing(summary))
            print(f"pair {i + 1}: {layout}: {seconds:.1f} s from launch to the summary",
                  flush=True)  # fmt: skip
    same = all(s == summaries[0] for s in summaries)
    before, after = statistics.median(times[a]), statistics.median(times[b])
    print(f"median: {a} {before:.1f} s, {b} {after:.1f} s: x{before / after:.2f}; "
          f"the same summaries: {same}")  # fmt: skip
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
