"""The search trainer: Gumbel AlphaZero with the game as its model, a learner that plugs into
``hm-train`` from outside the trainer package (``trainer.make_train(learner=...)``).

It left ``hm-train --algo search`` because it ends worse than it starts: from the shipped policy,
3 seeds x 25 CPU minutes, greedy 3.1 % -> 0.1 % wins and its own 8-simulation search 11.7 % ->
8.5 % (``search.md``, "The search trainer"). It stays here as the record of that lead and as the
example of a learner written beside the trainer, not inside it.

Read top to bottom like Pgx's AlphaZero example: self-play, targets, loss, train. Each update,
the search (``search.run_search``, ``cfg.search.num_simulations`` per move, honest by default)
plays ``num_steps`` moves in each of ``num_envs`` games; the network then learns, over
``update_epochs`` x ``num_minibatches`` gradient steps (``update.run_epochs``, shared with PPO):

* the policy target (``--target``): the search's improved policy (completed-Q,
  ``policy_target``; ``raw``: its Q in the value's units; ``overrides``: learnt only on the
  moves where the search overruled the network's argmax), or ``action``: the one-hot of the move
  the search played, by cross-entropy against the masked logits;
* the value target: the lambda-return of the canonical reward (times ``reward_scale``, plus
  the trainer's own shaping when it is on), bootstrapped from the network's values with
  truncation handled as in PPO (``ppo.compute_gae``), by squared error weighted ``vf_coef``.

The rollout, the data-parallel chunk, checkpoints, resume, the time budget, logging and the
end-of-run greedy evaluation are ``hm-train``'s (every ``hm-train`` flag works here);
``--init-params`` starts it from a PPO checkpoint; at the end the run is also evaluated with its
search. Its metrics (``train/...``): ``policy_ce``, ``target_kl`` (from the target to the
network's policy), ``entropy``, ``vf_loss``, ``grad_norm``, ``explained_variance``,
``override_frac`` (moves where the search played another action than the network's argmax),
``learning_rate`` and ``program_bonus``.

    uv run python experiments/search_trainer.py --init-params policies/default-cpu-42m-s1-vf0125 \
        --lr 1e-4 --num-envs 128 --num-steps 16 --search-considered 2 \
        --search-target-value-scale 0.02 --time-budget 25
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp

# ``hackmatrix_train.search`` is imported where it is used: it loads gymnax, which starts JAX,
# and as a script hm-train must set the CPU devices first (``distributed.set_cpu_devices``).
from hackmatrix_train.config import has_program_bonus
from hackmatrix_train.ppo import compute_gae
from hackmatrix_train.rollout import collect_rollout
from hackmatrix_train.schedules import make_optimizer, program_bonus_coef, update_learning_rate
from hackmatrix_train.stats import env_names, make_shaping, track_episodes
from hackmatrix_train.update import (
    Learner,
    explained_variance,
    flatten_steps,
    gradient_step,
    mean_metrics,
    pmean,
    reduce_devices,
    run_epochs,
)

TARGETS = ("improved", "raw", "overrides", "action")  # the policy targets (``--target``)


def check_target(target: str) -> None:
    """A ``ValueError`` for a policy target the trainer does not have."""
    if target not in TARGETS:
        raise ValueError(f"--target must be one of {TARGETS}, got {target!r}")


def check(cfg, target: str = "improved") -> None:
    """A ``ValueError`` for a run the search trainer cannot train."""
    check_target(target)
    if cfg.search.track_cryptogs:
        raise ValueError("--search-track-cryptogs follows one game's history: the trainer's "
                         "search has none; drop it")  # fmt: skip
    if cfg.program_bonus_end not in (None, cfg.program_bonus):
        raise ValueError(
            "the search trainer adds the program bonus to the tree's rewards, so it must stay "
            "constant: drop --program-bonus-end"
        )
    if cfg.program_potential > 0:
        raise ValueError("the search trainer plans without --program-potential; set it to 0")


def search_config(cfg, target: str = "improved"):
    """The ``SearchConfig`` the trainer acts with: the run's units and search settings.

    The tree's rewards carry the run's program bonus when it has one: the value targets carry
    it, so the values the tree bootstraps from expect it, and a tree without it undervalues
    every step that wins a program (the bonus the value counted never comes).
    """
    from hackmatrix_train.search import search_config_from_train

    return search_config_from_train(
        cfg,
        program_bonus=float(cfg.program_bonus) if has_program_bonus(cfg) else 0.0,
        target_q="raw" if target == "raw" else "rescaled",
    )


def search_actor(cfg, apply_fn, search=None, target: str = "improved"):
    """The trainer's actor (``update.Learner``): the search's action, and as ``extra`` the
    policy target (the improved policy, or with ``target="action"`` the one-hot of the
    action played) and whether the search overrode the network's argmax (f32, 0 or 1).

    ``search`` is ``run_search``-shaped (``(apply_fn, search_cfg, params, key, state) ->
    SearchOutput``; None: ``search.run_search``): an experiment passes its own, e.g.
    ``partial(run_search, resample=...)``.
    """
    from hackmatrix_train.search import run_search

    search = search or run_search
    search_cfg = search_config(cfg, target)

    def act(params, obs, env_state, key):
        out = search(apply_fn, search_cfg, params, key, env_state)
        changed = (out.action != out.prior_action).astype(jnp.float32)
        log_prob = jnp.zeros(out.action.shape, jnp.float32)  # unused: no importance ratio
        policy_target = out.policy_target
        if target == "action":
            policy_target = jax.nn.one_hot(out.action, policy_target.shape[-1])
        return out.action, log_prob, out.root_value, (policy_target, changed)

    return act


def search_loss(params, apply_fn, obs, policy_target, value_target, vf_coef, weight=None):
    """Cross-entropy to the improved policy + ``vf_coef`` x squared value error; the aux.

    ``weight`` (f32[N], optional) restricts the cross-entropy to the rows it weighs (a weighted
    mean, per device under data parallelism); the value loss takes every row.

    The value loss is not clipped as PPO's is: from the default policy, runs with and without
    PPO's clip end alike (experiments/search.md), so the simpler loss stays.
    """
    from hackmatrix_train.search import MASKED_LOGIT

    logits, value = apply_fn(params, obs)
    masked = jnp.where(obs.action_mask, logits, MASKED_LOGIT)
    log_p = jax.nn.log_softmax(masked, axis=-1)
    log_p = jnp.where(obs.action_mask, log_p, 0.0)
    target_log = jnp.where(policy_target > 0, jnp.log(jnp.maximum(policy_target, 1e-30)), 0.0)
    ce_rows = -jnp.sum(policy_target * log_p, axis=-1)
    kl_rows = jnp.sum(policy_target * (target_log - log_p), axis=-1)
    if weight is None:
        ce, kl = ce_rows.mean(), kl_rows.mean()
    else:  # a weighted mean over the rows (the overrides): the others teach nothing
        total = jnp.maximum(weight.sum(), 1.0)
        ce, kl = (ce_rows * weight).sum() / total, (kl_rows * weight).sum() / total
    entropy = -jnp.sum(jnp.exp(log_p) * jnp.where(obs.action_mask, log_p, 0.0), axis=-1).mean()
    vf = 0.5 * jnp.square(value - value_target).mean()
    aux = {"policy_ce": ce, "vf_loss": vf, "entropy": entropy, "target_kl": kl}
    return ce + vf_coef * vf, aux


def make_update(
    cfg, apply_fn, env, env_params, axis_name=None, *, actor=None, loss=None, target="improved"
):  # fmt: skip
    """``update(runner, sched) -> (runner, (episodes, metrics))``: a searched rollout + epochs.

    ``actor`` (default ``search_actor``; its ``extra`` is ``(policy_target, overridden)``) and
    ``loss`` (default ``search_loss``, same signature) are the learner's injection points.
    """
    check(cfg, target)
    if not env_names(env, env_params).is_hackmatrix:
        raise ValueError("the search trainer plans with the HackMatrix game as its model")
    act = (actor or functools.partial(search_actor, target=target))(cfg, apply_fn)
    loss = loss or search_loss
    shaping = make_shaping(cfg)

    def value_fn(params, obs):
        return apply_fn(params, obs)[1]

    def update(runner, sched):
        k_roll, k_epochs, k_next = jax.random.split(runner.key, 3)
        tx = make_optimizer(cfg, sched.num_updates)
        bonus_coef = program_bonus_coef(cfg, sched, runner.update)

        # 1. self-play: the search plays num_steps moves of every game
        env_state, obs, acc, traj, (policy_targets, overridden), episodes = collect_rollout(
            act, value_fn, k_roll, runner.params, env, env_params, runner.env_state, runner.obs,
            runner.acc, cfg.num_steps, track=track_episodes, shaping=shaping(bonus_coef),
        )  # fmt: skip

        # 2. targets: the search's policy, and lambda-returns bootstrapped from the network
        _, last_value = apply_fn(runner.params, obs)
        _, value_targets = compute_gae(
            traj, last_value, cfg.gamma, cfg.gae_lambda, cfg.reward_scale
        )

        # 3. train: update_epochs passes of num_minibatches steps on the loss
        def step(params, opt_state, mb):
            def loss_fn(p, mb):
                obs, policy_target, value_target, overridden = mb
                weight = overridden if target == "overrides" else None
                return loss(p, apply_fn, obs, policy_target, value_target, cfg.vf_coef, weight)

            return gradient_step(loss_fn, params, opt_state, mb, tx, axis_name)

        batch = flatten_steps((traj.obs, policy_targets, value_targets, overridden))
        params, opt_state, aux = run_epochs(
            k_epochs, runner.params, runner.opt_state, batch, step, cfg.update_epochs,
            cfg.num_minibatches,
        )  # fmt: skip

        # 4. metrics: the mean loss terms, the override share, this update's coefficients
        metrics = {
            **mean_metrics(aux, axis_name),
            "explained_variance": explained_variance(traj.value, value_targets, axis_name),
            "override_frac": pmean(overridden.mean(), axis_name),
            "learning_rate": update_learning_rate(cfg, sched, runner.update),
            "program_bonus": bonus_coef,
        }
        runner = runner.advance(params, opt_state, env_state, obs, acc, k_next)
        return runner, (reduce_devices(episodes, axis_name), metrics)

    return update


def learner(target: str = "improved") -> Learner:
    """The search trainer as ``trainer.make_train``'s ``learner``, with its policy target."""
    check_target(target)
    # the name goes into every checkpoint, and a resume must name the same: so does the target
    name = "search" if target == "improved" else f"search-{target}"
    return Learner(name, functools.partial(make_update, target=target))


def final_search_evaluation(run_dir: Path, target: str = "improved") -> dict:
    """The run's params with its own search (``search_evaluate.search_summary``): the
    ``hm-train`` run's final evaluation, greedy, is the network alone. Written to
    ``run_dir/eval_final_search.json``."""
    from hackmatrix_env.constants import PROGRAM_NAMES
    from hackmatrix_train import progress
    from hackmatrix_train.policy import load_policy
    from hackmatrix_train.search_evaluate import search_summary
    from hackmatrix_train.tables import format_table
    from hackmatrix_train.trainer import make_env

    policy = load_policy(run_dir, start_stage=1)
    cfg = policy.cfg
    row = search_summary(
        make_env(cfg), policy.env_params, policy.apply_fn, policy.params,
        search_config(cfg, target), cfg.final_eval_episodes, cfg.final_eval_seed, PROGRAM_NAMES,
        report=progress.Reporter(),
    )  # fmt: skip
    title = f"final evaluation with search ({cfg.search.num_simulations} simulations, "
    print(format_table(row, title + f"{cfg.search.mode})"))
    (run_dir / "eval_final_search.json").write_text(json.dumps(row, indent=1))
    return row


def main(argv: list[str] | None = None) -> int:
    """``hm-train``'s command line with this learner; ``--target`` is the policy target. A
    finished run is then evaluated with its search too (``final_search_evaluation``)."""
    from hackmatrix_train.cli import train as hm_train
    from hackmatrix_train.run import default_run_name, locate_run

    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--target", default="improved", choices=TARGETS)
    args, rest = p.parse_known_args(sys.argv[1:] if argv is None else argv)
    try:
        cfg, explicit = hm_train.config_from_args(hm_train.build_parser().parse_args(rest))
        if not {"run_name", "resume"} & explicit:  # search-..., where hm-train names ppo-...
            name = f"search-{cfg.network}-{cfg.num_envs}x{cfg.num_steps}-s{cfg.seed}"
            rest, cfg = [*rest, "--run-name", name], cfg.replace(run_name=name)
        place = locate_run(cfg, explicit)
    except ValueError:  # hm-train says what is wrong, and how
        return hm_train.main(rest, learner=learner(args.target))
    run_dir = place.run_dir if place else Path(cfg.checkpoint_dir) / default_run_name(cfg)
    code = hm_train.main(rest, learner=learner(args.target))
    if code == 0 and cfg.final_eval_episodes > 0:
        final_search_evaluation(run_dir, args.target)
    return code


if __name__ == "__main__":
    sys.exit(main())
