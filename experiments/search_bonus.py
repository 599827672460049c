"""The program bonus in the test-time tree: does a network trained with it search better when
its tree counts it too?

A network fine-tuned by the guided recipe with ``--guide-bonus`` (``long_game.md``) acquires
more programs greedy, and its search, whose tree counts the canonical reward alone, acquires
no more and wins no more. Its value learned PPO's returns with the +5 program bonus, so a tree
without the bonus sees each program it acquires as that bonus lost (``specs/search.md`` §2).
This evaluates one checkpoint with the protocol's search (honest, one tree, 2 considered
actions) once per tree bonus, every row on the same games (same key), so the rows are paired.
The returns and wins stay the game's: the bonus only steers the tree.

``--from-stage S ...`` counts the bonus only for programs acquired from stage S on (one row per
bonus and stage): the early games end after program-block siphons in stages 1-2.

``--away-penalty A ...`` does the same for the trainer's charge for walking away from the exit
(``hm-train --away-penalty``): a network trained with it searches with it by default (its
value's units); one row per bonus and charge.

    uv run python experiments/search_bonus.py CKPT --bonus 0 5 --seed 0
    uv run python experiments/search_bonus.py CKPT --bonus 0 15 --from-stage 1 3 --simulations 32 --determinizations 4
    uv run python experiments/search_bonus.py CKPT --bonus 0 --away-penalty 0 1 --simulations 32 --determinizations 4

``--at-death kept given-back`` plays each bonus row with the bonus kept where the player dies
and given back there (``hm-train --no-program-bonus-kept-at-death``; default: the run's).

``--json F`` keeps the rows with their checkpoint and key; ``bonus_table.py`` tabulates such
files.
"""

from __future__ import annotations

import argparse
import json


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoint", nargs="?", default=None, help="default: the shipped agent")
    p.add_argument("--bonus", type=float, nargs="+", default=[0.0, 5.0],
                   help="the tree's reward per program acquired, one search row each")  # fmt: skip
    p.add_argument("--from-stage", type=int, nargs="+", default=[1],
                   help="the first stage whose acquisitions the tree's bonus counts, one search "
                   "row each (bonus rows only)")  # fmt: skip
    p.add_argument("--away-penalty", type=float, nargs="+", default=None,
                   help="the tree's charge for walking away from the exit, one search row each "
                   "(default: the run's)")  # fmt: skip
    p.add_argument("--at-death", choices=("kept", "given-back"), nargs="+", default=None,
                   help="the tree's bonus kept or given back where the player dies, one row "
                   "each (bonus rows only; default: the run's)")  # fmt: skip
    p.add_argument("--episodes", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--simulations", type=int, default=8)
    p.add_argument("--determinizations", type=int, default=1)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    away = args.away_penalty or [None]
    kept = [None] if args.at_death is None else [k == "kept" for k in args.at_death]
    row = {"num_simulations": args.simulations, "determinizations": args.determinizations,
           "max_num_considered_actions": 2}  # fmt: skip
    rows = [{**row, "program_bonus": b, "program_bonus_from_stage": s,
             **({} if a is None else {"away_penalty": a}),
             **({} if k is None else {"program_bonus_kept_at_death": k})}
            for b in args.bonus for s in (args.from_stage if b else [1]) for a in away
            for k in (kept if b else [None])]  # fmt: skip
    from hackmatrix_train.search_config import SearchConfig  # no JAX: its checks come first

    try:
        for r in rows:
            SearchConfig(**r)
    except ValueError as e:
        raise SystemExit(f"search_bonus.py: {e}") from None
    from hackmatrix_train.compile_cache import default_cache_dir, enable
    from hackmatrix_train.policy import evaluate_checkpoint
    from hackmatrix_train.tables import format_summaries

    enable(default_cache_dir())
    summary = evaluate_checkpoint(
        args.checkpoint, episodes=args.episodes, seed=args.seed, search=rows
    )
    columns = [summary, *summary["search"]]
    print(format_summaries(columns, f"{args.checkpoint or 'the shipped agent'}, seed {args.seed}"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"checkpoint": args.checkpoint, "seed": args.seed, "bonus": args.bonus,
                       "from_stage": args.from_stage, "away_penalty": args.away_penalty,
                       "at_death": args.at_death,
                       "summary": summary}, f, indent=1)  # fmt: skip


if __name__ == "__main__":
    main()
