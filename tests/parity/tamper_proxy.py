"""Plant a rule difference in our Swift binary's answers (tests the engine can see one).

Usage: python tamper_proxy.py PLANT SWIFT_BIN [args...]. Forwards every request line to the
real binary (``SWIFT_BIN args`` may itself be ``python canonical_proxy.py BIN``) and
rewrites some replies, by PLANT:

* an integer AT: in the reply to the AT-th ``step`` (1-based) it adds a full-hp glitch to
  the observation on the first cell (row-major from (5, 0)) that holds nothing. No rule
  puts an enemy there in one step when the board has no enemies or transmissions, so every
  JAX candidate disagrees on that cell, whatever the key.
* ``hatch-hp``: every enemy that hatches from a transmission hatches with 1 hp instead of
  its type's full hp (2 or 3), in the observation and in ``getInternalState``.
* ``hatch-type``: every virus that hatches is reported as a glitch and every glitch as a
  virus (same full hp), in the observation and in ``getInternalState``.

A hatch is a cell that held a transmission due to hatch (countdown 1) before a step that ran
an enemy phase (the turn advanced) and holds none after it; the hatched enemy is the last one
``getInternalState`` lists on that cell (rules §2.7).
"""

from __future__ import annotations

import json
import subprocess
import sys

GHOST = {"type": "glitch", "hp": 2, "isStunned": False, "spawnedFromSiphon": False}
SWAP = {"virus": "glitch", "glitch": "virus"}


def plant_ghost(reply: dict) -> None:
    obs = reply["observation"]
    for r in range(5, -1, -1):
        for c in range(6):
            cell = obs["cells"][r][c]
            busy = ("enemy", "block", "transmission")
            player = (r, c) == (obs["playerRow"], obs["playerCol"])
            if not player and not cell.get("isExit") and not any(k in cell for k in busy):
                cell["enemy"] = dict(GHOST)
                return


def due_cells(obs: dict) -> set[tuple[int, int]]:
    """Cells holding a transmission that hatches at the next enemy phase."""
    return {
        (cell["row"], cell["col"])
        for row in obs["cells"]
        for cell in row
        if cell.get("transmission", {}).get("turnsUntilSpawn", 0) == 1
    }


def tamper_enemy(enemy: dict, plant: str) -> None:
    if plant == "hatch-hp":
        enemy["hp"] = 1
    elif enemy.get("type") in SWAP:
        enemy["type"] = SWAP[enemy["type"]]


class HatchPlanter:
    """Rewrites hatched enemies in step replies and the next ``getInternalState`` reply."""

    def __init__(self, plant: str):
        self.plant = plant
        self.due: set[tuple[int, int]] = set()
        self.turn: int | None = None
        self.hatched: set[tuple[int, int]] = set()

    def on_reply(self, action: str | None, data: dict) -> None:
        if action == "getInternalState" and self.hatched:
            for cell in self.hatched:
                on_cell = [e for e in data.get("enemies", []) if (e["row"], e["col"]) == cell]
                if on_cell:
                    tamper_enemy(on_cell[-1], self.plant)
            self.hatched = set()
            return
        obs = data.get("observation")
        if not isinstance(obs, dict) or "cells" not in obs:
            return
        if action == "step" and self.turn is not None and obs["turn"] > self.turn:
            self.hatched = {(r, c) for r, c in self.due if "transmission" not in obs["cells"][r][c]}
            for r, c in self.hatched:
                enemy = obs["cells"][r][c].get("enemy")
                if enemy is not None:
                    tamper_enemy(enemy, self.plant)
        self.due, self.turn = due_cells(obs), obs["turn"]


def main() -> None:
    plant = sys.argv[1]
    child = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    planter = HatchPlanter(plant) if plant.startswith("hatch-") else None
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
        action = req.get("action") if isinstance(req, dict) else None
        data = json.loads(reply)
        if isinstance(data, dict) and "error" not in data:
            if planter is not None:
                planter.on_reply(action, data)
            elif action == "step":
                steps += 1
                if steps == int(plant):
                    plant_ghost(data)
            reply = (json.dumps(data) + "\n").encode()
        sys.stdout.write(reply.decode())
        sys.stdout.flush()


if __name__ == "__main__":
    main()
