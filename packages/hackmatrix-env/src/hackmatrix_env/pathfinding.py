"""Fixed-length wavefront BFS on bitboards (layer 2).

Two searches live here:

* ``bfs_distance`` — the reward's distance shaping (interface §4.5): any block
  is a wall, the goal is always enterable, "no path" is reported as -1.
* ``enemy_next_cell`` — an enemy's move (rules §7.6): three tiers, canonical
  tie-break Up, Down, Left, Right.

Board sets are bitboards: a pair ``(lo, hi)`` of int32 scalars, ``lo`` holding
rows 0-2 and ``hi`` rows 3-5, bit ``(row % 3) * 6 + col``. One BFS layer is a
handful of scalar shifts and masks, so under ``vmap`` a layer costs a few
vector ops over the batch. Every search runs at most 35 layers (36 cells) as
a rolled ``lax.while_loop`` that stops as soon as the answer is known (goal
reached, target hit, or an empty wavefront: later layers change nothing), so
the result is the fixed-length search's; under ``vmap`` the loop runs as far
as the batch's slowest row. (Deliberate exception to "no while_loop", measured
in specs/env-shell.md §7.2; unrolled layers compiled 3-4x longer for no gain.)

Why the enemy rule is a wavefront from the player: the reference BFS from the
enemy (FIFO, canonical expansion, visited-on-enqueue) returns the
lexicographically smallest shortest path, whose first step is the first
neighbour of the enemy, in canonical order, with minimal distance to the
player. So we grow the wavefront from the player and stop looking at the
first layer that touches a usable neighbour of the enemy; the first such
neighbour in canonical order is the move.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from hackmatrix_env.constants import DIR_OFFSETS, GRID_SIZE, NUM_CELLS, NUM_DIRECTIONS

_ROW_BITS = 0x3F  # one row of 6 cells
_WORD = (1 << 18) - 1  # 3 rows
_NOT_COL0 = sum(0x3E << (6 * r) for r in range(3))  # every cell but col 0
_NOT_COL5 = sum(0x1F << (6 * r) for r in range(3))  # every cell but col 5
MAX_LAYERS = NUM_CELLS - 1  # a shortest path on 36 cells has at most 35 steps

Bits = tuple[jax.Array, jax.Array]  # (lo, hi) int32 scalars

# Cell weights: bit of (row, col) inside its word (rows 0-2 the low word, 3-5 the high one).
_r, _c = jnp.meshgrid(jnp.arange(GRID_SIZE), jnp.arange(GRID_SIZE), indexing="ij")
_CELL_BIT = ((_r % 3) * 6 + _c).astype(jnp.int32)  # int32[6,6]
_CELL_WEIGHT = jnp.left_shift(jnp.int32(1), _CELL_BIT)  # int32[6,6]


def bits_from_map(cell_map: jax.Array) -> Bits:
    """Bitboard of a bool[6,6] map."""
    w = jnp.where(cell_map, _CELL_WEIGHT, 0).reshape(2, 3 * GRID_SIZE)
    words = jnp.sum(w, axis=1)  # one reduction for both words
    return words[0], words[1]


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


def bfs_distance(block_map: jax.Array, start: jax.Array, goal: jax.Array) -> jax.Array:
    """int32[]: shaping distance from ``start`` to ``goal`` (interface §4.5); -1 if no path.

    Every block is a wall except the goal, which is always enterable; the start
    is expanded even if it holds a block. Enemies etc. are not obstacles.
    The layers stop once the goal is reached or the wavefront dies out (a
    ``while_loop``, same result as ``MAX_LAYERS`` layers; see ``first_layer_hit``).
    """
    goal_bits = bits_of_cell(goal)
    passable = _or(bits_from_map(~block_map), goal_bits)
    source = bits_of_cell(start)

    # One int32[5] carry (layer, frontier, visited), as in ``first_layer_hit``.
    def going(c):
        visited = (c[3], c[4])
        return (c[0] < MAX_LAYERS) & ~_nonempty(_and(visited, goal_bits)) & _nonempty((c[1], c[2]))

    def layer(c):
        frontier, visited = (c[1], c[2]), (c[3], c[4])
        new = _andnot(_and(expand(frontier), passable), visited)
        seen = _or(visited, new)
        return jnp.stack([c[0] + 1, new[0], new[1], seen[0], seen[1]])

    out = lax.while_loop(going, layer, jnp.stack([jnp.int32(0), *source, *source]))
    return jnp.where(_nonempty(_and((out[3], out[4]), goal_bits)), out[0], -1)


def first_layer_hit(
    passable: Bits, goal: Bits, targets: Bits, num_layers: int, active: jax.Array | bool = True
) -> Bits:
    """Cells of ``targets`` in the first BFS layer from ``goal`` that touches ``targets``.

    The wavefront starts at ``goal`` (layer 0) and grows through ``passable``;
    the result is empty if no layer within ``num_layers`` reaches a target, or
    if not ``active``. The layers stop as soon as a target is hit or the
    wavefront dies out (nothing changes after either), so the loop is a
    ``while_loop`` (**deliberate exception to "no while_loop"**: the result
    equals the fixed ``num_layers``-layer scan, and under ``vmap`` the loop
    runs only as far as the slowest row, typically the enemy's distance to the
    player instead of 34 layers).
    """
    hit0 = _and(goal, targets)
    zero = jnp.int32(0)
    hit0 = (jnp.where(active, hit0[0], zero), jnp.where(active, hit0[1], zero))
    frontier0 = (jnp.where(active, goal[0], zero), jnp.where(active, goal[1], zero))

    # The carry is one int32[7] word vector (layer, frontier, visited, hit): under
    # vmap the loop selects and copies its carry leaf by leaf on every trip, and
    # this loop runs ~10 trips per acting enemy (specs/env-shell.md §7.7).
    def going(c):
        return (c[0] < num_layers) & ~_nonempty((c[5], c[6])) & _nonempty((c[1], c[2]))

    def layer(c):
        frontier, visited = (c[1], c[2]), (c[3], c[4])
        new = _andnot(_and(expand(frontier), passable), visited)
        seen, hit = _or(visited, new), _and(new, targets)
        return jnp.stack([c[0] + 1, new[0], new[1], seen[0], seen[1], hit[0], hit[1]])

    carry = jnp.stack([zero, *frontier0, *frontier0, *hit0])
    out = lax.while_loop(going, layer, carry)
    return out[5], out[6]


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

    # The 4 neighbours as int32[4] vectors (canonical order): under vmap each quantity
    # is one [rows, 4] kernel instead of four [rows] ones.
    r = pos[0] + _DIR_ROW
    c = pos[1] + _DIR_COL
    on_board = (r >= 0) & (r < GRID_SIZE) & (c >= 0) & (c < GRID_SIZE)
    bit = jnp.left_shift(jnp.int32(1), jnp.clip((r % 3) * 6 + c, 0, 17))
    lo = jnp.where(on_board & (r < 3), bit, 0)
    hi = jnp.where(on_board & (r >= 3), bit, 0)
    occ = ((lo & occupied[0]) | (hi & occupied[1])) != 0
    free = ((lo & usable[0]) | (hi & usable[1])) != 0

    # Tier 1: shortest path avoiding Occ (the neighbours' bits are distinct: sum = or).
    targets = (jnp.sum(jnp.where(free, lo, 0)), jnp.sum(jnp.where(free, hi, 0)))
    # Tier 1 can differ from tier 2 only if some other occupied cell is passable:
    # otherwise Occ is just e's own cell, and a shortest path back through e is
    # never a best one, so the tier-2 step (free, not occupied) is the tier-1 step.
    # Skipping the search then gives tier 1 "nothing" and tier 2 that same step.
    others = _andnot(_and(occupied, passable), bits_of_cell(pos))
    hit = first_layer_hit(usable, goal, targets, MAX_LAYERS - 1, can_path & _nonempty(others))
    hits = ((lo & hit[0]) | (hi & hit[1])) != 0

    # Tier 3: greedy Manhattan step among free neighbours, even away from t.
    dist3 = jnp.where(free, jnp.abs(r - player[0]) + jnp.abs(c - player[1]), 1000)

    # Choose: tier 1, else tier 2 (nothing if its step is occupied), else tier 3;
    # within a tier the first canonical direction wins.
    dirs = jnp.arange(NUM_DIRECTIONS, dtype=jnp.int32)
    is_t2 = dirs == tier2_dir
    tier1 = can_path & jnp.any(hits)
    tier2 = (tier2_dir < NUM_DIRECTIONS) & ~jnp.any(is_t2 & occ)
    chosen = jnp.where(
        tier1, hits, jnp.where(tier2, is_t2, free & (dist3 == jnp.min(dist3)))
    )  # tier 3: no free neighbour leaves every dist3 at 1000 and free all False
    first = jnp.min(jnp.where(chosen, dirs, NUM_DIRECTIONS))  # NUM_DIRECTIONS: stay
    row, col = pos[0], pos[1]
    for d in range(NUM_DIRECTIONS):
        row = row + jnp.where(first == d, int(_DIR_ROW[d]), 0)
        col = col + jnp.where(first == d, int(_DIR_COL[d]), 0)
    return jnp.stack([row, col])


_DIR_ROW = np.asarray(DIR_OFFSETS, np.int32)[:, 0]
_DIR_COL = np.asarray(DIR_OFFSETS, np.int32)[:, 1]


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

    def going(carry):
        i, frontier = carry[0], carry[1]
        return (i < MAX_LAYERS) & _nonempty(frontier)  # an empty layer changes nothing

    def layer(carry):
        i, frontier, visited, assigned, dirs = carry
        rem = _andnot(expand(frontier), assigned)  # cells whose best neighbour is in this layer
        new_dirs = []
        for d in range(NUM_DIRECTIONS):
            # e is in set d iff e + off(d) is in the frontier: shift the frontier opposite to d.
            m = _and(rem, _shift(frontier, _OPPOSITE[d]))
            rem = _andnot(rem, m)
            new_dirs.append(_or(dirs[d], m))
        assigned = _or(assigned, expand(frontier))
        new = _andnot(_and(expand(frontier), passable), visited)
        return i + 1, new, _or(visited, new), assigned, tuple(new_dirs)

    init_dirs = tuple((zero, zero) for _ in range(NUM_DIRECTIONS))
    carry = (jnp.int32(0), start, start, goal, init_dirs)
    *_, dirs = lax.while_loop(going, layer, carry)
    return tuple(w for d in dirs for w in d)


def open_board_direction_bits(player: jax.Array) -> tuple[jax.Array, ...]:
    """``tier2_direction_bits`` of a board where every cell is passable, in closed form.

    With nothing in the way the distance to the player is the Manhattan
    distance, so a cell's first canonical direction of minimal distance is the
    first of Up, Down, Left, Right that brings it closer: Up for every cell
    below the player's row, Down above it, and in the player's row Left east of
    the player, Right west of it (the player's own cell gets none). Glitches
    pass through blocks (rules §7.6), so this is their tier-2 map without a
    search (equal to the search for all 36 player cells: tests/env/test_pathfinding.py).
    The words are shifted row masks (no reduction over the cells).
    """
    player = player.astype(jnp.int32)
    pr, pc = player[0], player[1]

    def rows_below(n):  # (lo, hi) of the full rows 0..n-1 (0 <= n <= 6)
        return (
            jnp.left_shift(1, 6 * jnp.minimum(n, 3)) - 1,
            jnp.left_shift(1, 6 * jnp.maximum(n - 3, 0)) - 1,
        )

    up = rows_below(pr)
    down = _andnot((_WORD, _WORD), rows_below(pr + 1))

    def in_player_row(row_bits):  # a 6-bit row mask placed at the player's row
        word = jnp.left_shift(row_bits, (pr % 3) * 6)
        return jnp.where(pr < 3, word, 0), jnp.where(pr >= 3, word, 0)

    left = in_player_row(_ROW_BITS & ~(jnp.left_shift(2, pc) - 1))  # cols > pc
    right = in_player_row(jnp.left_shift(1, pc) - 1)  # cols < pc
    return (*up, *down, *left, *right)


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
