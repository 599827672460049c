"""``hm-eval``: evaluate a policy (``policy.evaluate_checkpoint``) and print its summary."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hackmatrix_env.argparsing import Parser, fail

from hackmatrix_train import compile_cache
from hackmatrix_train.cli.common import (
    SEARCH_FLAGS_NEED_SEARCH,
    TRAINER_SEARCH_FLAGS,
    HelpFormatter,
    add_options,
    add_policy_options,
    add_search_flags,
    search_overrides,
    tree_bonus_problem,
)
from hackmatrix_train.tables import TERMS


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="hm-eval", formatter_class=HelpFormatter, epilog=TERMS,
               description="Evaluate a HackMatrix policy: whole episodes, their summary as a "
               "table (one column per policy row).")  # fmt: skip
    add_policy_options(p, 100, "evaluation key: the same seed plays the same games")
    add_options(p, (
        ("--json", "write the summary JSON here ('-' = stdout)", {}),
        ("--replay", "write an HTML replay of the first 20 episodes here (with --search: the "
         "first search row's)", {}),
    ))  # fmt: skip
    s = p.add_argument_group("search (planning with the game as model; specs/search.md)")
    add_options(s, (
        ("--search", "also evaluate Gumbel search with N simulations per move (one row per N)",
         {"type": int, "nargs": "+", "default": (), "metavar": "N"}),
        ("--search-mode", "honest: plan from states re-drawn from the observation; oracle: from "
         "the true state; both: a row for each (default: honest)",
         {"choices": ("honest", "oracle", "both")}),
    ))  # fmt: skip
    add_search_flags(s, skip=TRAINER_SEARCH_FLAGS | {"search_mode"})
    compile_cache.add_arguments(p)
    return p


def search_rows(args: argparse.Namespace) -> list[dict]:
    """The ``--search`` rows asked for: the ``SearchConfig`` overrides of each."""
    if any(n < 1 for n in args.search):
        raise ValueError(f"--search: simulation counts must be >= 1, got {list(args.search)}")
    if args.search and args.random:
        raise ValueError(
            "--search plans with the policy's network; it cannot be used with --random"
        )
    if args.search and not args.greedy:
        raise ValueError("--search replaces the policy's own choice; drop --sampled")
    options = search_overrides(args)
    if problem := tree_bonus_problem(args):
        raise ValueError(problem)
    if "track_cryptogs" in options and (not args.search or args.search_mode == "oracle"):
        raise ValueError("--search-track-cryptogs sets the honest search's re-draws: give "
                         "--search N with --search-mode honest or both")  # fmt: skip
    if (options or args.search_mode) and not args.search:  # as hm-watch: none is ignored
        raise ValueError(SEARCH_FLAGS_NEED_SEARCH)
    modes = ("honest", "oracle") if args.search_mode == "both" else (args.search_mode,)
    rows = []
    for n in args.search:
        for m in modes:
            row = {**options, "num_simulations": n, "mode": m}
            if m == "oracle":  # the re-draws' settings are the honest rows'
                row.update(determinizations=None, track_cryptogs=None)
            rows.append(row)
    return rows


def main(argv=None) -> int:
    from hackmatrix_train import progress

    args = build_parser().parse_args(argv)
    if args.random and args.greedy is not None:
        flag = "--greedy" if args.greedy else "--sampled"
        return fail("hm-eval", f"{flag} chooses the checkpoint's actions; --random has none")
    args.greedy = args.greedy is not False
    if args.checkpoint is not None and not Path(args.checkpoint).exists():
        return fail("hm-eval", f"no such file or directory: {args.checkpoint}")
    compile_cache.enable_from_args(args)
    from hackmatrix_train.checkpoint import CheckpointError
    from hackmatrix_train.policy import evaluate_checkpoint
    from hackmatrix_train.tables import format_summaries

    try:
        rows = search_rows(args)
        summary = evaluate_checkpoint(
            args.checkpoint, args.episodes, args.greedy, args.seed, args.start_stage,
            args.max_steps_in_episode, args.random, search=rows, report=progress.Reporter(),
            views=args.views,
        )  # fmt: skip
    except (CheckpointError, ValueError) as e:
        return fail("hm-eval", str(e))
    name = Path(summary["checkpoint"]).name if summary["checkpoint"] else "no checkpoint"
    views = f", {args.views} views" if args.views > 1 else ""
    title = (f"hm-eval {name}{views}: {summary['episodes']} episodes from stage "
             f"{args.start_stage}, seed {args.seed}")  # fmt: skip
    print(format_summaries([summary, *summary.get("search", ())], title))
    if args.json:
        text = json.dumps(summary, indent=1)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(text)
    if args.replay:
        from hackmatrix_train.watch import write_eval_replay

        first = rows[0] if rows else None  # the first search row, if any
        path = write_eval_replay(
            args.replay, args.checkpoint, args.episodes, args.greedy, args.seed,
            args.start_stage, args.max_steps_in_episode, args.random, first, progress.Reporter(),
            args.views,
        )  # fmt: skip
        print(f"wrote {path}")
    return 0
