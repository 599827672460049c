"""PPO: GAE under gymnax 1.0, the clipped loss, and ``make_update`` (one jitted update).

``make_update`` reads top to bottom like purejaxrl's ``make_train``: rollout, advantages, epochs
of minibatches, metrics. The plumbing it shares with the other learners (epochs, cross-device
means, metric reductions) is ``update.py``; the coefficients' schedules are ``schedules.py``.
All functions are pure and jit-clean. Data parallelism: when ``axis_name`` is set the update
runs inside ``shard_map`` and gradients / metrics are averaged over that mesh axis.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hackmatrix_train.network import masked_categorical, value_histogram_of
from hackmatrix_train.rollout import Transition, collect_rollout
from hackmatrix_train.schedules import (
    Schedule,
    entropy_coef,
    explore_floor,
    explore_weight,
    make_optimizer,
    program_bonus_coef,
    update_learning_rate,
)
from hackmatrix_train.stats import EXPLORE_GROUPS, make_shaping, track_episodes
from hackmatrix_train.update import (
    Learner,
    RunnerState,
    explained_variance,
    flatten_steps,
    gradient_step,
    mean_metrics,
    pmean,
    reduce_devices,
    run_epochs,
)
from hackmatrix_train.value_head import histogram_loss
from hackmatrix_train.value_target import target_params


def sample_actor(cfg, apply_fn):
    """PPO's actor: ``act(params, obs, env_state, key) -> (action, log_prob, value, None)``, an
    action sampled from the masked policy."""
    del cfg

    def act(params, obs, env_state, key):
        del env_state
        logits, value = apply_fn(params, obs)
        pi = masked_categorical(logits, obs.action_mask)
        action = pi.sample(seed=key).astype(jnp.int32)
        return action, pi.log_prob(action), value, None

    return act


def compute_gae(
    traj: Transition, last_value: jax.Array, gamma: float, lam: float, reward_scale: float = 1.0
) -> tuple[jax.Array, jax.Array]:
    """Generalised advantage estimation over [T, N] (specs/train.md §3).

    ``terminated`` zeroes the bootstrap, ``done = terminated | truncated`` cuts the trace, and a
    truncated step bootstraps from V(final_observation) instead of V(reset observation). The
    trainer's shaping term (``Transition.shaping``, 0 when off) is added to the reward here only.
    Returns ``(advantages, value_targets)``.
    """

    def body(carry, t: Transition):
        gae, next_value = carry
        next_v = jnp.where(t.truncated, t.final_value, next_value)
        not_term = 1.0 - t.terminated.astype(jnp.float32)
        not_done = 1.0 - (t.terminated | t.truncated).astype(jnp.float32)
        delta = (t.reward + t.shaping) * reward_scale + gamma * next_v * not_term - t.value
        gae = delta + gamma * lam * not_done * gae
        return (gae, t.value), gae

    init = (jnp.zeros_like(last_value), last_value)
    _, adv = jax.lax.scan(body, init, traj, reverse=True)
    return adv, adv + traj.value


def floor_penalty(logits, mask, floor, groups=EXPLORE_GROUPS) -> jax.Array:
    """Mean over samples of ``sum_g relu(log floor - log pi(g))`` over groups with a valid action.

    ``pi(g)`` is the masked policy's probability of taking any action of group ``g``. Unlike an
    entropy bonus, whose gradient on a logit vanishes with the action's probability, this
    penalty pushes a group's log-probability up with unit slope while it is below the floor, so
    an action the policy has unlearned is still sampled at rate ``floor`` (specs/train.md §10).
    It is a term of the loss only: the policy sampled and the importance ratio are those of the
    network, so PPO stays on-policy. A floor of 0 gives 0 (no group is below it).
    """
    neg = jnp.finfo(logits.dtype).min
    log_z = jax.nn.logsumexp(jnp.where(mask, logits, neg), axis=-1)
    total = jnp.zeros(logits.shape[:-1], logits.dtype)
    for group in groups:
        idx = jnp.asarray(group)
        g_mask = mask[..., idx]
        log_q = jax.nn.logsumexp(jnp.where(g_mask, logits[..., idx], neg), axis=-1) - log_z
        short = jax.nn.relu(jnp.log(jnp.maximum(floor, 1e-30)) - log_q)
        total = total + jnp.where(g_mask.any(axis=-1) & (floor > 0), short, 0.0)
    return total.mean()


def normalize_advantages(adv: jax.Array, axis_name=None) -> jax.Array:
    """``(adv - mean) / (std + 1e-8)`` over the whole minibatch, across devices when sharded.

    With ``axis_name`` each device holds an equal slice of the minibatch; the mean and variance
    are averaged over the mesh axis, so a data-parallel update normalises exactly like one device
    holding the whole minibatch (tests/train/test_multidevice.py).
    """
    if axis_name is None:
        return (adv - adv.mean()) / (adv.std() + 1e-8)
    mean = jax.lax.pmean(adv.mean(), axis_name)
    var = jax.lax.pmean(jnp.mean(jnp.square(adv - mean)), axis_name)
    return (adv - mean) / (jnp.sqrt(var) + 1e-8)


def value_loss(value, old_value, targets, vf_clip_eps: float) -> jax.Array:
    """Half the squared error of the value against its targets, PPO2-clipped unless 0.

    The clipped form takes the larger of the plain error and the error of the value held
    within ``vf_clip_eps`` of the rollout's ``old_value``, so one update moves a value at most
    that far toward its target. The range is in return units; ``vf_clip_eps == 0`` (a static
    choice) drops the clip. On HackMatrix the clip keeps the critic's pull on the shared trunk
    in check: without it the policy learns far slower (experiments/findings.md).
    """
    if vf_clip_eps == 0:
        return 0.5 * ((value - targets) ** 2).mean()
    v_clipped = old_value + jnp.clip(value - old_value, -vf_clip_eps, vf_clip_eps)
    return 0.5 * jnp.maximum((value - targets) ** 2, (v_clipped - targets) ** 2).mean()


def ppo_loss(
    params, apply_fn, batch: Transition, adv, targets, clip_eps, vf_coef, ent_coef,
    explore_floor=None, explore_coef=0.0, axis_name=None, vf_clip_eps=None,
    value_histogram=None,
):  # fmt: skip
    """Clipped PPO objective with clipped value loss and entropy over valid actions.

    ``vf_clip_eps`` is the value loss's clip range (None: ``clip_eps``; 0: unclipped).
    ``value_histogram`` (a static choice; ``network.value_histogram_of``): a histogram value
    head's support, whose value loss is the cross-entropy against the targets' histograms
    (``value_head.histogram_loss``, never clipped: its gradient is bounded as it is).
    ``explore_floor`` (None = off, a static choice) adds ``explore_coef * floor_penalty``.
    Every term is a mean over the minibatch, so under ``shard_map`` the mean of the devices'
    gradients is the gradient of the whole minibatch.
    """
    if value_histogram is None:
        logits, value = apply_fn(params, batch.obs)
    else:
        logits, value, value_logits = apply_fn(params, batch.obs, value_logits=True)
    pi = masked_categorical(logits, batch.obs.action_mask)
    log_prob = pi.log_prob(batch.action)
    log_ratio = log_prob - batch.log_prob
    ratio = jnp.exp(log_ratio)
    adv_n = normalize_advantages(adv, axis_name)
    pg_loss = -jnp.minimum(
        ratio * adv_n, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps) * adv_n
    ).mean()
    vf_clip = clip_eps if vf_clip_eps is None else vf_clip_eps
    if value_histogram is None:
        vf_loss = value_loss(value, batch.value, targets, vf_clip)
    else:
        vf_loss = histogram_loss(value_histogram, value_logits, targets)
    entropy = pi.entropy().mean()
    total = pg_loss + vf_coef * vf_loss - ent_coef * entropy
    floor_loss = jnp.float32(0.0)
    if explore_floor is not None:
        floor_loss = floor_penalty(logits, batch.obs.action_mask, explore_floor)
        total = total + explore_coef * floor_loss
    aux = {
        "floor_loss": floor_loss,
        "pg_loss": pg_loss,
        "vf_loss": vf_loss,
        "entropy": entropy,
        "approx_kl": ((ratio - 1.0) - log_ratio).mean(),
        "clip_frac": (jnp.abs(ratio - 1.0) > clip_eps).astype(jnp.float32).mean(),
        "ratio_max_dev": jnp.abs(ratio - 1.0).max(),
    }
    return total, aux


def minibatch_step(
    params, opt_state, mb, *, apply_fn, tx, cfg, ent_coef, floor, floor_weight,
    axis_name=None, loss=ppo_loss,
):  # fmt: skip
    """One gradient step of ``loss`` (``ppo_loss``'s signature) on a minibatch
    ``(transitions, advantages, targets)``, or ``(transitions, advantages, targets, extra)``
    when the actor returns an ``extra``: the loss then takes it as its keyword ``extra``.

    Under ``shard_map`` each device holds an equal slice of the minibatch; advantages are
    normalised over the whole minibatch and the gradients averaged over ``axis_name``, so the
    step equals the single-device step on the gathered minibatch (to float rounding).
    A floor of 0 (before ``explore_floor_start``) adds exactly nothing to the loss;
    ``floor_weight`` (``explore_weight``) scales the floor penalty.
    """

    def loss_fn(p, mb):
        t, a, tg, *extra = mb
        return loss(
            p, apply_fn, t, a, tg, cfg.clip_eps, cfg.vf_coef, ent_coef,
            floor, floor_weight if floor is not None else 0.0, axis_name, cfg.vf_clip_eps,
            value_histogram_of(cfg.network), **({"extra": extra[0]} if extra else {}),
        )  # fmt: skip

    return gradient_step(loss_fn, params, opt_state, mb, tx, axis_name)


def make_update(cfg, apply_fn, env, env_params, axis_name=None, *, actor=None, loss=None):
    """Build ``update(runner, sched) -> (runner, (episodes, metrics))``: one rollout + epochs.

    ``sched`` (a ``Schedule``) gives the run's length, so the compiled update serves any length;
    the optimizer is built from it too. ``actor`` (default ``sample_actor``) and ``loss``
    (default ``ppo_loss``, same signature) are the learner's injection points
    (``update.Learner``); an actor's ``extra`` (stacked over the rollout) reaches the loss as
    its keyword ``extra``, row by row with the transitions. ``metrics`` are PPO's own
    (``pg_loss``, ``vf_loss``, ``entropy``, ``approx_kl``, ``clip_frac``, ``floor_loss``,
    ``grad_norm``, ``explained_variance`` and this update's coefficients) and the loss's aux;
    with ``--value-target-tau`` GAE reads the target network's value (``value_target.py``),
    and ``target_value_gap`` logs its mean distance from the rollout's.
    """
    act = (actor or sample_actor)(cfg, apply_fn)
    loss = loss or ppo_loss
    shaping = make_shaping(cfg)
    has_target = cfg.value_target_tau > 0

    def update(runner: RunnerState, sched: Schedule):
        k_roll, k_epochs, k_next = jax.random.split(runner.key, 3)
        tx = make_optimizer(cfg, sched.num_updates)
        bonus_coef = program_bonus_coef(cfg, sched, runner.update)
        # the critic GAE reads: the params, or with --value-target-tau the target network's
        critic = target_params(runner.opt_state) if has_target else runner.params

        def value_fn(params, obs):  # V(final observation) where an episode was truncated
            del params
            return apply_fn(critic, obs)[1]

        # 1. rollout: num_steps steps of every env with the current params
        env_state, obs, acc, traj, extras, episodes = collect_rollout(
            act, value_fn, k_roll, runner.params, env, env_params, runner.env_state, runner.obs,
            runner.acc, cfg.num_steps, track=track_episodes, shaping=shaping(bonus_coef),
        )  # fmt: skip

        # 2. advantages: GAE over [T, N], bootstrapped from the value of the last observation
        _, last_value = apply_fn(critic, obs)
        gae_traj = traj
        if has_target:  # the target network's values of the rollout's states
            gae_traj = traj._replace(value=jax.vmap(lambda o: apply_fn(critic, o)[1])(traj.obs))
        adv, targets = compute_gae(
            gae_traj, last_value, cfg.gamma, cfg.gae_lambda, cfg.reward_scale
        )  # fmt: skip

        # 3. update_epochs passes, each a fresh permutation cut into num_minibatches steps
        ent_coef = entropy_coef(cfg, sched, runner.update)
        floor = explore_floor(cfg, sched, runner.update)
        weight = None if floor is None else explore_weight(cfg, sched, runner.update, floor)

        def step(params, opt_state, mb):
            return minibatch_step(
                params, opt_state, mb, apply_fn=apply_fn, tx=tx, cfg=cfg, ent_coef=ent_coef,
                floor=floor, floor_weight=weight, axis_name=axis_name, loss=loss,
            )  # fmt: skip

        # an actor's extra (None for PPO's own) rides with its rows to the loss
        batch = (traj, adv, targets) if extras is None else (traj, adv, targets, extras)
        params, opt_state, aux = run_epochs(
            k_epochs, runner.params, runner.opt_state, flatten_steps(batch), step,
            cfg.update_epochs, cfg.num_minibatches,
        )  # fmt: skip

        # 4. metrics: the mean loss terms (ratio_max_dev is a test probe), this update's
        # coefficients (0 for a term that is off), the episodes' sums over devices
        aux.pop("ratio_max_dev", None)
        metrics = {
            **mean_metrics(aux, axis_name),
            "explained_variance": explained_variance(traj.value, targets, axis_name),
            "learning_rate": update_learning_rate(cfg, sched, runner.update),
            "ent_coef": ent_coef,
            "program_bonus": bonus_coef,  # 0 when the bonus is off (validate refuses 0 -> 0)
            "explore_floor": jnp.float32(0.0) if floor is None else floor,
            "explore_weight": jnp.float32(0.0) if floor is None else weight,
        }
        if has_target:  # how far the target network's value trails the rollout's
            gap = jnp.abs(gae_traj.value - traj.value).mean()
            metrics["target_value_gap"] = pmean(gap, axis_name)
        runner = runner.advance(params, opt_state, env_state, obs, acc, k_next)
        return runner, (reduce_devices(episodes, axis_name), metrics)

    return update


LEARNER = Learner("ppo", make_update)
