#!/usr/bin/env python3
"""Benchmark (and soak) the Swift headless binary.

    uv run hm-bench swift [--steps N] [--inproc N] [--soak N] [--seed S]

Prints three figures:
  * in-process: `hackmatrix-headless --bench N` (game loop + mask, random masked policy, no IO);
  * pipe:       steps/s of the binary driven over stdin/stdout by a random masked policy
                (one `getValidActions` and one `step` round trip per step, reset on done);
  * soak:       with --soak N, N pipe steps with every reply checked (no error line,
                reward - sum(breakdown) == -0.01, 14 breakdown keys, process alive at the end).
Builds the release binary first if it is missing (stdlib only: `python3 benchmarks/swift_bench.py`
works without uv too).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
import time
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "packages" / "hackmatrix-swift"
BINARY = PKG / ".build" / "release" / "hackmatrix-headless"


def ensure_binary() -> Path:
    if not BINARY.is_file():
        subprocess.run(["swift", "build", "-c", "release", "--package-path", str(PKG)], check=True)
    return BINARY


def pipe_run(steps: int, seed: int, check: bool) -> dict:
    rng = random.Random(seed)
    proc = subprocess.Popen(
        [str(BINARY), "--seed", str(seed)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        bufsize=1,
    )

    def send(obj: dict) -> dict:
        proc.stdin.write(json.dumps(obj) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("binary died")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"error line: {reply} for {obj}")
        return reply

    send({"action": "reset"})
    episodes = stages = victories = 0
    t0 = time.perf_counter()
    for _ in range(steps):
        valid = send({"action": "getValidActions"})["validActions"]
        r = send({"action": "step", "actionIndex": rng.choice(valid)})
        info = r["info"]
        if check:
            bd = info["reward_breakdown"]
            assert len(bd) == 14, bd
            assert "invalid_action" not in info, info
            assert abs(r["reward"] - math.fsum(bd.values()) + 0.01) < 1e-9, r
        stages += "stage_complete" in info
        if r["done"]:
            episodes += 1
            victories += "death" not in info
            send({"action": "reset"})
    secs = time.perf_counter() - t0
    alive = proc.poll() is None
    proc.stdin.close()
    rc = proc.wait(timeout=30)
    return {
        "mode": "pipe",
        "steps": steps,
        "seconds": round(secs, 3),
        "stepsPerSecond": round(steps / secs, 1),
        "episodes": episodes,
        "stageCompletions": stages,
        "victories": victories,
        "aliveAtEnd": alive,
        "exitCode": rc,
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--steps", type=int, default=20_000, help="pipe benchmark steps")
    ap.add_argument("--inproc", type=int, default=1_000_000, help="in-process benchmark steps")
    ap.add_argument("--soak", type=int, default=0, help="checked pipe soak steps (0: skip)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    ensure_binary()
    out = subprocess.run(
        [str(BINARY), "--bench", str(args.inproc), "--seed", str(args.seed)],
        capture_output=True,
        text=True,
        check=True,
    )
    print(out.stdout.strip())
    print(json.dumps(pipe_run(args.steps, args.seed, check=False)))
    if args.soak:
        print(json.dumps({**pipe_run(args.soak, args.seed, check=True), "mode": "soak"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
