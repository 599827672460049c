"""Standard transmission placement (rules §8) and the closed form it uses (rules §12.1)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from builders import make_state
from hackmatrix_env.constants import MAX_TRANSMISSIONS
from hackmatrix_env.placement import (
    PLACEMENT_SUCCESS,
    line_of_fire_rows,
    place_transmissions,
    rows_of,
)
from hackmatrix_env.rng import hash_uniform, rng_seed
from scipy import stats

_place = jax.jit(place_transmissions, static_argnames=("max_count",))


def line_of_fire_map(player_pos: jax.Array, shield_map: jax.Array) -> jax.Array:
    """bool[6,6]: ``placement.line_of_fire_rows`` as a cell map."""
    rows = line_of_fire_rows(player_pos, rows_of(shield_map))
    return ((rows[:, None] >> jnp.arange(6)) & 1) == 1


@jax.jit
def _place_many(keys, state, count):
    return jax.vmap(lambda k: place_transmissions(k, state, count))(keys)


def _placed(out, slot):
    """(alive bool[K], flat cell int[K], kind int[K]) of transmission ``slot`` over K runs."""
    t = out.transmissions
    pos = np.asarray(t.pos[:, slot]).astype(int)
    return np.asarray(t.alive[:, slot]), pos[:, 0] * 6 + pos[:, 1], np.asarray(t.kind[:, slot])


def make_game(player=(0, 0), **kwargs):
    """The game of ``make_state(...)``: the rule functions take a ``GameState``."""
    return make_state(player, **kwargs).game


def _keys(n, seed=0):
    return jax.random.split(jax.random.key(seed), n)


def _literal_probabilities(empty: np.ndarray, out_of_line: np.ndarray) -> np.ndarray:
    """Exact per-cell probability of the literal 100 + 100 try loop (rules §8), plus 'none'."""
    e1, e0 = empty & out_of_line, empty
    n1, n0 = e1.sum(), e0.sum()
    p1 = 1 - (1 - n1 / 36) ** 100
    p0 = 1 - (1 - n0 / 36) ** 100
    probs = np.zeros(37)
    if n1:
        probs[:36][e1.reshape(-1)] += p1 / n1
    if n0:
        probs[:36][e0.reshape(-1)] += (1 - p1) * p0 / n0
    probs[36] = (1 - p1) * (1 - p0)
    return probs


def _literal_sample(rng, empty, out_of_line):
    """One literal run of the reference loop (rules §8), for a cross-check."""
    for _ in range(100):
        r, c = rng.integers(6), rng.integers(6)
        if empty[r, c] and out_of_line[r, c]:
            return r * 6 + c
    for _ in range(100):
        r, c = rng.integers(6), rng.integers(6)
        if empty[r, c]:
            return r * 6 + c
    return 36


def test_success_table():
    n = np.arange(37)
    np.testing.assert_allclose(PLACEMENT_SUCCESS, 1 - (1 - n / 36) ** 100, rtol=1e-6)
    assert PLACEMENT_SUCCESS[0] == 0 and abs(PLACEMENT_SUCCESS[1] - 0.9395) < 1e-3


def _literal_line_of_fire(player, shield):
    pr, pc = player
    out = np.zeros((6, 6), bool)
    for r in range(6):
        for c in range(6):
            if r != pr and c != pc:
                continue
            if (r, c) == (pr, pc):
                out[r, c] = True
                continue
            dr, dc = np.sign(r - pr), np.sign(c - pc)
            cur, clear = (pr + dr, pc + dc), True
            while cur != (r, c):
                clear &= not shield[cur]
                cur = (cur[0] + dr, cur[1] + dc)
            out[r, c] = clear
    return out


def test_line_of_fire_matches_literal_walk():
    rng = np.random.default_rng(0)
    lof = jax.jit(jax.vmap(line_of_fire_map))
    players = rng.integers(0, 6, (300, 2))
    shields = rng.random((300, 6, 6)) < 0.3
    got = np.asarray(lof(jnp.asarray(players, jnp.int8), jnp.asarray(shields)))
    for i in range(300):
        assert (got[i] == _literal_line_of_fire(tuple(players[i]), shields[i])).all(), i


def test_line_of_fire_transmissions_do_not_shield():
    # Player (2,2); enemy at (2,4) shields (2,5); block at (4,2) shields (5,2).
    shield = np.zeros((6, 6), bool)
    shield[2, 4] = shield[4, 2] = True
    lof = np.asarray(line_of_fire_map(jnp.array([2, 2], jnp.int8), jnp.asarray(shield)))
    expected = np.zeros((6, 6), bool)
    expected[2, :5] = True  # (2,0..4): (2,4) itself is in line, (2,5) is behind it
    expected[:5, 2] = True
    assert (lof == expected).all()


def test_never_on_occupied_cells_and_exit_allowed():
    s = make_game(
        (0, 0),
        enemies=[("virus", (3, 3))],
        transmissions=[("daemon", (1, 4))],
        blocks=[("data", (2, 2)), ("data", (4, 1)), ("data", (0, 2))],  # (0,2) shields (0,5)
        resources=[("siphon", (0, 5))],
    )
    out = _place_many(_keys(4000), s, 3)
    occupied = {0 * 6 + 0, 3 * 6 + 3, 1 * 6 + 4, 2 * 6 + 2, 4 * 6 + 1, 0 * 6 + 2}
    seen = set()
    for slot in (1, 2, 3):
        alive, cell, kind = _placed(out, slot)
        assert alive.all()  # 29 empty cells: the fallback never fails
        assert not occupied & set(cell.tolist())
        seen |= set(cell.tolist())
        assert set(kind.tolist()) == {0, 1, 2, 3}
    # Within one run the three new cells differ (later placements see earlier ones).
    cells = np.stack([_placed(out, k)[1] for k in (1, 2, 3)], 1)
    assert all(len(set(row)) == 3 for row in cells.tolist())
    assert 5 in seen and 35 in seen  # the pickup corner and the exit are allowed
    t = out.transmissions
    assert (np.asarray(t.countdown[:, 1:4]) == 1).all()
    assert not np.asarray(t.from_task[:, 1:4] | t.from_siphon[:, 1:4]).any()


def test_flags_passed_through():
    s = make_game((0, 0))
    out = _place(jax.random.key(3), s, 2, from_task=True)
    assert np.asarray(out.transmissions.from_task[:2]).all()
    assert not np.asarray(out.transmissions.from_siphon).any()


def _small_board():
    """Player (0,0); out-of-line empty cells reduced to exactly one, (5,5)."""
    blocks = [(r, c) for r in range(1, 6) for c in range(1, 6) if (r, c) != (5, 5)]
    blocks = [b for b in blocks if b not in [(1, 1)]]
    return make_game((0, 0), blocks=[("data", b) for b in blocks], stage=1), blocks


def test_distribution_matches_literal_loop():
    # Player (0,0), blocks everywhere in rows/cols 1..5 except (1,1) and (5,5).
    # Row 0 and col 0 are in line; (1,1) and (5,5) are out of line (E1 = 2 cells).
    s, blocks = _small_board()
    empty = np.ones((6, 6), bool)
    for r, c in blocks:
        empty[r, c] = False
    empty[0, 0] = False
    shield = np.zeros((6, 6), bool)
    for r, c in blocks:
        shield[r, c] = True
    out_of_line = ~np.asarray(line_of_fire_map(jnp.array([0, 0]), jnp.asarray(shield)))
    probs = _literal_probabilities(empty, out_of_line)
    assert probs[36] < 1e-12 and probs[1 * 6 + 1] > 0.4
    n = 40000
    out = _place_many(_keys(n, 1), s, 1)
    alive, cell, _ = _placed(out, 0)
    cell = np.where(alive, cell, 36)
    counts = np.bincount(cell, minlength=37)
    support = probs > 0
    assert counts[~support].sum() == 0
    chi = stats.chisquare(counts[support], probs[support] * n)
    assert chi.pvalue > 1e-4, (counts[support], probs[support] * n)
    # The closed form itself agrees with a literal run of the loop.
    rng = np.random.default_rng(0)
    lit = np.bincount(
        [_literal_sample(rng, empty, out_of_line) for _ in range(20000)], minlength=37
    )
    chi = stats.chisquare(lit[support], probs[support] * 20000)
    assert chi.pvalue > 1e-4


def test_single_out_of_line_cell_fails_six_percent():
    # Exactly one empty out-of-line cell: the preferred search misses it w.p. (35/36)^100.
    blocks = [(r, c) for r in range(1, 6) for c in range(1, 6) if (r, c) not in [(5, 5)]]
    s = make_game((0, 0), blocks=[("data", b) for b in blocks])
    n = 40000
    out = _place_many(_keys(n, 2), s, 1)
    alive, cell, _ = _placed(out, 0)
    assert alive.all()
    miss = (35 / 36) ** 100  # fallback: uniform over all 11 empty cells
    p55 = (1 - miss) + miss / 11
    k = int((cell == 35).sum())
    assert stats.binomtest(k, n, p55).pvalue > 1e-4


def test_no_empty_cell_places_nothing():
    blocks = [(r, c) for r in range(6) for c in range(6) if (r, c) not in [(0, 0), (5, 5)]]
    s = make_game((0, 0), blocks=[("data", b) for b in blocks], enemies=[("virus", (5, 5))])
    out = _place(jax.random.key(0), s, 5)
    assert not bool(out.transmissions.alive.any()) and not bool(out.overflow)


def test_count_fills_board_and_overflow():
    # 4 empty cells, count 6: four placed (any order), the rest find nothing.
    blocks = [
        (r, c)
        for r in range(6)
        for c in range(6)
        if (r, c) not in [(0, 0), (0, 1), (5, 5), (3, 3), (4, 4)]
    ]
    s = make_game((0, 0), blocks=[("data", b) for b in blocks])
    out = _place(jax.random.key(1), s, 6)
    t = out.transmissions
    assert int(t.alive.sum()) == 4 and t.alive.tolist()[:4] == [True] * 4
    assert sorted(map(tuple, np.asarray(t.pos[:4]).tolist())) == [(0, 1), (3, 3), (4, 4), (5, 5)]
    assert not bool(out.overflow)
    # A full pool sets the overflow flag when a placement finds a cell.
    full = make_game((0, 0), transmissions=[("virus", (2, 2))] * MAX_TRANSMISSIONS)
    out = _place(jax.random.key(2), full, 1)
    assert bool(out.overflow) and int(out.transmissions.alive.sum()) == MAX_TRANSMISSIONS
    # count beyond the static scan length with room left is flagged too.
    out = _place(jax.random.key(2), make_game((0, 0)), 3, max_count=2)
    assert bool(out.overflow) and int(out.transmissions.alive.sum()) == 2


def test_zero_count_is_identity():
    s = make_game((0, 0), transmissions=[("virus", (2, 2))])
    out = _place(jax.random.key(0), s, 0)
    assert all(
        np.array_equal(a, b) for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(s), strict=True)
    )


def test_same_key_same_result_and_keys_differ():
    s = make_game((2, 2))
    a = _place(jax.random.key(5), s, 4)
    b = _place(jax.random.key(5), s, 4)
    c = _place(jax.random.key(6), s, 4)
    assert np.array_equal(a.transmissions.pos, b.transmissions.pos)
    assert not np.array_equal(a.transmissions.pos, c.transmissions.pos)


def test_hash_uniform_is_uniform():
    u = np.asarray(hash_uniform(rng_seed(jax.random.key(0)), jnp.arange(200000, dtype=jnp.uint32)))
    assert u.dtype == np.float32 and u.min() >= 0 and u.max() < 1
    counts = np.histogram(u, bins=64, range=(0, 1))[0]
    assert stats.chisquare(counts).pvalue > 1e-4
    # consecutive pairs are not correlated
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 0.01


def test_rng_seed_spreads_structured_keys():
    """``rng_seed`` mixes key data: ``key(i)`` (data ``[0, i]``) gives unrelated seeds.

    4,096 consecutive user keys: no two seeds equal, every one of the 64 seed bits
    set in about half of them, and the first uniform of each seed's stream is
    uniform over the keys and uncorrelated with the next key's.
    """
    seeds = np.asarray(jax.vmap(lambda i: rng_seed(jax.random.key(i)))(jnp.arange(4096)))
    assert seeds.shape == (4096, 2) and seeds.dtype == np.uint32
    assert len({(int(a), int(b)) for a, b in seeds}) == 4096
    bits = (seeds[:, :, None] >> np.arange(32, dtype=np.uint32)) & 1
    share = bits.reshape(4096, 64).mean(axis=0)
    assert np.all(np.abs(share - 0.5) < 0.04), share  # > 5 sigma for n = 4,096
    first = np.asarray(jax.vmap(lambda sd: hash_uniform(sd, jnp.uint32(0)))(jnp.asarray(seeds)))
    assert stats.kstest(first, "uniform").pvalue > 1e-4
    assert abs(np.corrcoef(first[:-1], first[1:])[0, 1]) < 0.06


def test_rng_seed_accepts_every_key_kind():
    """Typed threefry keys, legacy ``PRNGKey`` arrays (same data, same seed) and rbg keys."""
    typed = rng_seed(jax.random.key(3))
    assert np.array_equal(typed, rng_seed(jax.random.PRNGKey(3)))
    rbg = rng_seed(jax.random.key(3, impl="rbg"))
    assert rbg.shape == (2,) and rbg.dtype == jnp.uint32
    assert not np.array_equal(rbg, rng_seed(jax.random.key(4, impl="rbg")))
    assert not np.array_equal(typed, rng_seed(jax.random.key(4)))


@pytest.mark.parametrize("max_count", [1, 8])
def test_jit_and_vmap_agree(max_count):
    s = make_game((1, 1), blocks=[("data", (2, 2))])
    keys = _keys(4, 9)
    batched = jax.vmap(lambda k: place_transmissions(k, s, max_count, max_count=max_count))(keys)
    for i in range(4):
        single = _place(keys[i], s, max_count, max_count=max_count)
        assert np.array_equal(batched.transmissions.pos[i], single.transmissions.pos)
        assert np.array_equal(batched.transmissions.kind[i], single.transmissions.kind)
