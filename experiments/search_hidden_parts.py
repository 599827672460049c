"""Which hidden part costs the honest search its wins? Each part in turn is left true.

The experiment of "What honesty costs, part by part" (experiments/search.md). The honest
search re-draws every hidden part of the state (``hidden.resample_hidden``); the oracle
searches the true state. Here the search re-draws all but one part, which it reads from the
true state, so the gap each part closes is the part's share of honesty's cost:

* ``enemies``: the invisible cryptogs (and what they hide) stay on their true cells;
* ``questions``: the unsiphoned question blocks keep their true content;
* ``transmissions``: the transmissions keep their true kinds.

These are peeking modes, for study only. The search's ``resample`` part is passed to
``hm-eval``'s search evaluation (``evaluate_checkpoint(search_fn=...)``); every row names the
part kept.

    uv run python experiments/search_hidden_parts.py --keep enemies --episodes 256 --seed 0
"""

from __future__ import annotations

import argparse
import json
import sys

from hackmatrix_env.devices import use_cpu_cores

POLICY = "policies/default-cpu-42m-s1-vf0125"
PARTS = ("none", "enemies", "questions", "transmissions")


def keep_true(part: str, true_state, drawn):
    """``drawn`` with ``part`` (in the game and in the UNDO ring) copied from ``true_state``."""
    game, snaps = drawn.game, drawn.history.snapshots
    tgame, tsnaps = true_state.game, true_state.history.snapshots
    if part == "enemies":
        game = game.replace(enemies=tgame.enemies)
        snaps = snaps.replace(enemies=tsnaps.enemies)
    elif part == "questions":
        game = game.replace(grid=tgame.grid)
        snaps = snaps.replace(grid=tsnaps.grid)
    elif part == "transmissions":
        game = game.replace(transmissions=tgame.transmissions)
        snaps = snaps.replace(transmissions=tsnaps.transmissions)
    elif part != "none":
        raise ValueError(f"part must be one of {PARTS}, got {part!r}")
    return drawn.replace(game=game, history=drawn.history.replace(snapshots=snaps))


def partly_honest_search(part: str):
    """``search.run_search`` whose determinization leaves ``part`` true."""
    from functools import partial

    from hackmatrix_env.hidden import resample_hidden
    from hackmatrix_train.search import run_search

    def partly_honest(key, state, *belief):
        return keep_true(part, state, resample_hidden(key, state, *belief))

    return partial(run_search, resample=partly_honest)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy", default=POLICY)
    p.add_argument("--keep", choices=PARTS, default="none", help="the hidden part left true")
    p.add_argument("--simulations", type=int, nargs="+", default=[8])
    p.add_argument("--episodes", type=int, default=256)
    p.add_argument("--seed", type=int, default=0, help="evaluation key")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    use_cpu_cores()  # before anything starts JAX, as hm-train does
    from hackmatrix_train.policy import evaluate_checkpoint

    search = [dict(num_simulations=n) for n in args.simulations]
    summary = evaluate_checkpoint(
        args.policy, args.episodes, seed=args.seed, search=search,
        search_fn=partly_honest_search(args.keep),
    )  # fmt: skip
    rows = []
    for row in summary["search"]:
        rows.append(
            dict(
                kept=args.keep,
                simulations=row["search"]["num_simulations"],
                mode=row["search"]["mode"],
                wins=row["win_rate"],
                stage=row["stage_mean"],
                episodes=args.episodes,
                seed=args.seed,
            )
        )
        print(json.dumps(rows[-1]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(rows=rows, summary=summary), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
