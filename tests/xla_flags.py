"""The XLA flags the suite compiles with (``conftest.py`` sets them).

Most of the suite's time is XLA compiling programs that it then runs on a few states. Two flags
make those compiles cheap:

- LLVM's -O0 (``--xla_backend_optimization_level=0``): a file of search tests (9 real-env
  search programs) took 631 s against 895 s, one after the other on the 2-core box.
- XLA:CPU's older kernel emitters (``--xla_cpu_use_fusion_emitters=false``): at the tiny sizes of
  ``hm-bench compile --tiny``, on top of -O0, the env rollout's XLA compile takes 6.0 s against
  10.5 s and the PPO chunk's 7.8 s against 13.8 s (13.7 s and 20.3 s with neither flag).

Over the whole suite, cold, one run after the other on the idle 2-core box (every test's JAX
events summed): XLA compile 2,599 s at -O0 alone against 1,543 s with both flags, and the run
1,852 s against 2,515 s. Neither flag is for the product: at ``hm-bench env``'s 4,096 envs the
older emitters compile the step no faster and run it at half the speed. A program run many
times pays for unoptimized code: the parity run (the env step about 10^5 times) took 770 s
under both flags against 290 s at the default level, so it starts its engines under
``optimized_xla``.

XLA's floating point does not depend on the LLVM level (no fast math), but the emitters choose
their own loops, so a float reduction may sum in another order than in the product's programs.
The tests compare programs the suite compiles itself, all under the same flags; the one test
about the product's compiled graph, the graph-size guard, compiles with
``PRODUCT_COMPILER_OPTIONS`` (under the older emitters the tiny search is 59,905 instructions,
against 50,039 in the product).
"""

from __future__ import annotations

import contextlib
import os

import pytest
from hackmatrix_env.eager import EAGER_CPU_COMPILER_OPTIONS

# The suite compiles everything as the env's eager calls do (``hackmatrix_env.eager``): what the
# tests check of eager play holds for the options users get.
TEST_XLA_FLAGS = " ".join(
    f"--{name}={str(value).lower()}" for name, value in EAGER_CPU_COMPILER_OPTIONS.items()
)

# The test flags that change the optimized graph, with their test values (LLVM's level does not).
_GRAPH_FLAGS = {
    "xla_cpu_use_fusion_emitters": EAGER_CPU_COMPILER_OPTIONS["xla_cpu_use_fusion_emitters"]
}

# Per-compile options that undo those: what the product's programs are made of.
PRODUCT_COMPILER_OPTIONS = {name: not value for name, value in _GRAPH_FLAGS.items()}


@contextlib.contextmanager
def optimized_xla():
    """XLA's default optimization for the processes started inside (not this one's own)."""
    with pytest.MonkeyPatch.context() as mp:
        if os.environ.get("XLA_FLAGS") == TEST_XLA_FLAGS:
            mp.delenv("XLA_FLAGS")
        yield
