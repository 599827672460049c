"""board.py: cell maps, first-in-list-order lookups, pool append and compaction."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from hackmatrix_env import board
from hackmatrix_env.constants import MAX_ENEMIES, MAX_TRANSMISSIONS, Content, EnemyKind
from hackmatrix_env.types import blank_game
from hypothesis import given, settings
from hypothesis import strategies as st


def _enemies(entries):
    """entries: list of (kind, (row, col)) appended in order."""
    e = blank_game().enemies
    for kind, pos in entries:
        e, over = board.append_enemy(e, kind=kind, pos=jnp.array(pos), hp=2)
        assert not bool(over)
    return e


def enemy_counts(enemies) -> np.ndarray:
    """int[6,6]: alive enemies per cell, counted on the host (the reference for the maps)."""
    counts = np.zeros((6, 6), int)
    for (r, c), alive in zip(np.asarray(enemies.pos), np.asarray(enemies.alive), strict=True):
        counts[r, c] += int(alive)
    return counts


def compact(pool):
    """The reference stable compaction (rules §2.7): the alive entries in list order, then
    the freed slots, zeroed. ``remove_slot`` is checked against it."""
    host = jax.device_get(pool)
    alive = np.asarray(host.alive)
    order = np.concatenate([np.flatnonzero(alive), np.flatnonzero(~alive)])

    def gather(x):
        y = np.asarray(x)[order].copy()
        y[alive.sum() :] = 0
        return y

    return jax.tree.map(gather, host)


def test_in_bounds_and_neighbour():
    assert bool(board.in_bounds(jnp.array([0, 5])))
    assert not bool(board.in_bounds(jnp.array([6, 0])))
    assert not bool(board.in_bounds(jnp.array([0, -1])))
    # UP is row + 1 (rules §1.2)
    np.testing.assert_array_equal(board.neighbour(jnp.array([2, 3]), 0), [3, 3])
    np.testing.assert_array_equal(board.neighbour(jnp.array([2, 3]), 1), [1, 3])
    np.testing.assert_array_equal(board.neighbour(jnp.array([2, 3]), 2), [2, 2])
    np.testing.assert_array_equal(board.neighbour(jnp.array([2, 3]), 3), [2, 4])


def test_block_map_counts_siphoned_blocks():
    g = blank_game().grid
    content = g.content.at[1, 2].set(Content.BLOCK).at[3, 3].set(Content.EXIT)
    g = g.replace(content=content, siphoned=g.siphoned.at[1, 2].set(True))
    m = np.asarray(board.block_map(g))
    assert m[1, 2] and m.sum() == 1


def test_first_enemy_is_lowest_slot_on_cell():
    e = _enemies(
        [(EnemyKind.VIRUS, (1, 1)), (EnemyKind.DAEMON, (2, 2)), (EnemyKind.GLITCH, (2, 2))]
    )
    found, idx = board.first_enemy_at(e, jnp.array([2, 2]))
    assert bool(found) and int(idx) == 1
    found, _ = board.first_enemy_at(e, jnp.array([0, 0]))
    assert not bool(found)
    counts = enemy_counts(e)
    assert counts[2, 2] == 2 and counts[1, 1] == 1 and counts.sum() == 3
    np.testing.assert_array_equal(np.asarray(board.enemy_occupancy_map(e)), counts > 0)


def test_remove_slot_keeps_order_and_zeroes_tail():
    e = _enemies([(k % 4, (k % 6, k // 6)) for k in range(6)])
    e = board.remove_slot(e, jnp.int32(1), jnp.bool_(True))
    e = board.remove_slot(e, jnp.int32(3), jnp.bool_(True))  # the 5th entry, after the shift
    np.testing.assert_array_equal(np.asarray(e.kind[:4]), [0, 2, 3, 1])
    assert np.asarray(e.alive).sum() == 4 and bool(jnp.all(e.alive[:4]))
    assert int(jnp.abs(e.pos[4:].astype(jnp.int32)).sum()) == 0
    assert int(jnp.abs(e.kind[4:].astype(jnp.int32)).sum()) == 0


def test_append_overflow_reports_and_drops():
    e = blank_game().enemies.replace(alive=jnp.ones(MAX_ENEMIES, jnp.bool_))
    e2, over = board.append_enemy(e, kind=1, pos=jnp.array([3, 3]), hp=3)
    assert bool(over)
    jax.tree.map(np.testing.assert_array_equal, e, e2)
    t = blank_game().transmissions
    t, over = board.append_transmission(t, pos=jnp.array([1, 4]), countdown=1, kind=2)
    assert not bool(over) and int(board.num_alive(t.alive)) == 1
    assert t.countdown.dtype == jnp.int8 and t.pos.dtype == jnp.int8
    t_full = t.replace(alive=jnp.ones(MAX_TRANSMISSIONS, jnp.bool_))
    _, over = board.append_transmission(t_full, pos=jnp.array([1, 4]), countdown=1, kind=2)
    assert bool(over)
    _, over = board.append_transmission(
        t_full, pos=jnp.array([1, 4]), countdown=1, kind=2, valid=False
    )
    assert not bool(over)


_remove = jax.jit(board.remove_slot)


@settings(deadline=None, max_examples=30)
@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=MAX_ENEMIES),
    st.integers(0, MAX_ENEMIES - 1),
    st.booleans(),
)
def test_remove_slot_equals_kill_and_compact(items, idx, remove):
    """Removing one alive slot by shifting equals killing it and compacting (every field)."""
    e = _enemies([(i % 4, (r, c)) for i, (r, c) in enumerate(items)])
    e = e.replace(hp=jnp.arange(MAX_ENEMIES, dtype=jnp.int8) % 3 + 1)  # distinguishable slots
    e = compact(e)  # canonical form: dead slots zero
    idx = idx % len(items)
    got = _remove(e, jnp.int32(idx), jnp.bool_(remove))
    want = compact(e.replace(alive=e.alive & ~((jnp.arange(MAX_ENEMIES) == idx) & remove)))
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_array_equal(a, b)
    assert int(got.alive.sum()) == len(items) - int(remove)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.booleans(), min_size=1, max_size=96),
    st.integers(1, 3),
    st.sampled_from([None, 0, 1, -1]),
    st.sampled_from(["bool", "int8", "int32"]),
)
def test_any_true_equals_jnp_any(bits, rows, axis, dtype):
    """The int32 max form gives jnp.any, batched or not, for any input dtype."""
    x = np.resize(np.asarray(bits), (rows, len(bits))).astype(dtype)
    x[rows - 1] = 0 if rows > 1 else x[rows - 1]  # a row of zeros when there are several
    if dtype != "bool":
        x = x * np.where(np.arange(x.size).reshape(x.shape) % 3 == 0, -5, 7).astype(dtype)
    ax = None if axis is None else min(axis, x.ndim - 1) if axis >= 0 else axis
    got = np.asarray(jax.jit(lambda v: board.any_true(v, axis=ax))(x))
    np.testing.assert_array_equal(got, np.any(x, axis=ax))
    batched = np.asarray(jax.vmap(board.any_true)(x))
    np.testing.assert_array_equal(batched, np.any(x, axis=1))
