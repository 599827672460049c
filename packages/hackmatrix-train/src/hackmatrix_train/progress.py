"""What a command prints while it works: one-line news, compile notices and progress bars.

A first run spends most of its time compiling, and a silent terminal reads as a hang. So every
command says what it is doing as soon as it starts (`say`), says when it compiles and roughly for
how long on a cold cache (`compiling`), and shows progress through long loops (`bar`).

On a terminal `bar` draws a tqdm bar, redrawn in place. When the output is piped or written to a
file (CI logs, `nohup`, `| tee`), redrawn bars turn into a wall of carriage returns, so `bar`
prints a plain line every tenth of the way instead. Everything goes to stderr by default, which
keeps stdout for results that scripts parse.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from typing import TextIO


def _stream(out: TextIO | None) -> TextIO:
    # Looked up at call time, not bound as a default, so a redirected sys.stderr is honoured.
    return sys.stderr if out is None else out


def is_terminal(out: TextIO | None = None) -> bool:
    """Whether `out` (stderr by default) is an interactive terminal."""
    stream = _stream(out)
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def say(msg: str, out: TextIO | None = None) -> None:
    """Print one line now (flushed), so it shows before the slow work that follows it."""
    stream = _stream(out)
    print(msg, file=stream, flush=True)


@contextlib.contextmanager
def compiling(
    what: str, estimate_s: float | None = None, out: TextIO | None = None
) -> Iterator[None]:
    """Announce a compile on entry and report its time on exit.

    `estimate_s` is a rough cold-cache figure (2-core CPU) for the entry line. With the
    persistent compilation cache a second run is much faster, and the entry line says so.
    Wrap the first call of a jitted function (the call that triggers tracing and XLA), and make
    sure the result is ready inside the block (`jax.block_until_ready`) so the time is honest.
    """
    about = f"about {estimate_s:.0f} s the first time, " if estimate_s else ""
    say(f"compiling {what}: {about}cached after...", out)
    start = time.perf_counter()
    yield
    say(f"compiled {what} in {time.perf_counter() - start:.1f} s", out)


class _PlainBar:
    """Progress as plain lines: one every `every` items and one at the end."""

    def __init__(self, total: int, desc: str, unit: str, out: TextIO, every: int | None):
        self.total, self.desc, self.unit, self.out = total, desc, unit, out
        self.every = every if every else max(1, -(-total // 10))  # a line per tenth
        self.n = 0
        self._last = 0
        self._start = time.perf_counter()
        self._closed = False

    def update(self, n: int = 1) -> None:
        self.n += n
        if self.n - self._last >= self.every and self.n < self.total:
            self._line()

    def _line(self) -> None:
        self._last = self.n
        elapsed = time.perf_counter() - self._start
        units = self.unit if self.total == 1 else f"{self.unit}s"
        say(f"{self.desc}: {self.n}/{self.total} {units} ({elapsed:.1f} s)", self.out)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._line()

    def __enter__(self) -> _PlainBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _TqdmBar:
    """A tqdm bar; the same three methods as `_PlainBar`."""

    def __init__(self, total: int, desc: str, unit: str, out: TextIO):
        from tqdm import tqdm

        self._bar = tqdm(total=total, desc=desc, unit=f" {unit}", file=out, dynamic_ncols=True)

    @property
    def n(self) -> int:
        return self._bar.n

    def update(self, n: int = 1) -> None:
        self._bar.update(n)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> _TqdmBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def bar(
    total: int,
    desc: str,
    unit: str = "episode",
    out: TextIO | None = None,
    every: int | None = None,
    tty: bool | None = None,
) -> _PlainBar | _TqdmBar:
    """A progress bar over `total` items: tqdm on a terminal, plain lines otherwise.

    `every` sets how many items pass between plain lines (default: a tenth of `total`).
    `tty` forces one form (tests); by default the stream decides.
    """
    stream = _stream(out)
    if is_terminal(stream) if tty is None else tty:
        return _TqdmBar(total, desc, unit, stream)
    return _PlainBar(total, desc, unit, stream, every)


class Silent:
    """A bar that prints nothing (``QUIET.bar``)."""

    def __init__(self) -> None:
        self.n = 0

    def update(self, n: int = 1) -> None:
        self.n += n

    def close(self) -> None:
        pass

    def __enter__(self) -> Silent:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class Reporter:
    """``say``, ``compiling`` and ``bar`` bound to one stream, or to none (``QUIET``).

    Library functions take ``report=QUIET`` and stay silent when called from code or tests;
    the commands pass ``Reporter()``, which writes to stderr.
    """

    def __init__(self, out: TextIO | None = None, quiet: bool = False):
        self.out, self.quiet = out, quiet

    def say(self, msg: str) -> None:
        if not self.quiet:
            say(msg, self.out)

    def compiling(self, what: str, estimate_s: float | None = None):
        return contextlib.nullcontext() if self.quiet else compiling(what, estimate_s, self.out)

    def bar(self, total: int, desc: str, unit: str = "episode", every: int | None = None):
        return Silent() if self.quiet else bar(total, desc, unit, self.out, every)


QUIET = Reporter(quiet=True)

# Rough cold-cache compile seconds on a 2-core CPU (jax 0.10, default policy), for the
# "compiling ...: about N s the first time" lines; `hm-bench compile` measures them properly.
# Measured on the idle box: training 36 s, a greedy evaluation 26.5-26.7 s, the search
# evaluation (8 simulations, honest) 58 s.
COLD_COMPILE_S = {
    "training": 40,  # trainer.Trainer.compile: rollout + update chunk (compile_cache.py: 36 s)
    "evaluation": 25,  # make_evaluate: reset + env step + network, scanned
    "search evaluation": 55,  # make_search_evaluate: the search's env steps dominate
    # hm-eval --search: the two compiles share the CPU (policy.compile_beside; 256 episodes,
    # search 8: 38.7 s and 68.5 s measured side by side on the idle 2-core box)
    "evaluation beside a search": 40,
    "search evaluation beside": 70,
    # hm-eval --search's rows on one shared game step (policy.play_shared, the default; 16
    # episodes, search 8: 37.4 s and 58.2 s side by side on the idle 2-core box)
    "evaluation sharing its step": 40,
    "search moves beside": 60,
    # the same step compiled quick for a few games (hackmatrix_env.eager.few_games_options):
    # 8 greedy episodes alone 15.6 s; 16 episodes beside a search of 8, 25.1 s and 48.9 s
    "evaluation sharing its quick step": 20,
    "search": 40,  # search.make_search (hm-play's hint, hm-watch --search)
    "recording": 20,  # episodes.Stepper: reset, policy and env step, one program each
    "recording a few games": 15,  # the same, reset and env step quick: 2 episodes 13.0 s
}
