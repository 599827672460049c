"""Persistent XLA compilation cache for the command-line tools (hm-train, hm-eval, hm-bench learn).

Compiling the trainer's update chunk takes ~35 s on the 2-core CPU, almost all of it the env
step, and every launch with the same config compiles the same program again: ``--resume`` after
Ctrl+C, ``hm-eval`` after training, the next seed of a sweep. JAX's persistent cache stores the
compiled executables on disk, keyed by the program, the jax/jaxlib version and the backend, so
those launches load them instead. It never changes results: a cache hit is the same executable.
Measured on the idle 2-core box: ``hm-train`` with the default config compiles in 36 s cold and
7.4 s warm (the trace, ~5-8 s, is paid on every launch).

On by default in ``$HACKMATRIX_JAX_CACHE`` or ``$XDG_CACHE_HOME/hackmatrix/jax``
(``~/.cache/hackmatrix/jax``); ``--compile-cache DIR`` picks another directory,
``--no-compile-cache`` (or ``HACKMATRIX_JAX_CACHE=off``) turns it off. A directory that cannot be
created only prints a warning: a cache is never a reason to stop a run. The benchmarks
(``hm-bench env``, ``hm-bench train``) leave it off so that they report cold compile times.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ENV_VAR = "HACKMATRIX_JAX_CACHE"
_OFF = {"", "0", "off", "none", "false", "no"}
# Programs that compile faster than this are not written (JAX's own default).
MIN_COMPILE_SECONDS = 1.0
# Least-recently-used entries are evicted beyond this (one trainer config is ~2 MB).
MAX_BYTES = 1 << 30


def default_cache_dir() -> Path | None:
    """``$HACKMATRIX_JAX_CACHE`` (None if it says off), else the user cache directory."""
    env = os.environ.get(ENV_VAR)
    if env is not None:
        return None if env.strip().lower() in _OFF else Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hackmatrix" / "jax"


def enable(path: str | os.PathLike | None, min_compile_seconds: float = MIN_COMPILE_SECONDS):
    """Point JAX's persistent compilation cache at ``path``; returns the directory or None.

    Call before the first compilation (JAX opens the cache once per process). ``None`` leaves the
    cache off. An unusable directory prints a warning and leaves the cache off.
    """
    if path is None:
        return None
    import jax

    path = Path(path).expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not os.access(path, os.W_OK):
            raise PermissionError(f"{path} is not writable")
    except OSError as e:
        print(f"warning: compilation cache disabled ({e})", file=sys.stderr)
        return None
    repair_lru_entries(path)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_seconds))
    jax.config.update("jax_compilation_cache_max_size", MAX_BYTES)
    return path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--compile-cache DIR`` / ``--no-compile-cache`` (not part of the training config)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--compile-cache",
        default=None,
        metavar="DIR",
        help=f"persistent XLA compilation cache (default: ${ENV_VAR} or "
        "~/.cache/hackmatrix/jax); later launches with the same config skip the compile",
    )
    group.add_argument(
        "--no-compile-cache",
        action="store_true",
        default=False,
        help="compile from scratch, write no cache",
    )


ARG_NAMES = frozenset({"compile_cache", "no_compile_cache"})


def enable_from_args(args: argparse.Namespace):
    """Apply the two flags added by :func:`add_arguments`; returns the directory or None."""
    if getattr(args, "no_compile_cache", False):
        return None
    chosen = getattr(args, "compile_cache", None)
    return enable(chosen if chosen is not None else default_cache_dir())


def repair_lru_entries(path: Path) -> int:
    """Give every ``<key>-cache`` entry without its ``<key>-atime`` file one; returns how many.

    JAX's size-capped cache keeps an access-time file next to each entry and reads all of them
    when it evicts. Entries written without the cap (older JAX, ``jax_compilation_cache_max_size``
    unset) or by a process killed between the two writes have none, and then every later write
    warns "Error writing persistent compilation cache entry" and eviction stops working. Such
    entries are dated by their modification time (same 8-byte little-endian nanoseconds as JAX).
    """
    repaired = 0
    try:
        for entry in path.glob("*-cache"):
            atime = entry.with_name(entry.name[: -len("-cache")] + "-atime")
            if not atime.exists():
                atime.write_bytes(entry.stat().st_mtime_ns.to_bytes(8, "little"))
                repaired += 1
    except OSError as e:  # a cache problem never stops a run
        print(f"warning: compilation cache not repaired ({e})", file=sys.stderr)
    return repaired
