"""Plant a rule difference in our Swift binary's answers (tests the engine can see one).

Usage: python tamper_proxy.py AT SWIFT_BIN [args...]. Forwards every request line to the real
binary; in the reply to the AT-th ``step`` (1-based) it adds a full-hp glitch to the
observation on the first cell (row-major from (5, 0)) that holds nothing. No rule puts an
enemy there in one step when the board has no enemies or transmissions, so every JAX
candidate disagrees on that cell, whatever the key.
"""

from __future__ import annotations

import json
import subprocess
import sys

GHOST = {"type": "glitch", "hp": 2, "isStunned": False, "spawnedFromSiphon": False}


def plant(reply: dict) -> None:
    obs = reply["observation"]
    for r in range(5, -1, -1):
        for c in range(6):
            cell = obs["cells"][r][c]
            busy = ("enemy", "block", "transmission")
            player = (r, c) == (obs["playerRow"], obs["playerCol"])
            if not player and not cell.get("isExit") and not any(k in cell for k in busy):
                cell["enemy"] = dict(GHOST)
                return


def main() -> None:
    at = int(sys.argv[1])
    child = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    steps = 0
    for line in sys.stdin:
        child.stdin.write(line.encode())
        child.stdin.flush()
        reply = child.stdout.readline()
        if not reply:
            sys.exit(child.wait())
        try:
            req = json.loads(line)
        except json.JSONDecodeError:
            req = None
        if isinstance(req, dict) and req.get("action") == "step":
            steps += 1
            if steps == at:
                data = json.loads(reply)
                plant(data)
                reply = (json.dumps(data) + "\n").encode()
        sys.stdout.write(reply.decode())
        sys.stdout.flush()


if __name__ == "__main__":
    main()
