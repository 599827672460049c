"""``batching``: the sparse helpers equal their dense definitions row for row."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_env import batching
from hypothesis import given, settings
from hypothesis import strategies as st


def _trees_equal(a, b) -> bool:
    return all(
        np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


def test_compute_where_equals_dense_select():
    def fn(x, y):
        return {"a": x * 3 + y, "b": (x > 2) & (y > 0)}

    batched = jax.jit(jax.vmap(lambda p, x, y, d: batching.compute_where(p, fn, (x, y), d)))
    x = jnp.arange(16, dtype=jnp.int32)
    y = jnp.arange(16, dtype=jnp.int32) % 3
    default = {"a": -jnp.ones(16, jnp.int32), "b": jnp.zeros(16, bool)}
    for pred in (
        jnp.zeros(16, bool),
        jnp.arange(16) % 7 == 3,  # 2 rows: one chunk of 2
        jnp.arange(16) % 2 == 0,  # 8 rows: four chunks
        jnp.ones(16, bool),
    ):
        got = batched(pred, x, y, default)
        want = jax.vmap(
            lambda p, x, y, d: jax.tree.map(lambda u, v: jnp.where(p, u, v), fn(x, y), d)
        )(pred, x, y, default)
        assert all(
            np.array_equal(a, b)
            for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True)
        )
    # unbatched: a plain conditional
    single = jax.jit(
        lambda p: batching.compute_where(
            p, fn, (jnp.int32(4), jnp.int32(1)), {"a": jnp.int32(0), "b": jnp.bool_(False)}
        )
    )
    assert int(single(True)["a"]) == 13 and int(single(False)["a"]) == 0


# --------------------------------------------------------------------------- ragged_fori_loop


def _body(i, carry, consts):
    """A loop body whose result depends on the trip index, the carry and both consts."""
    acc, hist = carry
    scale, table = consts
    acc = acc * 3 + scale * (i + 1) + table[i % table.shape[0]]
    hist = hist.at[i % hist.shape[0]].add(acc)
    return acc, hist


def _reference(n, init, consts):
    return jax.lax.fori_loop(0, n, lambda i, c: _body(i, c, consts), init)


_ragged = jax.jit(jax.vmap(lambda n, c, k: batching.ragged_fori_loop(n, _body, c, k)))
_dense = jax.jit(jax.vmap(_reference))


@settings(max_examples=25, deadline=None)
@given(
    trips=st.lists(st.integers(0, 12), min_size=1, max_size=40),
    seed=st.integers(0, 2**16),
)
def test_ragged_loop_equals_per_row_fori_loop(trips, seed):
    """Every row gets fori_loop(0, n_row) exactly: any batch size, chunking, order of n."""
    b = len(trips)
    rng = np.random.default_rng(seed)
    n = jnp.asarray(trips, jnp.int32)
    init = (
        jnp.asarray(rng.integers(-5, 5, b), jnp.int32),
        jnp.asarray(rng.integers(0, 3, (b, 4)), jnp.int32),
    )
    consts = (
        jnp.asarray(rng.integers(1, 4, b), jnp.int32),
        jnp.asarray(rng.integers(0, 9, (b, 5)), jnp.int32),
    )
    assert _trees_equal(_ragged(n, init, consts), _dense(n, init, consts))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-3, 70_000), min_size=1, max_size=300))
def test_longest_first_is_the_stable_descending_argsort(trips):
    """The packed-key sort orders rows as argsort(-n, stable=True), up to n = 0xFFFF.

    Longer rows (clipped to 0xFFFF) may only trade places among themselves.
    """
    n = jnp.asarray(trips, jnp.int32)
    got = np.asarray(jax.jit(batching._longest_first)(n))
    clipped = np.clip(np.asarray(trips), None, 0xFFFF)
    assert sorted(got.tolist()) == list(range(len(trips)))  # a permutation
    assert np.array_equal(got, np.argsort(-np.maximum(clipped, 0), kind="stable"))


def test_ragged_loop_unbatched_inputs_and_nested_vmap():
    """Unbatched n / consts are broadcast; a vmap of a vmap (parity's key search) works."""
    init = (jnp.arange(6, dtype=jnp.int32), jnp.zeros((6, 4), jnp.int32))
    consts = (jnp.int32(2), jnp.arange(5, dtype=jnp.int32))
    got = jax.jit(jax.vmap(lambda c: batching.ragged_fori_loop(jnp.int32(7), _body, c, consts)))(
        init
    )
    want = jax.vmap(lambda c: _reference(7, c, consts))(init)
    assert _trees_equal(got, want)

    n2 = jnp.arange(12, dtype=jnp.int32).reshape(3, 4) % 5
    init2 = jax.tree.map(lambda x: jnp.stack([x[:4]] * 3), init)
    nested = jax.jit(
        jax.vmap(jax.vmap(lambda n, c: batching.ragged_fori_loop(n, _body, c, consts)))
    )(n2, init2)
    ref = jax.vmap(jax.vmap(lambda n, c: _reference(n, c, consts)))(n2, init2)
    assert _trees_equal(nested, ref)


@pytest.mark.parametrize("n", [0, 3])
def test_ragged_loop_unbatched_is_fori_loop(n):
    init = (jnp.int32(1), jnp.zeros(4, jnp.int32))
    consts = (jnp.int32(1), jnp.arange(5, dtype=jnp.int32))
    got = jax.jit(lambda n: batching.ragged_fori_loop(n, _body, init, consts))(jnp.int32(n))
    assert _trees_equal(got, _reference(n, init, consts))
    assert n == 0 or int(got[0]) != 1  # the body really ran


def _mixed_body(i, carry, consts):
    """A body over every carry dtype the word packing handles, with wrap-arounds and sign bits."""
    small, flags, word, wide, mid = carry
    (step,) = consts
    small = small * 3 + step.astype(jnp.int8)  # int8 wraps past 127
    flags = flags ^ (small[:2] < 0)
    word = word * jnp.uint32(2654435761) + jnp.uint32(i)  # uint32 with the high bit set
    wide = wide + word.astype(jnp.int32)
    mid = (mid * 7 + 1).astype(jnp.int16)
    return small, flags, word, wide, mid


@settings(max_examples=15, deadline=None)
@given(
    trips=st.lists(st.integers(0, 9), min_size=1, max_size=24),
    seed=st.integers(0, 2**16),
)
def test_ragged_loop_carry_dtypes_are_exact(trips, seed):
    """Carries of every small integer dtype and bool (wrap-arounds, sign bits) stay exact."""
    b = len(trips)
    rng = np.random.default_rng(seed)
    init = (
        jnp.asarray(rng.integers(-128, 128, (b, 3)), jnp.int8),
        jnp.asarray(rng.integers(0, 2, (b, 2)), jnp.bool_),
        jnp.asarray(rng.integers(0, 2**32, b, dtype=np.uint64), jnp.uint32),
        jnp.asarray(rng.integers(-(2**31), 2**31, b), jnp.int32),
        jnp.asarray(rng.integers(-(2**15), 2**15, (b, 2, 2)), jnp.int16),
    )
    consts = (jnp.asarray(rng.integers(-100, 100, b), jnp.int32),)
    n = jnp.asarray(trips, jnp.int32)
    got = jax.jit(jax.vmap(lambda n, c, k: batching.ragged_fori_loop(n, _mixed_body, c, k)))(
        n, init, consts
    )
    want = jax.jit(
        jax.vmap(lambda n, c, k: jax.lax.fori_loop(0, n, lambda i, x: _mixed_body(i, x, k), c))
    )(n, init, consts)
    assert [x.dtype for x in got] == [x.dtype for x in init]
    assert _trees_equal(got, want)
