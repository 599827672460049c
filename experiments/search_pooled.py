"""Several determinizations that share one Gumbel draw, their Q pooled: does it plan better?

The experiment of "Pooled determinizations" (experiments/search.md). With K > 1 the honest
search (``search.run_search``) runs K independent trees from K re-draws of the hidden parts:
each tree draws its own Gumbel noise, so the trees consider different pairs of actions, and the
played move is the argmax of their averaged improved policies: the Gumbel selection rule of
K = 1 is lost. Here the K trees of a game share one Gumbel draw, so they consider the same
candidates and give them the same visits; their root Q values are pooled (visit-weighted, then
completed and rescaled as mctx does for one tree), and the move is chosen by Gumbel MuZero's
own rule, argmax of gumbel + logits + sigma(pooled completed Q) over the considered actions.
At 8 simulations, 2 considered actions and K = 4, each candidate is judged by 4 independent
one-step samples of the game (4 re-draws, 4 chance draws) and the value, where one tree
judges it by one sampled step and a few steps deeper along it.

The pooled policy takes ``mctx.gumbel_muzero_policy``'s place as the search's ``policy_fn``
part, passed to ``hm-eval``'s search evaluation (``evaluate_checkpoint(search_fn=...)``); the
played action comes back as one-hot ``action_weights``, which ``run_search`` averages and
argmaxes for K > 1.

    uv run python experiments/search_pooled.py --determinizations 4 --simulations 8 \
        --episodes 512 --seed 1
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time

from hackmatrix_env.devices import use_cpu_cores

POLICY = "policies/default-cpu-42m-s1-vf0125"


def pooled_policy(k: int):
    """A drop-in for ``mctx.gumbel_muzero_policy`` over a batch of B games x ``k`` copies
    (each game's copies consecutive, as ``run_search`` repeats them)."""
    import jax
    import jax.numpy as jnp
    import mctx
    from mctx._src import action_selection, qtransforms, search, seq_halving
    from mctx._src.policies import _mask_invalid_actions

    def policy(
        params,
        rng_key,
        root,
        recurrent_fn,
        num_simulations,
        invalid_actions=None,
        max_depth=None,
        *,
        qtransform,
        max_num_considered_actions=16,
        gumbel_scale=1.0,
    ):
        root = root.replace(prior_logits=_mask_invalid_actions(root.prior_logits, invalid_actions))
        rows, num_actions = root.prior_logits.shape
        games = rows // k
        rng_key, gumbel_rng = jax.random.split(rng_key)
        gumbel = gumbel_scale * jax.random.gumbel(gumbel_rng, (games, num_actions))
        shared = jnp.repeat(gumbel, k, axis=0)  # one draw per game, the same in its k trees
        tree = search.search(
            params=params,
            rng_key=rng_key,
            root=root,
            recurrent_fn=recurrent_fn,
            root_action_selection_fn=functools.partial(
                action_selection.gumbel_muzero_root_action_selection,
                num_simulations=num_simulations,
                max_num_considered_actions=max_num_considered_actions,
                qtransform=qtransform,
            ),
            interior_action_selection_fn=functools.partial(
                action_selection.gumbel_muzero_interior_action_selection,
                qtransform=qtransform,
            ),
            num_simulations=num_simulations,
            max_depth=max_depth,
            invalid_actions=invalid_actions,
            extra_data=action_selection.GumbelMuZeroExtraData(root_gumbel=shared),
        )
        summary = tree.summary()

        def per_game(x):
            return x.reshape(games, k, *x.shape[1:])

        visits = per_game(summary.visit_counts)
        q = per_game(summary.qvalues)
        pooled_visits = visits.sum(axis=1)
        pooled_q = (q * visits).sum(axis=1) / jnp.maximum(pooled_visits, 1)
        logits = per_game(root.prior_logits)[:, 0]
        raw_value = per_game(tree.raw_values[:, tree.ROOT_INDEX]).mean(axis=1)
        invalid = per_game(invalid_actions)[:, 0]
        # mctx's qtransform_completed_by_mix_value, on the pooled statistics
        value_scale = qtransform.keywords["value_scale"]

        def complete(raw, q, n, prior):  # one game, as mctx completes one node's Q
            mixed = qtransforms._compute_mixed_value(raw, q, n, prior)
            done = qtransforms._complete_qvalues(q, visit_counts=n, value=mixed)
            return qtransforms._rescale_qvalues(done, 1e-8)

        prior = jax.nn.softmax(logits)
        completed = jax.vmap(complete)(raw_value, pooled_q, pooled_visits, prior)
        maxvisit = jnp.max(pooled_visits, axis=-1, keepdims=True)
        completed = (50.0 + maxvisit) * value_scale * completed  # 50: mctx's maxvisit_init
        score = seq_halving.score_considered(maxvisit, gumbel, logits, completed, pooled_visits)
        action = action_selection.masked_argmax(score, invalid)
        onehot = jax.nn.one_hot(action, num_actions)
        return mctx.PolicyOutput(
            action=jnp.repeat(action, k, axis=0),
            action_weights=jnp.repeat(onehot, k, axis=0),
            search_tree=tree,
        )

    return policy


def pooled_search(k: int):
    """``search.run_search`` with the pooled policy in mctx's Gumbel MuZero policy's place."""
    from hackmatrix_train.search import run_search

    return functools.partial(run_search, policy_fn=pooled_policy(k))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy", default=POLICY)
    p.add_argument("--determinizations", type=int, default=4, help="K, the pooled trees")
    p.add_argument("--simulations", type=int, default=8, help="in all, split among the K")
    p.add_argument("--baseline", action="store_true", help="mctx's own Gumbel policy, same K")
    p.add_argument("--episodes", type=int, default=256)
    p.add_argument("--seed", type=int, default=0, help="evaluation key")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    use_cpu_cores()  # before anything starts JAX, as hm-train does
    from hackmatrix_train.policy import evaluate_checkpoint

    search_fn = None if args.baseline else pooled_search(args.determinizations)
    search = [dict(num_simulations=args.simulations, determinizations=args.determinizations)]
    start = time.time()
    summary = evaluate_checkpoint(
        args.policy, args.episodes, seed=args.seed, search=search, search_fn=search_fn
    )
    row = summary["search"][0]
    out = dict(
        pooled=not args.baseline,
        determinizations=args.determinizations,
        simulations=args.simulations,
        wins=row["win_rate"],
        stage=row["stage_mean"],
        episodes=args.episodes,
        seed=args.seed,
        greedy_wins=summary["win_rate"],
        seconds=round(time.time() - start, 1),
    )
    print(json.dumps(out), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(row=out, summary=summary), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
