"""The standard transmission placement procedure (rules §8), vectorised (layer 2).

The reference tries up to 100 uniformly drawn cells for an *empty* cell out
of the line of fire, then up to 100 for any empty cell, then draws the enemy
type. Only the distribution is normative (rules §12.1), and it has a closed
form (rules §8 "Distribution note", specs/env-shell.md §2):

* with E1 = empty cells out of the line of fire, the preferred search
  succeeds with probability p(|E1|) = 1 − (1 − |E1|/36)^100 and then yields a
  uniform cell of E1 (each try is uniform over 36 cells, so conditioned on
  landing in E1 the cell is uniform over E1);
* otherwise the fallback succeeds with p(|E0|), E0 = all empty cells, with a
  uniform cell of E0;
* otherwise nothing is placed and no type is drawn.

So one placement = one uniform ``u`` deciding {E1, E0, none} with
probabilities p1, (1 − p1)·p0, (1 − p1)(1 − p0), one uniform pick inside the
chosen set, and one type draw. ``p`` comes from a host-side float32 table.

Random numbers come from the counter-based stream of ``rng.py``.

A batch places ``count`` transmissions one after another (later ones see the
earlier ones): a fixed-length ``lax.scan`` of ``max_count`` iterations whose
iterations ``>= count`` are no-ops. The line of fire depends only on the
player, enemies and blocks (transmissions do not shield, rules §8), none of
which changes inside a batch, so it is computed once.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hackmatrix_env.board import (
    append_transmission,
    block_map,
    cell_map,
    enemy_occupancy_map,
    transmission_map,
)
from hackmatrix_env.constants import GRID_SIZE, MAX_TRANSMISSIONS, NUM_CELLS, PLACEMENT_TRIES
from hackmatrix_env.rng import hash_uniform, rng_seed
from hackmatrix_env.types import GameState

# p(n) = 1 - (1 - n/36)^100: chance that 100 uniform tries hit a set of n cells (rules §8).
PLACEMENT_SUCCESS = (1.0 - (1.0 - np.arange(NUM_CELLS + 1) / NUM_CELLS) ** PLACEMENT_TRIES).astype(
    np.float32
)

_IDX = np.arange(GRID_SIZE)


def _line_bits(shields: jax.Array, p: jax.Array) -> jax.Array:
    """6-bit mask of the cells of a line (row or column) in the line of fire from index ``p``.

    ``shields``: 6-bit mask of shielding cells on the line. Cells up to and
    including the first shield on each side are in line; ``p`` itself too.
    """
    full = jnp.int32((1 << GRID_SIZE) - 1)
    upto_p = (jnp.int32(2) << p) - 1  # bits 0..p
    above = shields & ~upto_p
    first_above = above & -above  # lowest shield right of / above p
    right = jnp.where(above == 0, full, (first_above << 1) - 1) & ~upto_p
    below = shields & ((jnp.int32(1) << p) - 1)
    last_below = jnp.where(below == 0, 0, jnp.int32(1) << (31 - jax.lax.clz(below)))
    left = upto_p & ~jnp.where(below == 0, 0, last_below - 1)
    return right | left


def line_of_fire_rows(player_pos: jax.Array, shield_rows: jax.Array) -> jax.Array:
    """int32[6]: row masks of the cells in the player's line of fire for placement (rules §8).

    A cell is in line iff it shares the player's row or column and no cell
    strictly between the player and it is a shield (enemies and blocks;
    transmissions do not shield). The player's own cell counts as in line (it
    is never empty anyway).
    """
    pr = player_pos[0].astype(jnp.int32)
    pc = player_pos[1].astype(jnp.int32)
    row_ids = jnp.arange(GRID_SIZE, dtype=jnp.int32)
    row_line = _line_bits(shield_rows[pr], pc)
    col_shields = jnp.sum(((shield_rows >> pc) & 1) << row_ids, dtype=jnp.int32)
    col_line = _line_bits(col_shields, pr)
    return jnp.where(row_ids == pr, row_line, 0) | (((col_line >> row_ids) & 1) << pc)


def rows_of(cells: jax.Array) -> jax.Array:
    """int32[6]: row bit masks (bit c = col c) of a bool[6,6] cell map."""
    weights = jnp.asarray(1 << _IDX, jnp.int32)
    return jnp.sum(jnp.where(cells, weights[None, :], 0), axis=1, dtype=jnp.int32)


def select_cell(rows: jax.Array, k: jax.Array) -> jax.Array:
    """int32[2]: the k-th set cell (0-based, row-major) of row masks ``rows`` (int32[6]).

    Plain popcount arithmetic (no prefix-sum op, which is slow on CPU under vmap).
    """
    counts = [jax.lax.population_count(rows[r]) for r in range(GRID_SIZE)]
    row = jnp.int32(0)
    before = jnp.int32(0)  # set cells in rows < row
    running = jnp.int32(0)
    for r in range(GRID_SIZE - 1):
        running = running + counts[r]
        past = running <= k
        row = row + past.astype(jnp.int32)
        before = jnp.where(past, running, before)
    kk = k - before
    mask = rows[row]
    col = jnp.int32(0)
    for c in range(GRID_SIZE - 1):
        col = col + (jax.lax.population_count(mask & ((2 << c) - 1)) <= kk).astype(jnp.int32)
    return jnp.stack([row, col])


def _popcount_rows(rows: jax.Array) -> jax.Array:
    return jnp.sum(jax.lax.population_count(rows), dtype=jnp.int32)


def place_transmissions(
    key: jax.Array,
    state: GameState,
    count: jax.Array | int,
    from_task: jax.Array | bool = False,
    from_siphon: jax.Array | bool = False,
    *,
    max_count: int = MAX_TRANSMISSIONS,
) -> GameState:
    """Place ``count`` transmissions with the standard procedure (rules §8).

    Args:
        key: PRNG key (used once, to seed ``hash_uniform``).
        count: int32[] number to place (traced); iterations ``>= count`` are no-ops.
        from_task, from_siphon: provenance flags of the new transmissions.
        max_count: static scan length, the largest ``count`` the caller can
            pass (e.g. 8 for stage starts, 1 for the scheduled task).

    Returns the state with the transmissions appended in placement order.
    ``state.overflow`` is set when a placement found a cell but the pool was
    full, or when ``count > max_count`` while empty cells remain.
    """
    return place_transmissions_seeded(
        rng_seed(key), state, count, from_task, from_siphon, max_count=max_count
    )


def _placement_rows(state: GameState) -> tuple[jax.Array, jax.Array]:
    """int32[6] row masks: empty cells (rules §8) and cells in the player's line of fire."""
    player = cell_map(state.player.pos)
    enemies = enemy_occupancy_map(state.enemies)
    blocks = block_map(state.grid)
    free = rows_of(~(player | enemies | blocks | transmission_map(state.transmissions)))
    return free, line_of_fire_rows(state.player.pos, rows_of(enemies | blocks))


def _draw_placement(empty, in_line, table, u_choice, u_cell, u_type):
    """One transmission's (pos, kind, drawn) from three uniforms (rules §8).

    An empty cell out of the line of fire with the table's success probability for
    that many cells, else any empty cell with its own; ``drawn`` is False when both
    tries fail.
    """
    preferred = empty & ~in_line
    n1 = _popcount_rows(preferred)
    n0 = _popcount_rows(empty)
    p1, p0 = table[n1], table[n0]
    use_preferred = u_choice < p1
    use_fallback = ~use_preferred & (u_choice < p1 + (1.0 - p1) * p0)
    n = jnp.where(use_preferred, n1, n0)
    k = jnp.minimum((u_cell * n.astype(jnp.float32)).astype(jnp.int32), jnp.maximum(n - 1, 0))
    pos = select_cell(jnp.where(use_preferred, preferred, empty), k)
    kind = jnp.minimum((u_type * 4).astype(jnp.int32), 3)
    return pos, kind, use_preferred | use_fallback


def place_transmissions_seeded(
    seed: jax.Array,
    state: GameState,
    count: jax.Array | int,
    from_task: jax.Array | bool = False,
    from_siphon: jax.Array | bool = False,
    *,
    max_count: int = MAX_TRANSMISSIONS,
) -> GameState:
    """``place_transmissions`` drawing from the hash stream of ``seed`` (uint32[2])."""
    count = jnp.asarray(count, jnp.int32)
    free, in_line = _placement_rows(state)
    table = jnp.asarray(PLACEMENT_SUCCESS)
    draws = hash_uniform(seed, jnp.arange(max_count * 3, dtype=jnp.uint32)).reshape(max_count, 3)
    row_ids = jnp.arange(GRID_SIZE, dtype=jnp.int32)

    def place_one(carry, xs):
        trans, empty, overflow = carry  # empty: int32[6] row masks of empty cells (rules §8)
        i, u_choice, u_cell, u_type = xs
        pos, kind, drawn = _draw_placement(empty, in_line, table, u_choice, u_cell, u_type)
        ok = (i < count) & drawn
        trans, full = append_transmission(
            trans,
            pos=pos,
            countdown=1,
            kind=kind,
            from_task=from_task,
            from_siphon=from_siphon,
            valid=ok,
        )
        placed = ok & ~full
        empty = jnp.where(placed & (row_ids == pos[0]), empty & ~(1 << pos[1]), empty)
        return (trans, empty, overflow | full), None

    steps = jnp.arange(max_count, dtype=jnp.int32)
    (trans, empty, overflow), _ = jax.lax.scan(
        place_one, (state.transmissions, free, state.overflow), (steps, *draws.T)
    )
    leftover = (count > max_count) & (_popcount_rows(empty) > 0)
    return state.replace(transmissions=trans, overflow=overflow | leftover)


def place_transmission_batches(
    seeds: jax.Array,
    state: GameState,
    counts: jax.Array,
    from_task: tuple[bool, ...],
    from_siphon: tuple[bool, ...],
    max_counts: tuple[int, ...],
) -> GameState:
    """Several ``place_transmissions_seeded`` calls in a row, as one loop.

    Batch b places ``counts[b]`` transmissions (int32[K]) drawing from the hash
    stream of ``seeds[b]`` (uint32[K, 2]) with the static flags and scan length
    of entry b; the result equals the K calls made one after another (the line
    of fire does not depend on transmissions, and each batch's empty cells are
    the previous batch's minus its placements). One loop body serves every
    batch, so the placement is compiled once, and the loop stops after the
    last iteration that can place (the remaining ones are no-ops): under
    ``vmap`` it runs as far as the batch's longest row.
    """
    counts = jnp.asarray(counts, jnp.int32)
    starts = np.cumsum((0, *max_counts))  # first iteration of each batch
    batch_of = np.repeat(np.arange(len(max_counts)), max_counts)  # int[total]
    local_of = np.concatenate([np.arange(m) for m in max_counts])
    last_of = local_of == np.repeat(
        np.asarray(max_counts) - 1, max_counts
    )  # batch's last iteration
    free, in_line = _placement_rows(state)
    table = jnp.asarray(PLACEMENT_SUCCESS)
    row_ids = jnp.arange(GRID_SIZE, dtype=jnp.int32)
    task_flags = jnp.asarray(from_task, jnp.bool_)
    siphon_flags = jnp.asarray(from_siphon, jnp.bool_)
    ends = jnp.asarray(starts[:-1]) + jnp.minimum(counts, jnp.asarray(max_counts, jnp.int32))
    trips = jnp.max(jnp.where(counts > 0, ends, 0))

    def place_one(i, carry):
        trans, empty, overflow = carry  # empty: int32[6] row masks of empty cells (rules §8)
        b = jnp.asarray(batch_of, jnp.int32)[i]
        local = jnp.asarray(local_of, jnp.int32)[i]
        u_choice, u_cell, u_type = (
            hash_uniform(seeds[b], (local * 3 + j).astype(jnp.uint32)) for j in range(3)
        )
        count = counts[b]
        pos, kind, drawn = _draw_placement(empty, in_line, table, u_choice, u_cell, u_type)
        ok = (local < count) & drawn
        trans, full = append_transmission(
            trans,
            pos=pos,
            countdown=1,
            kind=kind,
            from_task=task_flags[b],
            from_siphon=siphon_flags[b],
            valid=ok,
        )
        placed = ok & ~full
        empty = jnp.where(placed & (row_ids == pos[0]), empty & ~(1 << pos[1]), empty)
        # A batch asked for more than its scan length: overflow if cells remain.
        max_b = jnp.asarray(max_counts, jnp.int32)[b]
        leftover = jnp.asarray(last_of)[i] & (count > max_b) & (_popcount_rows(empty) > 0)
        return trans, empty, overflow | full | leftover

    trans, _, overflow = jax.lax.fori_loop(
        0, trips, place_one, (state.transmissions, free, state.overflow)
    )
    return state.replace(transmissions=trans, overflow=overflow)
