"""The search trainer with a policy target of the experiment's own (experiments/search.md).

The controls of "The search trainer: the drift compounds". The search plays every move and
the value learns as in ``hm-train --algo search``; only the policy target changes:

* ``noise``: the network's own policy with Gaussian noise of ``--sigma`` on its log-probabilities
  (a target with no search in it, of a chosen size);
* ``margin``: the network's log-probabilities plus ``--k`` x the search's Q gap to the greedy
  action, beyond a dead zone of ``--margin`` (value units), on the visited actions;
* ``anchored``: the same shift on the log-probabilities of a frozen policy (``--start``, the
  run's ``--init-params``) instead of the network's own, so that successive targets do not
  build on one another;
* ``improved``: the search's own target (``SearchOutput.policy_target``), as the trainer's.

``--actor network`` (DAgger, "The search trainer on the network's own states") lets the
network play instead, a move sampled from its masked policy: the search only labels the
states the network visits, and the value learns the network's own returns.

Every other argument goes to ``hm-train``, e.g.

    uv run python experiments/search_targets.py anchored --k 0.2 \
        --start policies/default-cpu-42m-s1-vf0125 -- --algo search \
        --init-params policies/default-cpu-42m-s1-vf0125 --num-envs 128 --num-steps 16 \
        --search-simulations 8 --lr 1e-4 --total-timesteps 307200 --no-wandb
"""

from __future__ import annotations

import argparse
import sys

from hackmatrix_env.devices import use_cpu_cores

CONTROLS = ("noise", "margin", "anchored", "improved")


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("control", choices=CONTROLS)
    p.add_argument("--sigma", type=float, default=0.5, help="noise: std of the logit noise")
    p.add_argument("--k", type=float, default=0.2, help="margin, anchored: logits per Q unit")
    p.add_argument("--margin", type=float, default=0.0, help="Q gaps within it count as ties")
    p.add_argument("--start", help="anchored: the frozen policy (checkpoint or policy dir)")
    p.add_argument(
        "--actor", choices=("search", "network"), default="search",
        help="who plays the moves: the search, or a sample of the network's policy (DAgger)",
    )  # fmt: skip
    split = argv.index("--") if "--" in argv else len(argv)
    args = p.parse_args(argv[:split])  # after "--": hm-train's arguments
    if args.control == "anchored" and not args.start:
        p.error("anchored needs --start (the run's --init-params)")
    args.train_args = list(argv[split + 1 :])
    return args


def q_shift(out, k: float, margin: float):
    """f32[B, A]: ``k`` x the Q gap of each visited action to the greedy action's, less the
    dead zone; 0 for unvisited actions (and everywhere when the greedy action is unvisited)."""
    import jax
    import jax.numpy as jnp

    rows = jnp.arange(out.action.shape[0])
    visited = out.visit_counts > 0
    q_top = out.q_values[rows, out.prior_action][:, None]
    both = visited & visited[rows, out.prior_action][:, None]
    gap = jnp.where(both, out.q_values - q_top, 0.0)
    return k * jnp.sign(gap) * jax.nn.relu(jnp.abs(gap) - margin)


def make_actor(args):
    """The trainer's ``actor`` (``alphazero.search_actor``'s shape): the control's target."""
    import jax
    import jax.numpy as jnp
    from hackmatrix_train.alphazero import search_config
    from hackmatrix_train.policy import load_policy
    from hackmatrix_train.search import MASKED_LOGIT, run_search

    start = load_policy(args.start).params if args.control == "anchored" else None

    def search_actor(cfg, apply_fn):
        search_cfg = search_config(cfg)

        def act(params, obs, env_state, key):
            k_search, k_noise = jax.random.split(key)
            out = run_search(apply_fn, search_cfg, params, k_search, env_state)
            log_prior = jnp.log(jnp.maximum(out.prior, 1e-30))
            if args.control == "noise":
                logits = log_prior + args.sigma * jax.random.normal(k_noise, log_prior.shape)
            elif args.control == "margin":
                logits = log_prior + q_shift(out, args.k, args.margin)
            elif args.control == "anchored":
                logits = apply_fn(start, obs)[0] + q_shift(out, args.k, args.margin)
            else:
                logits = jnp.log(jnp.maximum(out.policy_target, 1e-30))
            policy_target = jax.nn.softmax(jnp.where(out.mask, logits, MASKED_LOGIT), -1)
            changed = (out.action != out.prior_action).astype(jnp.float32)
            log_prob = jnp.zeros(out.action.shape, jnp.float32)
            action = out.action
            if args.actor == "network":  # DAgger: the network's move, the search's label
                k_act = jax.random.fold_in(k_noise, 1)
                action = jax.random.categorical(k_act, log_prior).astype(jnp.int32)
            return action, log_prob, out.root_value, (policy_target, changed)

        return act

    return search_actor


def main(argv=None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    use_cpu_cores()  # before anything starts JAX (loading --start does), as hm-train does
    from hackmatrix_train.cli import train

    return train.main(args.train_args, actor=make_actor(args))


if __name__ == "__main__":
    sys.exit(main())
