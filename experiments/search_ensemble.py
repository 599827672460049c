"""Several trained networks as one prior: does an ensemble make the search's prior better?

The experiment of "An ensemble as the prior" (experiments/search.md). The search's ceiling is
its prior and value (a search from the true state wins about 17 % at 8 simulations). Here the
network the search (and the greedy row) calls is the mean of several checkpoints of the same
architecture: the mean of their logits (after the mask, the renormalized geometric mean of
their policies) and the mean of their values. Every simulation costs one call per member.
The first checkpoint's config gives the units (gamma, reward scale) and the mask; every
member must share them.

    uv run python experiments/search_ensemble.py CKPT [CKPT ...] --episodes 256 --seed 0
"""

from __future__ import annotations

import argparse
import json
import sys

from hackmatrix_env.devices import use_cpu_cores

UNITS = ("network", "hidden_dim", "num_layers", "gamma", "reward_scale", "disabled_programs")


class Ensemble:
    """``apply(params, obs)``: the members' mean logits and mean value (module doc)."""

    def __init__(self, net, others):
        self.net, self.others = net, others

    def apply(self, params, obs):
        import jax.numpy as jnp

        outs = [self.net.apply(p, obs) for p in (params, *self.others)]
        logits = jnp.mean(jnp.stack([o[0] for o in outs]), axis=0)
        value = jnp.mean(jnp.stack([o[1] for o in outs]), axis=0)
        return logits, value


def load_members(paths):
    """The params of ``paths[1:]``, loaded into ``paths[0]``'s shapes; a ValueError if a
    member's units or architecture differ."""
    import jax
    from hackmatrix_env import EnvParams, HackMatrix
    from hackmatrix_train import checkpoint as ckpt
    from hackmatrix_train.config import TrainConfig
    from hackmatrix_train.network import make_network

    _, meta0 = ckpt.load_params(paths[0])
    cfg = TrainConfig.from_dict(meta0["config"])
    obs, _ = jax.eval_shape(HackMatrix().reset, jax.random.key(0), EnvParams())
    net = make_network(cfg.network, 28, cfg.hidden_dim, cfg.num_layers)
    one = jax.tree.map(lambda s: jax.ShapeDtypeStruct((1, *s.shape), s.dtype), obs)
    template = jax.eval_shape(net.init, jax.random.key(0), one)
    others = []
    for path in paths[1:]:
        flat, meta = ckpt.load_params(path)
        for field in UNITS:
            if meta["config"].get(field) != meta0["config"].get(field):
                raise ValueError(f"{path}: {field} differs from {paths[0]}'s")
        others.append(ckpt.unflatten_state(flat, template, source=str(path)))
    return others


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoints", nargs="+", help="the members; the first gives the units")
    p.add_argument("--simulations", type=int, nargs="*", default=[8])
    p.add_argument("--episodes", type=int, default=256)
    p.add_argument("--seed", type=int, default=0, help="evaluation key")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    use_cpu_cores()  # before anything starts JAX, as hm-train does
    from hackmatrix_train.policy import evaluate_checkpoint

    others = load_members(args.checkpoints)
    search = [dict(num_simulations=n) for n in args.simulations]
    summary = evaluate_checkpoint(
        args.checkpoints[0], args.episodes, seed=args.seed, search=search,
        wrap_network=lambda net: Ensemble(net, others),
    )  # fmt: skip
    rows = [dict(policy="greedy", wins=summary["win_rate"], stage=summary["stage_mean"])]
    for row in summary.get("search", []):
        rows.append(
            dict(
                policy=f"search {row['search']['num_simulations']}",
                wins=row["win_rate"],
                stage=row["stage_mean"],
                ms_per_decision=round(row["seconds_per_decision"] * 1e3, 2),
            )
        )
    for row in rows:
        row.update(members=len(args.checkpoints), episodes=args.episodes, seed=args.seed)
        print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(checkpoints=args.checkpoints, rows=rows, summary=summary), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
