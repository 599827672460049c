"""The siphon action (rules §5) and its quality bookkeeping (interface §4.6), layer 3."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hackmatrix_env.board import cell_map
from hackmatrix_env.constants import (
    CROSS_OFFSETS,
    GRID_SIZE,
    MAX_OWNED_LIST,
    MIN_TASK_INTERVAL,
    NUM_PROGRAMS,
    SIPHON_TASK_DELAY,
    BlockKind,
    Content,
    Resource,
)
from hackmatrix_env.types import GameState

_IDX = jnp.arange(GRID_SIZE, dtype=jnp.int32)
_NO_POINTS = 1 << 20  # sort sentinel for "no data block in this cross slot"


def owned_program_map(state: GameState) -> jax.Array:
    """bool[23]: programs in the owned list (duplicates allowed in the list)."""
    listed = jnp.arange(MAX_OWNED_LIST) < state.num_owned.astype(jnp.int32)
    prog = state.owned_list.astype(jnp.int32)
    hits = listed[:, None] & (prog[:, None] == jnp.arange(NUM_PROGRAMS)[None, :])
    return jnp.any(hits, axis=0)


def siphon_reach(state: GameState) -> jax.Array:
    """bool[6, 6]: the cells a siphon now would process, the unsiphoned cells of the player's
    cross (rules §5 step 4). Evaluations read it to tell block siphons from resource pickups."""
    pos = state.player.pos.astype(jnp.int32)
    cross = (jnp.abs(_IDX[:, None] - pos[0]) + jnp.abs(_IDX[None, :] - pos[1])) <= 1
    return cross & ~state.grid.siphoned


def _shifted(x: jax.Array, dr: int, dc: int, fill) -> jax.Array:
    """y[r, c] = x[r + dr, c + dc] (``fill`` off the board)."""
    p = jnp.pad(x, 1, constant_values=fill)
    return p[1 + dr : 1 + dr + GRID_SIZE, 1 + dc : 1 + dc + GRID_SIZE]


def _sort5(v: list[jax.Array]) -> list[jax.Array]:
    """Sorting network for 5 values (9 comparators), elementwise over arrays."""
    v = list(v)
    for i, j in ((0, 1), (3, 4), (2, 4), (2, 3), (0, 3), (0, 2), (1, 4), (1, 3), (1, 2)):
        lo, hi = jnp.minimum(v[i], v[j]), jnp.maximum(v[i], v[j])
        v[i], v[j] = lo, hi
    return v


def siphon_yields(state: GameState):
    """Yield(Q) for every standing cell Q (interface §4.6).

    Returns (credits int32[6,6], energy int32[6,6], points int32[5,6,6] sorted
    ascending with a large sentinel for "none", programs int32[6,6] bit set of
    unowned programs). A cell holding a block yields nothing.
    """
    g = state.grid
    owned = owned_program_map(state)
    block = g.content == Content.BLOCK
    usable = ~g.siphoned
    pts = jnp.where(usable & block & (g.block_kind == BlockKind.DATA), g.block_points, 0)
    is_pts = usable & block & (g.block_kind == BlockKind.DATA)
    prog = g.block_program.astype(jnp.int32)
    new_prog = usable & block & (g.block_kind == BlockKind.PROGRAM) & ~owned[jnp.clip(prog, 0, 22)]
    prog_bit = jnp.where(new_prog, jnp.left_shift(1, jnp.clip(prog, 0, 30)), 0)
    amount = g.resource_amount.astype(jnp.int32)
    plain = usable & ~block
    credits = jnp.where(plain & (g.resource_kind == Resource.CREDITS), amount, 0)
    energy = jnp.where(plain & (g.resource_kind == Resource.ENERGY), amount, 0)

    c = jnp.zeros((GRID_SIZE, GRID_SIZE), jnp.int32)
    e = jnp.zeros_like(c)
    s = jnp.zeros_like(c)
    vals = []
    for dr, dc in CROSS_OFFSETS.tolist():  # 5 static offsets
        c = c + _shifted(credits, dr, dc, 0)
        e = e + _shifted(energy, dr, dc, 0)
        s = s | _shifted(prog_bit, dr, dc, 0)
        here = _shifted(is_pts, dr, dc, False)
        vals.append(jnp.where(here, _shifted(pts.astype(jnp.int32), dr, dc, 0), _NO_POINTS))
    vals = jnp.stack(_sort5(vals))
    c = jnp.where(block, 0, c)
    e = jnp.where(block, 0, e)
    s = jnp.where(block, 0, s)
    vals = jnp.where(block[None], _NO_POINTS, vals)
    return c, e, vals, s


def siphon_quality(state: GameState) -> tuple[jax.Array, jax.Array]:
    """(missed_credits, missed_energy) int32 of a siphon at the player's cell (interface §4.6).

    Both are 0 unless a candidate strictly dominates the player's position.
    """
    c, e, vals, s = siphon_yields(state)
    pos = state.player.pos.astype(jnp.int32)
    pr, pc = jnp.clip(pos[0], 0, 5), jnp.clip(pos[1], 0, 5)
    c0, e0, v0, s0 = c[pr, pc], e[pr, pc], vals[:, pr, pc], s[pr, pc]
    valued = jnp.any(v0 < _NO_POINTS) | (s0 != 0)

    g = state.grid
    block = g.content == Content.BLOCK
    covers = jnp.ones((GRID_SIZE, GRID_SIZE), jnp.bool_)
    for dr, dc in CROSS_OFFSETS.tolist():  # B = unsiphoned blocks in the cross of P
        br, bc = pos[0] + dr, pos[1] + dc
        inb = (br >= 0) & (br < GRID_SIZE) & (bc >= 0) & (bc < GRID_SIZE)
        brc, bcc = jnp.clip(br, 0, 5), jnp.clip(bc, 0, 5)
        in_b = inb & block[brc, bcc] & ~g.siphoned[brc, bcc]
        near = jnp.abs(_IDX[:, None] - br) + jnp.abs(_IDX[None, :] - bc) <= 1
        covers = covers & (~in_b | near)
    candidate = ~block & jnp.where(valued, covers, True)

    same = jnp.all(vals == v0[:, None, None], axis=0) & (s == s0)
    dominates = candidate & same & (c >= c0) & (e >= e0) & ((c > c0) | (e > e0))
    missed_c = jnp.maximum(jnp.max(jnp.where(dominates, c, c0)), c0) - c0
    missed_e = jnp.maximum(jnp.max(jnp.where(dominates, e, e0)), e0) - e0
    found = jnp.any(dominates)
    return jnp.where(found, missed_c, 0), jnp.where(found, missed_e, 0)


def apply_siphon(state: GameState) -> GameState:
    """Siphon the cross around the player (rules §5 steps 2-6). Validity: siphons >= 1.

    Every unsiphoned cell of the cross (centre, Up, Down, Left, Right) is
    processed: blocks give score / programs and owe their spawn count (then 0;
    question blocks are revealed), other cells give their resources. All cross
    cells become siphoned; the centre gets the siphon-centre mark.
    """
    g = state.grid
    p = state.player
    pos = p.pos.astype(jnp.int32)
    todo = siphon_reach(state)
    block = g.content == Content.BLOCK
    blk = todo & block
    plain = todo & ~block

    data = blk & (g.block_kind == BlockKind.DATA)
    score = p.score + jnp.sum(jnp.where(data, g.block_points, 0), dtype=jnp.int32)
    pending = state.pending_siphon_spawns + jnp.sum(
        jnp.where(blk, g.block_spawn, 0), dtype=jnp.int32
    )
    amount = g.resource_amount.astype(jnp.int32)
    credits = p.credits + jnp.sum(
        jnp.where(plain & (g.resource_kind == Resource.CREDITS), amount, 0), dtype=jnp.int32
    )
    energy = p.energy + jnp.sum(
        jnp.where(plain & (g.resource_kind == Resource.ENERGY), amount, 0), dtype=jnp.int32
    )

    # Programs are acquired in cross order (centre, Up, Down, Left, Right).
    owned = owned_program_map(state)
    owned_list = state.owned_list
    num = state.num_owned.astype(jnp.int32)
    overflow = state.overflow
    slots = jnp.arange(MAX_OWNED_LIST)
    for dr, dc in CROSS_OFFSETS.tolist():  # 5 static cells
        r, c = pos[0] + dr, pos[1] + dc
        inb = (r >= 0) & (r < GRID_SIZE) & (c >= 0) & (c < GRID_SIZE)
        rc, cc = jnp.clip(r, 0, 5), jnp.clip(c, 0, 5)
        prog = g.block_program[rc, cc].astype(jnp.int32)
        progc = jnp.clip(prog, 0, NUM_PROGRAMS - 1)
        gain = inb & blk[rc, cc] & (g.block_kind[rc, cc] == BlockKind.PROGRAM) & ~owned[progc]
        fits = num < MAX_OWNED_LIST
        owned_list = jnp.where((slots == num) & gain & fits, prog.astype(jnp.int8), owned_list)
        overflow = overflow | (gain & ~fits)
        owned = owned | ((jnp.arange(NUM_PROGRAMS) == progc) & gain)
        num = num + (gain & fits).astype(jnp.int32)

    grid = g.replace(
        block_spawn=jnp.where(blk, jnp.int8(0), g.block_spawn),
        block_question=g.block_question & ~blk,
        resource_kind=jnp.where(plain, jnp.int8(Resource.NONE), g.resource_kind),
        resource_amount=jnp.where(plain, jnp.int8(0), g.resource_amount),
        siphoned=g.siphoned | todo,  # the same as the whole cross
        center=g.center | cell_map(pos),
    )
    player = p.replace(score=score, credits=credits, energy=energy, siphons=p.siphons - 1)
    interval = jnp.maximum(state.task_interval - 1, MIN_TASK_INTERVAL)
    return state.replace(
        grid=grid,
        player=player,
        owned_list=owned_list,
        num_owned=num.astype(jnp.int8),
        overflow=overflow,
        pending_siphon_spawns=pending.astype(jnp.int32),
        task_interval=interval.astype(jnp.int32),
        next_task_turn=(state.next_task_turn + SIPHON_TASK_DELAY).astype(jnp.int32),
    )
