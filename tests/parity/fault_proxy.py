"""Make a Swift binary fail once, mid-run (tests hm-parity's fault handling).

Usage: python fault_proxy.py FAULT AT MARKER SWIFT_BIN [args...]. Forwards every request line to
the real binary and its reply back, until this proxy's AT-th ``step`` request (1-based). There,
if the file MARKER does not exist yet (it is created then, so across the restarts of a run the
fault fires exactly once), by FAULT:

* ``kill``: the binary is killed (SIGKILL) and the proxy exits with 137, answering nothing:
  a binary killed mid-run;
* ``stop``: the proxy stops itself (SIGSTOP) before answering: a hung process that reads
  nothing and never exits;
* ``garbage``: the step is answered with a line that is not JSON (the binary never sees it);
* ``mangle``: the binary's reply is answered with ``playerHP`` a string and a short grid row
  (JSON that parses but is no observation);
* ``badfull``: the step is forwarded; the ``getFullState`` after it is answered with
  ``{"state": {"player": "?"}}``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

FAULTS = ("kill", "stop", "garbage", "mangle", "badfull")


def claim(marker: str) -> bool:
    """True for the first caller only (the marker file is created atomically)."""
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def main() -> None:
    fault, at, marker = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    assert fault in FAULTS, fault
    child = subprocess.Popen(sys.argv[4:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    steps, armed = 0, None
    for line in sys.stdin:
        try:
            req = json.loads(line)
        except json.JSONDecodeError:
            req = None
        action = req.get("action") if isinstance(req, dict) else None
        if action == "step":
            steps += 1
            if steps == at and claim(marker):
                armed = fault
        if armed == "kill":
            child.kill()
            child.wait()
            sys.stderr.write("fault_proxy: binary killed mid-run\n")
            sys.stderr.flush()
            sys.exit(137)
        if armed == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)
        if armed == "garbage":
            sys.stdout.write("Fatal error: fault_proxy garbage\n")
            sys.stdout.flush()
            armed = None
            continue
        if armed == "badfull" and action == "getFullState":
            sys.stdout.write(json.dumps({"state": {"player": "?"}}) + "\n")
            sys.stdout.flush()
            armed = None
            continue
        child.stdin.write(line.encode())
        child.stdin.flush()
        reply = child.stdout.readline()
        if not reply:
            sys.exit(child.wait())
        if armed == "mangle":
            data = json.loads(reply)
            data["observation"]["playerHP"] = "three"
            data["observation"]["cells"][0] = [*data["observation"]["cells"][0][:5], None]
            reply = (json.dumps(data) + "\n").encode()
            armed = None
        sys.stdout.write(reply.decode())
        sys.stdout.flush()


if __name__ == "__main__":
    main()
