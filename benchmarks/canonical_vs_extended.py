"""Canonical mode vs extended mode on the same scenarios: mismatches and speed.

    uv run hm-bench parity-modes \\
        --scenarios 2000 --steps 30 --seed 20261125 --blocks 10 [--json OUT]

Runs our binary twice over the same scenarios in one process (one compiled stepper, warmed
up first): as itself (extended mode: seed and full-state extensions) and behind
``tests/parity/canonical_proxy.py`` (canonical mode: the extensions hidden, as with the
original game's binary). The scenarios are split into ``--blocks`` blocks run alternately in
the two modes, so a change of machine load affects both alike. Prints, per mode, the steps
compared by class, mismatches, deep searches, seconds and steps per second, and the ratio of
the two speeds (extended / canonical steps per second).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from hackmatrix_parity.build import ensure_swift_binary, repo_root
from hackmatrix_parity.engine import CLASSES, Config, Engine, Report, random_scenarios

PROXY = Path("tests") / "parity" / "canonical_proxy.py"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenarios", type=int, default=2000)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--seed", type=int, default=20261125)
    p.add_argument("--blocks", type=int, default=10)
    p.add_argument("--swift-bin", default=None)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    swift_bin = str(args.swift_bin or ensure_swift_binary())
    proxy = str(repo_root() / PROXY)
    scenarios = random_scenarios(args.scenarios, args.seed)
    cfg = Config(steps=args.steps, seed=args.seed)
    engines = {
        "extended": Engine(cfg, swift_bin),
        "canonical": Engine(cfg, command=[sys.executable, proxy, swift_bin]),
    }
    assert engines["extended"].full and not engines["canonical"].extensions
    t0 = time.monotonic()
    engines["extended"].run(random_scenarios(8, args.seed + 1))  # compile once, untimed
    print(f"warm-up (compile) {time.monotonic() - t0:.0f} s", flush=True)
    reports = {mode: Report() for mode in engines}
    size = -(-len(scenarios) // args.blocks)
    for i in range(args.blocks):
        block = scenarios[i * size : (i + 1) * size]
        for mode, eng in engines.items():
            eng.cfg.first_index = i * size
            reports[mode].merge(eng.run(block))
        print(f"block {i + 1}/{args.blocks}: " + ", ".join(
            f"{m} {r.compared} steps {r.seconds:.0f} s" for m, r in reports.items()
        ), flush=True)  # fmt: skip
    for eng in engines.values():
        eng.close()
    out = {}
    for mode, rep in reports.items():
        out[mode] = {
            "compared": rep.compared,
            "steps": {c: rep.steps[c] for c in CLASSES},
            "mismatches": rep.mismatches,
            "swift_errors": rep.swift_errors,
            "deep_searches": dict(rep.deep_searches),
            "scenarios_stopped_hidden": rep.scenarios_stopped_hidden,
            "seconds": round(rep.seconds, 1),
            "steps_per_second": round(rep.compared / rep.seconds, 2),
        }
        print(f"{mode:>9}: {json.dumps(out[mode])}")
    ratio = out["extended"]["steps_per_second"] / out["canonical"]["steps_per_second"]
    out["speed_ratio_extended_over_canonical"] = round(ratio, 3)
    print(f"speed ratio (extended / canonical steps per second): {ratio:.3f}")
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 1 if any(out[m]["mismatches"] or out[m]["swift_errors"] for m in engines) else 0


if __name__ == "__main__":
    sys.exit(main())
