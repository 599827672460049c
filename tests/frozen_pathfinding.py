"""Frozen copy of ``pathfinding.py`` at commit 2df481f: a test oracle, not game code.

The searches as they were before the early-exit ``while`` loops and one-word
carries (specs/env-shell.md §7.2, §7.7), unchanged, kept only so that
tests/env/test_rewrites.py can check the current functions against them on random
states.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from hackmatrix_env.constants import DIR_OFFSETS, GRID_SIZE, NUM_CELLS, NUM_DIRECTIONS
from jax import lax

_ROW_BITS = 0x3F  # one row of 6 cells
_WORD = (1 << 18) - 1  # 3 rows
_NOT_COL0 = sum(0x3E << (6 * r) for r in range(3))  # every cell but col 0
_NOT_COL5 = sum(0x1F << (6 * r) for r in range(3))  # every cell but col 5
MAX_LAYERS = NUM_CELLS - 1  # a shortest path on 36 cells has at most 35 steps
_UNROLL = 1  # BFS layers per loop trip: rolled loops compile fast and run as fast under vmap

Bits = tuple[jax.Array, jax.Array]  # (lo, hi) int32 scalars

# Cell weights: bit of (row, col) inside its word, and which word.
_r, _c = jnp.meshgrid(jnp.arange(GRID_SIZE), jnp.arange(GRID_SIZE), indexing="ij")
_CELL_BIT = ((_r % 3) * 6 + _c).astype(jnp.int32)  # int32[6,6]
_CELL_HI = _r >= 3  # bool[6,6]
_CELL_WEIGHT = jnp.left_shift(jnp.int32(1), _CELL_BIT)  # int32[6,6]


def bits_from_map(cell_map: jax.Array) -> Bits:
    """Bitboard of a bool[6,6] map."""
    w = jnp.where(cell_map, _CELL_WEIGHT, 0)
    return jnp.sum(w[:3]), jnp.sum(w[3:])


def bits_of_cell(pos: jax.Array, valid: jax.Array | bool = True) -> Bits:
    """Bitboard holding just ``pos`` (empty if off the board or not ``valid``)."""
    pos = pos.astype(jnp.int32)
    r, c = pos[0], pos[1]
    ok = (r >= 0) & (r < GRID_SIZE) & (c >= 0) & (c < GRID_SIZE) & valid
    bit = jnp.left_shift(jnp.int32(1), jnp.clip((r % 3) * 6 + c, 0, 17))
    lo = jnp.where(ok & (r < 3), bit, 0)
    hi = jnp.where(ok & (r >= 3), bit, 0)
    return lo, hi


def has_bit(bits: Bits, pos: jax.Array) -> jax.Array:
    """bool[]: ``pos`` is in the set (False when off the board)."""
    cell = bits_of_cell(pos)
    return ((bits[0] & cell[0]) | (bits[1] & cell[1])) != 0


def map_from_bits(bits: Bits) -> jax.Array:
    """bool[6,6] map of a bitboard."""
    word = jnp.where(_CELL_HI, bits[1], bits[0])
    return (jnp.right_shift(word, _CELL_BIT) & 1) == 1


def expand(bits: Bits) -> Bits:
    """The 4-neighbourhood of a set (the set itself not included)."""
    lo, hi = bits
    lo_n = (
        ((lo << 1) & _NOT_COL0)
        | ((lo >> 1) & _NOT_COL5)
        | ((lo << 6) & _WORD)
        | (lo >> 6)
        | ((hi & _ROW_BITS) << 12)
    )
    hi_n = (
        ((hi << 1) & _NOT_COL0)
        | ((hi >> 1) & _NOT_COL5)
        | ((hi << 6) & _WORD)
        | (hi >> 6)
        | (lo >> 12)
    )
    return lo_n, hi_n


def _and(a: Bits, b: Bits) -> Bits:
    return a[0] & b[0], a[1] & b[1]


def _or(a: Bits, b: Bits) -> Bits:
    return a[0] | b[0], a[1] | b[1]


def _andnot(a: Bits, b: Bits) -> Bits:
    return a[0] & ~b[0], a[1] & ~b[1]


def _nonempty(a: Bits) -> jax.Array:
    return (a[0] | a[1]) != 0


def distance_layers(passable: Bits, source: Bits, num_layers: int = MAX_LAYERS) -> Bits:
    """Visited sets after 0..num_layers BFS layers from ``source`` through ``passable``.

    Returns (lo, hi) int32[num_layers + 1]; layer k holds every cell at distance <= k.
    ``source`` itself need not be passable (it is always a start).
    """

    def layer(visited, _):
        new = _andnot(_and(expand(visited), passable), visited)
        visited = _or(visited, new)
        return visited, visited

    _, stack = lax.scan(layer, source, None, length=num_layers, unroll=_UNROLL)
    return (
        jnp.concatenate([source[0][None], stack[0]]),
        jnp.concatenate([source[1][None], stack[1]]),
    )


def bfs_distance(block_map: jax.Array, start: jax.Array, goal: jax.Array) -> jax.Array:
    """int32[]: shaping distance from ``start`` to ``goal`` (interface §4.5); -1 if no path.

    Every block is a wall except the goal, which is always enterable; the start
    is expanded even if it holds a block. Enemies etc. are not obstacles.
    """
    goal_bits = bits_of_cell(goal)
    passable = _or(bits_from_map(~block_map), goal_bits)
    lo, hi = distance_layers(passable, bits_of_cell(start))
    reached = ((lo & goal_bits[0]) | (hi & goal_bits[1])) != 0  # bool[L+1]
    dist = jnp.sum(~reached, dtype=jnp.int32)
    return jnp.where(reached[-1], dist, -1)


def neighbour_cells(pos: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(int32[4,2] cells, bool[4] on board): the 4 neighbours in canonical order."""
    cells = pos.astype(jnp.int32)[None, :] + jnp.asarray(DIR_OFFSETS, jnp.int32)
    inb = jnp.all((cells >= 0) & (cells < GRID_SIZE), axis=-1)
    return cells, inb


def first_layer_hit(passable: Bits, goal: Bits, targets: Bits, num_layers: int) -> Bits:
    """Cells of ``targets`` in the first BFS layer from ``goal`` that touches ``targets``.

    The wavefront starts at ``goal`` (layer 0) and grows through ``passable``;
    the result is empty if no layer within ``num_layers`` reaches a target.
    """

    def layer(carry, _):
        frontier, visited, hit = carry
        new = _andnot(_and(expand(frontier), passable), visited)
        visited = _or(visited, new)
        found = _nonempty(hit)
        tn = _and(new, targets)
        hit = (jnp.where(found, hit[0], tn[0]), jnp.where(found, hit[1], tn[1]))
        return (new, visited, hit), None

    hit0 = _and(goal, targets)
    (_, _, hit), _ = lax.scan(layer, (goal, goal, hit0), None, length=num_layers, unroll=_UNROLL)
    return hit


def enemy_next_cell(
    pos: jax.Array,
    player: jax.Array,
    passable: Bits,
    occupied: Bits,
    tier2_dir: jax.Array,
) -> jax.Array:
    """int32[2]: where an enemy at ``pos`` moves (rules §7.6); ``pos`` itself if it stays.

    Only for an enemy that is not adjacent to the player (an adjacent one attacks).

    Args:
      pos: int[2] enemy cell e.
      player: int[2] player cell t.
      passable: cells x with pass(x) for this enemy (on board, and glitch or no block).
      occupied: Occ — cells of all alive enemies (this one's own cell included, which
        is harmless: the reference never re-enters it) and of all transmissions.
      tier2_dir: int32[] the tier-2 first step from ``pos`` (``tier2_direction_map``),
        NUM_DIRECTIONS if t is unreachable ignoring occupancy.
    """
    pos = pos.astype(jnp.int32)
    player = player.astype(jnp.int32)
    goal = bits_of_cell(player)
    can_path = has_bit(passable, player) & ((pos[0] != player[0]) | (pos[1] != player[1]))
    usable = _andnot(passable, occupied)

    # Per direction (4 static items, canonical order): neighbour cell, its bit, flags.
    cells, bits, free, occ = [], [], [], []
    for dr, dc in DIR_OFFSETS.tolist():
        r, c = pos[0] + dr, pos[1] + dc
        b = bits_of_cell(jnp.stack([r, c]))
        cells.append((r, c))
        bits.append(b)
        occ.append(((b[0] & occupied[0]) | (b[1] & occupied[1])) != 0)
        free.append(((b[0] & usable[0]) | (b[1] & usable[1])) != 0)

    # Tier 1: shortest path avoiding Occ.
    targets = (
        sum(jnp.where(f, b[0], 0) for f, b in zip(free, bits, strict=True)),
        sum(jnp.where(f, b[1], 0) for f, b in zip(free, bits, strict=True)),
    )
    hit = first_layer_hit(usable, goal, targets, MAX_LAYERS - 1)
    hits = [((b[0] & hit[0]) | (b[1] & hit[1])) != 0 for b in bits]

    # Tier 3: greedy Manhattan step among free neighbours, even away from t.
    dist3 = [
        jnp.where(f, jnp.abs(r - player[0]) + jnp.abs(c - player[1]), 1000)
        for f, (r, c) in zip(free, cells, strict=True)
    ]
    best3 = jnp.minimum(jnp.minimum(dist3[0], dist3[1]), jnp.minimum(dist3[2], dist3[3]))

    # Choose: tier 1, else tier 2 (nothing if its step is occupied), else tier 3;
    # within a tier the first canonical direction wins (scan from the last).
    tier1 = can_path & (hits[0] | hits[1] | hits[2] | hits[3])
    tier2 = (tier2_dir < NUM_DIRECTIONS) & ~jnp.select(
        [tier2_dir == d for d in range(NUM_DIRECTIONS)], occ, True
    )
    tier3 = free[0] | free[1] | free[2] | free[3]
    row, col = pos[0], pos[1]
    for d in reversed(range(NUM_DIRECTIONS)):
        take = jnp.where(
            tier1, hits[d], jnp.where(tier2, tier2_dir == d, tier3 & free[d] & (dist3[d] == best3))
        )
        row = jnp.where(take, cells[d][0], row)
        col = jnp.where(take, cells[d][1], col)
    return jnp.stack([row, col])


def _shift(bits: Bits, d: int) -> Bits:
    """The set moved one cell in direction ``d`` (cells leaving the board dropped)."""
    lo, hi = bits
    if d == 0:  # Up: row + 1
        return (lo << 6) & _WORD, ((hi << 6) & _WORD) | (lo >> 12)
    if d == 1:  # Down: row - 1
        return (lo >> 6) | ((hi & _ROW_BITS) << 12), hi >> 6
    if d == 2:  # Left: col - 1
        return (lo >> 1) & _NOT_COL5, (hi >> 1) & _NOT_COL5
    return (lo << 1) & _NOT_COL0, (hi << 1) & _NOT_COL0  # Right: col + 1


_OPPOSITE = (1, 0, 3, 2)


def tier2_direction_bits(passable: Bits, player: jax.Array) -> tuple[jax.Array, ...]:
    """Tier-2 first steps of every cell (rules §7.6) as 4 bitboards (lo0, hi0, ..., lo3, hi3).

    Tier 2 ignores occupancy, so within one enemy phase (player and blocks
    fixed) the step depends only on the enemy's cell and pass type: one set of
    maps per pass type per phase. A cell e is in set d iff d is the first
    canonical direction whose neighbour has minimal distance to the player
    (through ``passable``). Built layer by layer from the player: cells next to
    layer k that have no direction yet take the first direction pointing into
    layer k. Including e itself in the search graph cannot change that choice
    (a path back through e is 2 longer than the best). Empty when pass(t) fails;
    the player's own cell never gets a direction.
    """
    goal = bits_of_cell(player)
    start = _and(goal, passable)
    zero = jnp.int32(0)

    def layer(carry, _):
        frontier, visited, assigned, dirs = carry
        rem = _andnot(expand(frontier), assigned)  # cells whose best neighbour is in this layer
        new_dirs = []
        for d in range(NUM_DIRECTIONS):
            # e is in set d iff e + off(d) is in the frontier: shift the frontier opposite to d.
            m = _and(rem, _shift(frontier, _OPPOSITE[d]))
            rem = _andnot(rem, m)
            new_dirs.append(_or(dirs[d], m))
        assigned = _or(assigned, expand(frontier))
        new = _andnot(_and(expand(frontier), passable), visited)
        return (new, _or(visited, new), assigned, tuple(new_dirs)), None

    init_dirs = tuple((zero, zero) for _ in range(NUM_DIRECTIONS))
    carry = (start, start, goal, init_dirs)
    (_, _, _, dirs), _ = lax.scan(layer, carry, None, length=MAX_LAYERS, unroll=_UNROLL)
    return tuple(w for d in dirs for w in d)


def lookup_direction(dir_bits: tuple[jax.Array, ...], pos: jax.Array) -> jax.Array:
    """int32[]: the direction whose set in ``tier2_direction_bits`` holds ``pos``, else 4."""
    cell = bits_of_cell(pos)
    found = [
        ((dir_bits[2 * d] & cell[0]) | (dir_bits[2 * d + 1] & cell[1])) != 0
        for d in range(NUM_DIRECTIONS)
    ]
    out = jnp.int32(NUM_DIRECTIONS)
    for d in reversed(range(NUM_DIRECTIONS)):
        out = jnp.where(found[d], d, out)
    return out
