"""Suite-wide configuration and fixtures.

The scenario builders live in ``builders.py`` (import them from there); the
fixtures below hand the same functions to tests that prefer fixtures.
"""

from __future__ import annotations

import os
import tempfile

import jax
import pytest
from builders import make_state, scenario

# Persistent compilation cache: identical programs compiled by different tests
# (or by an earlier run) are loaded instead of recompiled. The env step takes
# long to compile on CPU, so this saves minutes per run.
jax.config.update(
    "jax_compilation_cache_dir",
    os.environ.get(
        "HACKMATRIX_JAX_CACHE", os.path.join(tempfile.gettempdir(), "hackmatrix-jax-cache")
    ),
)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)


@pytest.fixture(name="scenario")
def scenario_fixture():
    """The ``scenario`` builder."""
    return scenario


@pytest.fixture(name="make_state")
def make_state_fixture():
    """The ``make_state`` builder."""
    return make_state
