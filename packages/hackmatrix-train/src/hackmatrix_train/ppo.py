"""PPO pieces: GAE under gymnax 1.0, the clipped loss, minibatch epochs, one jitted update.

All functions are pure and jit-clean. Data parallelism: when ``axis_name`` is set the update runs
inside ``shard_map`` and gradients / metrics are averaged over that mesh axis.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct
from hackmatrix_env.constants import NUM_ACTIONS, Action

from hackmatrix_train.config import has_program_bonus
from hackmatrix_train.network import masked_categorical
from hackmatrix_train.rollout import EpisodeAcc, Transition, collect_rollout, program_potential


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


# Action groups the exploration floor keeps alive: the siphon, and the 23 programs together.
EXPLORE_GROUPS = ((int(Action.SIPHON),), tuple(range(int(Action.PUSH), NUM_ACTIONS)))


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
):  # fmt: skip
    """Clipped PPO objective with clipped value loss and entropy over valid actions.

    ``vf_clip_eps`` is the value loss's clip range (None: ``clip_eps``; 0: unclipped).
    ``explore_floor`` (None = off, a static choice) adds ``explore_coef * floor_penalty``.
    Every term is a mean over the minibatch, so under ``shard_map`` the mean of the devices'
    gradients is the gradient of the whole minibatch.
    """
    logits, value = apply_fn(params, batch.obs)
    pi = masked_categorical(logits, batch.obs.action_mask)
    log_prob = pi.log_prob(batch.action)
    log_ratio = log_prob - batch.log_prob
    ratio = jnp.exp(log_ratio)
    adv_n = normalize_advantages(adv, axis_name)
    pg_loss = -jnp.minimum(
        ratio * adv_n, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps) * adv_n
    ).mean()
    vf_clip = clip_eps if vf_clip_eps is None else vf_clip_eps
    vf_loss = value_loss(value, batch.value, targets, vf_clip)
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


@struct.dataclass
class RunnerState:
    """Everything a run needs to continue bit-exactly (saved whole by ``checkpoint``)."""

    params: Any
    opt_state: Any
    env_state: Any  # leaves [N_local, ...]
    obs: Any  # last observation, leaves [N_local, ...]
    acc: EpisodeAcc
    key: jax.Array  # typed PRNG key (one per device inside shard_map)
    update: jax.Array  # int32[] updates done (env steps = update * batch_size)


def make_optimizer(cfg, num_updates) -> optax.GradientTransformation:
    """Adam with global-norm clipping and optional linear LR annealing to 0 over the run.

    ``num_updates`` is a Python int or a traced int32 (``Schedule.num_updates``): the update
    builds its optimizer from the schedule it is given, so the annealed rate follows a length
    fixed after compiling (``--time-budget``) like every other schedule. The rate falls per
    gradient step as ``optax.linear_schedule``'s does, and bit for bit once compiled
    (tests/train/test_time_budget.py): it multiplies by the length's reciprocal, as XLA can
    compile a division by a constant.
    """
    if cfg.anneal_lr:
        steps = num_updates * cfg.update_epochs * cfg.num_minibatches

        def lr(count):
            return cfg.lr * (1 - jnp.clip(count, 0, steps) * (1.0 / steps))

    else:
        lr = cfg.lr
    return optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), optax.adam(lr, eps=1e-5))


@struct.dataclass
class Schedule:
    """The run's length and the exploration floor's breakpoints, counted in updates.

    The jitted chunk takes it as data (int32 scalars), not as compiled-in constants, so one
    compilation serves any run length: ``--time-budget`` fixes the length after timing the
    compiled chunk. ``make_schedule`` builds it on the host with the same integer arithmetic
    for every run; the schedule functions below accept it with Python ints or traced arrays.
    """

    num_updates: Any
    floor_start: Any  # first update with the floor on
    floor_span: Any  # updates over which the floor anneals, from floor_start to the end
    floor_ramp: Any  # updates over which the penalty's weight rises after the switch-on


def make_schedule(cfg, num_updates: int) -> Schedule:
    """The ``Schedule`` of a run of ``num_updates`` updates under ``cfg``."""
    start = round(cfg.explore_floor_start * num_updates)
    return Schedule(
        num_updates=num_updates,
        floor_start=start,
        floor_span=max(num_updates - start, 1),
        floor_ramp=max(round(cfg.explore_floor_ramp * num_updates), 1),
    )


def learning_rate(cfg, sched: Schedule, update: jax.Array) -> jax.Array:
    if not cfg.anneal_lr:
        return jnp.float32(cfg.lr)
    return jnp.float32(cfg.lr) * jnp.maximum(1.0 - update / sched.num_updates, 0.0)


def _linear(start: float, end: float | None, num_updates, update: jax.Array) -> jax.Array:
    """``start`` annealed linearly to ``end`` over ``num_updates`` (constant if ``end`` is None)."""
    if end is None:
        return jnp.float32(start)
    frac = jnp.clip(update.astype(jnp.float32) / num_updates, 0.0, 1.0)
    return jnp.float32(start) + frac * jnp.float32(end - start)


def entropy_coef(cfg, sched: Schedule, update: jax.Array) -> jax.Array:
    """Linear from ``ent_coef`` to ``ent_coef_end`` over the run (constant if end is None)."""
    return _linear(cfg.ent_coef, cfg.ent_coef_end, sched.num_updates, update)


def program_bonus_coef(cfg, sched: Schedule, update: jax.Array) -> jax.Array:
    """The program bonus's coefficient this update: linear from ``program_bonus`` to
    ``program_bonus_end`` over the run (constant if end is None)."""
    return _linear(cfg.program_bonus, cfg.program_bonus_end, sched.num_updates, update)


def explore_floor(cfg, sched: Schedule, update: jax.Array) -> jax.Array | None:
    """The exploration floor this update: None when off (a static choice), else its value.

    The floor is 0 before ``explore_floor_start`` (a fraction of the run), then linear from
    ``explore_floor`` to ``explore_floor_end`` over the rest of the run (constant if end is None).
    """
    if cfg.explore_floor == 0:
        return None
    later = _linear(cfg.explore_floor, cfg.explore_floor_end, sched.floor_span,
                    update - sched.floor_start)  # fmt: skip
    return jnp.where(update >= sched.floor_start, later, jnp.float32(0.0))


def explore_weight(cfg, sched: Schedule, update: jax.Array, floor: jax.Array) -> jax.Array:
    """The floor penalty's weight this update: 0 while the floor is off, else ``explore_coef``,
    reached linearly over ``explore_floor_ramp`` (a fraction of the run) after the switch-on.

    A ramp of 0 is a step: the full weight from the first update with a floor.
    """
    on = floor > 0
    if cfg.explore_floor_ramp == 0:
        return cfg.explore_coef * on
    rise = jnp.clip(
        (update - sched.floor_start + 1).astype(jnp.float32) / sched.floor_ramp, 0.0, 1.0
    )
    return jnp.float32(cfg.explore_coef) * rise * on


def _pmean(x, axis_name):
    return x if axis_name is None else jax.lax.pmean(x, axis_name)


def _psum(x, axis_name):
    return x if axis_name is None else jax.lax.psum(x, axis_name)


def minibatch_step(
    params, opt_state, mb, *, apply_fn, tx, cfg, ent_coef, floor, floor_weight,
    axis_name=None,
):  # fmt: skip
    """One gradient step on a minibatch ``(transitions, advantages, targets)``.

    Under ``shard_map`` each device holds an equal slice of the minibatch; advantages are
    normalised over the whole minibatch and the gradients averaged over ``axis_name``, so the
    step equals the single-device step on the gathered minibatch (to float rounding).
    A floor of 0 (before ``explore_floor_start``) adds exactly nothing to the loss;
    ``floor_weight`` (``explore_weight``) scales the floor penalty.
    """
    t, a, tg = mb
    grads, aux = jax.grad(ppo_loss, has_aux=True)(
        params, apply_fn, t, a, tg, cfg.clip_eps, cfg.vf_coef, ent_coef,
        floor, floor_weight if floor is not None else 0.0, axis_name, cfg.vf_clip_eps,
    )  # fmt: skip
    grads = _pmean(grads, axis_name)
    # before clipping: above --max-grad-norm, the clip scales every term's step down together
    aux = {**aux, "grad_norm": optax.global_norm(grads)}
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, aux


def reduce_stats(stats: dict, axis_name=None) -> dict:
    """The rollout's episode sums over devices: each summed, the highest stage the max."""
    return {
        k: (
            jax.lax.pmax(v, axis_name) if axis_name and k == "ep_stage_max" else _psum(v, axis_name)
        )
        for k, v in stats.items()
    }


def loss_metrics(aux: dict, values, targets, axis_name=None) -> dict:
    """The epochs' mean loss terms and the critic's explained variance, averaged over devices.

    ``aux`` leaves are [update_epochs, num_minibatches]; ``ratio_max_dev`` is a test probe,
    not a metric.
    """
    var_y = jnp.var(targets)
    explained = jnp.where(var_y > 0, 1.0 - jnp.var(targets - values) / var_y, 0.0)
    losses = {k: _pmean(v.mean(), axis_name) for k, v in aux.items() if k != "ratio_max_dev"}
    losses["explained_variance"] = _pmean(explained, axis_name)
    return losses


def schedule_metrics(cfg, sched: Schedule, update, ent_coef, bonus_coef, floor, weight) -> dict:
    """This update's scheduled coefficients (0 for a term that is off)."""
    return {
        "lr": learning_rate(cfg, sched, update),
        "ent_coef": ent_coef,
        "program_bonus": bonus_coef,  # 0 when the bonus is off (validate refuses 0 -> 0)
        "explore_floor": jnp.float32(0.0) if floor is None else floor,
        "explore_weight": jnp.float32(0.0) if floor is None else weight,
    }


def make_update(cfg, apply_fn, env, env_params, axis_name=None):
    """Build ``update(runner, sched) -> (runner, raw_metrics)``: one rollout + PPO epochs.

    Read top to bottom like purejaxrl's ``make_train``: rollout, advantages, epochs of
    minibatches, metrics. ``sched`` (a ``Schedule``) gives the run's length, so the compiled
    update serves any length; the optimizer is built from it too (``make_optimizer``).
    ``raw_metrics`` are one update's sums, which ``trainer.Trainer`` adds up over a chunk.
    """
    skip_undo = cfg.program_terms_skip_undo
    potential = program_potential(cfg.program_potential, skip_undo)
    # the same count, kept at the end; its coefficient follows the bonus schedule
    programs_counted = program_potential(1.0, skip_undo) if has_program_bonus(cfg) else None

    def update(runner: RunnerState, sched: Schedule):
        k_roll, k_epochs, k_next = jax.random.split(runner.key, 3)
        tx = make_optimizer(cfg, sched.num_updates)
        bonus_coef = program_bonus_coef(cfg, sched, runner.update)

        def bonus(obs):
            return bonus_coef * programs_counted(obs)

        # 1. rollout: num_steps steps of every env with the current params
        env_state, obs, acc, traj, stats = collect_rollout(
            k_roll, apply_fn, runner.params, env, env_params, runner.env_state, runner.obs,
            runner.acc, cfg.num_steps, potential, cfg.gamma,
            None if programs_counted is None else bonus,
        )  # fmt: skip

        # 2. advantages: GAE over [T, N], bootstrapped from the value of the last observation
        _, last_value = apply_fn(runner.params, obs)
        adv, targets = compute_gae(traj, last_value, cfg.gamma, cfg.gae_lambda, cfg.reward_scale)

        # 3. update_epochs passes, each a fresh permutation cut into num_minibatches steps
        ent_coef = entropy_coef(cfg, sched, runner.update)
        floor = explore_floor(cfg, sched, runner.update)
        weight = None if floor is None else explore_weight(cfg, sched, runner.update, floor)
        batch = jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), (traj, adv, targets))
        batch_size = adv.size

        def update_minibatch(carry, rows):
            mb = jax.tree.map(lambda x: jnp.take(x, rows, axis=0), batch)
            params, opt_state, aux = minibatch_step(
                *carry, mb, apply_fn=apply_fn, tx=tx, cfg=cfg, ent_coef=ent_coef, floor=floor,
                floor_weight=weight, axis_name=axis_name,
            )  # fmt: skip
            return (params, opt_state), aux

        def update_epoch(carry, key):
            # shuffle indices only; each minibatch gathers its own rows (no shuffled copy of
            # the whole batch in memory)
            idx = jax.random.permutation(key, batch_size).reshape((cfg.num_minibatches, -1))
            return jax.lax.scan(update_minibatch, carry, idx)

        (params, opt_state), aux = jax.lax.scan(
            update_epoch,
            (runner.params, runner.opt_state),
            jax.random.split(k_epochs, cfg.update_epochs),
        )

        # 4. metrics: episode sums, mean losses, this update's coefficients
        losses = loss_metrics(aux, traj.value, targets, axis_name)
        raw = {**reduce_stats(stats, axis_name), **losses}
        raw.update(schedule_metrics(cfg, sched, runner.update, ent_coef, bonus_coef, floor, weight))
        runner = runner.replace(
            params=params,
            opt_state=opt_state,
            env_state=env_state,
            obs=obs,
            acc=acc,
            key=k_next,
            update=runner.update + 1,
        )
        return runner, raw

    return update
