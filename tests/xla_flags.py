"""The XLA flags the suite compiles with (``conftest.py`` sets them).

Most of the suite's time is XLA compiling programs that it then runs on a few states, and at
LLVM's -O0 those compile faster: on the 2-core box, a file of search tests (9 real-env search
programs) took 631 s against 895 s (one after the other), and a mixed sample of env, rollout
and evaluation tests 845 s against 1,000 s (side by side). XLA's floating point does not depend on the level
(no fast math), so every result is the same bit for bit. A program run many times pays for
unoptimized code instead: the parity run (the env step about 10^5 times) takes 1.4-1.7 x as long
at -O0, so it starts its engines under ``optimized_xla``.
"""

from __future__ import annotations

import contextlib
import os

import pytest

TEST_XLA_FLAGS = "--xla_backend_optimization_level=0"


@contextlib.contextmanager
def optimized_xla():
    """XLA's default optimization for the processes started inside (not this one's own)."""
    with pytest.MonkeyPatch.context() as mp:
        if os.environ.get("XLA_FLAGS") == TEST_XLA_FLAGS:
            mp.delenv("XLA_FLAGS")
        yield
