"""Parity fixtures: the freshly built Swift binary (built once per session if missing/stale)."""

from __future__ import annotations

import os
import shutil

import pytest


@pytest.fixture(scope="session")
def swift_bin() -> str:
    """Path of the Swift headless binary: $HACKMATRIX_SWIFT_BIN, else ours (built if stale)."""
    env = os.environ.get("HACKMATRIX_SWIFT_BIN")
    if env:
        return env
    if shutil.which("swift") is None:
        pytest.skip("no Swift toolchain and no HACKMATRIX_SWIFT_BIN")
    from hackmatrix_parity.build import ensure_swift_binary

    return str(ensure_swift_binary())
