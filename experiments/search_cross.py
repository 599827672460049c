"""One network's prior with another network's value: which half makes a search better?

Two networks whose searches differ (one wins more with the same search) differ in their prior
and in their value at once. This plays the protocol's search (``hm-eval``'s: honest, 2
considered actions, ``--simulations`` as trees of 8) with the prior (the logits) of ``PRIOR``
and the value of ``VALUE``, on the same games as each network's own rows (the same key), so
the four rows of two networks crossed both ways are paired. The greedy row is ``PRIOR``'s
network alone. The two runs must share the value's units (gamma, reward scale, the program
bonus and where it is kept, the away charge, the masked programs); the tree's settings are
``PRIOR``'s run's.

    uv run python experiments/search_cross.py PRIOR VALUE --simulations 32 --determinizations 4 --seed 0
"""

from __future__ import annotations

import argparse
import json
import sys

UNITS = ("gamma", "reward_scale", "program_bonus", "program_bonus_end",
         "program_bonus_kept_at_death", "away_penalty", "disabled_programs")  # fmt: skip


class Crossed:
    """``apply(params, obs)``: the logits of ``net`` at ``params``, the value of ``value``
    (a loaded ``Policy``) at its own params."""

    def __init__(self, net, value):
        self.net, self.value = net, value

    def apply(self, params, obs):
        logits = self.net.apply(params, obs)[0]
        return logits, self.value.apply_fn(self.value.params, obs)[1]


def check_units(prior_cfg, value_cfg) -> None:
    """A ``ValueError`` naming the first unit the two runs' ``TrainConfig``s differ in (a
    field an older run's config lacks counts as the value it meant then)."""
    for field in UNITS:
        ours, theirs = getattr(prior_cfg, field), getattr(value_cfg, field)
        if ours != theirs:
            raise ValueError(f"the runs' {field} differ: {ours!r} (prior) against "
                             f"{theirs!r} (value)")  # fmt: skip


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("prior", help="checkpoint whose logits are the search's prior")
    p.add_argument("value", help="checkpoint whose value is the search's leaf value")
    p.add_argument("--simulations", type=int, default=32)
    p.add_argument("--determinizations", type=int, default=4)
    p.add_argument("--episodes", type=int, default=256)
    p.add_argument("--seed", type=int, default=0, help="evaluation key")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    from hackmatrix_train.compile_cache import default_cache_dir, enable
    from hackmatrix_train.policy import evaluate_checkpoint, load_policy
    from hackmatrix_train.tables import format_summaries

    value = load_policy(args.value)
    try:
        check_units(load_policy(args.prior).cfg, value.cfg)
    except ValueError as e:
        raise SystemExit(f"search_cross.py: {e}") from None
    enable(default_cache_dir())
    row = {"num_simulations": args.simulations, "determinizations": args.determinizations,
           "max_num_considered_actions": 2}  # fmt: skip
    summary = evaluate_checkpoint(
        args.prior, args.episodes, seed=args.seed, search=[row],
        wrap_network=lambda net: Crossed(net, value),
    )  # fmt: skip
    title = f"prior {args.prior}, value {args.value}, seed {args.seed}"
    print(format_summaries([summary, *summary["search"]], title))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"prior": args.prior, "value": args.value, "seed": args.seed,
                       "summary": summary}, f, indent=1)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
