"""A fake Swift headless binary for the client's robustness tests.

Speaks the JSON-lines protocol of interface §5 for a trivial game (an empty
board, the player walks, every move costs the step penalty), and misbehaves
on request, chosen with ``--mode=``:

* ``ok``        behaves (and answers ``version``, i.e. looks like our binary);
* ``canonical`` behaves but answers ``Unknown command: version`` like the original;
* ``die``       writes to stderr and exits on the first ``step``;
* ``hang``      never answers a ``step``;
* ``stop``      stops itself (SIGSTOP) on a ``step``: a process that never answers nor exits;
* ``garbage``   answers a ``step`` with a non-JSON line;
* ``array``     answers a ``step`` with a JSON array;
* ``badshape``  answers a ``step`` with an object that lacks ``reward``;
* ``crash-start`` exits immediately with a message on stderr.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time


def observation(pr: int, pc: int) -> dict:
    cells = [
        [
            {"row": r, "col": c, "isDataSiphon": False, "isExit": (r, c) == (5, 5),
             "siphonCenter": False}
            for c in range(6)
        ]
        for r in range(6)
    ]  # fmt: skip
    return {
        "playerRow": pr, "playerCol": pc, "playerHP": 3, "credits": 0, "energy": 0,
        "dataSiphons": 0, "stage": 1, "turn": 0, "baseAttack": 1, "score": 0,
        "showActivated": False, "scheduledTasksDisabled": False, "ownedPrograms": [],
        "cells": cells, "cryptogHints": [],
    }  # fmt: skip


def zero_breakdown() -> dict:
    keys = [
        "stage",
        "score",
        "kills",
        "dataSiphon",
        "distance",
        "victory",
        "death",
        "resourceGain",
        "resourceHolding",
        "damagePenalty",
        "hpRecovery",
        "siphonQuality",
        "programWaste",
        "siphonDeathPenalty",
    ]
    return {k: 0 for k in keys}


def main() -> None:
    mode = "ok"
    for a in sys.argv[1:]:
        if a.startswith("--mode="):
            mode = a.split("=", 1)[1]
    if mode == "crash-start":
        sys.stderr.write("fatal: cannot initialise\n")
        sys.exit(3)
    out = sys.stdout
    pos = None

    def reply(obj: object) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    for line in sys.stdin:
        try:
            req = json.loads(line)
            action = req["action"]
            assert isinstance(action, str)
        except Exception:
            reply({"error": "Invalid command"})
            continue
        if action == "version":
            if mode == "canonical":
                reply({"error": f"Unknown command: {action}"})
            else:
                reply({"version": "fake-1", "extensions": ["seed", "version"]})
        elif action == "reset":
            pos = (0, 0)
            reply({"observation": observation(*pos)})
        elif action == "setState":
            st = req.get("state")
            if st is None:
                reply({"error": "Missing state data for setState command"})
                continue
            pos = (st["player"]["row"], st["player"]["col"])
            reply({"observation": observation(*pos)})
        elif action == "getValidActions":
            if pos is None:
                reply({"validActions": []})
                continue
            r, c = pos
            valid = [a for a, (dr, dc) in enumerate(((1, 0), (-1, 0), (0, -1), (0, 1)))
                     if 0 <= r + dr < 6 and 0 <= c + dc < 6]  # fmt: skip
            reply({"validActions": valid})
        elif action == "getInternalState":
            reply({"scheduledTaskInterval": 12, "nextScheduledTaskTurn": 12,
                   "pendingSiphonTransmissions": 0, "turnCount": 0, "enemies": []})  # fmt: skip
        elif action == "step":
            if "actionIndex" not in req:
                reply({"error": "Missing actionIndex"})
                continue
            a = req["actionIndex"]
            if pos is None or not 0 <= a <= 27:
                sys.stderr.write("Fatal error: Index out of range\n")
                sys.stderr.flush()
                sys.exit(134)
            if mode == "die":
                sys.stderr.write("Fatal error: simulated crash in step\n")
                sys.stderr.flush()
                sys.exit(134)
            if mode == "hang":
                time.sleep(3600)
            if mode == "stop":
                os.kill(os.getpid(), signal.SIGSTOP)
            if mode == "garbage":
                out.write("Fatal error: this is not JSON\n")
                out.flush()
                continue
            if mode == "array":
                reply([1, 2, 3])
                continue
            if mode == "badshape":
                reply({"observation": observation(*pos), "done": False, "info": {}})
                continue
            r, c = pos
            dr, dc = ((1, 0), (-1, 0), (0, -1), (0, 1), (0, 0))[min(a, 4)]
            ok = a < 4 and 0 <= r + dr < 6 and 0 <= c + dc < 6
            info = {"reward_breakdown": zero_breakdown()}
            if ok:
                pos = (r + dr, c + dc)
                reply({"observation": observation(*pos), "reward": -0.01, "done": False,
                       "info": info})  # fmt: skip
            else:
                info["invalid_action"] = True
                reply({"observation": observation(*pos), "reward": 0, "done": True, "info": info})
        else:
            reply({"error": f"Unknown command: {action}"})


if __name__ == "__main__":
    main()
