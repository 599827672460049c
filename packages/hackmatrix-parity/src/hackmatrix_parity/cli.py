"""``hm-parity``: differential test of the JAX env against a Swift headless binary.

    uv run hm-parity --swift-bin PATH --scenarios N --steps M --seed S [--workers 2]

Prints a table (steps compared, matches by class, mismatches by category,
coverage per action and rule area) and the shrunk repros as JSON; exits 1 on
any mismatch. Without ``--swift-bin`` it uses ``$HACKMATRIX_SWIFT_BIN``, else
builds and uses the repo's binary.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hackmatrix_env.argparsing import Parser, existing_path

from hackmatrix_parity.client import resolve_swift_binary
from hackmatrix_parity.engine import (
    ACTION_NAMES,
    Config,
    Engine,
    Report,
    random_scenarios,
    run_sharded,
)


def format_report(rep: Report, *, extensions: bool, full: bool) -> str:
    lines = []
    w = lines.append
    w(f"binary: {'ours (seed/full-state extensions)' if extensions else 'canonical (no extensions)'}"
      f"; hidden-state check: {'on' if full else 'off'}")  # fmt: skip
    w(f"scenarios run: {rep.scenarios_run}   failed: {rep.scenarios_failed}   "
      f"stopped at hidden randomness: {rep.scenarios_stopped_hidden}   time: {rep.seconds:.1f}s")  # fmt: skip
    w("")
    w(f"{'steps compared':<34}{rep.compared:>10}")
    w(f"{'  matched, first key (no search)':<34}{rep.steps['first_key']:>10}")
    w(f"{'  matched by key search':<34}{rep.steps['key_search']:>10}")
    w(f"{'  matched after hidden reveal':<34}{rep.steps['hidden_reveal']:>10}")
    w(f"{'  random outcome -> resync':<34}{rep.steps['resync']:>10}")
    w(f"{'  mismatches':<34}{rep.steps['mismatch']:>10}")
    w(f"{'initial-observation mismatches':<34}{rep.initial_mismatches:>10}")
    w(f"{'swift errors':<34}{rep.swift_errors:>10}")
    if rep.deep_searches:
        w(f"{'deep key searches (found/marginal/not)':<40}"
          f"{rep.deep_searches['found']}/{rep.deep_searches['marginal']}/"
          f"{rep.deep_searches['not_found']}")  # fmt: skip
    if rep.mismatch_categories:
        w("")
        w(
            "mismatches by category (reward / breakdown.* / obs.* / tensor.* / mask[i] / done / ...):"
        )
        for cat, n in rep.mismatch_categories.most_common():
            w(f"  {cat:<48}{n:>8}")
    if rep.stagegen_violations:
        w("")
        w("stage-generation invariant violations:")
        for cat, n in rep.stagegen_violations.most_common():
            w(f"  {cat:<48}{n:>8}")
    w("")
    w("coverage per action (valid executed / invalid attempted):")
    for i, name in enumerate(ACTION_NAMES):
        w(f"  {i:>2} {name:<8}{rep.actions_valid[name]:>8}{rep.actions_invalid[name]:>8}")
    w("")
    w("coverage per rule area (steps):")
    for tag, n in sorted(rep.areas.items()):
        w(f"  {tag:<40}{n:>8}")
    return "\n".join(lines)


def report_json(rep: Report, meta: dict[str, Any]) -> dict[str, Any]:
    """The report as JSON: ``meta`` (command, commit, ...) plus every counter, mergeable."""
    return {
        **meta,
        "compared": rep.compared,
        "mismatches": rep.mismatches,
        "steps": dict(rep.steps),
        "mismatch_categories": dict(rep.mismatch_categories),
        "actions_valid": dict(rep.actions_valid),
        "actions_invalid": dict(rep.actions_invalid),
        "areas": dict(rep.areas),
        "stagegen_violations": dict(rep.stagegen_violations),
        "deep_searches": dict(rep.deep_searches),
        "scenarios_run": rep.scenarios_run,
        "scenarios_failed": rep.scenarios_failed,
        "scenarios_stopped_hidden": rep.scenarios_stopped_hidden,
        "initial_mismatches": rep.initial_mismatches,
        "swift_errors": rep.swift_errors,
        "seconds": rep.seconds,
        "failures": [f.as_json() for f in rep.failures[:50]],
    }


def git_commit() -> str:
    """The checkout's commit (``+dirty`` with uncommitted changes), or ``unknown``."""
    import subprocess

    def git(*args: str) -> str:
        out = subprocess.run(
            ["git", *args], cwd=Path(__file__).resolve().parent, capture_output=True, text=True,
            check=True,
        )  # fmt: skip
        return out.stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    p = Parser(prog="hm-parity", description=__doc__.split("\n\n")[0])
    p.add_argument("--swift-bin", type=existing_path, default=None, help="Swift headless binary (default: "
                   "$HACKMATRIX_SWIFT_BIN, else the repo's binary, built if needed)")  # fmt: skip
    p.add_argument("--scenarios", type=int, default=200)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start-index", type=int, default=0, help="run scenarios START .. "
                   "START+N-1 of the seed's sequence (one chunk of a longer run; chunks "
                   "merge with benchmarks/parity_chunks.py)")  # fmt: skip
    p.add_argument("--keys", type=int, default=16, help="JAX keys per round (random steps "
                   "get up to 16 rounds)")  # fmt: skip
    p.add_argument("--batch", type=int, default=8, help="scenarios run in lockstep")
    p.add_argument("--workers", type=int, default=1, help="engine processes side by side "
                   "(about one core each; scenario i runs in shard i mod workers)")  # fmt: skip
    p.add_argument("--exact-only", action="store_true", help="no per-element support "
                   "fallback: a step whose outcome no deep-search key reproduces as a whole is a "
                   "mismatch (specs/parity.md)")  # fmt: skip
    p.add_argument("--deep-keys", type=int, default=65_536, help="keys of the deep search a "
                   "would-be mismatch gets first (0: off)")  # fmt: skip
    p.add_argument("--invalid-prob", type=float, default=0.03)
    p.add_argument("--no-full-check", action="store_true", help="skip getFullState comparison")
    p.add_argument("--timeout", type=float, default=Config.timeout, help="seconds to wait for "
                   "each Swift reply; a binary that takes longer (hung, stopped) is reported, "
                   "killed and restarted, and the run goes on")  # fmt: skip
    p.add_argument("--shrink", type=int, default=3, help="shrink at most this many failures")
    p.add_argument("--repro-dir", type=Path, default=None, help="write shrunk repros here")
    p.add_argument("--distributions", type=int, default=0, metavar="N",
                   help="also run the chi-square distribution checks with N samples each")  # fmt: skip
    p.add_argument("--json", type=Path, default=None, help="also write the report as JSON")
    args = p.parse_args(argv)
    for flag in ("scenarios", "steps", "keys", "batch", "workers"):
        if getattr(args, flag) < 1:
            p.error(f"--{flag} must be >= 1, got {getattr(args, flag)}")
    if not 0.0 <= args.invalid_prob <= 1.0:
        p.error(f"--invalid-prob must be in [0, 1], got {args.invalid_prob}")
    if args.swift_bin is not None:
        args.swift_bin = str(args.swift_bin)

    cfg = Config(
        scenarios=args.scenarios, steps=args.steps, seed=args.seed, num_keys=args.keys,
        batch=args.batch, invalid_prob=args.invalid_prob, full_check=not args.no_full_check,
        deep_keys=args.deep_keys,
        marginal=not args.exact_only, first_index=args.start_index, timeout=args.timeout,
    )  # fmt: skip
    scenarios = random_scenarios(cfg.scenarios, cfg.seed, args.start_index)
    if args.workers > 1:
        args.swift_bin = str(resolve_swift_binary(args.swift_bin))  # built once, not per shard
        rep = run_sharded(cfg, scenarios, args.swift_bin, args.workers)
    with Engine(cfg, args.swift_bin) as eng:
        if args.workers <= 1:
            rep = eng.run(scenarios)
        print(format_report(rep, extensions=eng.extensions, full=eng.full))
        shrunk = []
        if rep.failures and args.shrink > 0:
            from hackmatrix_parity.shrink import Shrinker, repro_json

            shrinker = Shrinker(eng)  # same engine: no second compilation
            for f in rep.failures[: args.shrink]:
                shrinker.calls = 0
                s = shrinker.shrink(f)
                shrunk.append(s)
                print("\nshrunk repro (paste into tests/parity/regressions/*.json):")
                print(repro_json(s))
            if args.repro_dir is not None:
                args.repro_dir.mkdir(parents=True, exist_ok=True)
                for i, s in enumerate(shrunk):
                    (args.repro_dir / f"repro_{args.seed}_{i}.json").write_text(repro_json(s))
        if args.distributions > 0:
            from hackmatrix_parity.distributions import format_results, run_distribution_checks

            print("\ndistribution checks (chi-square p-values; p(same) = Swift vs JAX):")
            print(format_results(run_distribution_checks(eng.lanes[0].game, args.distributions,
                                                         args.seed)))  # fmt: skip
        if args.json is not None:
            meta = {
                "command": "hm-parity " + " ".join(argv if argv is not None else sys.argv[1:]),
                "commit": git_commit(),
                "binary": "ours" if eng.extensions else "canonical",
                "full_check": eng.full,
                "seed": args.seed,
                "start_index": args.start_index,
                "steps_per_scenario": args.steps,
                "workers": args.workers,
            }
            args.json.write_text(json.dumps(report_json(rep, meta), indent=1, default=str))
    return 1 if (rep.mismatches or rep.swift_errors or rep.failures) else 0


if __name__ == "__main__":
    sys.exit(main())
