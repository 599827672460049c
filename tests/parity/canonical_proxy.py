"""Make our Swift binary look like the canonical one: no extensions, no seed.

Usage: python canonical_proxy.py SWIFT_BIN [args...]. Forwards every request
line to the real binary, except that ``version``/``getFullState``/
``setFullState``/``render`` get ``Unknown command`` (as from the original,
interface §5.5) and a ``seed`` key in ``reset`` is dropped. Lets the tests run
the engine in canonical mode without the original binary.
"""

from __future__ import annotations

import json
import subprocess
import sys

HIDDEN = {"version", "getFullState", "setFullState", "render"}


def main() -> None:
    child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    for line in sys.stdin:
        try:
            req = json.loads(line)
        except json.JSONDecodeError:
            req = None
        if isinstance(req, dict) and req.get("action") in HIDDEN:
            sys.stdout.write(json.dumps({"error": f"Unknown command: {req['action']}"}) + "\n")
            sys.stdout.flush()
            continue
        if isinstance(req, dict) and req.get("action") == "reset":
            req.pop("seed", None)
            line = json.dumps(req) + "\n"
        child.stdin.write(line.encode())
        child.stdin.flush()
        reply = child.stdout.readline()
        if not reply:
            sys.exit(child.wait())
        sys.stdout.write(reply.decode())
        sys.stdout.flush()


if __name__ == "__main__":
    main()
