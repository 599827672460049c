"""Fixtures for the Swift package tests.

``swift_bin`` is the release ``hackmatrix-headless``, rebuilt with
``swift build -c release`` when missing or older than ``Package.swift`` or any
file under ``Sources/``; ``pipe`` is a fresh process driven over stdin/stdout.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from swift_harness import BINARY, SwiftPipe, build_release, newest_source_mtime


@pytest.fixture(scope="session")
def swift_bin() -> Path:
    """The release ``hackmatrix-headless``, rebuilt when missing or stale."""
    if shutil.which("swift") is None:
        pytest.skip("no Swift toolchain on PATH")
    if not BINARY.is_file() or BINARY.stat().st_mtime < newest_source_mtime():
        proc = build_release()
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert BINARY.is_file()
    return BINARY


@pytest.fixture
def pipe(swift_bin: Path):
    p = SwiftPipe(swift_bin, "--headless-cli")
    yield p
    if p.alive():
        p.close()
