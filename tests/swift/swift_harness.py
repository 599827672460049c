"""Helpers for the Swift package tests: locate/build the release binary and a
minimal JSON-lines pipe driver (one request, one reply line).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

PKG = Path(__file__).resolve().parents[2] / "packages" / "hackmatrix-swift"
BINARY = PKG / ".build" / "release" / "hackmatrix-headless"


def newest_source_mtime() -> float:
    files = [PKG / "Package.swift", *(PKG / "Sources").rglob("*")]
    return max(f.stat().st_mtime for f in files if f.is_file())


def build_release(timeout: float = 1500.0) -> subprocess.CompletedProcess[str]:
    """``swift build -c release`` for the package (no-op when up to date)."""
    return subprocess.run(
        ["swift", "build", "-c", "release", "--package-path", str(PKG)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class SwiftPipe:
    """Drive the binary over stdin/stdout, one JSON line each way."""

    def __init__(self, binary: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [str(binary), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )

    def raw(self, line: str) -> str:
        """Send one raw line, return the raw reply line (without newline)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        assert reply.endswith("\n"), f"no reply to {line[:80]!r} (process died?)"
        return reply[:-1]

    def send(self, request: dict[str, Any] | str) -> dict[str, Any]:
        line = request if isinstance(request, str) else json.dumps(request)
        return json.loads(self.raw(line))

    def alive(self) -> bool:
        return self.proc.poll() is None

    def rss_kib(self) -> int:
        """Resident set size of the process (Linux /proc)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)
