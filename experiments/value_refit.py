"""Refit a policy's value head to its own search's play, the policy left as it is.

The experiment of "The value the search bootstraps from" (experiments/search.md). The search
trainer (``hm-train --algo search``) plays every move with the search and regresses the value
on the lambda-return; here its policy loss is dropped and only the critic's own layers learn
(``--critic-layers``, the critic's hidden and output layers of the grid network), so the prior
the search uses stays the starting policy's and only the leaf value changes. Run it with
``--program-bonus 0`` for a value in the canonical reward's units, the units of the tree's
rewards at test time. Every other argument goes to ``hm-train``, e.g.

    uv run python experiments/value_refit.py -- --algo search \
        --init-params policies/default-cpu-42m-s1-vf0125 --program-bonus 0 --num-envs 128 \
        --num-steps 16 --search-simulations 8 --lr 3e-4 --total-timesteps 307200 --no-wandb
"""

from __future__ import annotations

import argparse
import sys

from hackmatrix_env.devices import use_cpu_cores

# the critic's own layers in the grid network: Dense_4 (its hidden layer), Dense_6 (its output)
CRITIC_LAYERS = ("Dense_4", "Dense_6")


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--critic-layers", nargs="+", default=list(CRITIC_LAYERS))
    split = argv.index("--") if "--" in argv else len(argv)
    args = p.parse_args(argv[:split])
    args.train_args = list(argv[split + 1 :])
    return args


def make_loss(layers, base_loss):
    """The trainer's ``loss``: ``alphazero.search_loss`` with the policy term's weight 0 and
    gradients only into
    ``layers`` (the other parameters enter through ``stop_gradient``)."""
    import jax

    def search_loss(params, apply_fn, obs, policy_target, value_target, vf_coef, weight=None):
        inner = params["params"]
        missing = set(layers) - set(inner)
        if missing:
            raise ValueError(f"no layers {sorted(missing)} in the network: {sorted(inner)}")
        frozen = {k: v if k in layers else jax.lax.stop_gradient(v) for k, v in inner.items()}
        _, aux = base_loss(
            {**params, "params": frozen}, apply_fn, obs, policy_target, value_target, 1.0, weight
        )
        return vf_coef * aux["vf_loss"], aux

    return search_loss


def main(argv=None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    use_cpu_cores()  # before anything starts JAX, as hm-train does
    from hackmatrix_train.alphazero import search_loss
    from hackmatrix_train.cli import train

    return train.main(args.train_args, loss=make_loss(tuple(args.critic_layers), search_loss))


if __name__ == "__main__":
    sys.exit(main())
