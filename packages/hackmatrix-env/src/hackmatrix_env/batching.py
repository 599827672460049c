"""vmap-aware evaluation helpers (layer 1.5): pay under ``vmap`` only for the rows that need work.

Under ``vmap`` a ``lax.cond`` becomes a select (both branches computed for
every row) and a loop runs as many trips as the longest row needs. The game
has two such costs: rare procedures (auto-reset, stage generation, programs,
owed spawns) and the enemy loop, whose length is the number of enemies that
can act. Both helpers here are ``custom_vmap`` functions whose batching rule
regroups the rows so that work is spent only where it is needed, while every
row gets exactly the unbatched result (bit for bit; specs/env-shell.md §4).

* ``compute_where(pred, fn, args, default)``: ``where(pred, fn(*args), default)``.
* ``ragged_fori_loop(n, body, init, consts)``: ``fori_loop(0, n, body)`` per row.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

from hackmatrix_env.board import select_tree


def _broadcast_rows(axis_size: int, tree, batched):
    """Every leaf of ``tree`` with a leading batch axis (unbatched leaves broadcast)."""

    def full(x, b):
        return x if b else jnp.broadcast_to(x, (axis_size, *jnp.shape(x)))

    return jax.tree.map(full, tree, batched)


SPARSE_FRACTION = 1 / 64  # rows per chunk of compute_where, as a fraction of the batch


def compute_where(pred: jax.Array, fn, args: tuple, default):
    """``where(pred, fn(*args), default)`` leaf by leaf, computing ``fn`` only where needed.

    Unbatched, a ``lax.cond`` skips ``fn`` when ``pred`` is false. Under
    ``vmap`` (a ``custom_vmap`` rule) the rows with ``pred`` set are listed
    (``nonzero``) and processed in chunks of ``ceil(SPARSE_FRACTION * batch)``
    rows by a loop of ``ceil(count / chunk)`` trips (gather the chunk's rows,
    ``vmap(fn)``, scatter the results back), so the cost follows the number of
    needed rows: one trip of 64 rows at 4,096 envs for the usual handful.
    Every row gets exactly ``fn`` of its own arguments, so the result equals the
    dense ``where`` bit for bit (specs/env-shell.md §4), and ``fn`` is traced
    and compiled once. Used for auto-reset, stage generation, siphon, programs
    and owed spawns, which run on every step under ``vmap`` but are needed by
    few rows. **Deliberate exception to "no while_loop"**: the trip count is
    data-dependent (a fixed-length loop would pay for the worst case).
    """

    @custom_vmap
    def run(pred, args, default):
        return jax.lax.cond(pred, lambda: select_tree(pred, fn(*args), default), lambda: default)

    @run.def_vmap
    def run_batched(axis_size, in_batched, pred, args, default):
        pred_b, args_b, default_b = in_batched
        pred = _broadcast_rows(axis_size, pred, pred_b)
        args = _broadcast_rows(axis_size, args, args_b)
        default = _broadcast_rows(axis_size, default, default_b)
        chunk = max(1, math.ceil(axis_size * SPARSE_FRACTION))
        n_chunks = math.ceil(axis_size / chunk)
        count = jnp.sum(pred, dtype=jnp.int32)
        order = jnp.nonzero(pred, size=n_chunks * chunk, fill_value=0)[0]  # needed rows first

        def one_chunk(k, result):
            idx = jax.lax.dynamic_slice(order, (k * chunk,), (chunk,))
            live = k * chunk + jnp.arange(chunk) < count
            rows = jnp.where(live, idx, axis_size)  # axis_size: out of range, dropped
            out = jax.vmap(lambda a: fn(*a))(jax.tree.map(lambda x: x[idx], args))
            return jax.tree.map(lambda d, o: d.at[rows].set(o, mode="drop"), result, out)

        trips = (count + chunk - 1) // chunk
        result = jax.lax.fori_loop(0, trips, one_chunk, default)
        return result, jax.tree.map(lambda _: True, result)

    return run(pred, args, default)


RAGGED_CHUNKS = 16  # row groups of ragged_fori_loop under vmap


def ragged_fori_loop(n: jax.Array, body, init, consts=()):
    """``lax.fori_loop(0, n, lambda i, c: body(i, c, consts), init)``, cheap under ``vmap``.

    ``body(i, carry, consts) -> carry`` must take loop-invariant inputs through
    ``consts`` (a custom_vmap function cannot close over batched values).
    Unbatched this is a plain ``fori_loop``. Under ``vmap`` the rows are sorted
    by ``n`` (descending) and split into ``RAGGED_CHUNKS`` groups, each looping
    only to its own largest ``n`` (rows past their own ``n`` keep their carry), so
    the cost follows the sum of the trip counts instead of batch x max. The enemy
    phase needs this: a batch of 4,096 games averages about one enemy but always
    contains a game with a dozen.
    """

    def loop(n, init, consts):
        return jax.lax.fori_loop(0, n, lambda i, c: body(i, c, consts), init)

    @custom_vmap
    def run(n, init, consts):
        return loop(n, init, consts)

    @run.def_vmap
    def run_batched(axis_size, in_batched, n, init, consts):
        n_b, init_b, consts_b = in_batched
        n = _broadcast_rows(axis_size, n, n_b).astype(jnp.int32)
        init = _broadcast_rows(axis_size, init, init_b)
        consts = _broadcast_rows(axis_size, consts, consts_b)
        chunks = min(RAGGED_CHUNKS, axis_size)
        size = math.ceil(axis_size / chunks)
        pad = chunks * size - axis_size
        # Longest rows first; padding rows (index axis_size) loop 0 times and are dropped.
        order = jnp.argsort(-n, stable=True).astype(jnp.int32)
        order = jnp.concatenate([order, jnp.full((pad,), axis_size, jnp.int32)])
        n_sorted = jnp.concatenate([n, jnp.zeros((1,), jnp.int32)])[order]

        def take(x):
            x = jnp.concatenate([x, x[:1]])  # a dummy row for the padding
            return x[order].reshape(chunks, size, *x.shape[1:])

        init_groups, consts_groups = jax.tree.map(take, (init, consts))
        n_groups = n_sorted.reshape(chunks, size)

        def one_group(_, group):
            n_rows, init_rows, consts_rows = group
            n_max = n_rows[0]

            def step(i, carry):
                def row(n_row, c, k):
                    return jax.tree.map(
                        lambda new, old: jnp.where(i < n_row, new, old), body(i, c, k), c
                    )

                return jax.vmap(row)(n_rows, carry, consts_rows)

            return None, jax.lax.fori_loop(0, n_max, step, init_rows)

        _, out = jax.lax.scan(one_group, None, (n_groups, init_groups, consts_groups))
        out = jax.tree.map(lambda x: x.reshape(chunks * size, *x.shape[2:]), out)
        result = jax.tree.map(
            lambda x, o: x.at[order].set(o, mode="drop", unique_indices=True), init, out
        )
        return result, jax.tree.map(lambda _: True, result)

    return run(n, init, consts)
