"""Build (if missing or stale) and locate the repo's Swift headless binary."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

BINARY_NAME = "hackmatrix-headless"


def repo_root() -> Path:
    """The monorepo root (the directory holding ``packages/``)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "packages" / "hackmatrix-swift").is_dir():
            return parent
    raise FileNotFoundError("cannot find the monorepo root (packages/hackmatrix-swift)")


def swift_package_dir() -> Path:
    return repo_root() / "packages" / "hackmatrix-swift"


def swift_binary_path() -> Path:
    """Where ``swift build -c release`` puts our binary."""
    return swift_package_dir() / ".build" / "release" / BINARY_NAME


def _newest_source_mtime(pkg: Path) -> float:
    files = [pkg / "Package.swift", *(pkg / "Sources").rglob("*.swift")]
    return max((f.stat().st_mtime for f in files if f.is_file()), default=0.0)


def is_stale(binary: Path | None = None) -> bool:
    """True when the binary is missing or older than ``Package.swift`` or any ``Sources/**``."""
    binary = binary or swift_binary_path()
    if not binary.is_file():
        return True
    return binary.stat().st_mtime < _newest_source_mtime(swift_package_dir())


def ensure_swift_binary(*, timeout: float = 1200.0, quiet: bool = True) -> Path:
    """Return our release binary, running ``swift build -c release`` first if needed.

    Raises ``FileNotFoundError`` if there is no Swift toolchain or no package,
    ``RuntimeError`` (with the compiler output) if the build fails.
    """
    pkg = swift_package_dir()
    if not (pkg / "Package.swift").is_file():
        raise FileNotFoundError(f"no Swift package at {pkg}")
    binary = swift_binary_path()
    if not is_stale(binary):
        return binary
    swift = shutil.which("swift")
    if swift is None:
        raise FileNotFoundError("no `swift` on PATH: cannot build the headless binary")
    cmd = [swift, "build", "-c", "release", "--package-path", str(pkg), "--product", BINARY_NAME]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0 or not binary.is_file():
        out = (proc.stdout + proc.stderr)[-6000:]
        raise RuntimeError(f"`{' '.join(cmd)}` failed (exit {proc.returncode}):\n{out}")
    if not quiet:
        print(proc.stdout)
    binary.touch()  # a no-op rebuild must still leave the binary newer than the sources
    return binary
