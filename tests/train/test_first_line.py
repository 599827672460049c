"""Every command says what it is doing before the slow imports: its first line comes before the
game or the network library loads (gymnax, flax, distrax, mctx: seconds on a cold start)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from hackmatrix_train.policy import SHIPPED_POLICY

# Runs a command's main with an import hook that prints a marker and ends the process at the
# first import of a slow library: what the command printed before it is what a user sees first.
SCRIPT = textwrap.dedent(
    """
    import importlib.abc, os, sys

    class StopAtTheGame(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name in ("gymnax", "flax", "distrax", "mctx"):
                print(f"<<{name} loads>>", flush=True)
                os._exit(0)
            return None

    sys.meta_path.insert(0, StopAtTheGame())
    from hackmatrix_train.cli import {module}
    {module}.main({argv!r})
    print("<<ended without loading the game>>", flush=True)
    """
)


@pytest.mark.parametrize(
    ("module", "argv", "first"),
    [
        ("evaluate", ["--episodes", "1"], f"evaluating {SHIPPED_POLICY}: 1 greedy"),
        ("evaluate", ["--random", "--episodes", "2"], "evaluating no checkpoint: 2 random"),
        ("watch", ["--episodes", "1", "--out", "{tmp}/r.html"], "hm-watch: loading the game"),
        ("play", [], "hm-play: loading the game"),
        ("train", ["--no-wandb", "--num-envs", "8", "--num-steps", "8",
                   "--total-timesteps", "1024", "--checkpoint-dir", "{tmp}"],
         "hm-train: starting a ppo run"),
    ],
)  # fmt: skip
def test_the_first_line_comes_before_the_game_loads(module, argv, first, tmp_path):
    argv = [a.format(tmp=tmp_path) for a in argv] + ["--no-compile-cache"]
    code = SCRIPT.replace("{module}", module).replace("{argv!r}", repr(argv))
    env = dict(os.environ, COLUMNS="100")
    out = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    assert lines, out.stdout[-2000:]
    assert lines[0].startswith(first), lines
    assert lines[-1].startswith("<<") and lines[-1].endswith(" loads>>"), lines
