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

Random numbers: ``jax.random`` (threefry) costs about 1 µs per env for a few
dozen numbers under ``vmap`` on CPU, far more than the rules themselves. Bulk
draws therefore come from ``hash_uniform``: a counter-based stream (the
murmur3 finaliser of ``(s0 + i·φ) xor s1``) whose two seed words are one
``jax.random.bits`` draw from the call's key (specs/env-shell.md §1).

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
from hackmatrix_env.types import EnvState

# p(n) = 1 - (1 - n/36)^100: chance that 100 uniform tries hit a set of n cells (rules §8).
PLACEMENT_SUCCESS = (1.0 - (1.0 - np.arange(NUM_CELLS + 1) / NUM_CELLS) ** PLACEMENT_TRIES).astype(
    np.float32
)

_IDX = np.arange(GRID_SIZE)
_GOLDEN = np.uint32(0x9E3779B9)


def rng_seed(key: jax.Array) -> jax.Array:
    """uint32[2]: seed words for ``hash_bits`` / ``hash_uniform``, one draw from ``key``."""
    return jax.random.bits(key, (2,), jnp.uint32)


def hash_bits(seed: jax.Array, counter: jax.Array) -> jax.Array:
    """uint32[...]: the counter-based stream at positions ``counter`` (uint32/int32[...]).

    murmur3 ``fmix32`` of ``(seed[0] + counter·φ) xor seed[1]``; distinct
    counters give (pseudo-)independent words, and the seed comes from a JAX key.
    """
    x = seed[0] + jnp.asarray(counter).astype(jnp.uint32) * jnp.uint32(_GOLDEN)
    x = x ^ seed[1]
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


def hash_uniform(seed: jax.Array, counter: jax.Array) -> jax.Array:
    """float32[...] uniform in [0, 1) with 24 random bits, from ``hash_bits``."""
    return (hash_bits(seed, counter) >> 8).astype(jnp.float32) * jnp.float32(2.0**-24)


def line_of_fire_map(player_pos: jax.Array, shield_map: jax.Array) -> jax.Array:
    """bool[6,6]: cells in the player's line of fire for placement (rules §8).

    A cell is in the line iff it shares the player's row or column and no cell
    strictly between the player and it is in ``shield_map`` (enemies and
    blocks; transmissions do not shield). The player's own cell counts as in
    line (it is never empty anyway).
    """
    pr = player_pos[0].astype(jnp.int32)
    pc = player_pos[1].astype(jnp.int32)
    idx = jnp.asarray(_IDX, jnp.int32)

    def clear_along(line: jax.Array, p: jax.Array) -> jax.Array:
        # line: bool[6] shields along the row (or column); p: the player's index on it.
        # Exclusive prefix counts P[k] = #shields before k; between(a, b) = P[b] - P[a + 1].
        prefix = jnp.concatenate([jnp.zeros(1, jnp.int32), jnp.cumsum(line, dtype=jnp.int32)])
        lo = jnp.minimum(idx, p)
        hi = jnp.maximum(idx, p)
        between = prefix[hi] - prefix[jnp.minimum(lo + 1, hi)]
        return between == 0

    row_clear = clear_along(shield_map[pr], pc)  # bool[6] over columns of the player's row
    col_clear = clear_along(shield_map[:, pc], pr)  # bool[6] over rows of the player's column
    in_row = (idx[:, None] == pr) & row_clear[None, :]
    in_col = (idx[None, :] == pc) & col_clear[:, None]
    return in_row | in_col


def _pick_uniform(cells: jax.Array, u: jax.Array) -> jax.Array:
    """int32[2]: the floor(u·n)-th True cell of ``cells`` (bool[6,6]) in row-major order."""
    flat = cells.reshape(-1)
    n = jnp.sum(flat, dtype=jnp.int32)
    k = jnp.minimum((u * n).astype(jnp.int32), jnp.maximum(n - 1, 0))
    idx = jnp.argmax(jnp.cumsum(flat, dtype=jnp.int32) > k).astype(jnp.int32)
    return jnp.stack([idx // GRID_SIZE, idx % GRID_SIZE])


def place_transmissions(
    key: jax.Array,
    state: EnvState,
    count: jax.Array | int,
    from_task: jax.Array | bool = False,
    from_siphon: jax.Array | bool = False,
    *,
    max_count: int = MAX_TRANSMISSIONS,
) -> EnvState:
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
    count = jnp.asarray(count, jnp.int32)
    grid = state.grid
    player = cell_map(state.player.pos)
    enemies = enemy_occupancy_map(state.enemies)
    blocks = block_map(grid)
    free = ~(player | enemies | blocks)  # empty before transmissions (rules §8)
    in_line = line_of_fire_map(state.player.pos, enemies | blocks)
    table = jnp.asarray(PLACEMENT_SUCCESS)
    seed = rng_seed(key)
    draws = hash_uniform(seed, jnp.arange(max_count * 3, dtype=jnp.uint32)).reshape(max_count, 3)

    def place_one(carry, xs):
        trans, overflow = carry
        i, (u_choice, u_cell, u_type) = xs
        empty = free & ~transmission_map(trans)
        preferred = empty & ~in_line
        p1 = table[jnp.sum(preferred, dtype=jnp.int32)]
        p0 = table[jnp.sum(empty, dtype=jnp.int32)]
        use_preferred = u_choice < p1
        use_fallback = ~use_preferred & (u_choice < p1 + (1.0 - p1) * p0)
        cells = jnp.where(use_preferred, preferred, empty)
        pos = _pick_uniform(cells, u_cell)
        kind = jnp.minimum((u_type * 4).astype(jnp.int32), 3)
        ok = (i < count) & (use_preferred | use_fallback)
        trans, full = append_transmission(
            trans,
            pos=pos,
            countdown=1,
            kind=kind,
            from_task=from_task,
            from_siphon=from_siphon,
            valid=ok,
        )
        return (trans, overflow | full), None

    steps = jnp.arange(max_count, dtype=jnp.int32)
    (trans, overflow), _ = jax.lax.scan(
        place_one, (state.transmissions, state.overflow), (steps, tuple(draws.T))
    )
    leftover = (count > max_count) & jnp.any(free & ~transmission_map(trans))
    return state.replace(transmissions=trans, overflow=overflow | leftover)
