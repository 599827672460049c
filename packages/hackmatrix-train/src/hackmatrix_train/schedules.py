"""The optimizer and every coefficient schedule of a run, one formula each (specs/train.md §5-6).

The run's length is data (``Schedule``, int32 scalars in the jitted chunk), not a compiled-in
constant, so one compilation serves any run length: ``--time-budget`` fixes the length after
timing the compiled chunk. Each schedule is a function of ``(cfg, sched, update)`` that accepts
Python ints or traced arrays; the learning rate is a function of the optimizer's step count,
logged at the first gradient step of each update.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from hackmatrix_train.value_target import polyak_params


@struct.dataclass
class Schedule:
    """The run's length and the exploration floor's breakpoints, counted in updates.

    ``make_schedule`` builds it on the host with the same integer arithmetic for every run.
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


def gradient_steps(cfg, num_updates):
    """The optimizer steps of ``num_updates`` updates: epochs x minibatches each."""
    return num_updates * cfg.update_epochs * cfg.num_minibatches


def learning_rate(cfg, num_updates):
    """``count -> lr``: the rate of the optimizer's step ``count``, or the constant ``cfg.lr``.

    With ``cfg.anneal_lr`` it falls linearly to 0 over the run's gradient steps, as
    ``optax.linear_schedule``'s does and bit for bit once compiled
    (tests/train/test_time_budget.py): it multiplies by the length's reciprocal, as XLA can
    compile a division by a constant. ``num_updates`` is a Python int or a traced int32
    (``Schedule.num_updates``), so the annealed rate follows a length fixed after compiling.
    """
    if not cfg.anneal_lr:
        return cfg.lr
    steps = gradient_steps(cfg, num_updates)

    def lr(count):
        return cfg.lr * (1 - jnp.clip(count, 0, steps) * (1.0 / steps))

    return lr


def make_optimizer(cfg, num_updates) -> optax.GradientTransformation:
    """Adam with global-norm clipping at ``learning_rate``'s rate; with
    ``--value-target-tau`` the chain also keeps the target network's params
    (``value_target.polyak_params``)."""
    lr = learning_rate(cfg, num_updates)
    parts = [optax.clip_by_global_norm(cfg.max_grad_norm), optax.adam(lr, eps=1e-5)]
    if cfg.value_target_tau > 0:
        parts.append(polyak_params(cfg.value_target_tau))
    return optax.chain(*parts)


def update_learning_rate(cfg, sched: Schedule, update: jax.Array) -> jax.Array:
    """The learning rate of the first gradient step of update ``update`` (the logged one)."""
    lr = learning_rate(cfg, sched.num_updates)
    if not callable(lr):
        return jnp.float32(lr)
    return jnp.float32(lr(gradient_steps(cfg, update)))


def linear(start: float, end: float | None, num_updates, update: jax.Array) -> jax.Array:
    """``start`` annealed linearly to ``end`` over ``num_updates`` (constant if ``end`` is None)."""
    if end is None:
        return jnp.float32(start)
    frac = jnp.clip(update.astype(jnp.float32) / num_updates, 0.0, 1.0)
    return jnp.float32(start) + frac * jnp.float32(end - start)


def entropy_coef(cfg, sched: Schedule, update: jax.Array) -> jax.Array:
    """Linear from ``ent_coef`` to ``ent_coef_end`` over the run (constant if end is None)."""
    return linear(cfg.ent_coef, cfg.ent_coef_end, sched.num_updates, update)


def program_bonus_coef(cfg, sched: Schedule, update: jax.Array) -> jax.Array:
    """The program bonus's coefficient this update: linear from ``program_bonus`` to
    ``program_bonus_end`` over the run (constant if end is None)."""
    return linear(cfg.program_bonus, cfg.program_bonus_end, sched.num_updates, update)


def explore_floor(cfg, sched: Schedule, update: jax.Array) -> jax.Array | None:
    """The exploration floor this update: None when off (a static choice), else its value.

    The floor is 0 before ``explore_floor_start`` (a fraction of the run), then linear from
    ``explore_floor`` to ``explore_floor_end`` over the rest of the run (constant if end is None).
    """
    if cfg.explore_floor == 0:
        return None
    later = linear(cfg.explore_floor, cfg.explore_floor_end, sched.floor_span,
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
