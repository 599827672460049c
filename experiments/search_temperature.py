"""The search's prior at a temperature: does a flatter prior alone make the search win more?

A control for PPO guided by the search (``long_game.md``): the guided network searches better
than its start and its policy is flatter (entropy 0.29 against 0.18). Here the start's own
logits are divided by ``T`` (its value untouched; the greedy row's argmax is the same at any
T), so the search's Gumbel candidates and improved policy see a flatter prior with nothing
learned. ``--entropy`` first prints each network's mean policy entropy at each T on the same
states (the start's greedy play, 128 games x 128 moves from stage 1), so a T can be matched to
a trained network's entropy.

    uv run python experiments/search_temperature.py --temperature 1.5 --episodes 256 --seed 0
    uv run python experiments/search_temperature.py --entropy 1 1.25 1.5 2 --compare CKPT
"""

from __future__ import annotations

import argparse
import json


class Tempered:
    """``apply(params, obs)``: the network's logits over ``temperature``, its value as is."""

    def __init__(self, net, temperature: float):
        self.net, self.temperature = net, temperature

    def apply(self, params, obs):
        logits, value = self.net.apply(params, obs)
        return logits / self.temperature, value


def mean_entropy(apply_fn, params, obs, alive, temperature: float) -> float:
    """The mean entropy of the masked policy at ``temperature`` over the live states."""
    import jax
    import jax.numpy as jnp
    from hackmatrix_train.expert_iteration import masked_log_policy

    logits, _ = jax.jit(apply_fn)(params, obs)
    log_p = masked_log_policy(logits / temperature, obs.action_mask)
    rows = -jnp.sum(jnp.where(obs.action_mask, jnp.exp(log_p) * log_p, 0.0), -1)
    return float((rows * alive).sum() / alive.sum())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoint", nargs="?", default=None, help="default: the shipped agent")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--episodes", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--simulations", type=int, default=8)
    p.add_argument("--entropy", type=float, nargs="+", default=None,
                   help="print the mean policy entropy at these temperatures and stop")  # fmt: skip
    p.add_argument("--compare", nargs="*", default=[], help="more checkpoints for --entropy")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    if args.temperature <= 0:
        raise SystemExit("--temperature must be > 0")
    from hackmatrix_train.compile_cache import default_cache_dir, enable
    from hackmatrix_train.policy import evaluate_checkpoint, load_policy
    from hackmatrix_train.tables import format_summaries
    from target_noise import greedy_game_states

    enable(default_cache_dir())
    if args.entropy:
        start = load_policy(args.checkpoint)
        _, obs, alive = greedy_game_states(start, 128, 128, 7)
        for path in [args.checkpoint, *args.compare]:
            policy = start if path == args.checkpoint else load_policy(path)
            figures = {t: mean_entropy(policy.apply_fn, policy.params, obs, alive, t)
                       for t in args.entropy}  # fmt: skip
            print(path or "the shipped agent", {t: round(h, 3) for t, h in figures.items()})
        return
    summary = evaluate_checkpoint(
        args.checkpoint, episodes=args.episodes, seed=args.seed,
        wrap_network=lambda net: Tempered(net, args.temperature),
        search=[{"num_simulations": args.simulations, "determinizations": 1,
                 "max_num_considered_actions": 2}],
    )  # fmt: skip
    rows = [summary, *summary["search"]]
    print(format_summaries(rows, f"prior at temperature {args.temperature:g}, seed {args.seed}"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"temperature": args.temperature, "summary": summary}, f, indent=1)


if __name__ == "__main__":
    main()
