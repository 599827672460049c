"""PPO guided by the search with the reverse KL: ``hm-train``'s command line (``--guide-kl`` > 0)
with the guided learner's loss replaced through its ``loss`` injection point.

The trainer's guided learner adds ``K x KL(target || policy)``: over states the network cannot
tell apart it fits the arithmetic mean of their targets, mass on every action some target
favours, and its entropy climbs above the targets' (a second round from the shipped agent:
0.29 -> 0.42 against targets of 0.21, ``long_game.md``). This script adds
``K x KL(policy || target)`` instead, the policy-improvement step of soft actor-critic with the
search's improved policy as the Boltzmann target: over such states it fits the normalised
geometric mean of their targets, which takes mass off any action one of them rules out.
Everything else is the trainer's: ``guided.guided_actor``'s targets, PPO's update, the logged
``search_kl`` (still the forward KL, so the runs' logs compare).

    uv run python experiments/guided_reverse.py --recipe guided --guide-bonus 5 \
        --init-params policies/guided-cpu-6m-s3-bonus5 --seed 3 --run-suffix rev
"""

from __future__ import annotations

import functools
import sys

# a target's log where its mass underflowed to 0 on a legal action: a large finite penalty
LOG_FLOOR = -30.0


def reverse_kl(logits, mask, target, weight):
    """The weighted mean over rows of KL(masked policy of ``logits`` || target). Its gradient
    in a row's logits is ``p x (log p - log target - KL)``: mass leaves the actions the policy
    favours more than the target does."""
    import jax.numpy as jnp  # here, not at import: the trainer sets the CPU devices first
    from hackmatrix_train import guided
    from hackmatrix_train.expert_iteration import masked_log_policy

    log_p = masked_log_policy(logits, mask)
    log_t = jnp.maximum(guided.log_of(target), LOG_FLOOR)
    rows = jnp.sum(jnp.where(mask, jnp.exp(log_p) * (log_p - log_t), 0.0), axis=-1)
    return (rows * weight).sum() / jnp.maximum(weight.sum(), 1.0)


def reverse_guided_loss(params, apply_fn, batch, adv, targets, *args, extra, kl_coef: float):
    """``guided.guided_loss`` with the reverse KL as the pull (the forward KL still logged)."""
    from hackmatrix_train import guided, ppo

    total, aux = ppo.ppo_loss(params, apply_fn, batch, adv, targets, *args)
    target, weight = extra
    logits, _ = apply_fn(params, batch.obs)
    mask = batch.obs.action_mask
    kl, override = guided.search_kl(logits, mask, target, weight)
    rev = reverse_kl(logits, mask, target, weight)
    aux = {**aux, "search_kl": kl, "override_frac": override,
           "target_entropy": guided.target_entropy(target, weight)}  # fmt: skip
    return total + kl_coef * rev, aux


def main(argv: list[str] | None = None) -> int:
    from hackmatrix_train.cli import train as hm_train

    argv = sys.argv[1:] if argv is None else argv
    cfg, _ = hm_train.config_from_args(hm_train.build_parser().parse_args(argv))
    if cfg.guide_kl <= 0:
        print("guided_reverse.py: give --guide-kl > 0 (or --recipe guided)", file=sys.stderr)
        return 2
    return hm_train.main(argv, loss=functools.partial(reverse_guided_loss, kl_coef=cfg.guide_kl))


if __name__ == "__main__":
    sys.exit(main())
