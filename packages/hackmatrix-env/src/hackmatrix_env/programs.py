"""The 23 programs (actions 5-27): validity mask and effects (programs.md §2-§4).

No ``lax.switch``: under ``vmap`` a switch with a batched index runs every
branch (style.md §3). Instead each program is a row in a few tables below, and
the effect is one pass of shared primitives whose inputs are selected by
program index:

* one enemy-pool update: positions (PUSH/PULL, one routine with a direction
  sign), a per-program hit map with HIT(amount)+stun (DEBUG, ROW, COL, HACK,
  ANTI-V, D_BOM splash), POLY's new kind/hp, an erase map (CRASH, WARP, D_BOM
  target), then SWEEP and one stable compaction;
* one transmission-pool update: erase map (CRASH, WARP), DELAY countdowns;
* one grid update (CRASH blocks, REDUC spawn counts);
* table-driven player/flag arithmetic;
* UNDO as a final select against the restored snapshot.

Kill accounting follows interface.md §4.7 / programs.md §1.4. Design notes,
every [FLAG] quirk and the UNDO depth argument: specs/programs.md.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hackmatrix_env import pathfinding
from hackmatrix_env.board import any_true
from hackmatrix_env.constants import (
    ATK_PLUS_USES_PER_STAGE,
    DELAY_TURNS,
    ENEMY_MAX_HP,
    GRID_SIZE,
    MAX_ENEMIES,
    MAX_HP,
    MAX_OWNED_LIST,
    MAX_TRANSMISSIONS,
    NUM_PROGRAMS,
    NUM_STAGES,
    PROGRAM_COST,
    BlockKind,
    Content,
    EnemyKind,
    Program,
)
from hackmatrix_env.history import restore_snapshot
from hackmatrix_env.rng import hash_bits, rng_seed
from hackmatrix_env.types import Enemies, GameState, Grid, Snapshot, Transmissions

P = Program
_I8_MAX = 127

# --- Tables by program index (programs.md §2, §4) -------------------------------------------
# Which hit map a program applies (row of the stack built in _hit_maps), -1 = none.
HIT_NONE, HIT_ON_BLOCK, HIT_ROW, HIT_COL, HIT_SIPHONED, HIT_VIRUS, HIT_SPLASH = -1, 0, 1, 2, 3, 4, 5
PROGRAM_HIT_MAP = np.full(NUM_PROGRAMS, HIT_NONE, np.int32)
PROGRAM_HIT_MAP[[P.DEBUG, P.ROW, P.COL, P.HACK, P.ANTI_V, P.D_BOM]] = [
    HIT_ON_BLOCK, HIT_ROW, HIT_COL, HIT_SIPHONED, HIT_VIRUS, HIT_SPLASH,
]  # fmt: skip
# HIT amount: True = fixed 1 (ANTI-V, D_BOM splash), False = the attack value A (§9 item 7).
PROGRAM_HIT_FIXED_ONE = np.zeros(NUM_PROGRAMS, bool)
PROGRAM_HIT_FIXED_ONE[[P.ANTI_V, P.D_BOM]] = True
# Programs ending in SWEEP() (enemies at hp <= 0 removed and counted).
PROGRAM_SWEEPS = np.zeros(NUM_PROGRAMS, bool)
PROGRAM_SWEEPS[[P.POLY, P.DEBUG, P.ROW, P.COL, P.D_BOM, P.ANTI_V, P.HACK]] = True
# Player/flag arithmetic: [energy gain, siphons gain, attack gain, atk_uses gain, score per (8-stage)]
PROGRAM_GAIN = np.zeros((NUM_PROGRAMS, 5), np.int32)
PROGRAM_GAIN[P.EXCH, 0] = 4
PROGRAM_GAIN[P.SIPH_PLUS, 1] = 1
PROGRAM_GAIN[P.ATK_PLUS, 2] = 1
PROGRAM_GAIN[P.ATK_PLUS, 3] = 1
PROGRAM_GAIN[P.SCORE, 4] = 1
# Flags a program sets: [show, calm, step].
PROGRAM_SETS_FLAG = np.zeros((NUM_PROGRAMS, 3), bool)
PROGRAM_SETS_FLAG[P.SHOW, 0] = True
PROGRAM_SETS_FLAG[P.CALM, 1] = True
PROGRAM_SETS_FLAG[P.STEP, 2] = True

# All per-program rows in one int32 table, so run_program does a single lookup:
# [cost C, cost E, hit map, hit fixed 1, sweeps, 5 gains, 3 flags].
_T_COST, _T_HIT, _T_FIXED, _T_SWEEP, _T_GAIN, _T_FLAG = 0, 2, 3, 4, 5, 10
PROGRAM_TABLE = np.concatenate(
    [
        PROGRAM_COST,
        PROGRAM_HIT_MAP[:, None],
        PROGRAM_HIT_FIXED_ONE[:, None],
        PROGRAM_SWEEPS[:, None],
        PROGRAM_GAIN,
        PROGRAM_SETS_FLAG,
    ],
    axis=1,
).astype(np.int32)

_ROWS, _COLS = np.indices((GRID_SIZE, GRID_SIZE))
_EARLIER_E = np.tril(np.ones((MAX_ENEMIES, MAX_ENEMIES), bool), k=-1)  # [i, j]: j before i
_EARLIER_T = np.tril(np.ones((MAX_TRANSMISSIONS, MAX_TRANSMISSIONS), bool), k=-1)
# Hash-stream counters (rng.hash_bits): POLY uses 0..E-1 (slot = list position), WARP this.
_WARP_COUNTER = np.uint32(MAX_ENEMIES)


def is_turn_ending(prog_idx: jax.Array) -> jax.Array:
    """bool[]: the program ends the turn (only WAIT, programs.md §3 step 6)."""
    return prog_idx == P.WAIT


# --- Geometry helpers -------------------------------------------------------------------------


def _in_neighbourhood8(pos: jax.Array, center: jax.Array) -> jax.Array:
    """bool[N]: pos[N, 2] lies in the 8-neighbourhood of center[2] (not the centre itself)."""
    d = jnp.abs(pos.astype(jnp.int32) - center.astype(jnp.int32))
    return (d[:, 0] <= 1) & (d[:, 1] <= 1) & (d.sum(-1) > 0)


def _neighbourhood8_map(center: jax.Array) -> jax.Array:
    """bool[6, 6]: on-board cells of the 8-neighbourhood of center[2] (programs.md §1.1)."""
    dr = jnp.abs(jnp.asarray(_ROWS) - center[0].astype(jnp.int32))
    dc = jnp.abs(jnp.asarray(_COLS) - center[1].astype(jnp.int32))
    return (dr <= 1) & (dc <= 1) & (dr + dc > 0)


def _cell_values(cell_map: jax.Array, pos: jax.Array) -> jax.Array:
    """cell_map[6, 6] read at pos[N, 2]."""
    return cell_map[pos[:, 0], pos[:, 1]]


def _cell_id(pos: jax.Array) -> jax.Array:
    """int32[N]: row-major cell index of pos[N, 2]."""
    pos = pos.astype(jnp.int32)
    return pos[:, 0] * GRID_SIZE + pos[:, 1]


def _first_on_cell(cell: jax.Array, alive: jax.Array, earlier: np.ndarray) -> jax.Array:
    """bool[N]: alive and no alive entry earlier in list order shares the cell (rules §2.7)."""
    same = (cell[:, None] == cell[None, :]) & alive[None, :]
    return alive & ~jnp.any(same & jnp.asarray(earlier), axis=1)


def _uniform_below(bits: jax.Array, n: jax.Array) -> jax.Array:
    """int32[...]: floor(bits * n / 2^32), uniform on 0..n-1 up to n/2^32 (n < 2^16)."""
    n = jnp.asarray(n).astype(jnp.uint32)
    hi = (bits >> 16) * n
    lo = (bits & jnp.uint32(0xFFFF)) * n
    return ((hi + (lo >> 16)) >> 16).astype(jnp.int32)


# --- Mask (programs.md §2) --------------------------------------------------------------------


def owned_programs(state: GameState) -> jax.Array:
    """bool[23]: program k is in owned_list[:num_owned] (duplicates allowed).

    One OR over the list of ``1 << id`` words, then the word's bits: under vmap
    a [list, 23] match reduced over the list cost ~20x more (0.84 ms per 4,096 rows).
    """
    listed = jnp.arange(MAX_OWNED_LIST) < state.num_owned.astype(jnp.int32)
    ids = state.owned_list.astype(jnp.int32)
    ok = listed & (ids >= 0) & (ids < NUM_PROGRAMS)
    bits = jnp.where(ok, jnp.left_shift(jnp.int32(1), jnp.clip(ids, 0, NUM_PROGRAMS - 1)), 0)
    word = jax.lax.reduce(bits, jnp.int32(0), jax.lax.bitwise_or, (0,))
    return (jnp.right_shift(word, jnp.arange(NUM_PROGRAMS, dtype=jnp.int32)) & 1) == 1


def _hit_maps(state: GameState, splash_center: jax.Array) -> jax.Array:
    """bool[6, E]: the per-program HIT targets (rows = HIT_* constants), alive enemies only."""
    e, pl = state.enemies, state.player
    pos = e.pos
    maps = jnp.stack(
        [
            _cell_values(state.grid.content == Content.BLOCK, pos),  # DEBUG: on a block cell
            pos[:, 0] == pl.pos[0],  # ROW
            pos[:, 1] == pl.pos[1],  # COL
            _cell_values(state.grid.siphoned, pos),  # HACK: on a siphoned cell
            e.kind == EnemyKind.VIRUS,  # ANTI-V
            _in_neighbourhood8(pos, splash_center),  # D_BOM splash
        ]
    )
    return maps & e.alive[None, :]


def _applicable(state: GameState, undo_available: jax.Array) -> jax.Array:
    """bool[23]: the applicability column of programs.md §2 (not ownership or cost).

    ``undo_available``: the UNDO ring holds a snapshot (``history.has_snapshot``).
    """
    e, t, g, pl = state.enemies, state.transmissions, state.grid, state.player
    any_enemy = jnp.any(e.alive)
    any_trans = jnp.any(t.alive)
    # The HIT tests of DEBUG/ROW/COL/ANTI-V as per-slot compares and a bitboard (no
    # gather of the cell maps at the enemies' cells, unlike _hit_maps: the mask runs
    # densely every step).
    epos = e.pos.astype(jnp.int32)
    block_lo, block_hi = pathfinding.bits_from_map(g.content == Content.BLOCK)
    enemy_lo, enemy_hi = jax.vmap(pathfinding.bits_of_cell)(e.pos, e.alive)
    on_block = ((enemy_lo & block_lo) | (enemy_hi & block_hi)) != 0
    area = _neighbourhood8_map(pl.pos)
    crash_ok = (
        jnp.any(area & (g.content == Content.BLOCK))
        | jnp.any(e.alive & _in_neighbourhood8(e.pos, pl.pos))
        | jnp.any(t.alive & _in_neighbourhood8(t.pos, pl.pos))
    )
    true = jnp.bool_(True)
    cond = {
        P.PUSH: any_enemy,
        P.PULL: any_enemy,
        P.CRASH: crash_ok,
        P.WARP: any_enemy | any_trans,
        P.POLY: any_enemy,
        P.WAIT: true,
        P.DEBUG: jnp.any(on_block),
        P.ROW: jnp.any(e.alive & (epos[:, 0] == pl.pos[0])),
        P.COL: jnp.any(e.alive & (epos[:, 1] == pl.pos[1])),
        P.UNDO: undo_available,
        P.STEP: true,
        P.SIPH_PLUS: true,
        P.EXCH: true,  # credits >= 4 is the affordability test itself
        P.SHOW: ~state.show_flag,
        P.RESET: pl.hp < MAX_HP,
        P.CALM: ~state.calm_flag,
        P.D_BOM: any_true(e.alive & (e.kind == EnemyKind.DAEMON)),
        P.DELAY: any_trans,
        P.ANTI_V: any_true(e.alive & (e.kind == EnemyKind.VIRUS)),
        P.SCORE: state.stage < NUM_STAGES,
        P.REDUC: jnp.any((g.content == Content.BLOCK) & ~g.siphoned & (g.block_spawn > 0)),
        P.ATK_PLUS: state.atk_uses < ATK_PLUS_USES_PER_STAGE,
        P.HACK: jnp.any(g.siphoned),
    }
    return jnp.stack([jnp.asarray(cond[p], jnp.bool_) for p in P])


def can_afford(state: GameState) -> jax.Array:
    """bool[23]: credits >= C and energy >= E (programs.md §2)."""
    cost = jnp.asarray(PROGRAM_COST)
    return (state.player.credits >= cost[:, 0]) & (state.player.energy >= cost[:, 1])


def program_mask(state: GameState, undo_available: jax.Array | bool) -> jax.Array:
    """bool[23]: owned, affordable and applicable (programs.md §2, interface.md §2.4)."""
    undo_available = jnp.asarray(undo_available, jnp.bool_)
    return owned_programs(state) & can_afford(state) & _applicable(state, undo_available)


# --- Effect primitives ------------------------------------------------------------------------


def _push_pull_targets(
    pos: jax.Array, alive: jax.Array, player_pos: jax.Array, pull: jax.Array
) -> jax.Array:
    """int32[E, 2]: positions after PUSH (pull False) or PULL (pull True), programs.md §4.1-4.2.

    Pass 1 uses the closed forms of the spec (checked against the candidate
    rule in the tests); pass 2 is first-claimer-wins in list order, which in
    closed form is: an enemy moves iff no earlier enemy with a target has the
    same target (the first one with a given target always moves).
    """
    p = pos.astype(jnp.int32)
    pp = player_pos.astype(jnp.int32)
    away = jnp.sign(p - pp)  # PUSH direction; PULL uses -away
    push_t = jnp.clip(p + away, 0, GRID_SIZE - 1)
    push_has = jnp.any(push_t != p, axis=-1)
    dist = jnp.abs(p - pp)
    manhattan = dist.sum(-1)
    diagonal = (dist[:, 0] == 1) & (dist[:, 1] == 1)
    pull_t = jnp.where(
        diagonal[:, None],
        jnp.stack([jnp.broadcast_to(pp[0], p[:, 1].shape), p[:, 1]], -1),
        p - away,
    )
    pull_has = manhattan >= 2  # orthogonally adjacent (1) and the player's own cell (0) stay
    target = jnp.where(pull, pull_t, push_t)
    has = alive & jnp.where(pull, pull_has, push_has)
    tid = _cell_id(target)
    same = (tid[:, None] == tid[None, :]) & has[None, :]
    moves = has & ~jnp.any(same & jnp.asarray(_EARLIER_E), axis=1)
    return jnp.where(moves[:, None], target, p)


def _compact_words(words: list[jax.Array], keep: jax.Array) -> tuple[list[jax.Array], jax.Array]:
    """Stable compaction of packed uint32[N] words: kept entries first, the rest zero (rules §2.7).

    One scatter builds the source slot of every output slot, then one gather
    per word. (Measured against argsort and an [N, N] one-hot select: this is
    the fastest under vmap on CPU.)
    """
    n = keep.shape[0]
    dest = jnp.where(keep, jnp.cumsum(keep) - 1, n)
    src = jnp.zeros(n, jnp.int32).at[dest].set(jnp.arange(n, dtype=jnp.int32), mode="drop")
    valid = jnp.arange(n) < keep.sum()
    return [jnp.where(valid, w[src], jnp.uint32(0)) for w in words], valid


def _u8(x: jax.Array) -> jax.Array:
    return jax.lax.bitcast_convert_type(x.astype(jnp.int8), jnp.uint8).astype(jnp.uint32)


def _i8(x: jax.Array) -> jax.Array:
    return jax.lax.bitcast_convert_type((x & jnp.uint32(0xFF)).astype(jnp.uint8), jnp.int8)


def _pos_from_id(cell: jax.Array) -> jax.Array:
    cell = cell.astype(jnp.int32)
    return jnp.stack([cell // GRID_SIZE, cell % GRID_SIZE], -1).astype(jnp.int8)


def _compact_enemies(e: Enemies, keep: jax.Array) -> Enemies:
    """Stable compaction, freed slots zeroed (board.py convention).

    The 9 fields are packed into two uint32 words per enemy, so the compaction
    moves two arrays instead of nine.
    """
    u32 = jnp.uint32
    a = (
        e.kind.astype(u32)
        | (_cell_id(e.pos).astype(u32) << 2)
        | (_cell_id(e.last_known).astype(u32) << 8)
        | (e.stunned.astype(u32) << 14)
        | (e.from_task.astype(u32) << 15)
        | (e.from_siphon.astype(u32) << 16)
    )
    b = _u8(e.hp) | (_u8(e.disabled) << 8)
    (a, b), valid = _compact_words([a, b], keep)
    return Enemies(
        kind=(a & u32(3)).astype(jnp.int8),
        pos=jnp.where(valid[:, None], _pos_from_id((a >> 2) & u32(63)), jnp.int8(0)),
        hp=_i8(b),
        disabled=_i8(b >> 8),
        stunned=((a >> 14) & u32(1)).astype(bool),
        last_known=jnp.where(valid[:, None], _pos_from_id((a >> 8) & u32(63)), jnp.int8(0)),
        from_task=((a >> 15) & u32(1)).astype(bool),
        from_siphon=((a >> 16) & u32(1)).astype(bool),
        alive=valid,
    )


def _compact_transmissions(t: Transmissions, keep: jax.Array) -> Transmissions:
    """Stable compaction of the transmission pool (one packed word per entry)."""
    u32 = jnp.uint32
    w = (
        _cell_id(t.pos).astype(u32)
        | (t.kind.astype(u32) << 6)
        | (t.from_task.astype(u32) << 8)
        | (t.from_siphon.astype(u32) << 9)
        | (_u8(t.countdown) << 10)
    )
    (w,), valid = _compact_words([w], keep)
    return Transmissions(
        pos=jnp.where(valid[:, None], _pos_from_id(w & u32(63)), jnp.int8(0)),
        countdown=_i8(w >> 10),
        kind=((w >> 6) & u32(3)).astype(jnp.int8),
        from_task=((w >> 8) & u32(1)).astype(bool),
        from_siphon=((w >> 9) & u32(1)).astype(bool),
        alive=valid,
    )


def _row(x: jax.Array, i: jax.Array) -> jax.Array:
    """x[i] for a non-negative traced i (no negative-index handling ops)."""
    return jax.lax.dynamic_index_in_dim(x, i, keepdims=False)


def _select_tree(pred: jax.Array, on_true, on_false):
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


# --- run_program ------------------------------------------------------------------------------


def run_program(
    key: jax.Array,
    state: GameState,
    prog_idx: jax.Array,
    undo_snapshot: Snapshot,
) -> tuple[GameState, jax.Array, jax.Array]:
    """Pay the cost, then apply the effect of program ``prog_idx`` (programs.md §3-§4).

    Only called for valid programs (the caller selects on ``program_mask``);
    on an invalid one the result is well-defined garbage, never NaN.
    WAIT's effect is only its cost: the caller runs the enemy phase.

    Returns (state, kills int32[], exit_reached bool[]); exit_reached is WARP
    landing on ``exit_pos`` (the caller completes the stage, rules §9).

    ``undo_snapshot`` is the UNDO ring's newest snapshot (``history.undo_top``), which UNDO
    restores; the ring itself is popped by the env shell (``history.record_step``).
    """
    seed = rng_seed(key)  # from the key's data; WARP and POLY read the hash stream
    p = jnp.clip(jnp.asarray(prog_idx, jnp.int32), 0, NUM_PROGRAMS - 1)
    row = _row(jnp.asarray(PROGRAM_TABLE), p)  # int32[13]: this program's table row
    is_ = lambda prog: p == prog  # noqa: E731
    e, t, g, pl = state.enemies, state.transmissions, state.grid, state.player
    i32 = jnp.int32
    epos = e.pos.astype(i32)
    tpos = t.pos.astype(i32)
    ppos = pl.pos.astype(i32)
    ecell, tcell = _cell_id(epos), _cell_id(tpos)
    e_first = _first_on_cell(ecell, e.alive, _EARLIER_E)
    t_first = _first_on_cell(tcell, t.alive, _EARLIER_T)
    e_counts = e_first & ~e.from_task  # this entry decides its cell's erase count
    t_counts = t_first & ~t.from_task

    # CRASH (§4.3): erase enemies/transmissions on the 8-neighbourhood, count <= 1 per cell.
    crash_e = e.alive & _in_neighbourhood8(epos, ppos)
    crash_t = t.alive & _in_neighbourhood8(tpos, ppos)
    crash_kills = jnp.sum(crash_e & e_counts) + jnp.sum(crash_t & t_counts)

    # WARP (§4.4): one uniform entry over enemies then transmissions; erase only that kind.
    n_e = e.alive.sum()
    n_t = t.alive.sum()
    k = _uniform_below(hash_bits(seed, _WARP_COUNTER), n_e + n_t)
    pick_enemy = k < n_e
    dest = jnp.where(
        pick_enemy,
        _row(epos, jnp.clip(k, 0, MAX_ENEMIES - 1)),
        _row(tpos, jnp.clip(k - n_e, 0, MAX_TRANSMISSIONS - 1)),
    )
    dest_cell = dest[0] * GRID_SIZE + dest[1]
    warp_e = e.alive & (ecell == dest_cell) & pick_enemy
    warp_t = t.alive & (tcell == dest_cell) & ~pick_enemy
    warp_kills = jnp.any(warp_e & e_counts).astype(i32) + jnp.any(warp_t & t_counts).astype(i32)

    # D_BOM (§4.17): nearest daemon (ties: list order), ERASE_ENEMY, splash on its 8-neighbours.
    daemon = e.alive & (e.kind == EnemyKind.DAEMON)
    d_dist = jnp.where(daemon, jnp.abs(epos - ppos).sum(-1), 1 << 20)
    d_idx = jnp.argmin(d_dist)
    dbom_e = daemon & (jnp.arange(MAX_ENEMIES) == d_idx)
    dbom_kills = jnp.sum(dbom_e & ~e.from_task)

    erase_e = (is_(P.CRASH) & crash_e) | (is_(P.WARP) & warp_e) | (is_(P.D_BOM) & dbom_e)
    erase_t = (is_(P.CRASH) & crash_t) | (is_(P.WARP) & warp_t)
    erase_kills = jnp.where(
        is_(P.CRASH),
        crash_kills,
        jnp.where(is_(P.WARP), warp_kills, jnp.where(is_(P.D_BOM), dbom_kills, 0)),
    )

    # HIT(amount) + stun on the program's hit map (DEBUG, ROW, COL, HACK, ANTI-V, D_BOM splash).
    hit_row = row[_T_HIT]
    hit_maps = _hit_maps(state, _row(epos, d_idx))
    hit = _row(hit_maps, jnp.maximum(hit_row, 0)) & (hit_row >= 0) & ~erase_e
    amount = jnp.where(row[_T_FIXED] > 0, 1, pl.attack.astype(i32))
    hp = e.hp.astype(i32)
    hp_hit = jnp.where(hit, jnp.maximum(hp - amount, 0), hp)

    # POLY (§4.5): one draw per enemy in list order, uniform over the 3 other kinds.
    kind = e.kind.astype(i32)
    r = _uniform_below(hash_bits(seed, jnp.arange(MAX_ENEMIES, dtype=jnp.uint32)), 3)
    poly_kind = r + (r >= kind)
    max_hp = jnp.asarray(ENEMY_MAX_HP, i32)
    poly_hp = max_hp[poly_kind] - (max_hp[kind] - hp)
    is_poly = is_(P.POLY) & e.alive
    new_kind = jnp.where(is_poly, poly_kind, kind)
    new_hp = jnp.where(is_poly, poly_hp, hp_hit)
    to_cryptog = is_poly & (poly_kind == EnemyKind.CRYPTOG)
    new_last_known = jnp.where(to_cryptog[:, None], e.pos, e.last_known)

    # PUSH / PULL (§4.1-4.2): positions only.
    moved = _push_pull_targets(epos, e.alive, ppos, is_(P.PULL))
    new_epos = jnp.where(is_(P.PUSH) | is_(P.PULL), moved, epos)

    # SWEEP (§1.4): remove hp <= 0 (programs that end with it), count non-scheduled.
    dead = e.alive & ~erase_e & (row[_T_SWEEP] > 0) & (new_hp <= 0)
    kills = (erase_kills + jnp.sum(dead & ~e.from_task)).astype(i32)
    enemies = Enemies(
        kind=new_kind.astype(jnp.int8),
        pos=new_epos.astype(jnp.int8),
        hp=jnp.clip(new_hp, 0, _I8_MAX).astype(jnp.int8),
        disabled=e.disabled,
        stunned=e.stunned | (hit & (new_hp > 0)),
        last_known=new_last_known.astype(jnp.int8),
        from_task=e.from_task,
        from_siphon=e.from_siphon,
        alive=e.alive,
    )
    keep_e = e.alive & ~erase_e & ~dead
    enemies = _compact_enemies(enemies, keep_e)

    # Transmissions: erase (CRASH, WARP), DELAY +3 to every countdown (§4.18).
    countdown = t.countdown.astype(i32) + jnp.where(is_(P.DELAY) & t.alive, DELAY_TURNS, 0)
    countdown_overflow = jnp.any(countdown > _I8_MAX)
    transmissions = t.replace(countdown=jnp.minimum(countdown, _I8_MAX).astype(jnp.int8))
    keep_t = t.alive & ~erase_t
    transmissions = _compact_transmissions(transmissions, keep_t)

    # Grid: CRASH destroys blocks in the 8-neighbourhood (keeps resources/siphoned/centre);
    # REDUC lowers every unsiphoned block's spawn count (§4.3, §4.21).
    is_block = g.content == Content.BLOCK
    smashed = is_(P.CRASH) & is_block & _neighbourhood8_map(ppos)
    zero8 = jnp.int8(0)
    reduced = is_(P.REDUC) & is_block & ~g.siphoned
    spawn = jnp.where(reduced, jnp.maximum(g.block_spawn - 1, 0), g.block_spawn).astype(jnp.int8)
    grid = Grid(
        content=jnp.where(smashed, jnp.int8(Content.EMPTY), g.content),
        block_kind=jnp.where(smashed, jnp.int8(BlockKind.DATA), g.block_kind),
        block_question=g.block_question & ~smashed,
        block_points=jnp.where(smashed, zero8, g.block_points),
        block_program=jnp.where(smashed, zero8, g.block_program),
        block_spawn=jnp.where(smashed, zero8, spawn),
        resource_kind=g.resource_kind,
        resource_amount=g.resource_amount,
        siphoned=g.siphoned,
        center=g.center,
    )

    # Player and flags: cost first (§3 step 3), then the table-driven gains.
    cost = row[_T_COST : _T_COST + 2]
    gain = row[_T_GAIN : _T_GAIN + 5]
    flags = row[_T_FLAG : _T_FLAG + 3] > 0
    stage_points = NUM_STAGES - state.stage.astype(i32)
    attack = pl.attack.astype(i32) + gain[2]
    player = pl.replace(
        pos=jnp.where(is_(P.WARP), dest, ppos).astype(jnp.int8),
        hp=jnp.where(is_(P.RESET), jnp.int8(MAX_HP), pl.hp),
        credits=pl.credits - cost[0],
        energy=pl.energy - cost[1] + gain[0],
        siphons=pl.siphons + gain[1],
        score=pl.score + gain[4] * stage_points,
        attack=jnp.minimum(attack, _I8_MAX).astype(jnp.int8),
    )
    effect = state.replace(
        player=player,
        enemies=enemies,
        transmissions=transmissions,
        grid=grid,
        show_flag=state.show_flag | flags[0],
        calm_flag=state.calm_flag | flags[1],
        step_flag=state.step_flag | flags[2],
        atk_uses=(state.atk_uses.astype(i32) + gain[3]).astype(jnp.int8),
        overflow=state.overflow | countdown_overflow | (attack > _I8_MAX),
    )

    # UNDO (§4.10, rules §11.3): restore; the restore overwrites the paid credit. The shell
    # pops the ring (the step's events say UNDO ran).
    restored = restore_snapshot(state, undo_snapshot)
    is_undo = is_(P.UNDO)
    undo_fields = dict(
        player=restored.player,
        turn=restored.turn,
        owned_list=restored.owned_list,
        num_owned=restored.num_owned,
        enemies=restored.enemies,
        transmissions=restored.transmissions,
        grid=restored.grid,
        show_flag=restored.show_flag,
        calm_flag=restored.calm_flag,
        atk_uses=restored.atk_uses,
        overflow=restored.overflow,
    )
    out = effect.replace(
        **{
            name: _select_tree(is_undo, value, getattr(effect, name))
            for name, value in undo_fields.items()
        }
    )
    kills = jnp.where(is_undo, 0, kills)
    exit_reached = is_(P.WARP) & jnp.all(dest == state.exit_pos.astype(i32))
    return out, kills, exit_reached
