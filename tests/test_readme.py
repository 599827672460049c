"""The README works as written: every Python block runs, every ``uv run`` line parses.

Marker convention (README.md):

* Every fenced ```` ```python ```` block is run as written, in a fresh interpreter (this one,
  ``sys.executable -c``) from the repository root. A block that needs an optional group names it
  on its first line, ``# needs: <module>``, and is skipped when that module is not installed.
* Every ``uv run ...`` line of a ```` ```bash ```` block is checked. A line whose comment holds
  ``[quick]`` is run as written (from a scratch directory that sees ``policies/``, with
  ``uv run --project`` pointing at this checkout). Any other line is checked cheaply: its
  command's ``-h`` must succeed (``hm-bench <what> -h`` for a benchmark), and an ``hm-train``
  line's flags must parse into a config (so a removed flag fails here, not in a user's shell).
  Lines with a placeholder (``<run>``) are only checked that way.

A snippet that breaks fails CI. The whole file runs in about 2-3 minutes on 2 cores.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)
PYTHON = [b for lang, b in BLOCK.findall(README) if lang == "python"]
UV_LINES = [
    line.strip()
    for lang, b in BLOCK.findall(README)
    if lang == "bash"
    for line in b.splitlines()
    if line.strip().startswith("uv run ")
]


def _uv() -> str:
    uv = os.environ.get("UV") or shutil.which("uv")
    if uv is None:
        pytest.skip("needs uv (run the suite with `uv run pytest`)")
    return uv


def split(line: str) -> tuple[list[str], bool]:
    """The command's words (comment dropped) and whether the line is marked ``[quick]``."""
    command, _, comment = line.partition("#")
    return shlex.split(command), "[quick]" in comment


def test_the_readme_has_its_snippets():
    assert len(PYTHON) >= 4 and len(UV_LINES) >= 8
    assert any(split(line)[1] for line in UV_LINES)
    assert len(README.splitlines()) <= 250 and len(README.encode()) <= 14_000


@pytest.mark.parametrize("block", PYTHON, ids=[b.splitlines()[-1][:40] for b in PYTHON])
def test_python_block_runs(block):
    first = block.splitlines()[0]
    if first.startswith("# needs:"):
        module = first.split(":", 1)[1].strip()
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"needs {module}")
    proc = subprocess.run(
        [sys.executable, "-c", block], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.parametrize("line", UV_LINES)
def test_uv_run_line(line, tmp_path):
    uv = _uv()
    words, quick = split(line)
    assert words[:2] == ["uv", "run"], line
    args = words[2:]
    if args[0] == "--group":  # an optional group (sb3: torch, ~5 GB): its script must exist
        scripts = [a for a in args if a.endswith(".py")]
        assert scripts and all((ROOT / s).exists() for s in scripts), line
        return
    if quick and "<" not in line:
        (tmp_path / "policies").symlink_to(ROOT / "policies")
        cmd = [uv, "run", "--project", str(ROOT), *args]
        proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        return
    prog = args[:2] if args[0] in ("hm-bench", "python") else args[:1]
    if prog[0] == "python":
        assert (ROOT / prog[1]).exists(), line
        return
    if prog[0] == "pytest":
        return  # the suite itself
    proc = subprocess.run([uv, "run", *prog, "-h"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    if prog[0] == "hm-train":
        from hackmatrix_train.cli.train import build_parser, config_from_args

        config_from_args(build_parser().parse_args(args[1:]))
