"""The search trainer (``hm-train --algo search``): Gumbel AlphaZero with the game as its model.

Each update, the search (``search.run_search``, ``cfg.search_simulations`` per move, honest
by default) plays ``num_steps`` moves in each of ``num_envs`` games; the network then learns,
over ``update_epochs`` x ``num_minibatches`` gradient steps:

* the policy target: the search's improved policy (completed-Q, ``policy_target``; with
  ``search_target="raw"`` its Q in the value's units, with ``"overrides"`` learnt only on the
  moves where the search overruled the network's argmax), or with ``search_target="action"``
  the one-hot of the move the search played, by cross-entropy against the masked logits;
* the value target: the lambda-return of the canonical reward (times ``reward_scale``, plus
  the trainer's own shaping when it is on), bootstrapped from the network's values with
  truncation handled as in PPO (``ppo.compute_gae``), by squared error weighted ``vf_coef``.

It is PPO's trainer with another actor and loss: the rollout (``rollout.collect_rollout_with``),
the data-parallel chunk over devices, checkpoints, resume, the time budget, logging and the
end-of-run evaluation are the same code (``trainer.Trainer``). ``--init-params`` starts it from a
PPO checkpoint. PPO's metric names carry the search trainer's figures: ``train/pg_loss`` is the
policy cross-entropy, ``train/approx_kl`` the KL from the target to the network's policy,
``train/clip_frac`` the share of moves where the search played another action than the
network's argmax. The entropy bonus and the exploration floor are PPO's own and unused here.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from hackmatrix_train.config import has_program_bonus
from hackmatrix_train.ppo import (
    _pmean,
    _psum,
    compute_gae,
    learning_rate,
    make_optimizer,
    program_bonus_coef,
)
from hackmatrix_train.rollout import collect_rollout_with, program_potential
from hackmatrix_train.search import MASKED_LOGIT, run_search, search_config_from_train


def search_config(cfg):
    """The ``SearchConfig`` the trainer acts with: the run's units and search settings.

    The tree's rewards carry the run's program bonus when it has one: the value targets carry
    it, so the values the tree bootstraps from expect it, and a tree without it undervalues
    every step that wins a program (the bonus the value counted never comes).
    """
    return search_config_from_train(
        cfg,
        program_bonus=float(cfg.program_bonus) if has_program_bonus(cfg) else 0.0,
        num_simulations=cfg.search_simulations,
        mode=cfg.search_mode,
        max_depth=cfg.search_depth,
        gumbel_scale=cfg.search_gumbel_scale,
        max_num_considered_actions=cfg.search_considered,
        target_value_scale=cfg.search_target_value_scale,
        target_q="raw" if cfg.search_target == "raw" else "rescaled",
    )


def search_actor(apply_fn, search_cfg, target: str = "improved"):
    """The rollout's actor: the search's action, and as ``extra`` the policy target (the
    improved policy, or with ``target="action"`` the one-hot of the action played)."""

    def act(params, obs, env_state, key):
        out = run_search(apply_fn, search_cfg, params, key, env_state)
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
    return ce + vf_coef * vf, {"pg_loss": ce, "vf_loss": vf, "entropy": entropy, "approx_kl": kl}


def make_search_update(cfg, apply_fn, env, env_params, axis_name=None):
    """``update(runner, sched) -> (runner, raw_metrics)``: a searched rollout + the epochs."""
    num_mb = cfg.num_minibatches
    act = search_actor(apply_fn, search_config(cfg), cfg.search_target)
    programs_counted = (
        program_potential(1.0, cfg.program_terms_skip_undo) if has_program_bonus(cfg) else None
    )
    potential = program_potential(cfg.program_potential, cfg.program_terms_skip_undo)

    def update(runner, sched):
        k_roll, k_epochs, k_next = jax.random.split(runner.key, 3)
        tx = make_optimizer(cfg, sched.num_updates)
        bonus_coef = program_bonus_coef(cfg, sched, runner.update)

        def bonus(obs):
            return bonus_coef * programs_counted(obs)

        env_state, obs, acc, traj, (weights, changed), stats = collect_rollout_with(
            act, k_roll, apply_fn, runner.params, env, env_params, runner.env_state, runner.obs,
            runner.acc, cfg.num_steps, potential, cfg.gamma,
            None if programs_counted is None else bonus,
        )  # fmt: skip
        _, last_value = apply_fn(runner.params, obs)
        _, targets = compute_gae(traj, last_value, cfg.gamma, cfg.gae_lambda, cfg.reward_scale)
        flat = jax.tree.map(
            lambda x: x.reshape((-1, *x.shape[2:])), (traj.obs, weights, targets, changed)
        )
        batch_size = targets.size

        def minibatch(carry, rows):
            params, opt_state = carry
            obs_mb, pol_mb, val_mb, changed_mb = jax.tree.map(
                lambda x: jnp.take(x, rows, axis=0), flat
            )
            weight = changed_mb if cfg.search_target == "overrides" else None
            grads, aux = jax.grad(search_loss, has_aux=True)(
                params, apply_fn, obs_mb, pol_mb, val_mb, cfg.vf_coef, weight
            )
            grads = _pmean(grads, axis_name)
            aux = {**aux, "grad_norm": optax.global_norm(grads)}
            updates, opt_state = tx.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), aux

        def epoch(carry, key):
            idx = jax.random.permutation(key, batch_size).reshape((num_mb, -1))
            return jax.lax.scan(minibatch, carry, idx)

        (params, opt_state), aux = jax.lax.scan(
            epoch, (runner.params, runner.opt_state), jax.random.split(k_epochs, cfg.update_epochs)
        )
        var_y = jnp.var(targets)
        explained = jnp.where(var_y > 0, 1.0 - jnp.var(targets - traj.value) / var_y, 0.0)
        losses = {k: _pmean(v.mean(), axis_name) for k, v in aux.items()}
        losses["explained_variance"] = _pmean(explained, axis_name)
        losses["clip_frac"] = _pmean(changed.mean(), axis_name)
        losses["floor_loss"] = jnp.float32(0.0)
        stats = {
            k: (
                jax.lax.pmax(v, axis_name)
                if axis_name and k == "ep_stage_max"
                else _psum(v, axis_name)
            )
            for k, v in stats.items()
        }
        raw = {**stats, **losses}
        raw["lr"] = learning_rate(cfg, sched, runner.update)
        raw["ent_coef"] = jnp.float32(0.0)
        raw["program_bonus"] = bonus_coef
        raw["explore_floor"] = jnp.float32(0.0)
        raw["explore_weight"] = jnp.float32(0.0)
        runner = runner.replace(
            params=params, opt_state=opt_state, env_state=env_state, obs=obs, acc=acc,
            key=k_next, update=runner.update + 1,
        )  # fmt: skip
        return runner, raw

    return update
