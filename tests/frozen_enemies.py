"""Frozen copy of ``enemies.py`` at commit 2df481f: a test oracle, not game code.

The enemy phase as it was before its speed rewrites (early-exit searches, the
min-reduction processing order, packed hatching; specs/env-shell.md §7.2), kept
only so that tests/env/test_rewrites.py can check that the current functions equal
the ones they replaced, bit for bit, on random states. One update since: the random
inputs come from ``enemies.phase_seeds`` and the hash stream like the game's, so
both sides see the same random numbers (specs/env-shell.md §7.9).
"""

from __future__ import annotations

import frozen_pathfinding as pathfinding
import jax
import jax.numpy as jnp
from hackmatrix_env import history
from hackmatrix_env.batching import compute_where, ragged_fori_loop
from hackmatrix_env.board import block_map, compact_transmissions, num_alive, select_tree
from hackmatrix_env.constants import (
    ENEMY_MAX_HP,
    ENEMY_SPEED,
    GRID_SIZE,
    MAX_ENEMIES,
    MAX_TRANSMISSIONS,
    EnemyKind,
)
from hackmatrix_env.enemies import phase_seeds, processing_keys
from hackmatrix_env.placement import place_transmissions_seeded
from hackmatrix_env.types import EnvState
from jax import lax

_SLOTS = jnp.arange(MAX_ENEMIES, dtype=jnp.int32)


def hatch_transmissions(state: EnvState) -> EnvState:
    """Tick every transmission; countdown <= 1 hatches (rules §7.3).

    Hatched enemies (full hp, disabled = 1, flags copied, last_known = cell) are
    appended after the whole list is processed, in transmission order. A full
    enemy pool drops the surplus and sets ``overflow``.
    """
    t, e = state.transmissions, state.enemies
    hatch = t.alive & (t.countdown.astype(jnp.int32) <= 1)  # bool[T]
    rank = jnp.cumsum(hatch, dtype=jnp.int32) - 1
    slot = num_alive(e.alive) + rank  # int32[T] target enemy slot
    match = hatch[:, None] & (slot[:, None] == _SLOTS[None, :])  # bool[T, E]
    born = jnp.any(match, axis=0)  # bool[E]
    src = jnp.sum(jnp.where(match, jnp.arange(MAX_TRANSMISSIONS)[:, None], 0), axis=0)
    kind = t.kind[src]
    pos = t.pos[src]
    b2 = born[:, None]
    enemies = e.replace(
        kind=jnp.where(born, kind, e.kind),
        pos=jnp.where(b2, pos, e.pos),
        hp=jnp.where(born, jnp.asarray(ENEMY_MAX_HP)[kind], e.hp),
        disabled=jnp.where(born, jnp.int8(1), e.disabled),
        stunned=e.stunned & ~born,
        last_known=jnp.where(b2, pos, e.last_known),
        from_task=jnp.where(born, t.from_task[src], e.from_task),
        from_siphon=jnp.where(born, t.from_siphon[src], e.from_siphon),
        alive=e.alive | born,
    )
    lost = jnp.any(hatch & (slot >= MAX_ENEMIES))
    countdown = jnp.where(t.alive & ~hatch, t.countdown - 1, t.countdown).astype(jnp.int8)
    transmissions = compact_transmissions(t.replace(countdown=countdown, alive=t.alive & ~hatch))
    return state.replace(
        enemies=enemies, transmissions=transmissions, overflow=state.overflow | lost
    )


def processing_rank(seed: jax.Array, sub_step: int, first: jax.Array) -> jax.Array:
    """int8[E]: each slot's position in a uniform random processing order (rules §7.4).

    The slots in ``first`` (bool[E]) take positions 0..n-1 in uniformly random
    order, the others follow, so a loop over positions can stop after n. Ranks
    come from 31-bit random keys (ties broken by slot), computed with E x E
    comparisons instead of a sort, which is slow on CPU under vmap. The tie
    probability (about 2e-7 per order) is the only departure from uniform.
    """
    r = processing_keys(seed, sub_step, first)
    j = _SLOTS
    earlier = (r[None, :] < r[:, None]) | ((r[None, :] == r[:, None]) & (j[None, :] < j[:, None]))
    return jnp.sum(earlier, axis=1, dtype=jnp.int32).astype(jnp.int8)


_READY, _GLITCH, _CRYPTOG, _FAST = 1, 2, 4, 8  # per-slot flag bits in move_enemies


def move_enemies(order_seed: jax.Array, state: EnvState) -> EnvState:
    """Both movement sub-steps: attack if adjacent, else move (rules §7.4-7.6).

    One loop over the positions of sub-step 0 then sub-step 1; the acting slot
    is the one whose random rank equals the position, picked with a one-hot
    mask (no sort, no batched gather). Positions are updated immediately (§7.5 step 3). Inside
    the scan cells are int8 indices row * 6 + col and per-slot facts one int8
    bit field, so each iteration touches little memory.
    """
    e = state.enemies
    player = state.player.pos.astype(jnp.int32)
    kind = e.kind.astype(jnp.int32)
    ready = e.alive & (e.disabled == 0) & ~e.stunned  # bool[E]
    flags = (
        jnp.where(ready, _READY, 0)
        | jnp.where(kind == EnemyKind.GLITCH, _GLITCH, 0)
        | jnp.where(kind == EnemyKind.CRYPTOG, _CRYPTOG, 0)
        | jnp.where(jnp.asarray(ENEMY_SPEED)[kind] > 1, _FAST, 0)
    ).astype(jnp.int8)

    blocks = block_map(state.grid)
    pass_walk = pathfinding.bits_from_map(~blocks)
    pass_glitch = pathfinding.bits_from_map(jnp.ones_like(blocks))
    tier2_walk = pathfinding.tier2_direction_bits(pass_walk, player)
    tier2_glitch = pathfinding.tier2_direction_bits(pass_glitch, player)
    trans_bits = _pool_bits(state.transmissions.pos, state.transmissions.alive)
    # Sub-step 0: every alive enemy may act; sub-step 1: only viruses (speed 2).
    fast = e.alive & (jnp.asarray(ENEMY_SPEED)[kind] > 1)
    ranks = jnp.stack(
        [processing_rank(order_seed, 0, e.alive), processing_rank(order_seed, 1, fast)]
    )
    counts = jnp.stack([num_alive(e.alive), num_alive(fast)])  # positions that can act

    consts = (
        ranks,
        counts[0],
        flags,
        e.alive,
        player,
        pass_walk,
        pass_glitch,
        tier2_walk,
        tier2_glitch,
        trans_bits,
    )

    def act(t, carry, consts):
        cell, attacked, hp, last_known, occ_lo, occ_hi = carry  # cell: int8[E] row*6+col
        (ranks, count0, flags, alive, player) = consts[:5]
        (pass_walk, pass_glitch, tier2_walk, tier2_glitch, trans_bits) = consts[5:]
        s = (t >= count0).astype(jnp.int32)  # sub-step of position t
        k = t - s * count0  # position inside the sub-step
        me = jnp.where(s == 1, ranks[1], ranks[0]) == k.astype(jnp.int8)  # bool[E] one-hot
        here_cell = jnp.sum(jnp.where(me, cell, 0), dtype=jnp.int32)
        f = jnp.sum(jnp.where(me, flags, 0), dtype=jnp.int32)
        was_attacked = jnp.any(me & attacked)
        acts = ((f & _READY) != 0) & ~was_attacked & ((s == 0) | ((f & _FAST) != 0))
        glitch = (f & _GLITCH) != 0
        here = jnp.stack([here_cell // GRID_SIZE, here_cell % GRID_SIZE])
        dist = jnp.sum(jnp.abs(here - player))
        attack = acts & (dist == 1)
        hp = jnp.where(attack, jnp.maximum(hp - 1, 0), hp)
        attacked = attacked | (me & attack)

        passable = (
            jnp.where(glitch, pass_glitch[0], pass_walk[0]),
            jnp.where(glitch, pass_glitch[1], pass_walk[1]),
        )
        tier2 = pathfinding.lookup_direction(
            tuple(jnp.where(glitch, g, w) for g, w in zip(tier2_glitch, tier2_walk, strict=True)),
            here,
        )
        occupied = (occ_lo | trans_bits[0], occ_hi | trans_bits[1])
        target = pathfinding.enemy_next_cell(here, player, passable, occupied, tier2)
        new = jnp.where(acts & (dist != 1), target, here)
        moved = jnp.any(new != here)
        new_cell = (new[0] * GRID_SIZE + new[1]).astype(jnp.int8)

        # The old cell stays occupied if another alive enemy stands there.
        others = jnp.any(alive & ~me & (cell == here_cell.astype(jnp.int8)))
        old_bits = pathfinding.bits_of_cell(here, moved & ~others)
        new_bits = pathfinding.bits_of_cell(new, moved)
        occ_lo = (occ_lo & ~old_bits[0]) | new_bits[0]
        occ_hi = (occ_hi & ~old_bits[1]) | new_bits[1]
        cell = jnp.where(me, new_cell, cell)
        in_line = (new[0] == player[0]) | (new[1] == player[1])
        seen = ((f & _CRYPTOG) != 0) & moved & in_line  # rules §7.5 step 4
        last_known = jnp.where(me & seen, new_cell, last_known)
        return cell, attacked, hp, last_known, occ_lo, occ_hi

    def to_cell(pos):
        pos = pos.astype(jnp.int32)
        return (pos[:, 0] * GRID_SIZE + pos[:, 1]).astype(jnp.int8)

    def to_pos(cell):
        cell = cell.astype(jnp.int32)
        return jnp.stack([cell // GRID_SIZE, cell % GRID_SIZE], axis=-1).astype(jnp.int8)

    occ = _pool_bits(e.pos, e.alive)
    carry = (
        to_cell(e.pos),
        jnp.zeros(MAX_ENEMIES, jnp.bool_),
        state.player.hp.astype(jnp.int32),
        to_cell(e.last_known),
        occ[0],
        occ[1],
    )
    # Positions past the last enemy that can act are no-ops, so the loop stops there.
    out = ragged_fori_loop(counts[0] + counts[1], act, carry, consts)
    cell, _, hp, last_known, _, _ = out
    # Slots whose value did not change keep their stored pos exactly (dead slots included).
    moved = cell != carry[0]
    seen = last_known != carry[3]
    pos = jnp.where(moved[:, None], to_pos(cell), e.pos)
    last = jnp.where(seen[:, None], to_pos(last_known), e.last_known)
    enemies = e.replace(pos=pos, last_known=last)
    player_state = state.player.replace(hp=hp.astype(jnp.int8))
    return state.replace(enemies=enemies, player=player_state)


def _pool_bits(pos: jax.Array, alive: jax.Array) -> pathfinding.Bits:
    """Bitboard of the cells of a pool's alive entries."""
    lo, hi = jax.vmap(pathfinding.bits_of_cell)(pos, alive)
    return (
        lax.reduce(lo, jnp.int32(0), lax.bitwise_or, (0,)),
        lax.reduce(hi, jnp.int32(0), lax.bitwise_or, (0,)),
    )


def run_scheduled_task(seed: jax.Array, state: EnvState) -> EnvState:
    """One scheduled transmission when due and CALM is off (rules §7.8)."""
    due = ~state.calm_flag & (state.turn >= state.next_task_turn)
    state = place_transmissions_seeded(
        seed, state, due.astype(jnp.int32), from_task=True, max_count=1
    )
    next_turn = jnp.where(due, state.turn + state.task_interval, state.next_task_turn)
    return state.replace(next_task_turn=next_turn.astype(jnp.int32))


def place_owed_spawns(seed: jax.Array, state: EnvState) -> EnvState:
    """Place the owed siphon transmissions, then owe none (rules §7.9).

    Owed spawns are rare and the placement is long, so it runs through
    ``batching.compute_where``: under vmap only the rows that owe spawns pay.
    """

    def place(seed, state):
        return place_transmissions_seeded(
            seed, state, state.pending_siphon_spawns, from_siphon=True, max_count=MAX_TRANSMISSIONS
        )

    snapshots = state.history.snapshots
    light = state.replace(history=state.history.replace(snapshots=None))
    light = compute_where(state.pending_siphon_spawns > 0, place, (seed, light), light)
    state = light.replace(history=light.history.replace(snapshots=snapshots))
    return state.replace(pending_siphon_spawns=jnp.int32(0))


def clear_statuses(state: EnvState) -> EnvState:
    """disabled -1 (min 0), stun cleared, for every enemy (rules §7.10)."""
    e = state.enemies
    disabled = jnp.maximum(e.disabled.astype(jnp.int32) - 1, 0).astype(jnp.int8)
    return state.replace(enemies=e.replace(disabled=disabled, stunned=jnp.zeros_like(e.stunned)))


def run_enemy_phase(
    key: jax.Array, state: EnvState, active: jax.Array | bool = True
) -> tuple[EnvState, jax.Array]:
    """The enemy phase that follows a turn-ending action (rules §7.1-7.11).

    ``active`` False returns ``state`` untouched (for callers that select; the
    history buffer is then not copied).
    Returns (state, ran): ``ran`` is True iff a real (non-skipped) phase ran; a
    skipped phase only clears STEP.
    """
    order_seed, seed_sched, seed_owed = phase_seeds(key)  # rules §12.1
    active = jnp.asarray(active, jnp.bool_)
    real = active & ~state.step_flag

    phased = state.replace(turn=(state.turn + 1).astype(jnp.int32))
    phased = hatch_transmissions(phased)
    phased = move_enemies(order_seed, phased)
    phased = run_scheduled_task(seed_sched, phased)
    phased = place_owed_spawns(seed_owed, phased)
    phased = clear_statuses(phased)

    out = select_tree(real, phased.replace(history=state.history), state)
    out = out.replace(step_flag=state.step_flag & ~active)
    out = history.push_snapshot(out, enabled=real)
    return out, real
