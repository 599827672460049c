"""Leaf values from short greedy rollouts: does a longer look at each leaf plan better?

The experiment of "Rollouts at the leaves" (experiments/search.md). The search's Q at 8
simulations is one or two real steps and then the value head; the searched agent's deaths come
from traps laid earlier than that. Here every node the tree expands is also played on for
``depth`` moves by the greedy network (the real env step, the tree's own key stream), and its
leaf value becomes

    (1 - lam) * V(s) + lam * (sum_i gamma^i r_i + gamma^depth V(s_depth))

(AlphaGo's mix; terminal states absorb, the rewards in the value's units). The mixed model is
the search's ``make_recurrent`` part, passed to ``hm-eval``'s search evaluation
(``evaluate_checkpoint(search_fn=...)``); every row names its depth and lambda. Each
simulation costs ``1 + depth`` network calls.

    uv run python experiments/search_rollouts.py --depth 8 --lam 0.5 --episodes 256 --seed 0
"""

from __future__ import annotations

import argparse
import json
import sys

from hackmatrix_env.devices import use_cpu_cores

POLICY = "policies/default-cpu-42m-s1-vf0125"


def rollout_search(depth: int, lam: float):
    """``search.run_search`` whose model's leaf values mix in rollouts."""
    from functools import partial

    import jax
    import jax.numpy as jnp
    import mctx
    from hackmatrix_env.transition import step_state
    from hackmatrix_train import search

    def make_recurrent_fn(apply_fn, cfg):
        base = search.make_recurrent_fn(apply_fn, cfg)

        def rollout_value(params, key, state, done):
            def one(carry, k):
                s, d, ret, disc = carry
                logits, _, _ = search.evaluate_states(apply_fn, params, s, cfg.disabled)
                action = jnp.argmax(logits, axis=-1).astype(jnp.int32)
                keys = jax.random.split(k, action.shape[0])
                stepped, reward, terminated, _ = jax.vmap(step_state)(keys, s, action)
                truncated = stepped.time >= cfg.max_steps_in_episode
                ret = ret + disc * jnp.where(d, 0.0, reward * cfg.reward_scale)
                s = search.select_rows(d, s, stepped)
                d = d | terminated | truncated
                disc = disc * jnp.where(d, 0.0, cfg.gamma)
                return (s, d, ret, disc), None

            batch = done.shape[0]
            init = (state, done, jnp.zeros(batch), jnp.where(done, 0.0, 1.0))
            (s, d, ret, disc), _ = jax.lax.scan(one, init, jax.random.split(key, depth))
            _, v_end, _ = search.evaluate_states(apply_fn, params, s, cfg.disabled)
            return ret + disc * jnp.where(d, 0.0, v_end)

        def recurrent_fn(params, key, action, node):
            k_step, k_roll = jax.random.split(key)
            out, child = base(params, k_step, action, node)
            mixed = (1.0 - lam) * out.value + lam * rollout_value(
                params, k_roll, child.state, child.done
            )
            value = jnp.where(child.done, 0.0, mixed).astype(jnp.float32)
            out = mctx.RecurrentFnOutput(
                reward=out.reward, discount=out.discount, prior_logits=out.prior_logits, value=value
            )
            return out, child

        return recurrent_fn

    return partial(search.run_search, make_recurrent=make_recurrent_fn)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy", default=POLICY)
    p.add_argument("--depth", type=int, default=8, help="greedy moves per rollout")
    p.add_argument("--lam", type=float, default=0.5, help="weight of the rollout's return")
    p.add_argument("--simulations", type=int, nargs="+", default=[8])
    p.add_argument("--episodes", type=int, default=256)
    p.add_argument("--seed", type=int, default=0, help="evaluation key")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    if args.depth < 1 or not 0.0 <= args.lam <= 1.0:
        p.error("--depth must be >= 1 and --lam in [0, 1]")
    use_cpu_cores()  # before anything starts JAX, as hm-train does
    from hackmatrix_train.policy import evaluate_checkpoint

    search = [dict(num_simulations=n) for n in args.simulations]
    summary = evaluate_checkpoint(
        args.policy, args.episodes, seed=args.seed, search=search,
        search_fn=rollout_search(args.depth, args.lam),
    )  # fmt: skip
    rows = []
    for row in summary["search"]:
        rows.append(
            dict(
                simulations=row["search"]["num_simulations"],
                depth=args.depth,
                lam=args.lam,
                wins=row["win_rate"],
                stage=row["stage_mean"],
                ms_per_decision=round(row["seconds_per_decision"] * 1e3, 2),
            )
        )
        print(json.dumps(rows[-1]))
    print(json.dumps(dict(greedy_wins=summary["win_rate"], greedy_stage=summary["stage_mean"])))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(rows=rows, summary=summary), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
