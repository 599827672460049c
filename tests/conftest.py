"""Suite-wide configuration and fixtures.

The scenario builders live in ``builders.py`` (import them from there); the
fixtures below hand the same functions to tests that prefer fixtures.
"""

from __future__ import annotations

import gc
import os
import tempfile

import jax
import pytest
from builders import make_state, scenario
from hackmatrix_env.devices import usable_cores
from hackmatrix_train import compile_cache
from xla_flags import TEST_XLA_FLAGS

# Persistent compilation cache: identical programs compiled by different tests
# (or by an earlier run) are loaded instead of recompiled. The env step takes
# long to compile on CPU, so this saves minutes per run. The CLIs run in-process
# by the tests read the same variable, so they share this directory.
os.environ.setdefault(
    compile_cache.ENV_VAR, os.path.join(tempfile.gettempdir(), "hackmatrix-jax-cache")
)
compile_cache.enable(compile_cache.default_cache_dir())

# The suite compiles at LLVM's -O0 with XLA:CPU's older emitters (``xla_flags.py``): read when
# the backend starts, after this file, and by every subprocess a test starts. A user's own
# XLA_FLAGS win.
os.environ.setdefault("XLA_FLAGS", TEST_XLA_FLAGS)


MAX_WORKERS = 4


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (the suite's default, pyproject.toml): a worker per usable core, at most
    ``MAX_WORKERS``.

    The suite is bound by XLA compilation, which runs on one core per process: on 2 cores two
    workers take the whole suite from 29 to 17 minutes. The cap bounds memory on large
    machines (a JAX process per worker); more than two workers were not measured. ``-n 0``
    runs one process, for a debugger or a single test.
    """
    return min(usable_cores(), MAX_WORKERS)


@pytest.fixture(autouse=True, scope="module")
def release_compiled_programs():
    """Drop every compiled program after each test module.

    A compiled XLA:CPU program holds about 20 memory mappings while it lives, and JAX's caches
    keep every program alive. One pytest process compiling the whole suite's programs passes
    Linux's default ``vm.max_map_count`` (65,530) near its end, and the next compilation or
    cache load then dies in a segmentation fault. Clearing the caches per module keeps the
    count to one module's programs; the persistent cache above makes the recompiles loads.
    """
    yield
    jax.clear_caches()
    gc.collect()


@pytest.fixture(name="scenario")
def scenario_fixture():
    """The ``scenario`` builder."""
    return scenario


@pytest.fixture(name="make_state")
def make_state_fixture():
    """The ``make_state`` builder."""
    return make_state
