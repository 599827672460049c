"""Command-line plumbing shared by every ``hm-*`` tool (host only, no JAX).

A bad input to any tool ends it with one line on stderr, ``<prog>: error: <what>``, and exit
status 2, never a traceback: ``Parser`` makes argparse's own errors (unknown flag, bad number,
flags that exclude each other) that one line, and ``fail`` writes the tool's own. A path that
does not exist reads ``no such file or directory: <path>`` in every tool (``existing_path``).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (no usage block) and exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def fail(prog: str, message: str) -> int:
    """Write ``<prog>: error: <message>`` (one line) to stderr; the exit status 2."""
    first = " ".join(str(message).split())  # one line, whatever the message held
    print(f"{prog}: error: {first}", file=sys.stderr)
    return 2


def missing(path: str | Path) -> str:
    """The message of a path that does not exist, the same in every tool."""
    return f"no such file or directory: {path}"


def existing_path(text: str) -> Path:
    """An argparse ``type``: the path, if something is there."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(missing(text))
    return path


def count(text: str) -> int:
    """An argparse ``type`` for a count: ``10M``, ``500k``, ``1e7``, ``1_000_000`` -> int."""
    t = text.strip().lower().replace("_", "").replace(",", "")
    mult = {"k": 10**3, "m": 10**6, "g": 10**9, "b": 10**9}.get(t[-1:], 1)
    try:
        value = float(t[:-1] if mult != 1 else t) * mult
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a count: {text!r} (e.g. 10M, 500k, 1e7)") from None
    if value < 0 or not math.isfinite(value) or value != int(value):
        raise argparse.ArgumentTypeError(f"not a whole non-negative count: {text!r}")
    return int(value)
