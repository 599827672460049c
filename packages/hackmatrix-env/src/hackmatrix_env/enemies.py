"""The phases of the enemy phase (rules §7), layer 3.

``game.enemy_phase`` runs them in their exact order: STEP skip (§7.1); ``next_turn``;
``hatch_transmissions`` (§7.3); ``move_enemies``: sub-steps 0 and 1, each a fresh uniform
processing order (§7.4-7.6); ``place_scheduled_and_owed``: scheduled task (§7.8) and owed
siphon spawns (§7.9); ``clear_statuses`` (§7.10). The snapshot (§7.11) is pushed by the env
shell, and the player's death is not checked here.

Both sub-steps run as one loop over processing positions: the ready (alive,
not disabled, not stunned) enemies of sub-step 0 in a random order, then the
ready viruses of sub-step 1 in a fresh one (an enemy that attacked in
sub-step 0 is a no-op there). Sub-step 1 has no positions when no virus
exists, so S (§7.4) needs no explicit branch. The loop is the caller's ``loop``
(``game.enemy_phase`` passes ``batching.ragged_fori_loop``: under ``vmap`` each game loops
only as far as its own enemy count, not the batch's largest). Each iteration runs at most one
tier-1 BFS (the acting enemy's); the tier-2 maps ignore occupancy and are
computed once per phase, one per pass type (glitch / non-glitch).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from hackmatrix_env import pathfinding
from hackmatrix_env.board import block_map, cond_where, fori_loop, num_alive
from hackmatrix_env.constants import (
    ENEMY_MAX_HP,
    ENEMY_SPEED,
    GRID_SIZE,
    MAX_ENEMIES,
    MAX_TRANSMISSIONS,
    EnemyKind,
)
from hackmatrix_env.placement import place_transmission_batches
from hackmatrix_env.rng import hash_bits, rng_seed
from hackmatrix_env.types import GameState

_SLOTS = jnp.arange(MAX_ENEMIES, dtype=jnp.int32)


def _pool_word(alive: jax.Array) -> jax.Array:
    """uint32[]: bit i set iff slot i is set in ``alive`` (bool[32])."""
    return jnp.sum(
        jnp.where(alive, jnp.uint32(1) << _SLOTS.astype(jnp.uint32), 0), dtype=jnp.uint32
    )


_VALID_BIT = 1 << 18  # packed transmission word: marks an occupied slot


def _move_words(words: jax.Array, move: jax.Array, first_slot: jax.Array) -> jax.Array:
    """uint32[32]: the ``move`` entries of ``words`` in order from slot ``first_slot``, zeros elsewhere.

    Entry i goes to ``first_slot`` + (number of moved entries before i); slots past
    the end drop it. One-hot [source, destination] compare and a max over sources
    (at most one source per destination; words are nonzero): no prefix-sum op,
    gather or scatter (slow on CPU under ``vmap``; a shift network measured 5x slower).
    """
    below = (jnp.uint32(1) << _SLOTS.astype(jnp.uint32)) - jnp.uint32(1)
    before = jax.lax.population_count(_pool_word(move) & below).astype(jnp.int32)
    dest = first_slot + before  # int32[32]
    hit = move[:, None] & (dest[:, None] == _SLOTS[None, :])  # bool[src, dst]
    return jnp.max(jnp.where(hit, words[:, None], jnp.uint32(0)), axis=0)


def hatch_transmissions(state: GameState) -> GameState:
    """Tick every transmission; countdown <= 1 hatches (rules §7.3).

    Hatched enemies (full hp, disabled = 1, flags copied, last_known = cell) are
    appended after the whole list is processed, in transmission order. A full
    enemy pool drops the surplus and sets ``overflow``.

    Each transmission is packed into one uint32 word (cell, kind, flags,
    countdown); the hatched words move to the first free enemy slots, the
    others are compacted in place (``_move_words``).
    """
    t, e = state.transmissions, state.enemies
    u32 = jnp.uint32
    hatch = t.alive & (t.countdown.astype(jnp.int32) <= 1)  # bool[T]
    stay = t.alive & ~hatch
    pos = t.pos.astype(jnp.int32)
    countdown = jnp.where(stay, t.countdown.astype(jnp.int32) - 1, 0)
    words = (
        (pos[:, 0] * GRID_SIZE + pos[:, 1]).astype(u32)
        | (t.kind.astype(u32) << 6)
        | (t.from_task.astype(u32) << 8)
        | (t.from_siphon.astype(u32) << 9)
        | ((countdown.astype(u32) & u32(0xFF)) << 10)
        | u32(_VALID_BIT)
    )
    # Hatched: appended from the first free enemy slot; the others compacted in place.
    n_enemies = num_alive(e.alive)
    born_words = _move_words(words, hatch, n_enemies)
    kept = _move_words(words, stay, jnp.int32(0))
    born = born_words != 0
    cell = (born_words & u32(63)).astype(jnp.int32)
    born_pos = jnp.stack([cell // GRID_SIZE, cell % GRID_SIZE], axis=-1).astype(jnp.int8)
    kind = ((born_words >> 6) & u32(3)).astype(jnp.int32)
    max_hp = jnp.asarray(ENEMY_MAX_HP, jnp.int32)
    hp = jnp.where(
        kind == 0,
        max_hp[0],
        jnp.where(kind == 1, max_hp[1], jnp.where(kind == 2, max_hp[2], max_hp[3])),
    )
    b2 = born[:, None]
    enemies = e.replace(
        kind=jnp.where(born, kind, e.kind).astype(jnp.int8),
        pos=jnp.where(b2, born_pos, e.pos),
        hp=jnp.where(born, hp, e.hp).astype(jnp.int8),
        disabled=jnp.where(born, jnp.int8(1), e.disabled),
        stunned=e.stunned & ~born,
        last_known=jnp.where(b2, born_pos, e.last_known),
        from_task=jnp.where(born, ((born_words >> 8) & 1) == 1, e.from_task),
        from_siphon=jnp.where(born, ((born_words >> 9) & 1) == 1, e.from_siphon),
        alive=e.alive | born,
    )
    lost = n_enemies + jnp.sum(hatch, dtype=jnp.int32) > MAX_ENEMIES
    # Survivors: countdown - 1.
    alive = kept != 0
    cell = (kept & u32(63)).astype(jnp.int32)
    transmissions = t.replace(
        pos=jnp.stack([cell // GRID_SIZE, cell % GRID_SIZE], axis=-1).astype(jnp.int8),
        countdown=jax.lax.bitcast_convert_type(
            ((kept >> 10) & u32(0xFF)).astype(jnp.uint8), jnp.int8
        ),
        kind=((kept >> 6) & u32(3)).astype(jnp.int8),
        from_task=((kept >> 8) & 1) == 1,
        from_siphon=((kept >> 9) & 1) == 1,
        alive=alive,
    )
    return state.replace(
        enemies=enemies, transmissions=transmissions, overflow=state.overflow | lost
    )


def phase_seeds(key: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(order, scheduled-task, owed-spawn) seeds, uint32[2] each, from the key's data.

    Every random choice of the enemy phase (rules §12.1 #10-12) reads the hash
    stream (``rng.hash_bits``) of one of these seeds. Only the
    distributions are normative (rules §12.1), and each ``jax.random`` call
    site costs a rolled threefry loop (5 trips of ~16 small kernels under
    ``vmap`` on CPU): this replaced a 4-way split, two 32-word draws and two
    seed draws, ~8 % of the whole step (specs/env-shell.md §7.9).
    """
    words = hash_bits(rng_seed(key), jnp.arange(6, dtype=jnp.uint32))
    return words[0:2], words[2:4], words[4:6]


def processing_keys(seed: jax.Array, sub_step: int, first: jax.Array) -> jax.Array:
    """uint32[E]: random sort keys of a uniform processing order (rules §7.4).

    The slots in ``first`` (bool[E]) get 31-bit random keys (hash stream of
    ``seed`` at positions ``sub_step * E + slot``), the others 2^31:
    processing ``first`` in increasing (key, slot) order is uniformly random
    (the tie probability, about 2e-7 per order, is the only departure from
    uniform). ``move_enemies`` picks the next slot with a min over the keys not
    yet processed, so no sort and no rank matrix is ever built.
    """
    counters = jnp.arange(MAX_ENEMIES, dtype=jnp.uint32) + jnp.uint32(sub_step * MAX_ENEMIES)
    r = hash_bits(seed, counters) >> 1
    return jnp.where(first, r, jnp.uint32(1 << 31))


def _next_in_order(keys: jax.Array, done: jax.Array) -> jax.Array:
    """bool[E] one-hot: the slot with the smallest (key, slot) among those not ``done``."""
    avail = jnp.where(done, jnp.uint32(0xFFFFFFFF), keys)
    low = avail == jnp.min(avail)
    first = jnp.min(jnp.where(low, _SLOTS, MAX_ENEMIES))
    return low & (first == _SLOTS)


_FAST_KINDS = tuple(k for k in range(len(ENEMY_SPEED)) if ENEMY_SPEED[k] > 1)  # speed-2 kinds
_READY, _GLITCH, _CRYPTOG, _FAST = 1, 2, 4, 8  # per-slot flag bits in move_enemies


def move_enemies(order_seed: jax.Array, state: GameState, loop=fori_loop) -> GameState:
    """Both movement sub-steps: attack if adjacent, else move (rules §7.4-7.6).

    One loop over the positions of sub-step 0 then sub-step 1; the acting slot
    is the unprocessed one with the smallest random key (``processing_keys``),
    picked as a one-hot mask (no sort, no rank matrix, no batched gather). Positions are
    updated immediately (§7.5 step 3). Inside the loop cells are int8 indices row * 6 + col
    and per-slot facts one int8 bit field, so each iteration touches little memory.
    ``loop``: ``fori_loop`` or anything with its signature and result.
    """
    e = state.enemies
    player = state.player.pos.astype(jnp.int32)
    kind = e.kind.astype(jnp.int32)
    ready = e.alive & (e.disabled == 0) & ~e.stunned  # bool[E]
    flags = (
        jnp.where(ready, _READY, 0)
        | jnp.where(kind == EnemyKind.GLITCH, _GLITCH, 0)
        | jnp.where(kind == EnemyKind.CRYPTOG, _CRYPTOG, 0)
    ).astype(jnp.int8)

    blocks = block_map(state.grid)
    pass_walk = pathfinding.bits_from_map(~blocks)
    pass_glitch = pathfinding.bits_from_map(jnp.ones_like(blocks))
    tier2_walk = pathfinding.tier2_direction_bits(pass_walk, player)
    tier2_glitch = pathfinding.open_board_direction_bits(player)  # glitches ignore blocks
    trans_bits = _pool_bits(state.transmissions.pos, state.transmissions.alive)
    # Sub-step 0: every ready enemy acts; sub-step 1: only viruses (speed 2).
    fast = e.alive & jnp.any(jnp.stack([kind == k for k in _FAST_KINDS]), axis=0)
    flags = flags | jnp.where(fast, _FAST, 0).astype(jnp.int8)
    # Only ready enemies get loop positions: a disabled or stunned enemy's turn is a
    # no-op, and leaving it out keeps the others' relative order (each slot's key
    # does not depend on the set), so the result is the same with ~13 % fewer
    # positions (the hatchlings of this phase are all disabled).
    order_keys = jnp.stack(
        [processing_keys(order_seed, 0, ready), processing_keys(order_seed, 1, fast & ready)]
    )
    counts = jnp.stack([num_alive(ready), num_alive(fast & ready)])  # positions that act

    consts = (
        order_keys,
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
        cell, attacked, hp, last_known, occ_lo, occ_hi, done = carry  # cell: int8[E] row*6+col
        (order_keys, count0, flags, alive, player) = consts[:5]
        (pass_walk, pass_glitch, tier2_walk, tier2_glitch, trans_bits) = consts[5:]
        s = (t >= count0).astype(jnp.int32)  # sub-step of position t
        done = done & (t != count0)  # sub-step 1 starts a fresh order
        me = _next_in_order(jnp.where(s == 1, order_keys[1], order_keys[0]), done)  # one-hot
        done = done | me
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
        return cell, attacked, hp, last_known, occ_lo, occ_hi, done

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
        jnp.zeros(MAX_ENEMIES, jnp.bool_),
    )
    # Positions past the last enemy that can act are no-ops, so the loop stops there.
    out = loop(counts[0] + counts[1], act, carry, consts)
    cell, _, hp, last_known, _, _, _ = out
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


def place_scheduled_and_owed(
    seed_sched: jax.Array, seed_owed: jax.Array, state: GameState, sparse=cond_where
) -> GameState:
    """The scheduled task, then the owed siphon spawns (rules §7.8-7.9), as one placement.

    The task places one transmission when due and CALM is off, and sets the next due turn;
    the owed spawns are placed, then none are owed. Both are placements with their own seed (uint32[2], ``phase_seeds``), one after the
    other; here they are one ``placement.place_transmission_batches`` loop (batch 0: the
    task's transmission, batch 1: the owed ones) evaluated by ``sparse`` (``cond_where`` or
    ``batching.compute_where``) for the rows that need either (about one turn in a dozen), so
    the placement is compiled once for the enemy phase. The placement writes only the
    transmissions and the overflow flag, so only those are the sparse job's result: under
    ``vmap`` the job scatters back (and its loop carries) 7 leaves, not the whole state
    (specs/env-shell.md §7.6).
    """
    due = ~state.calm_flag & (state.turn >= state.next_task_turn)
    owed = state.pending_siphon_spawns

    def place(seed_sched, seed_owed, state, due):
        seeds = jnp.stack([seed_sched, seed_owed])
        counts = jnp.stack([due.astype(jnp.int32), state.pending_siphon_spawns])
        placed = place_transmission_batches(
            seeds, state, counts, (True, False), (False, True), (1, MAX_TRANSMISSIONS)
        )
        return placed.transmissions, placed.overflow

    transmissions, overflow = sparse(
        due | (owed > 0),
        place,
        (seed_sched, seed_owed, state, due),
        (state.transmissions, state.overflow),
    )
    state = state.replace(transmissions=transmissions, overflow=overflow)
    next_turn = jnp.where(due, state.turn + state.task_interval, state.next_task_turn)
    return state.replace(
        next_task_turn=next_turn.astype(jnp.int32), pending_siphon_spawns=jnp.int32(0)
    )


def next_turn(state: GameState) -> GameState:
    """``turn + 1``: a real enemy phase starts (rules §7.2 step 1)."""
    return state.replace(turn=(state.turn + 1).astype(jnp.int32))


def clear_statuses(state: GameState) -> GameState:
    """disabled -1 (min 0), stun cleared, for every enemy (rules §7.10)."""
    e = state.enemies
    disabled = jnp.maximum(e.disabled.astype(jnp.int32) - 1, 0).astype(jnp.int8)
    return state.replace(enemies=e.replace(disabled=disabled, stunned=jnp.zeros_like(e.stunned)))
