"""``hm-bench import-start``: cold starts with the heavy imports the commands no longer need
(gymnax's whole package, distrax) and without them.

gymnax's package imports every bundled environment and with them seaborn, pandas, scipy and
matplotlib; the game loads only gymnax's two base modules (``hackmatrix_env.gymnax_base``), and
a command that never samples from the policy never loads distrax (TensorFlow Probability).
Three programs, each in a fresh process with no compilation cache, as a new user's first run:

- ``env``: ``import hackmatrix_env`` and one ``HackMatrix()``;
- ``eval``: what ``hm-eval`` loads before its first compile: the evaluation modules, the shipped
  policy and its env (``trainer.make_env``: the action set without UNDO);
- ``snippet``: the README's gymnax quickstart, end to end (its compile included).

"Before" puts first what these imports loaded before: ``import gymnax`` for ``env`` and
``snippet``, ``import gymnax, distrax`` for ``eval``. The two ways alternate (``--pairs``
pairs, the order flipped every pair) so a drift in the machine's load falls on both. Printed: seconds from launch to exit, medians and ratios, and
whether the snippet printed the same line both ways (the same game).

    uv run hm-bench import-start              # 3 pairs
    uv run hm-bench import-start --pairs 5
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from hackmatrix_env.argparsing import Parser, fail

ROOT = Path(__file__).resolve().parents[2]
ENV = "from hackmatrix_env import HackMatrix\nHackMatrix()\n"
EVAL = """
from hackmatrix_train.evaluate import run_in_chunks
from hackmatrix_train.policy import evaluate_checkpoint, load_policy
from hackmatrix_train.search_evaluate import search_summary
from hackmatrix_train.trainer import make_env
make_env(load_policy(None).cfg)
"""
# what each program imported before gymnax_base and the lazy distrax
BEFORE = {
    "env": "import gymnax\n",
    "eval": "import gymnax, distrax\n",
    "snippet": "import gymnax\n",
}


def readme_snippet(readme: Path = ROOT / "README.md") -> str:
    """The README's first Python block: the gymnax quickstart."""
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(encoding="utf-8"), re.S)
    if not blocks or "HackMatrix()" not in blocks[0]:
        raise ValueError(f"{readme} has no gymnax snippet as its first Python block")
    return blocks[0]


def run_once(code: str) -> tuple[float, str]:
    """Seconds from launch to exit of ``python -c code`` (no compile cache) and its stdout."""
    env = {**os.environ, "HACKMATRIX_JAX_CACHE": "off", "JAX_ENABLE_COMPILATION_CACHE": "false"}
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=False, cwd=ROOT)  # fmt: skip
    seconds = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"the run failed:\n{out.stderr[-2000:]}")
    return seconds, out.stdout


def main(argv: list[str] | None = None) -> int:
    p = Parser(prog="hm-bench import-start", description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=3, help="pairs of cold runs (default: 3)")
    args = p.parse_args(argv)
    if args.pairs < 1:
        return fail("hm-bench import-start", "--pairs must be >= 1")
    snippet = readme_snippet()
    ways = ("before", "after")
    times: dict[tuple[str, str], list[float]] = {}
    printed: dict[str, set[str]] = {way: set() for way in ways}
    for i in range(args.pairs):
        order = list(ways) if i % 2 == 0 else list(ways)[::-1]
        for what, code in (("env", ENV), ("eval", EVAL), ("snippet", snippet)):
            for way in order:
                seconds, out = run_once((BEFORE[what] if way == "before" else "") + code)
                times.setdefault((what, way), []).append(seconds)
                if what == "snippet":
                    printed[way].add(out)
                print(f"pair {i + 1}: {what:7} {way:6}: {seconds:5.1f} s", flush=True)
    same = len(set().union(*printed.values())) == 1
    for what in ("env", "eval", "snippet"):
        before, after = (statistics.median(times[(what, way)]) for way in ways)
        print(f"median {what:7}: before {before:5.1f} s, after {after:5.1f} s: "
              f"x{before / after:.2f}")  # fmt: skip
    print(f"the snippet printed the same line both ways: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
