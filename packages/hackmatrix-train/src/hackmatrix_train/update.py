"""What every learner's update shares: the runner state, epochs of minibatch gradient steps,
the cross-device means and the metric reductions (specs/train.md §1).

A learner (``Learner``) builds ``update(runner, sched) -> (runner, (episodes, metrics))``: one
rollout, its targets, ``update_epochs`` passes over the batch in ``num_minibatches`` gradient
steps (``run_epochs``), and two dicts of float32 scalars: ``episodes``, the rollout's sums over
completed episodes (``stats``), and ``metrics``, the learner's own figures for this update,
logged as ``train/<name>`` averaged over a chunk. Data parallelism: with ``axis_name`` set the
update runs inside ``shard_map``; gradients and metrics are averaged over that mesh axis.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct


@struct.dataclass
class RunnerState:
    """Everything a run needs to continue bit-exactly (saved whole by ``checkpoint``)."""

    params: Any
    opt_state: Any
    env_state: Any  # leaves [N_local, ...]
    obs: Any  # last observation, leaves [N_local, ...]
    acc: Any  # the episodes in progress (stats.EpisodeAcc), leaves [N_local, ...]
    key: jax.Array  # typed PRNG key (one per device inside shard_map)
    update: jax.Array  # int32[] updates done (env steps = update * batch_size)

    def advance(self, params, opt_state, env_state, obs, acc, key) -> RunnerState:
        """The state after one more update: its params and optimizer state, the envs where
        its rollout ended, and the key of the next update."""
        return self.replace(
            params=params, opt_state=opt_state, env_state=env_state, obs=obs, acc=acc, key=key,
            update=self.update + 1,
        )  # fmt: skip


class Learner(NamedTuple):
    """A learning algorithm as the trainer runs it (``trainer.make_train(learner=...)``).

    ``make_update(cfg, apply_fn, env, env_params, axis_name=None, *, actor=None, loss=None)``
    returns ``update(runner, sched) -> (runner, (episodes, metrics))``. ``actor`` (a factory
    ``(cfg, apply_fn) -> act``, ``act(params, obs, env_state, key) -> (action, log_prob, value,
    extra)``) and ``loss`` (the learner's loss, with the learner's own signature) replace the
    learner's defaults; None keeps them.

    ``frozen`` (None: none): ``frozen(cfg, env, env_params) -> pytree``, arrays the update
    reads and never trains (a frozen teacher's params). The trainer loads them once and passes
    them to its compiled chunk as an argument, and ``make_update`` then takes them as its
    keyword ``frozen`` (traced). Closed over instead, they would be constants of the program:
    each new value (each round of ``--guide-rounds``) a program of its own, compiled again
    and never found in the persistent cache.
    """

    name: str
    make_update: Callable[..., Callable]
    frozen: Callable[..., Any] | None = None


def pmean(x, axis_name=None):
    """The mean of ``x`` (any pytree) over the mesh axis ``axis_name``; ``x`` itself without."""
    return x if axis_name is None else jax.lax.pmean(x, axis_name)


def psum(x, axis_name=None):
    """The sum of ``x`` (any pytree) over the mesh axis ``axis_name``; ``x`` itself without."""
    return x if axis_name is None else jax.lax.psum(x, axis_name)


def is_max_metric(name: str) -> bool:
    """A sum named ``*_max`` is a maximum: over steps, devices and updates it takes the max."""
    return name.endswith("_max")


def reduce_steps(stats: dict) -> dict:
    """A rollout's per-step sums [T] reduced over the steps (``*_max``: the max)."""
    return {k: v.max(0) if is_max_metric(k) else v.sum(0) for k, v in stats.items()}


def reduce_devices(stats: dict, axis_name=None) -> dict:
    """One device's episode sums reduced over the mesh axis (``*_max``: the max)."""
    if axis_name is None:
        return stats
    return {
        k: jax.lax.pmax(v, axis_name) if is_max_metric(k) else jax.lax.psum(v, axis_name)
        for k, v in stats.items()
    }


def add_metrics(sums: dict, raw: dict) -> dict:
    """One update's metrics added to the chunk's sums (``*_max``: the max)."""
    return {k: jnp.maximum(sums[k], v) if is_max_metric(k) else sums[k] + v for k, v in raw.items()}


def flatten_steps(tree):
    """Leaves [T, N, ...] -> [T * N, ...]: a rollout's steps as one batch of rows."""
    return jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), tree)


def gradient_step(loss_fn, params, opt_state, minibatch, tx, axis_name=None):
    """One optimizer step on ``loss_fn(params, minibatch) -> (loss, aux)``; ``aux`` gains
    ``grad_norm``, the gradient's global norm before ``tx`` clips it.

    Under ``shard_map`` each device holds an equal slice of the minibatch; the gradients are
    averaged over ``axis_name``, so the step equals the single-device step on the gathered
    minibatch when the loss is a mean over its rows.
    """
    grads, aux = jax.grad(loss_fn, has_aux=True)(params, minibatch)
    grads = pmean(grads, axis_name)
    # before clipping: above --max-grad-norm, the clip scales every term's step down together
    aux = {**aux, "grad_norm": optax.global_norm(grads)}
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, aux


def run_epochs(key, params, opt_state, batch, step, num_epochs: int, num_minibatches: int):
    """``num_epochs`` passes over ``batch`` (leaves [B, ...]), each a fresh permutation of its
    rows cut into ``num_minibatches`` calls of ``step(params, opt_state, minibatch) ->
    (params, opt_state, aux)``. Returns ``(params, opt_state, aux)``, aux leaves
    [num_epochs, num_minibatches].

    Only the indices are shuffled; each minibatch gathers its own rows (no shuffled copy of the
    whole batch in memory).
    """
    batch_size = jax.tree.leaves(batch)[0].shape[0]

    def minibatch(carry, rows):
        mb = jax.tree.map(lambda x: jnp.take(x, rows, axis=0), batch)
        params, opt_state, aux = step(*carry, mb)
        return (params, opt_state), aux

    def epoch(carry, k):
        idx = jax.random.permutation(k, batch_size).reshape((num_minibatches, -1))
        return jax.lax.scan(minibatch, carry, idx)

    (params, opt_state), aux = jax.lax.scan(
        epoch, (params, opt_state), jax.random.split(key, num_epochs)
    )
    return params, opt_state, aux


def mean_metrics(aux: dict, axis_name=None) -> dict:
    """The epochs' mean of each loss term (leaves [epochs, minibatches]), over devices too."""
    return {k: pmean(v.mean(), axis_name) for k, v in aux.items()}


def explained_variance(values, targets, axis_name=None) -> jax.Array:
    """``1 - Var(targets - values) / Var(targets)`` (0 when the targets do not vary), averaged
    over devices."""
    var_y = jnp.var(targets)
    explained = jnp.where(var_y > 0, 1.0 - jnp.var(targets - values) / var_y, 0.0)
    return pmean(explained, axis_name)
