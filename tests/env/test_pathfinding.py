"""pathfinding.py: shaping BFS (interface §4.5) and enemy moves (rules §7.6).

Both are checked against literal pure-Python replicas of the reference
searches on random boards (differential tests), plus the spec's examples.
"""

from __future__ import annotations

from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
from hackmatrix_env import pathfinding as pf
from hypothesis import given, settings
from hypothesis import strategies as st

OFFS = [(1, 0), (-1, 0), (0, -1), (0, 1)]  # Up Down Left Right


def _inb(c):
    return 0 <= c[0] < 6 and 0 <= c[1] < 6


def ref_bfs_distance(blocks, s, x):
    """Literal interface §4.5."""
    if s == x:
        return 0
    seen = {s}
    frontier = [s]
    depth = 0
    while frontier:
        nxt = []
        for cur in frontier:
            for dr, dc in OFFS:
                n = (cur[0] + dr, cur[1] + dc)
                if not _inb(n) or n in seen:
                    continue
                if n == x:
                    return depth + 1
                if n in blocks:
                    continue
                seen.add(n)
                nxt.append(n)
        frontier = nxt
        depth += 1
    return -1


def ref_enemy_move(e, t, glitch, blocks, occ):
    """Literal rules §7.6: FIFO BFS from e, canonical expansion, visited on enqueue."""

    def passable(x):
        return _inb(x) and (glitch or x not in blocks)

    def search(use_occ):
        if not passable(t):
            return None
        q = deque([(e, None)])
        seen = {e}
        while q:
            cur, first = q.popleft()
            for dr, dc in OFFS:
                n = (cur[0] + dr, cur[1] + dc)
                if not _inb(n) or n in seen:
                    continue
                if n == t:
                    return first if first is not None else n
                if not passable(n) or (use_occ and n in occ):
                    continue
                seen.add(n)
                q.append((n, first if first is not None else n))
        return None

    step = search(True)
    if step is not None:
        return step
    step = search(False)
    if step is not None and step not in occ:
        return step
    # tier 2 found nothing, or its step is occupied ("yields nothing"): tier 3
    best = None
    for dr, dc in OFFS:
        n = (e[0] + dr, e[1] + dc)
        if passable(n) and n not in occ:
            d = abs(n[0] - t[0]) + abs(n[1] - t[1])
            if best is None or d < best[0]:
                best = (d, n)
    return None if best is None else best[1]


def ref_enemy_move_full(e, t, glitch, blocks, occ):
    step = ref_enemy_move(e, t, glitch, blocks, occ)
    return e if step is None else step


def _map(cells):
    m = np.zeros((6, 6), bool)
    for r, c in cells:
        m[r, c] = True
    return jnp.asarray(m)


@jax.jit
def _bfs(block_map, start, goal):
    return pf.bfs_distance(block_map, start, goal)


@jax.jit
def _move(pos, player, glitch, block_map, occ_map):
    passable = pf.bits_from_map(glitch | ~block_map)
    occupied = pf.bits_from_map(occ_map)
    t2 = pf.lookup_direction(pf.tier2_direction_bits(passable, player), pos)
    return pf.enemy_next_cell(pos, player, passable, occupied, t2)


cell = st.tuples(st.integers(0, 5), st.integers(0, 5))


def map_from_bits(bits) -> np.ndarray:
    """bool[6,6] map of a bitboard, read on the host: rows 0-2 in the low word, rows 3-5 in
    the high one, bit (row % 3) * 6 + col (``pathfinding``'s layout)."""
    words = [int(w) for w in bits]
    return np.array(
        [[(words[r >= 3] >> ((r % 3) * 6 + c)) & 1 == 1 for c in range(6)] for r in range(6)]
    )


def test_bitboard_roundtrip_and_expand():
    m = np.zeros((6, 6), bool)
    m[2, 5] = m[3, 0] = m[0, 0] = True
    bits = pf.bits_from_map(jnp.asarray(m))
    np.testing.assert_array_equal(map_from_bits(bits), m)
    one = map_from_bits(pf.expand(pf.bits_of_cell(jnp.array([2, 5]))))
    expected = np.zeros((6, 6), bool)
    expected[3, 5] = expected[1, 5] = expected[2, 4] = True  # no wrap into col 0
    np.testing.assert_array_equal(one, expected)


def test_bfs_distance_spec_cases():
    empty = _map([])
    assert int(_bfs(empty, jnp.array([0, 0]), jnp.array([5, 5]))) == 10
    assert int(_bfs(empty, jnp.array([3, 3]), jnp.array([3, 3]))) == 0
    # the exit is always enterable even when it holds a block
    assert int(_bfs(_map([(5, 5)]), jnp.array([5, 4]), jnp.array([5, 5]))) == 1
    assert int(_bfs(_map([(5, 5)]), jnp.array([0, 0]), jnp.array([5, 5]))) == 10
    # no path -> -1 (the reward maps it to 0): both neighbours of the exit are blocks
    assert int(_bfs(_map([(4, 5), (5, 4)]), jnp.array([0, 0]), jnp.array([5, 5]))) == -1
    # a detour around a wall
    assert int(_bfs(_map([(1, 0), (1, 1), (1, 2)]), jnp.array([0, 0]), jnp.array([2, 0]))) == 8
    # E2: the route avoids (3,2): D0 = 6 from (2,2)
    assert int(_bfs(_map([(3, 2)]), jnp.array([2, 2]), jnp.array([5, 5]))) == 6


@settings(deadline=None, max_examples=150)
@given(st.sets(cell, max_size=20), cell, cell)
def test_bfs_distance_matches_reference(blocks, s, x):
    got = int(_bfs(_map(blocks), jnp.array(s), jnp.array(x)))
    assert got == ref_bfs_distance(blocks, s, x)


def test_daemon_worked_example():
    # rules §7.6: daemon (3,3) -> (2,3) -> (1,3) -> (0,3) -> (0,2) -> (0,1), player (0,0)
    pos = (3, 3)
    path = []
    for _ in range(5):
        pos = tuple(
            int(v) for v in _move(jnp.array(pos), jnp.array([0, 0]), False, _map([]), _map([pos]))
        )
        path.append(pos)
    assert path == [(2, 3), (1, 3), (0, 3), (0, 2), (0, 1)]


def test_abc_tier3_moves_away():
    # rules §7.6: A (1,0), B (0,1) next to the player (0,0); C at (2,0) moves to (3,0)
    occ = _map([(1, 0), (0, 1), (2, 0)])
    got = _move(jnp.array([2, 0]), jnp.array([0, 0]), False, _map([]), occ)
    assert tuple(int(v) for v in got) == (3, 0)


def test_player_on_block_uses_tier3_for_non_glitch():
    # pass(t) false -> tiers 1, 2 find nothing; greedy: Up (3,2) d=3, Down (1,2) d=1 -> Down
    blocks = _map([(0, 2)])
    got = _move(jnp.array([2, 2]), jnp.array([0, 2]), False, blocks, _map([(2, 2)]))
    assert tuple(int(v) for v in got) == (1, 2)
    # a glitch may path onto the block cell
    got = _move(jnp.array([2, 2]), jnp.array([0, 2]), True, blocks, _map([(2, 2)]))
    assert tuple(int(v) for v in got) == (1, 2)


def test_enemy_on_player_cell_steps_to_first_free_neighbour():
    # e == t: tiers 1, 2 nothing; tier 3: all neighbours at distance 1 -> Up first
    got = _move(jnp.array([2, 2]), jnp.array([2, 2]), False, _map([]), _map([(2, 2)]))
    assert tuple(int(v) for v in got) == (3, 2)
    got = _move(jnp.array([2, 2]), jnp.array([2, 2]), False, _map([(3, 2)]), _map([(2, 2), (1, 2)]))
    assert tuple(int(v) for v in got) == (2, 1)


@settings(deadline=None, max_examples=300)
@given(
    st.sets(cell, max_size=14),
    st.sets(cell, max_size=10),
    cell,
    cell,
    st.booleans(),
)
def test_enemy_move_matches_literal_bfs(blocks, others, e, t, glitch):
    if abs(e[0] - t[0]) + abs(e[1] - t[1]) == 1:
        return  # an adjacent enemy attacks instead of moving (rules §7.5)
    others = others - {e}  # e may stand on a block (pushed non-glitch) or on t
    expected = ref_enemy_move_full(e, t, glitch, blocks, others)
    got = _move(jnp.array(e), jnp.array(t), glitch, _map(blocks), _map(others | {e}))
    assert tuple(int(v) for v in got) == expected


def test_open_board_direction_bits_equal_the_search_and_the_reference():
    """Glitch tier-2 maps in closed form = the BFS maps with every cell passable = literal §7.6.

    All 36 player cells. Reference: for each enemy cell, the first canonical
    direction whose on-board neighbour has minimal BFS distance to the player.
    """
    every_cell = pf.bits_from_map(jnp.ones((6, 6), bool))
    closed = jax.jit(pf.open_board_direction_bits)
    search = jax.jit(lambda p: pf.tier2_direction_bits(every_cell, p))
    cells = [(r, c) for r in range(6) for c in range(6)]
    for t in cells:
        got = closed(jnp.asarray(t, jnp.int32))
        assert [int(w) for w in got] == [int(w) for w in search(jnp.asarray(t, jnp.int32))]
        maps = [np.asarray(map_from_bits((got[2 * d], got[2 * d + 1]))) for d in range(4)]
        for e in cells:
            want = None
            if e != t:
                dists = [
                    ref_bfs_distance(set(), (e[0] + dr, e[1] + dc), t)
                    if _inb((e[0] + dr, e[1] + dc))
                    else 99
                    for dr, dc in OFFS
                ]
                want = dists.index(min(dists))
            have = [d for d in range(4) if maps[d][e]]
            assert have == ([] if want is None else [want]), (t, e)
