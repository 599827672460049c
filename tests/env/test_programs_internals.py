"""Internals of programs.py that the scenario tests reach only partly: exact uniform
index arithmetic and the packed stable compaction (rules §2.7 list order)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from hackmatrix_env.constants import MAX_ENEMIES, MAX_TRANSMISSIONS
from hackmatrix_env.programs import _compact_enemies, _compact_transmissions, _uniform_below
from hackmatrix_env.types import blank_game
from hypothesis import given, settings
from hypothesis import strategies as st


def test_uniform_below_is_floor_of_scaled_bits():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**32, size=20000, dtype=np.uint64)
    n = rng.integers(1, 2**16, size=20000, dtype=np.uint64)
    got = np.asarray(
        _uniform_below(jnp.asarray(bits.astype(np.uint32)), jnp.asarray(n.astype(np.uint32)))
    )
    np.testing.assert_array_equal(got, (bits * n) >> np.uint64(32))
    # Extremes.
    edge = jnp.asarray([0, 2**32 - 1], jnp.uint32)
    assert np.asarray(_uniform_below(edge, 3)).tolist() == [0, 2]


_ce = jax.jit(_compact_enemies)
_ct = jax.jit(_compact_transmissions)
i8 = st.integers(-128, 127)
cell = st.tuples(st.integers(0, 5), st.integers(0, 5))


@settings(deadline=None, max_examples=60)
@given(
    data=st.lists(
        st.tuples(
            st.integers(0, 3),
            cell,
            i8,
            st.integers(0, 127),
            st.booleans(),
            cell,
            st.booleans(),
            st.booleans(),
            st.booleans(),
        ),
        min_size=MAX_ENEMIES,
        max_size=MAX_ENEMIES,
    ),
    n_alive=st.integers(0, MAX_ENEMIES),
)
def test_enemy_compaction_matches_list_filter(data, n_alive):
    kind, pos, hp, dis, stun, lk, ft, fs, keep = (list(x) for x in zip(*data, strict=True))
    alive = np.arange(MAX_ENEMIES) < n_alive
    e = blank_game().enemies.replace(
        kind=jnp.asarray(kind, jnp.int8),
        pos=jnp.asarray(pos, jnp.int8),
        hp=jnp.asarray(hp, jnp.int8),
        disabled=jnp.asarray(dis, jnp.int8),
        stunned=jnp.asarray(stun),
        last_known=jnp.asarray(lk, jnp.int8),
        from_task=jnp.asarray(ft),
        from_siphon=jnp.asarray(fs),
        alive=jnp.asarray(alive),
    )
    keep = np.asarray(keep) & alive
    out = jax.device_get(_ce(e, jnp.asarray(keep)))
    src = np.flatnonzero(keep)
    k = len(src)
    host = jax.device_get(e)
    for name in (
        "kind",
        "pos",
        "hp",
        "disabled",
        "stunned",
        "last_known",
        "from_task",
        "from_siphon",
    ):
        got = np.asarray(getattr(out, name))
        want = np.asarray(getattr(host, name))[src]
        np.testing.assert_array_equal(got[:k], want, err_msg=name)
        assert not got[k:].any(), name
    np.testing.assert_array_equal(out.alive, np.arange(MAX_ENEMIES) < k)


@settings(deadline=None, max_examples=40)
@given(
    data=st.lists(
        st.tuples(cell, i8, st.integers(0, 3), st.booleans(), st.booleans(), st.booleans()),
        min_size=MAX_TRANSMISSIONS,
        max_size=MAX_TRANSMISSIONS,
    ),
)
def test_transmission_compaction_matches_list_filter(data):
    pos, cd, kind, ft, fs, keep = (list(x) for x in zip(*data, strict=True))
    t = blank_game().transmissions.replace(
        pos=jnp.asarray(pos, jnp.int8),
        countdown=jnp.asarray(cd, jnp.int8),
        kind=jnp.asarray(kind, jnp.int8),
        from_task=jnp.asarray(ft),
        from_siphon=jnp.asarray(fs),
        alive=jnp.ones(MAX_TRANSMISSIONS, bool),
    )
    keep = np.asarray(keep)
    out = jax.device_get(_ct(t, jnp.asarray(keep)))
    src = np.flatnonzero(keep)
    k = len(src)
    host = jax.device_get(t)
    for name in ("pos", "countdown", "kind", "from_task", "from_siphon"):
        got = np.asarray(getattr(out, name))
        np.testing.assert_array_equal(got[:k], np.asarray(getattr(host, name))[src], err_msg=name)
        assert not got[k:].any(), name


def _scenario_states():
    from builders import make_state
    from hackmatrix_env.constants import PROGRAM_NAMES

    common = dict(credits=20, energy=20, owned=list(PROGRAM_NAMES))
    return [
        make_state((2, 2), enemies=[("virus", (2, 4)), ("daemon", (3, 3), 1)], **common),
        make_state(
            (0, 0), enemies=[("glitch", (1, 1))], transmissions=[("virus", (4, 4))], **common
        ),
        make_state(
            (5, 0),
            enemies=[("cryptog", (5, 3)), ("virus", (5, 3))],
            blocks=[("data", (4, 1))],
            **common,
        ),
    ]


def test_vmap_matches_single_calls_and_jit_matches_eager():
    from hackmatrix_env.history import take_snapshot
    from hackmatrix_env.programs import run_program
    from programs_testlib import trees_equal

    games = [s.game for s in _scenario_states()]
    snaps = [take_snapshot(g) for g in games]  # read by UNDO only, not among these
    progs = [0, 3, 4, 2, 16, 7]  # PUSH, WARP, POLY, CRASH, D_BOM, ROW
    single = jax.jit(run_program)
    batched = jax.jit(jax.vmap(run_program))
    stacked = jax.tree.map(lambda *x: jnp.stack(x), *games)
    stacked_snaps = jax.tree.map(lambda *x: jnp.stack(x), *snaps)
    for p in progs:
        keys = jax.random.split(jax.random.key(p), len(games))
        out_b = batched(keys, stacked, jnp.full(len(games), p, jnp.int32), stacked_snaps)
        for i, g in enumerate(games):
            out_s = single(keys[i], g, jnp.int32(p), snaps[i])
            assert trees_equal(jax.tree.map(lambda x, i=i: x[i], out_b), out_s), (p, i)
    # jit vs eager on one game and the random programs.
    for p in (3, 4):
        with jax.disable_jit():
            eager = run_program(jax.random.key(5), games[0], jnp.int32(p), snaps[0])
        assert trees_equal(eager, single(jax.random.key(5), games[0], jnp.int32(p), snaps[0]))
