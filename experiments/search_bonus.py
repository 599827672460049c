"""The program bonus in the test-time tree: does a network trained with it search better when
its tree counts it too?

A network fine-tuned by the guided recipe with ``--guide-bonus`` (``long_game.md``) acquires
more programs greedy, and its search, whose tree counts the canonical reward alone, acquires
no more and wins no more. Its value learned PPO's returns with the +5 program bonus, so a tree
without the bonus sees each program it acquires as that bonus lost (``specs/search.md`` §2).
This evaluates one checkpoint with the protocol's search (honest, one tree, 2 considered
actions) once per tree bonus, every row on the same games (same key), so the rows are paired.
The returns and wins stay the game's: the bonus only steers the tree.

    uv run python experiments/search_bonus.py CKPT --bonus 0 5 --seed 0
"""

from __future__ import annotations

import argparse
import json
import math


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoint", nargs="?", default=None, help="default: the shipped agent")
    p.add_argument("--bonus", type=float, nargs="+", default=[0.0, 5.0],
                   help="the tree's reward per program acquired, one search row each")  # fmt: skip
    p.add_argument("--episodes", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--simulations", type=int, default=8)
    p.add_argument("--determinizations", type=int, default=1)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    if not all(math.isfinite(b) and b >= 0 for b in args.bonus):
        raise SystemExit(f"--bonus must be finite and >= 0, got {args.bonus}")
    from hackmatrix_train.compile_cache import default_cache_dir, enable
    from hackmatrix_train.policy import evaluate_checkpoint
    from hackmatrix_train.tables import format_summaries

    enable(default_cache_dir())
    row = {"num_simulations": args.simulations, "determinizations": args.determinizations,
           "max_num_considered_actions": 2}  # fmt: skip
    summary = evaluate_checkpoint(
        args.checkpoint, episodes=args.episodes, seed=args.seed,
        search=[{**row, "program_bonus": b} for b in args.bonus],
    )  # fmt: skip
    rows = [summary, *summary["search"]]
    print(format_summaries(rows, f"{args.checkpoint or 'the shipped agent'}, seed {args.seed}"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"bonus": args.bonus, "summary": summary}, f, indent=1)


if __name__ == "__main__":
    main()
