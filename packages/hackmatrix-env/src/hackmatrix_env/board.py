"""Cell queries and pool operations shared by the rule modules (layer 2).

Pools (enemies, transmissions) are compact in spec list order (types.py): the
alive entries sit in slots 0..count-1, so "the first entity on a cell" is the
lowest matching slot (rules §2.7). Appends write at slot ``count``; removal
(``remove_slot``) is a stable compaction that also zeroes the freed slot, so a pool has exactly
one representation (dead slots are all zeros).

Positions are stored int8; every function here computes in int32.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from hackmatrix_env.constants import DIR_OFFSETS, GRID_SIZE, MAX_ENEMIES, MAX_TRANSMISSIONS, Content
from hackmatrix_env.types import Enemies, Grid, Transmissions

_ROWS = jnp.arange(GRID_SIZE, dtype=jnp.int32)


def select_tree(pred: jax.Array, on_true, on_false):
    """Leaf-wise ``where(pred, on_true, on_false)`` over two pytrees of equal structure."""
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


def fori_loop(n: jax.Array, body, init, consts=()):
    """``lax.fori_loop(0, n, lambda i, c: body(i, c, consts), init)``: the plain ``loop``.

    The signature of ``batching.ragged_fori_loop``, which ``game.enemy_phase`` passes
    instead (same result, cheaper under ``vmap``).
    """
    return lax.fori_loop(0, n, lambda i, c: body(i, c, consts), init)


def cond_where(pred: jax.Array, fn, args: tuple, default):
    """``fn(*args)`` if ``pred`` else ``default``: the plain ``sparse`` evaluation.

    The signature of ``batching.compute_where``, which ``game`` passes instead (same
    result; under ``vmap`` it computes ``fn`` only for the rows that need it).
    """
    return lax.cond(pred, lambda: select_tree(pred, fn(*args), default), lambda: default)


def any_true(x, axis=None) -> jax.Array:
    """``jnp.any(x, axis)``, computed as an int32 max.

    Same result, much less machine code: XLA:CPU emits an OR-reduction of a fused
    boolean expression as a very large kernel (``any(a & (b == 0))`` over
    [4096, 32]: 487 KB of LLVM IR, 0.39 s to compile, 61 us to run) where an int32
    max takes 11 KB, 0.04 s and 19-34 us (specs/env-shell.md §7.11). Used where
    the measured kernel was large; elsewhere ``jnp.any`` fused into neighbouring
    kernels runs faster (the mask's direction test: x1.35 slower as an int32 max).
    """
    return jnp.max(_truth(x).astype(jnp.int32), axis=axis) > 0


def _truth(x) -> jax.Array:
    """bool: ``x != 0`` (``x`` itself when boolean)."""
    x = jnp.asarray(x)
    return x if x.dtype == jnp.bool_ else x != 0


def in_bounds(pos: jax.Array) -> jax.Array:
    """bool[...]: ``pos`` (int[..., 2], (row, col)) lies on the 6x6 board (rules §1.1)."""
    pos = pos.astype(jnp.int32)
    return jnp.all((pos >= 0) & (pos < GRID_SIZE), axis=-1)


def neighbour(pos: jax.Array, d: jax.Array) -> jax.Array:
    """int32[2]: the cell next to ``pos`` in direction ``d`` (may be off the board; rules §1.2)."""
    return pos.astype(jnp.int32) + jnp.asarray(DIR_OFFSETS, jnp.int32)[d]


def cell_map(pos: jax.Array, valid: jax.Array | bool = True) -> jax.Array:
    """bool[6,6]: one-hot map of the cell ``pos`` (all False if off the board or not ``valid``)."""
    pos = pos.astype(jnp.int32)
    hit = (_ROWS[:, None] == pos[0]) & (_ROWS[None, :] == pos[1])
    return hit & valid


def at_cell(cell_values: jax.Array, pos: jax.Array, fill=0) -> jax.Array:
    """``cell_values[row, col]`` at ``pos``, or ``fill`` when ``pos`` is off the board."""
    pos = pos.astype(jnp.int32)
    ok = in_bounds(pos)
    p = jnp.clip(pos, 0, GRID_SIZE - 1)
    return jnp.where(ok, cell_values[p[0], p[1]], jnp.asarray(fill, cell_values.dtype))


def block_map(grid: Grid) -> jax.Array:
    """bool[6,6]: the cell holds a block, siphoned or not (rules §2.4)."""
    return grid.content == Content.BLOCK


def _pool_maps(pos: jax.Array, alive: jax.Array) -> jax.Array:
    """bool[N,6,6]: per-slot one-hot cell maps of a pool (dead slots all False)."""
    pos = pos.astype(jnp.int32)
    rows = pos[:, 0, None, None] == _ROWS[None, :, None]
    cols = pos[:, 1, None, None] == _ROWS[None, None, :]
    return rows & cols & alive[:, None, None]


def enemy_occupancy_map(enemies: Enemies) -> jax.Array:
    """bool[6,6]: at least one alive enemy stands on the cell."""
    return jnp.any(_pool_maps(enemies.pos, enemies.alive), axis=0)


def transmission_map(transmissions: Transmissions) -> jax.Array:
    """bool[6,6]: at least one alive transmission is on the cell."""
    return jnp.any(_pool_maps(transmissions.pos, transmissions.alive), axis=0)


def _first_at(pos: jax.Array, alive: jax.Array, cell: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(found, earliest alive slot on ``cell`` or 0): one min over the slots, not any + argmax."""
    n = pos.shape[0]
    match = alive & jnp.all(pos.astype(jnp.int32) == cell.astype(jnp.int32), axis=-1)
    first = jnp.min(jnp.where(match, jnp.arange(n, dtype=jnp.int32), n))
    return first < n, jnp.where(first < n, first, 0)


def first_enemy_at(enemies: Enemies, cell: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(found bool[], idx int32[]): the earliest enemy in list order on ``cell`` (rules §2.7).

    ``idx`` is 0 when nothing is found.
    """
    return _first_at(enemies.pos, enemies.alive, cell)


def first_transmission_at(
    transmissions: Transmissions, cell: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """(found bool[], idx int32[]): the earliest transmission in list order on ``cell``."""
    return _first_at(transmissions.pos, transmissions.alive, cell)


def num_alive(alive: jax.Array) -> jax.Array:
    """int32[]: number of alive entries of a pool (= its length in list order)."""
    return jnp.sum(alive, dtype=jnp.int32)


def _write_slot(pool, slot: jax.Array, values: dict, ok: jax.Array):
    """Write ``values`` (field -> value) into ``slot`` of ``pool`` where ``ok``."""
    n = pool.alive.shape[0]
    hit = (jnp.arange(n) == slot) & ok  # bool[N]
    updates = {}
    for name, value in values.items():
        field = getattr(pool, name)
        v = jnp.asarray(value).astype(field.dtype)
        h = hit.reshape(hit.shape + (1,) * (field.ndim - 1))
        updates[name] = jnp.where(h, v, field)
    return pool.replace(**updates)


def append_enemy(
    enemies: Enemies,
    *,
    kind,
    pos,
    hp,
    disabled=0,
    stunned=False,
    last_known=None,
    from_task=False,
    from_siphon=False,
    valid=True,
) -> tuple[Enemies, jax.Array]:
    """Append one enemy at the end of the list (rules §2.7) where ``valid``.

    Returns (enemies, overflowed): ``overflowed`` is True when ``valid`` but the
    pool was full; the enemy is then dropped (see specs/env-core.md).
    """
    count = num_alive(enemies.alive)
    valid = jnp.asarray(valid, jnp.bool_)
    fits = count < MAX_ENEMIES
    values = dict(
        kind=kind,
        pos=pos,
        hp=hp,
        disabled=disabled,
        stunned=stunned,
        last_known=pos if last_known is None else last_known,
        from_task=from_task,
        from_siphon=from_siphon,
        alive=True,
    )
    return _write_slot(enemies, count, values, valid & fits), valid & ~fits


def append_transmission(
    transmissions: Transmissions,
    *,
    pos,
    countdown,
    kind,
    from_task=False,
    from_siphon=False,
    valid=True,
) -> tuple[Transmissions, jax.Array]:
    """Append one transmission at the end of the list (rules §2.7) where ``valid``.

    Returns (transmissions, overflowed), as ``append_enemy``.
    """
    count = num_alive(transmissions.alive)
    valid = jnp.asarray(valid, jnp.bool_)
    fits = count < MAX_TRANSMISSIONS
    values = dict(
        pos=pos,
        countdown=countdown,
        kind=kind,
        from_task=from_task,
        from_siphon=from_siphon,
        alive=True,
    )
    return _write_slot(transmissions, count, values, valid & fits), valid & ~fits


def remove_slot(pool, idx: jax.Array, remove: jax.Array):
    """``pool`` without entry ``idx`` where ``remove`` (list order kept, freed slot zeroed).

    For a pool in canonical form (alive entries first, dead slots zero) this is
    the stable compaction of rules §2.7 after killing one entry, without a prefix sum
    or a gather: the entries after ``idx`` shift down by one.
    """
    n = pool.alive.shape[0]
    shift = remove & (jnp.arange(n) >= idx)  # bool[N]

    def f(x):
        after = jnp.concatenate([x[1:], jnp.zeros_like(x[:1])])
        s = shift.reshape(shift.shape + (1,) * (x.ndim - 1))
        return jnp.where(s, after, x)

    return jax.tree.map(f, pool)
