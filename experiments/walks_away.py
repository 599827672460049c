"""How much of a game the player spends walking away from the exit.

The game's distance shaping pays 0.05 for each step that brings the player closer to the exit
(the BFS distance of interface §4.5) and nothing for a step away, so a walk away and back pays
0.05 a cycle, for ever: with the step penalty, +0.015 a move, about 5 in value at gamma 0.997.
This plays the protocol's episodes (``episodes.play``: ``hm-eval``'s reset and env keys) and
counts, per game, the moves that change the player's cell within a stage, and of them the ones
the game did not pay (a step away from the exit: on a 4-neighbour grid a step changes the BFS
distance by one), then prints the means, the games by how many such steps they take, and the
ends (``time limit``: the 1,000-move limit).

    uv run python experiments/walks_away.py [CKPT] --episodes 256 --seed 0 --search 0
"""

from __future__ import annotations

import argparse
import collections
import json


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoint", nargs="?", default=None, help="default: the shipped agent")
    p.add_argument("--episodes", type=int, default=256, help="the evaluation's batch")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--search", type=int, default=0, help="simulations; 0: the greedy network")
    p.add_argument("--chunk", type=int, default=128, help="episodes recorded at once")
    p.add_argument("--json", default=None, help="write each game's counts here")
    args = p.parse_args()
    if args.episodes < 1 or args.chunk < 1 or args.search < 0:
        raise SystemExit("--episodes and --chunk must be >= 1, --search >= 0")

    import numpy as np
    from hackmatrix_env.constants import REWARD_COMPONENTS
    from hackmatrix_train import episodes as ep_mod
    from hackmatrix_train.compile_cache import default_cache_dir, enable
    from hackmatrix_train.policy import load_policy, search_config

    enable(default_cache_dir())
    policy = load_policy(args.checkpoint, 1, None)
    cfg = search_config(policy, num_simulations=args.search) if args.search else None
    stepper = ep_mod.Stepper(policy.env_params, policy.apply_fn, True, policy.disabled, cfg)
    paid_col = REWARD_COMPONENTS.index("distance_shaping")
    games = []
    for lo in range(0, args.episodes, args.chunk):
        rows = range(lo, min(lo + args.chunk, args.episodes))
        for ep in ep_mod.play(
            stepper, policy.params, args.seed, args.episodes, rows, keep_states=True
        ):
            games.append(count_walks(ep, paid_col))
            ep.states.clear()
        print(f"recorded {min(lo + args.chunk, args.episodes)} of {args.episodes}", flush=True)

    away = np.array([g["away"] for g in games])
    moves = np.array([g["moves"] for g in games])
    won = np.array([g["end"] == "victory" for g in games])
    stage = np.array([g["stage"] for g in games])
    length = np.array([g["length"] for g in games])
    mode = f"search {args.search} honest" if args.search else "greedy"
    print(f"\n{policy.meta['path']}, {mode}, seed {args.seed}, {len(games)} episodes: "
          f"wins {won.mean():.1%}, mean stage {stage.mean():.2f}")  # fmt: skip
    print(f"per game: {length.mean():.1f} actions, {moves.mean():.1f} moves to another cell, "
          f"{away.mean():.1f} of them away from the exit ({away.sum() / max(moves.sum(), 1):.1%})")  # fmt: skip
    for least in (10, 20, 50, 100, 300):
        some = away > least
        if some.any():
            print(f"  more than {least} steps away: {some.sum()} games, wins {won[some].mean():.1%}, "
                  f"mean stage {stage[some].mean():.2f}")  # fmt: skip
    print("ends:", dict(collections.Counter(g["end"] for g in games)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "games": games}, f)


def count_walks(ep, paid_col: int) -> dict:
    """One game's moves to another cell within a stage (the player alive after), and of them
    those the game's distance shaping did not pay: steps away from the exit."""
    moves = away = 0
    by_stage = collections.Counter()
    for t in range(1, len(ep.states)):
        before, after = ep.states[t - 1].game, ep.states[t].game
        if int(after.stage) != int(before.stage) or int(after.player.hp) == 0:
            continue
        if (before.player.pos == after.player.pos).all():
            continue
        moves += 1
        if ep.frames[t]["breakdown"][paid_col] <= 0:
            away += 1
            by_stage[int(before.stage)] += 1
    return {"index": ep.index, "length": len(ep.actions), "stage": ep.stage, "end": ep.end,
            "moves": moves, "away": away, "away_by_stage": dict(by_stage)}  # fmt: skip


if __name__ == "__main__":
    main()
