"""``hm-bench winnable``: how winnable is the game? A strong search plays whole games (study only).

The planner is the project's search (``hackmatrix_train.search.run_search``: Gumbel MuZero over
the real game, a policy's network as prior and leaf value) at a study budget: hundreds of
simulations per move and every legal action considered at the root
(``max_num_considered_actions`` = 28), in ``oracle`` mode (the true state: a floor on what good
play reaches with this prior and value) and in ``honest`` mode (``resample_hidden``'s re-draws of
what the player cannot see, split into ``--determinizations`` trees of equal size). The games
are the evaluation protocol's (``search_evaluate.make_search_evaluate``: episode ``i`` has the reset key
and real-game keys of the greedy evaluation's episode ``i``), so a row compares with every
``hm-eval`` row of the same key. Each row carries the summary's economy per game
(``programs_acquired_per_episode``, ``block_siphons_per_episode``) beside wins and stage, the
settings, and the wall time.

    uv run hm-bench winnable --games 128 --simulations 256 --mode oracle honest --json w.json
    uv run hm-bench winnable CHECKPOINT --games 8 --simulations 32      # a quick look

Same key, same games: the search draws its keys from the evaluation's step keys.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
from hackmatrix_env.argparsing import Parser, fail
from hackmatrix_train import progress
from hackmatrix_train.checkpoint import CheckpointError
from hackmatrix_train.policy import load_policy, search_config
from hackmatrix_train.search import MODES, SearchConfig, run_search
from hackmatrix_train.search_evaluate import make_search_evaluate, search_summary

ALL_ACTIONS = 28  # every legal action is considered at the root
# the columns printed per row: (header, summary key, format)
COLUMNS = (
    ("mode", None, "{}"), ("sims", None, "{}"), ("K", None, "{}"), ("games", "episodes", "{:d}"),
    ("wins", "win_rate", "{:.1%}"), ("mean stage", "stage_mean", "{:.2f}"),
    ("programs acquired/game", "programs_acquired_per_episode", "{:.2f}"),
    ("blocks siphoned/game", "block_siphons_per_episode", "{:.2f}"),
    ("compile s", "compile_seconds", "{:.0f}"), ("run s", "seconds", "{:.0f}"),
    ("ms/decision", "ms_per_decision", "{:.3g}"),
)  # fmt: skip


def planner_config(
    policy, simulations: int, mode: str, considered: int = ALL_ACTIONS,
    determinizations: int | None = None, max_depth: int | None = None,
) -> SearchConfig:  # fmt: skip
    """The planner's ``SearchConfig`` in ``policy``'s units (``policy.search_config``: gamma,
    reward scale, step limit, disabled actions): ``simulations`` per move, ``considered`` root
    actions, honest mode split into ``determinizations`` trees (default 1), oracle one tree."""
    k = (determinizations or 1) if mode == "honest" else None
    return search_config(
        policy, num_simulations=simulations, mode=mode, max_num_considered_actions=considered,
        determinizations=k, max_depth=max_depth,
    )  # fmt: skip


def make_planner(apply_fn, search_cfg: SearchConfig):
    """Jitted ``plan(params, key, state) -> int32[B]``: the planner's move in each game."""

    @jax.jit
    def plan(params, key, state):
        return run_search(apply_fn, search_cfg, params, key, state).action

    return plan


def make_play(env, env_params, apply_fn, search_cfg: SearchConfig, games: int,
              slots: int = 128):  # fmt: skip
    """Jitted ``play(params, key) -> per-episode arrays`` (``evaluate.tally_step``'s) of
    ``games`` whole games from ``env_params``' start stage, every move the planner's; the
    games of key ``key`` are the evaluation's (``search_evaluate.make_search_evaluate``)."""
    max_steps = int(env_params.max_steps_in_episode)
    return make_search_evaluate(env, env_params, apply_fn, search_cfg, games, max_steps, slots)


def planner_row(env, env_params, apply_fn, params, search_cfg: SearchConfig, games: int,
                seed: int, slots: int = 128, program_names=(), report=progress.QUIET) -> dict:  # fmt: skip
    """One row: ``search_summary``'s row of the planner's games from evaluation key ``seed``
    (the summary, the settings, compile and run seconds, the decisions), with progress on
    ``report`` (hours of play at the study's budget on a CPU), plus ``wall_seconds`` (both
    times) and ``ms_per_decision``."""
    row = search_summary(env, env_params, apply_fn, params, search_cfg, games, seed,
                         program_names, slots, report)  # fmt: skip
    row.update(policy=f"planner-{search_cfg.mode}",
               wall_seconds=round(row["compile_seconds"] + row["seconds"], 1))  # fmt: skip
    row["ms_per_decision"] = 1000 * row["seconds_per_decision"]
    return row


def format_rows(rows: list[dict]) -> str:
    """The rows as a markdown table (``COLUMNS``)."""
    head = "| " + " | ".join(h for h, _, _ in COLUMNS) + " |"
    lines = [head, "|" + "---|" * len(COLUMNS)]
    for r in rows:
        s = r["search"]
        cells = [s["mode"], s["num_simulations"], s["determinizations"]]
        cells += [fmt.format(r[key]) for _, key, fmt in COLUMNS[3:]]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def build_parser() -> Parser:
    p = Parser(prog="hm-bench winnable", description=__doc__.splitlines()[0])
    p.add_argument("checkpoint", nargs="?", default=None,
                   help="the policy whose network is prior and value (default: the shipped "
                   "agent)")  # fmt: skip
    p.add_argument("--games", type=int, default=128, help="whole games per mode (default: 128)")
    p.add_argument("--simulations", type=int, default=256,
                   help="simulations per move (default: 256)")  # fmt: skip
    p.add_argument("--mode", nargs="+", choices=MODES, default=["oracle", "honest"],
                   help="search modes, one row each (default: oracle honest)")  # fmt: skip
    p.add_argument("--considered", type=int, default=ALL_ACTIONS,
                   help="root actions considered (default: 28, every legal one)")  # fmt: skip
    p.add_argument("--determinizations", type=int, default=4,
                   help="honest mode: trees of simulations/K each (default: 4)")  # fmt: skip
    p.add_argument("--depth", type=int, default=None, help="the tree's depth limit (default: none)")
    p.add_argument("--seed", type=int, default=0, help="evaluation key (default: 0)")
    p.add_argument("--start-stage", type=int, default=1, help="stage the games start from (default: 1)")  # fmt: skip
    p.add_argument("--slots", type=int, default=128, help="games played at once (default: 128)")
    p.add_argument("--json", default=None, help="write the rows to this file")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from hackmatrix_env.constants import PROGRAM_NAMES
    from hackmatrix_train.compile_cache import default_cache_dir, enable
    from hackmatrix_train.trainer import make_env

    if args.games < 1 or args.simulations < 1 or args.slots < 1:
        return fail("hm-bench winnable", "--games, --simulations and --slots must be >= 1")
    enable(default_cache_dir())
    try:
        policy = load_policy(args.checkpoint, start_stage=args.start_stage)
        settings = [
            planner_config(
                policy, args.simulations, m, args.considered, args.determinizations, args.depth
            )
            for m in args.mode
        ]
    except (CheckpointError, ValueError) as e:
        return fail("hm-bench winnable", str(e))
    env = make_env(policy.cfg)
    rows = []
    for search_cfg in settings:
        row = planner_row(env, policy.env_params, policy.apply_fn, policy.params, search_cfg,
                          args.games, args.seed, args.slots, PROGRAM_NAMES, progress.Reporter())  # fmt: skip
        row["checkpoint"] = policy.meta["path"]
        rows.append(row)
        print(format_rows(rows[-1:]), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
    print(format_rows(rows))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
