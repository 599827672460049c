"""Reset, stage generation, stage completion and victory (rules §9-§10), layer 4.

Stage generation runs for every stage completion and every auto-reset (under ``vmap`` the
step pipeline and the env shell evaluate it sparsely, for those rows only), so it is written
for cost. The equivalences used, and why
they preserve the reference distribution, are in specs/env-shell.md §3:

* Layout attempts (rules §10.2 G4): each attempt is a uniform N-subset of the
  eligible cells (rules §12.1: the redraw loop = first N cells of a uniform
  permutation). A subset is a uint32 over the 32 non-corner cells, sampled by
  Floyd's algorithm in eligible-index space and scattered onto cell bits with
  a parallel bit-deposit. All 100 attempts are vectorised; the first valid one
  wins (``argmax``).
* Block types are independent of validity, so they are drawn once, for the
  accepted layout only; within a layout they attach to cells in row-major
  order (types are exchangeable, so any fixed order gives the same law).
* V1 (connectivity with the exit as a sink) = the free cells minus the exit
  are connected and the exit has a free neighbour (or is (0,0), the start).
  Connectivity is decided by a finite automaton over the six row masks (host
  tables built at import: no BFS sweeps). V2 is a few bit operations.
* Randomness comes from one seed per call (``rng.rng_seed``, mixed from
  the key's data) feeding the counter-based ``rng.hash_uniform`` stream.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hackmatrix_env.board import enemy_occupancy_map, transmission_map
from hackmatrix_env.constants import (
    BLOCK_COUNT_MAX,
    BLOCK_COUNT_MIN,
    CORNERS,
    DATA_POINTS_MAX,
    GRID_SIZE,
    INITIAL_TASK_INTERVAL,
    LAYOUT_ATTEMPTS,
    MAX_HP,
    NUM_PROGRAMS,
    NUM_STAGES,
    PROGRAM_SPAWN,
    QUESTION_PROBABILITY,
    RESOURCE_AMOUNT_THRESHOLDS,
    STAGE_INTERVAL_BASE,
    START_CREDITS_BONUS,
    START_ENERGY_BONUS,
    START_SIPHON_BONUS,
    BlockKind,
    Content,
    Resource,
)
from hackmatrix_env.placement import place_transmissions_seeded
from hackmatrix_env.rng import hash_bits, hash_uniform, rng_seed
from hackmatrix_env.types import EnvParams, GameState, Grid, blank_game

# --------------------------------------------------------------------------- layout bit encoding
# Bit k of a layout word <-> NONCORNER[k] (row-major, corners skipped): row 0 holds
# bits 0-3 (cols 1-4), rows 1-4 six bits each from bit 4, row 5 bits 28-31 (cols 1-4).
_CORNER_SET = {tuple(int(v) for v in c) for c in CORNERS}
NONCORNER = np.array(
    [(r, c) for r in range(GRID_SIZE) for c in range(GRID_SIZE) if (r, c) not in _CORNER_SET],
    np.int32,
)
_NONCORNER_BIT = np.zeros((GRID_SIZE, GRID_SIZE), np.int32)  # bit index of a non-corner cell
for _k, (_r, _c) in enumerate(NONCORNER):
    _NONCORNER_BIT[_r, _c] = _k
_IS_CORNER = np.zeros((GRID_SIZE, GRID_SIZE), bool)
for _r, _c in _CORNER_SET:
    _IS_CORNER[_r, _c] = True
_ROW_MASK = 0x3F


def _block_rows(x: jax.Array) -> list[jax.Array]:
    """Six uint32[...] row masks (bit c = col c) of the blocks in layout word ``x``."""
    rows = [(x & 0xF) << 1]
    rows += [(x >> (4 + 6 * (r - 1))) & _ROW_MASK for r in range(1, 5)]
    rows.append(((x >> 28) & 0xF) << 1)
    return rows


# --------------------------------------------------------------------------- connectivity automaton


def _runs(mask: int) -> list[tuple[int, int]]:
    runs, c = [], 0
    while c < GRID_SIZE:
        if mask >> c & 1:
            start = c
            while c < GRID_SIZE and mask >> c & 1:
                c += 1
            runs.append((start, c - 1))
        else:
            c += 1
    return runs


def _build_row_automaton() -> tuple[np.ndarray, np.ndarray]:
    """Tables deciding 4-connectivity of a 6x6 cell set from its row masks, bottom to top.

    A state is the partition of the current row's free cells into the
    components seen so far (canonical labels per run), or CLOSED (exactly one
    component ended and nothing may follow), or FAIL. Returns
    (next int16[S*64] indexed ``state*64 + row_mask``, accept bool[S]).
    """
    fail, closed, start = ("F",), ("C",), ("S", 0, ())
    ids: dict[tuple, int] = {fail: 0, closed: 1, start: 2}
    order = [fail, closed, start]
    table: dict[tuple[int, int], tuple] = {}
    queue = [start]
    while queue:
        st = queue.pop()
        _, mask, labels = st
        prev, n_prev = _runs(mask), len(set(labels))
        for m in range(64):
            new = _runs(m)
            parent = list(range(n_prev + len(new)))

            def find(a, parent=parent):
                while parent[a] != a:
                    a = parent[a]
                return a

            for j, (a, b) in enumerate(new):
                for i, (pa, pb) in enumerate(prev):
                    if a <= pb and pa <= b:  # the runs share a column
                        parent[find(labels[i])] = find(n_prev + j)
            live = {find(n_prev + j) for j in range(len(new))}
            dead = [lab for lab in range(n_prev) if find(lab) not in live]
            if dead:
                nxt = fail if len(dead) > 1 or new else closed
            else:
                canon: dict[int, int] = {}
                labs = tuple(
                    canon.setdefault(find(n_prev + j), len(canon)) for j in range(len(new))
                )
                nxt = ("S", m, labs)
            if nxt not in ids:
                ids[nxt] = len(order)
                order.append(nxt)
                queue.append(nxt)
            table[(ids[st], m)] = nxt
    n = len(order)
    nxt_table = np.zeros((n, 64), np.int16)
    for m in range(64):
        nxt_table[ids[fail], m] = ids[fail]
        nxt_table[ids[closed], m] = ids[fail] if m else ids[closed]
    for (s, m), st in table.items():
        nxt_table[s, m] = ids[st]
    accept = np.array([st == closed or (st[0] == "S" and len(set(st[2])) <= 1) for st in order])
    return nxt_table.reshape(-1), accept


ROW_AUTOMATON, ROW_ACCEPT = _build_row_automaton()
START_STATE = 2


def is_connected_rows(free_rows: list[jax.Array]) -> jax.Array:
    """bool[...]: the cells given by six row masks (bit c = col c) are 4-connected."""
    table = jnp.asarray(ROW_AUTOMATON)
    s = jnp.full(free_rows[0].shape, START_STATE, jnp.int32)
    for row in free_rows:  # six static rows
        s = table[s * 64 + row.astype(jnp.int32)].astype(jnp.int32)
    return jnp.asarray(ROW_ACCEPT)[s]


def is_layout_valid(x: jax.Array, exit_pos: jax.Array) -> jax.Array:
    """bool[...]: layout word(s) ``x`` pass V1 and V2 of rules §10.2 with the exit at ``exit_pos``.

    V1 with the exit as a sink: the free cells minus the exit are connected and
    the exit has a free neighbour; with the exit at (0,0) (the BFS start, always
    expanded) the free cells are simply connected.
    """
    x = x.astype(jnp.uint32)
    blocks = _block_rows(x)
    free = [(~b) & _ROW_MASK for b in blocks]
    # V2: every block has an on-board orthogonal neighbour without a block.
    bad = jnp.zeros_like(x)
    for r in range(GRID_SIZE):
        nb = ((free[r] << 1) | (free[r] >> 1)) & _ROW_MASK
        if r > 0:
            nb = nb | free[r - 1]
        if r < GRID_SIZE - 1:
            nb = nb | free[r + 1]
        bad = bad | (blocks[r] & ~nb)
    v2 = bad == 0
    # V1.
    er = exit_pos[0].astype(jnp.int32)
    ec = exit_pos[1].astype(jnp.int32)
    at_origin = (er == 0) & (ec == 0)
    exit_bit = jnp.where(at_origin, 0, 1 << ec).astype(jnp.uint32)
    free_wo_exit = [jnp.where(er == r, f & ~exit_bit, f) for r, f in enumerate(free)]
    # The exit corner's neighbours: the cell beside it in its row, and the cell above/below.
    inward_row = jnp.where(er == 0, 1, GRID_SIZE - 2)
    inward_col = jnp.where(ec == 0, 1, GRID_SIZE - 2)
    row_of_exit = sum(jnp.where(er == r, f, 0) for r, f in enumerate(free))
    row_inward = sum(jnp.where(inward_row == r, f, 0) for r, f in enumerate(free))
    exit_reached = (
        at_origin | ((row_of_exit >> inward_col) & 1 == 1) | ((row_inward >> ec) & 1 == 1)
    )
    v1 = is_connected_rows(free_wo_exit) & exit_reached
    return v1 & v2


# --------------------------------------------------------------------------- subset sampling


def _deposit_masks(m: jax.Array) -> list[jax.Array]:
    """The five move masks of Hacker's Delight ``expand`` (parallel bit deposit) for mask ``m``."""
    m = m.astype(jnp.uint32)
    mk = (~m) << 1
    masks = []
    for i in range(5):
        mp = mk ^ (mk << 1)
        mp = mp ^ (mp << 2)
        mp = mp ^ (mp << 4)
        mp = mp ^ (mp << 8)
        mp = mp ^ (mp << 16)
        mv = mp & m
        masks.append(mv)
        m = (m ^ mv) | (mv >> (1 << i))
        mk = mk & ~mp
    return masks


def _deposit(x: jax.Array, masks: list[jax.Array], m0: jax.Array) -> jax.Array:
    """Scatter the low bits of ``x`` onto the set bits of ``m0`` in order (PDEP)."""
    for i in range(4, -1, -1):
        t = x << (1 << i)
        x = (x & ~masks[i]) | (t & masks[i])
    return x & m0


def sample_layouts(seed, eligible: jax.Array, n_blocks: jax.Array, counter0: int = 0) -> jax.Array:
    """uint32[LAYOUT_ATTEMPTS]: independent uniform ``n_blocks``-subsets of ``eligible``.

    ``eligible`` is a uint32 over the non-corner bits. Floyd's algorithm picks
    the subset in index space (index i = the i-th eligible cell), then a bit
    deposit maps it onto cells. Needs ``n_blocks`` <= the number of eligible
    cells (``generate_from_seed`` caps it).
    """
    eligible = eligible.astype(jnp.uint32)
    n = jax.lax.population_count(eligible).astype(jnp.int32)
    attempts = jnp.arange(LAYOUT_ATTEMPTS, dtype=jnp.uint32)
    s = jnp.zeros(LAYOUT_ATTEMPTS, jnp.uint32)
    for i in range(BLOCK_COUNT_MAX):  # Floyd: j = n - N + i for i < N
        j = n - n_blocks + i
        active = (i < n_blocks) & (j >= 0)
        u = hash_uniform(seed, counter0 + attempts * BLOCK_COUNT_MAX + i)
        t = jnp.minimum((u * (j + 1).astype(jnp.float32)).astype(jnp.int32), j)
        t = jnp.clip(t, 0, 31).astype(jnp.uint32)
        jj = jnp.clip(j, 0, 31).astype(jnp.uint32)
        bit_t = jnp.uint32(1) << t
        add = jnp.where((s & bit_t) != 0, jnp.uint32(1) << jj, bit_t)
        s = jnp.where(active, s | add, s)
    masks = _deposit_masks(eligible)
    return _deposit(s, masks, eligible)


# --------------------------------------------------------------------------- generation


def _cells_of_layout(x: jax.Array) -> jax.Array:
    """bool[6,6]: the block map of layout word ``x``."""
    bits = (x >> jnp.asarray(_NONCORNER_BIT, jnp.uint32)) & 1
    return (bits == 1) & ~jnp.asarray(_IS_CORNER)


def _rank_in_layout(x: jax.Array) -> jax.Array:
    """int32[6,6]: for each block cell, the number of blocks before it in row-major order."""
    bit = jnp.asarray(_NONCORNER_BIT, jnp.uint32)
    below = x & ((jnp.uint32(1) << bit) - 1)
    rank = jax.lax.population_count(below).astype(jnp.int32)
    return jnp.clip(rank, 0, BLOCK_COUNT_MAX - 1)


def _eligible_word(state: GameState) -> jax.Array:
    """uint32: non-corner cells free of enemies and transmissions (rules §10.2 G4)."""
    occupied = enemy_occupancy_map(state.enemies) | transmission_map(state.transmissions)
    free_cells = ~occupied[NONCORNER[:, 0], NONCORNER[:, 1]]  # bool[32]
    weights = jnp.uint32(1) << jnp.arange(32, dtype=jnp.uint32)
    return jnp.sum(jnp.where(free_cells, weights, 0), dtype=jnp.uint32)


# Draw-site counters of the hash stream (one seed per generate call).
_C_EXIT, _C_COUNT, _C_TYPES, _C_RES, _C_LAYOUT = 0, 1, 16, 128, 1024
_C_PLACEMENT = 2**20


def _draw_types(seed, n_blocks):
    """Per-block (kind, question, points, program, spawn) int32[BLOCK_COUNT_MAX] (G4 steps 1-4).

    Block k (row-major among the layout's blocks) draws is_data, is_question and
    points independently. Programs are drawn without replacement within the
    stage: the j-th program block gets the j-th entry of a uniform random
    permutation of the 23 programs (the same law as drawing uniformly among the
    unused ones each time). The permutation is the ranking of 23 hash keys,
    ties broken by program index.
    """
    k = jnp.arange(BLOCK_COUNT_MAX, dtype=jnp.uint32)
    u = hash_uniform(seed, _C_TYPES + 3 * k[:, None] + jnp.arange(3, dtype=jnp.uint32))
    is_data = u[:, 0] < 0.5
    is_question = u[:, 1] < jnp.float32(QUESTION_PROBABILITY)
    points = 1 + jnp.minimum((u[:, 2] * DATA_POINTS_MAX).astype(jnp.int32), DATA_POINTS_MAX - 1)
    keys = hash_bits(seed, _C_TYPES + 64 + jnp.arange(NUM_PROGRAMS, dtype=jnp.uint32))
    idx = jnp.arange(NUM_PROGRAMS)
    before = (keys[None, :] < keys[:, None]) | (
        (keys[None, :] == keys[:, None]) & (idx[None, :] < idx[:, None])
    )
    rank = jnp.sum(before, axis=1, dtype=jnp.int32)  # int32[23]: position of program p
    is_prog = ~is_data & (jnp.arange(BLOCK_COUNT_MAX) < n_blocks)
    lower = jnp.arange(BLOCK_COUNT_MAX)[None, :] < jnp.arange(BLOCK_COUNT_MAX)[:, None]
    ordinal = jnp.sum(lower & is_prog[None, :], axis=1, dtype=jnp.int32)  # program blocks before k
    prog = jnp.argmax(rank[None, :] == ordinal[:, None], axis=1).astype(jnp.int32)
    kind = jnp.where(is_data, BlockKind.DATA, BlockKind.PROGRAM).astype(jnp.int32)
    spawn = jnp.where(is_data, points, jnp.asarray(PROGRAM_SPAWN, jnp.int32)[prog])
    return kind, is_question, jnp.where(is_data, points, 0), jnp.where(is_data, 0, prog), spawn


def generate_from_seed(seed: jax.Array, state: GameState) -> GameState:
    """Stage generation G1-G6 (rules §10.2) for the state's current stage, from a seed.

    ``generate_stage`` and ``reset_game`` both end with it, so that one traced generation
    can serve both (``env.generate_and_reset``)."""
    i8 = jnp.int8
    # G1: per-stage resets.
    state = state.replace(
        turn=jnp.int32(0),
        next_task_turn=state.task_interval,
        show_flag=jnp.bool_(False),
        calm_flag=jnp.bool_(False),
        step_flag=jnp.bool_(False),
        atk_uses=i8(0),
    )
    # G3: exit uniform over corners other than the player's cell; pickups on the rest.
    corners = jnp.asarray(CORNERS, jnp.int32)
    cand = ~jnp.all(corners == state.player.pos.astype(jnp.int32), axis=1)  # bool[4]
    n_cand = jnp.sum(cand, dtype=jnp.int32)
    u_exit = hash_uniform(seed, jnp.uint32(_C_EXIT))
    k = jnp.minimum((u_exit * n_cand.astype(jnp.float32)).astype(jnp.int32), n_cand - 1)
    seen = jnp.stack([jnp.sum(cand[:i], dtype=jnp.int32) for i in range(1, 5)])  # candidates <= i
    exit_idx = jnp.argmax(cand & (seen == k + 1))
    exit_pos = corners[exit_idx]
    # G4: N uniform 5..11, drawn once; up to 100 attempts; first valid wins.
    span = BLOCK_COUNT_MAX - BLOCK_COUNT_MIN + 1
    u_count = hash_uniform(seed, jnp.uint32(_C_COUNT))
    n_blocks = BLOCK_COUNT_MIN + jnp.minimum((u_count * span).astype(jnp.int32), span - 1)
    eligible = _eligible_word(state)
    # Fewer eligible cells than N: the reference never terminates; like the Swift
    # twin we cap N at the eligible count (non-canonical, specs/choices.md).
    n_blocks = jnp.minimum(n_blocks, jax.lax.population_count(eligible).astype(jnp.int32))
    layouts = sample_layouts(seed, eligible, n_blocks, _C_LAYOUT)
    valid = is_layout_valid(layouts, exit_pos)
    layout = jnp.where(jnp.any(valid), layouts[jnp.argmax(valid)], jnp.uint32(0))
    blocks = _cells_of_layout(layout)
    rank = _rank_in_layout(layout)
    kind, question, points, program, spawn = _draw_types(seed, n_blocks)

    def per_cell(values):
        return jnp.where(blocks, values[rank], 0).astype(i8)

    # G2 + G3 + G4 content.
    rows = jnp.arange(GRID_SIZE)
    corner_map = (rows[:, None] % 5 == 0) & (rows[None, :] % 5 == 0)
    exit_map = (rows[:, None] == exit_pos[0]) & (rows[None, :] == exit_pos[1])
    player_map = (rows[:, None] == state.player.pos[0]) & (rows[None, :] == state.player.pos[1])
    pickup_map = corner_map & ~exit_map & ~player_map
    content = jnp.where(blocks, Content.BLOCK, Content.EMPTY)
    content = jnp.where(pickup_map, Content.DATA_SIPHON, content)
    content = jnp.where(exit_map, Content.EXIT, content)
    # G5: resources on every non-block, non-exit cell, row-major.
    words = hash_bits(seed, _C_RES + jnp.arange(GRID_SIZE * GRID_SIZE, dtype=jnp.uint32))
    u_amount = (words >> 8).astype(jnp.float32) * jnp.float32(2.0**-24)
    lo, hi = RESOURCE_AMOUNT_THRESHOLDS
    amount = jnp.where(u_amount < jnp.float32(lo), 1, jnp.where(u_amount < jnp.float32(hi), 2, 3))
    res_kind = jnp.where((words & 1) == 0, Resource.CREDITS, Resource.ENERGY)
    gets = (~blocks & ~exit_map).reshape(-1)
    grid = Grid(
        content=content.astype(i8),
        block_kind=per_cell(kind),
        block_question=jnp.where(blocks, question[rank], False),
        block_points=per_cell(points),
        block_program=per_cell(program),
        block_spawn=per_cell(spawn),
        resource_kind=jnp.where(gets, res_kind, Resource.NONE).reshape(6, 6).astype(i8),
        resource_amount=jnp.where(gets, amount, 0).reshape(6, 6).astype(i8),
        siphoned=jnp.zeros((GRID_SIZE, GRID_SIZE), jnp.bool_),
        center=jnp.zeros((GRID_SIZE, GRID_SIZE), jnp.bool_),
    )
    state = state.replace(grid=grid, exit_pos=exit_pos.astype(i8))
    # G6: `stage` transmissions, standard placement, no provenance flags.
    sub = hash_bits(seed, jnp.array([_C_PLACEMENT, _C_PLACEMENT + 1], jnp.uint32))
    return place_transmissions_seeded(
        sub, state, state.stage.astype(jnp.int32), max_count=NUM_STAGES
    )


def generate_stage(key: jax.Array, state: GameState) -> GameState:
    """Generate the state's current stage (rules §10.2 G1-G6); the entities are kept."""
    return generate_from_seed(stage_seed(key), state)


def stage_seed(key: jax.Array) -> jax.Array:
    """uint32[]: the seed ``generate_stage(key, ...)`` generates from."""
    return rng_seed(key)


def reset_game(key: jax.Array, params: EnvParams) -> GameState:
    """A fresh game (rules §10.1 R1-R4).

    ``params.start_stage`` (clipped to 1..8) generates that stage directly, with
    ``task_interval = 13 - stage`` as if it had been reached (stage 1: 12, the real game).
    Everything else is a fresh game.
    """
    return generate_from_seed(*start_game(key, params))


def start_game(key: jax.Array, params: EnvParams) -> tuple[jax.Array, GameState]:
    """``(seed, game)``: a fresh game before its stage is generated (rules §10.1 R1-R3), and
    the seed its generation (R4) draws from: ``reset_game`` is ``generate_from_seed`` of it."""
    seed = rng_seed(key)
    u = hash_uniform(seed, jnp.arange(2, dtype=jnp.uint32))
    corner = jnp.minimum((u[0] * 4).astype(jnp.int32), 3)  # R2
    bonus = jnp.minimum((u[1] * 3).astype(jnp.int32), 2)  # R3
    stage = jnp.clip(jnp.asarray(params.start_stage, jnp.int32), 1, NUM_STAGES)
    s = blank_game()
    player = s.player.replace(
        pos=jnp.asarray(CORNERS, jnp.int8)[corner],
        credits=jnp.where(bonus == 0, START_CREDITS_BONUS, 0).astype(jnp.int32),
        energy=jnp.where(bonus == 1, START_ENERGY_BONUS, 0).astype(jnp.int32),
        siphons=jnp.where(bonus == 2, START_SIPHON_BONUS, 0).astype(jnp.int32),
    )
    interval = jnp.where(stage > 1, STAGE_INTERVAL_BASE - stage, INITIAL_TASK_INTERVAL)
    s = s.replace(
        player=player, stage=stage.astype(jnp.int8), task_interval=interval.astype(jnp.int32)
    )
    return hash_bits(seed, jnp.array([2, 3], jnp.uint32)), s


def advance_stage(state: GameState) -> tuple[GameState, jax.Array]:
    """Stage completion before generation (rules §9.2): (state, generate).

    hp + 1 (max 3); below stage 8 also the next stage number and its task
    interval, and ``generate`` (bool[]) is True: ``generate_stage`` must follow.
    At stage 8 (victory) nothing else changes and ``generate`` is False.
    """
    hp = jnp.minimum(state.player.hp.astype(jnp.int32) + 1, MAX_HP).astype(jnp.int8)
    state = state.replace(player=state.player.replace(hp=hp))
    won = state.stage >= NUM_STAGES
    stage = jnp.minimum(state.stage.astype(jnp.int32) + 1, NUM_STAGES)
    interval = (STAGE_INTERVAL_BASE - stage).astype(jnp.int32)
    advanced = state.replace(
        stage=jnp.where(won, state.stage, stage.astype(jnp.int8)),
        task_interval=jnp.where(won, state.task_interval, interval),
    )
    return advanced, ~won
