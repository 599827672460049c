"""``hm-watch``: play (or replay) episodes and write an HTML replay (``watch.py``)."""

from __future__ import annotations

import argparse

from hackmatrix_env.argparsing import Parser, fail

from hackmatrix_train import compile_cache
from hackmatrix_train.cli.common import (
    SEARCH_FLAGS_NEED_SEARCH,
    HelpFormatter,
    add_options,
    add_policy_options,
    add_search_flags,
    search_overrides,
    tree_bonus_problem,
)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="hm-watch", formatter_class=HelpFormatter,
               description="Play (or replay) HackMatrix episodes and write a self-contained "
               "HTML replay.")  # fmt: skip
    add_policy_options(p, 4, "as hm-eval's --seed: the same episodes")
    add_options(p, (
        ("--actions", "replay this action log (hackmatrix-actions/1 JSON; with a checkpoint, "
         "the page shows that policy's view of each action)", {}),
        ("--out", "the HTML replay to write", {"default": "replay.html"}),
        ("--save-actions", "also write the action log here", {}),
        ("--gif", "also write an animated GIF of one episode", {}),
        ("--gif-episode", "position of that episode", {"type": int, "default": 0}),
        ("--gif-interval", "milliseconds per frame", {"type": int, "default": 250}),
        ("--search", "play each move by a Gumbel search of N simulations with the policy's "
         "network", {"type": int, "metavar": "N"}),
    ))  # fmt: skip
    add_search_flags(p)
    compile_cache.add_arguments(p)
    return p


def conflicting_flags(args: argparse.Namespace) -> str | None:
    """Why the flags given cannot be played together (one would be ignored), or ``None``."""
    if args.search is None and search_overrides(args):
        return SEARCH_FLAGS_NEED_SEARCH
    if problem := tree_bonus_problem(args):
        return problem
    if args.search is not None:
        return None  # --search's own combinations: watch.check_search_args
    if args.random and args.checkpoint is not None:
        return "--random plays the random policy; it cannot use the checkpoint given: drop one"
    if args.random and args.actions is not None:
        return "--actions replays a log; --random has nothing to play: drop one"
    if args.random and args.greedy is not None:
        flag = "--greedy" if args.greedy else "--sampled"
        return f"{flag} chooses the checkpoint's actions; --random has none"
    return None


def main(argv=None) -> int:
    from hackmatrix_train import progress

    args = build_parser().parse_args(argv)
    conflict = conflicting_flags(args)
    if conflict:
        return fail("hm-watch", conflict)
    if args.gif and args.actions is None and not 0 <= args.gif_episode < max(args.episodes, 1):
        return fail("hm-watch", f"--gif-episode must be in 0..{max(args.episodes, 1) - 1}")
    args.greedy = args.greedy is not False
    search = (
        None if args.search is None else {**search_overrides(args), "num_simulations": args.search}
    )
    progress.say("hm-watch: loading the game and the policy...")  # before JAX and the game
    compile_cache.enable_from_args(args)
    from hackmatrix_train.checkpoint import CheckpointError
    from hackmatrix_train.watch import record, write_outputs

    try:
        eps, what, log = record(
            args.checkpoint, args.random, args.actions, args.episodes, args.greedy, args.seed,
            args.start_stage, args.max_steps_in_episode, search, progress.Reporter(),
            args.views,
        )  # fmt: skip
        if args.gif and not 0 <= args.gif_episode < len(eps):
            raise ValueError(f"--gif-episode must be in 0..{len(eps) - 1}")
    except (CheckpointError, ValueError) as e:
        return fail("hm-watch", str(e))
    write_outputs(eps, what, log, args.out, args.save_actions, args.gif, args.gif_episode,
                  args.gif_interval)  # fmt: skip
    return 0
