"""``hm-play``: play HackMatrix in the terminal (``play.py``'s games, ``terminal.py``'s loop)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hackmatrix_env.argparsing import Parser, existing_path, fail
from hackmatrix_env.constants import NUM_STAGES

from hackmatrix_train import compile_cache
from hackmatrix_train.cli.common import (
    HelpFormatter,
    add_options,
    add_search_flags,
    search_overrides,
    tree_bonus_problem,
)
from hackmatrix_train.policy import SHIPPED_POLICY


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="hm-play", formatter_class=HelpFormatter,
               description="Play HackMatrix in the terminal.")  # fmt: skip
    add_options(p, (
        ("--seed", "the game's seed (n: the next one)", {"type": int, "default": 0}),
        ("--stage", "start at this stage (1..8)", {"type": int, "default": 1}),
        ("--scenario", "start from this setState JSON (interface §5.7)", {"type": existing_path}),
        ("--max-steps", "step limit (truncation)", {"type": int, "default": 1000}),
        ("--swift", "play against the Swift binary (the swift extra)", {"action": "store_true"}),
        ("--swift-bin", "the Swift binary (default: built from the repository)",
         {"type": existing_path}),
        ("--save-actions", "write the game's action log here on exit", {}),
        ("--no-color", "plain text (also NO_COLOR=1)", {"action": "store_true"}),
        ("--hint", "h shows a search's suggestion", {"action": "store_true"}),
        ("--hint-policy", "the checkpoint whose network guides the hint's search (default: the "
         f"shipped agent, {SHIPPED_POLICY})", {}),
        ("--search-simulations", "simulations per hint", {"type": int, "default": 32}),
        ("--views", "the hint's network averaged over this many of the board's 8 symmetries "
         "(1: the network itself)", {"type": int, "default": 1}),
    ))  # fmt: skip
    add_search_flags(p)
    compile_cache.add_arguments(p)
    return p


def main(argv=None) -> int:
    from hackmatrix_train import progress

    args = build_parser().parse_args(argv)
    compile_cache.enable_from_args(args)
    if not 1 <= args.stage <= NUM_STAGES:
        return fail("hm-play", f"--stage must be in 1..{NUM_STAGES}")
    if args.swift and args.save_actions:
        return fail("hm-play", "--save-actions replays JAX games only (the Swift RNG differs)")
    if args.max_steps < 1:
        return fail("hm-play", "--max-steps must be >= 1")
    if set(search_overrides(args)) - {"num_simulations"} and not args.hint:
        return fail("hm-play", "the --search-* flags set the hint's search: give --hint")
    if args.views != 1 and not args.hint:
        return fail("hm-play", "--views sets the hint's network: give --hint")
    if problem := tree_bonus_problem(args):
        return fail("hm-play", problem)
    if args.hint and args.swift:
        return fail("hm-play", "--hint searches the JAX game; it cannot be used with --swift")
    if args.hint and args.hint_policy is not None and not Path(args.hint_policy).exists():
        return fail("hm-play", f"no such file or directory: {args.hint_policy}")
    from hackmatrix_train.play import Hinter, JaxGame, SwiftPlay, load_scenario

    try:
        scenario = load_scenario(args.scenario)
    except ValueError as e:
        return fail("hm-play", str(e))
    if not args.swift:
        progress.say(
            "hm-play: loading the game (the first move compiles its step: about "
            f"{progress.COLD_COMPILE_S['recording']} s the first time, cached after)..."
        )
    from hackmatrix_train.checkpoint import CheckpointError
    from hackmatrix_train.terminal import play

    try:
        hinter = None
        if args.hint:
            hinter = Hinter(args.hint_policy, args.search_simulations, args.max_steps,
                            args.views, **search_overrides(args))  # fmt: skip
        if args.swift:
            game = SwiftPlay(args.seed, args.stage, scenario, args.swift_bin)
        else:
            game = JaxGame(args.seed, args.stage, scenario, args.max_steps)
    except (ValueError, RuntimeError, ImportError, CheckpointError) as e:  # bad input, Swift
        return fail("hm-play", str(e))
    status = play(game, args.no_color, hinter)
    if args.save_actions:
        path = Path(args.save_actions)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(game.action_log(), indent=1))
        print(f"wrote {path}")
    return status
