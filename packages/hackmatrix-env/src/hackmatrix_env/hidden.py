"""What the player cannot see, re-drawn: ``resample_hidden(key, state)`` (interface §3.5), layer 4.

A planner that searches from the true state peeks at information the observation withholds.
``resample_hidden`` returns a state that agrees with ``state`` on everything the player has
observed, with every hidden part re-drawn from the game's own generating distributions, so a
search from it is earned by the player's information (a *determinization*). What is hidden, and
how it is re-drawn:

* **Question blocks** (unsiphoned; interface §3.5.3): points, program and spawn count. Re-drawn
  as stage generation draws a block's content (rules §10.2 G4): data or program with a fair
  coin; data points uniform 1..9 with spawn = points; a program uniform over those not shown on
  another program block of the board (programs are distinct within a stage), distinct among the
  re-drawn blocks, with spawn = its spawn cost.
* **Resources under unsiphoned blocks** (interface §3.5.4): generation never puts any there
  (rules §10.2 G5), so they are set to none.
* **Transmission kinds**: the tensor never shows them (SHOW adds them to the JSON only). Re-drawn
  uniform over the 4 kinds, as the standard placement draws them (rules §8).
* **Invisible cryptogs** (interface §3.5.1): off the player's row and column with SHOW off.
  Each is moved to a uniformly random cell that keeps it invisible: off the player's lines,
  not a block, not the player's cell, no other enemy or transmission on it. An enemy that
  an invisible cryptog hides (the cryptog stands first on their shared cell: only the first
  enemy on a cell is shown) is hidden too: it goes with the first hidden cryptog before it in
  the list, so that cryptog hides it on its new cell.

The action mask is the one part of the observation the re-draw does not condition on: a
cryptog re-drawn onto a diagonal neighbour of the player makes an owned, affordable CRASH legal
(rules §4.3), one moved off a block cell takes DEBUG's away. A planner takes its root's legal
actions from the real observation (the search's ``seen_root_mask``).

What the player knows from the observations it has seen is kept: how many cryptogs are
alive (a hatching transmission that shows no enemy is one), their hp, the list order, the
turn counters and the task schedule (deterministic given the history). The UNDO ring's
snapshots get the same treatment (a snapshot is a past state: its hidden parts are hidden
too), with the same per-cell question-block draws. The result never depends on a hidden
field of ``state``: two states that differ only there give the same output for the same key
(``tests/env/test_hidden.py`` checks this and the distributions).

**The player's cryptog belief** (optional): ``track_cryptogs`` follows, move by move and from
observed parts only, the cells where unseen cryptogs can be (a cryptog walks one cell a step,
and every cell on the player's lines is seen); ``resample_hidden(key, state, belief)`` then
draws the unseen cryptogs inside that belief (``tests/env/test_cryptog_belief.py``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hackmatrix_env.board import cell_map, enemy_occupancy_map, transmission_map
from hackmatrix_env.constants import (
    DATA_POINTS_MAX,
    GRID_SIZE,
    NUM_ENEMY_KINDS,
    NUM_PROGRAMS,
    PROGRAM_SPAWN,
    Action,
    BlockKind,
    Content,
    EnemyKind,
    Resource,
)
from hackmatrix_env.types import EnvState, Grid

_CELLS = GRID_SIZE * GRID_SIZE


def hidden_question_map(grid: Grid) -> jax.Array:
    """bool[6,6]: unsiphoned question blocks, whose content the player cannot see."""
    return (grid.content == Content.BLOCK) & grid.block_question & ~grid.siphoned


def redraw_question_blocks(key: jax.Array, grid: Grid) -> Grid:
    """``grid`` with every hidden question block's content re-drawn (rules §10.2 G4).

    The draws are made for all 36 cells from ``key`` alone and written where a hidden
    question block stands, so grids that differ only in hidden content get the same result.
    """
    k_kind, k_points, k_prog = jax.random.split(key, 3)
    hidden = hidden_question_map(grid)
    is_data = jax.random.bernoulli(k_kind, 0.5, (GRID_SIZE, GRID_SIZE))
    points = jax.random.randint(k_points, (GRID_SIZE, GRID_SIZE), 1, DATA_POINTS_MAX + 1)
    # Programs shown on other program blocks of the board are taken (distinct per stage).
    shown_prog = (grid.content == Content.BLOCK) & ~hidden & (grid.block_kind == BlockKind.PROGRAM)
    taken = (
        jnp.zeros(NUM_PROGRAMS, bool)
        .at[grid.block_program.reshape(-1).astype(jnp.int32)]
        .max(shown_prog.reshape(-1))
    )
    # The hidden program blocks, row-major, take the first free programs of a random order.
    order = jax.random.permutation(k_prog, NUM_PROGRAMS)  # int32[23]
    free_in_order = ~taken[order]
    rank_free = jnp.cumsum(free_in_order) - 1  # the j-th free program sits where rank_free == j
    needs = (hidden & ~is_data).reshape(-1)
    ordinal = jnp.cumsum(needs) - 1  # int32[36]: this cell's index among the hidden programs
    pick = jnp.argmax(free_in_order[None, :] & (rank_free[None, :] == ordinal[:, None]), axis=1)
    program = order[pick].reshape(GRID_SIZE, GRID_SIZE)
    spawn = jnp.where(is_data, points, jnp.asarray(PROGRAM_SPAWN, jnp.int32)[program])
    i8 = jnp.int8
    return grid.replace(
        block_kind=jnp.where(
            hidden, jnp.where(is_data, BlockKind.DATA, BlockKind.PROGRAM), grid.block_kind
        ).astype(i8),
        block_points=jnp.where(hidden, jnp.where(is_data, points, 0), grid.block_points).astype(i8),
        block_program=jnp.where(hidden, jnp.where(is_data, 0, program), grid.block_program).astype(
            i8
        ),
        block_spawn=jnp.where(hidden, spawn, grid.block_spawn).astype(i8),
        resource_kind=jnp.where(
            hidden_resource_map(grid), Resource.NONE, grid.resource_kind
        ).astype(i8),
        resource_amount=jnp.where(hidden_resource_map(grid), 0, grid.resource_amount).astype(i8),
    )


def hidden_resource_map(grid: Grid) -> jax.Array:
    """bool[6,6]: cells whose resources the player cannot see (a block, unsiphoned)."""
    return (grid.content == Content.BLOCK) & ~grid.siphoned


def redraw_transmission_kinds(key: jax.Array, transmissions):
    """Transmissions (full or snapshot) with every kind re-drawn uniform over 4 (rules §8)."""
    kind = jax.random.randint(key, transmissions.kind.shape, 0, NUM_ENEMY_KINDS)
    return transmissions.replace(kind=jnp.where(transmissions.alive, kind, 0).astype(jnp.int8))


def invisible_cryptogs(enemies, player_pos: jax.Array, show: jax.Array) -> jax.Array:
    """bool[E]: alive cryptogs the observation does not show (interface §3.5.1)."""
    pos = enemies.pos.astype(jnp.int32)
    in_line = (pos[:, 0] == player_pos[0]) | (pos[:, 1] == player_pos[1])
    cryptog = enemies.alive & (enemies.kind == EnemyKind.CRYPTOG) & (enemies.hp > 0)
    return cryptog & ~in_line & ~show


def off_lines(player_pos: jax.Array) -> jax.Array:
    """bool[6,6]: cells off the player's row and column, where a cryptog is not shown."""
    player_pos = player_pos.astype(jnp.int32)
    rows = jnp.arange(GRID_SIZE)
    return (rows[:, None] != player_pos[0]) & (rows[None, :] != player_pos[1])


def replace_invisible_cryptogs(key, enemies, transmissions, grid, player_pos, show, belief=None):
    """Enemies (full or snapshot) with each invisible cryptog on a fresh invisible cell.

    A cell is eligible when it is off the player's row and column, holds no block, and no
    visible enemy, transmission or the player stands on it. With a ``belief`` (bool[6,6], the
    cells the player's history leaves possible: ``track_cryptogs``) the eligible cells are
    narrowed to it, unless that leaves fewer cells than there are invisible cryptogs. The
    cryptogs take distinct cells, each uniform among the eligible ones. The enemies a cryptog
    hides (module doc) go with one of them, so the observation stays as it was.
    """
    player_pos = player_pos.astype(jnp.int32)
    hidden = invisible_cryptogs(enemies, player_pos, show)
    hidden_under = shadowed_enemies(enemies, hidden)
    off_line = off_lines(player_pos)
    visible = enemies.replace(alive=enemies.alive & ~hidden & ~hidden_under)
    free = (
        off_line
        & (grid.content != Content.BLOCK)
        & ~enemy_occupancy_map(visible)
        & ~transmission_map(transmissions)
        & ~cell_map(player_pos)
    ).reshape(-1)
    if belief is not None:
        narrowed = free & belief.reshape(-1)
        free = jnp.where(jnp.sum(narrowed) >= jnp.sum(hidden), narrowed, free)
    # One random order of the cells: the j-th hidden cryptog (list order) takes the j-th free
    # cell of that order, so each gets a uniform free cell and no two share one (36 draws, not
    # one draw per slot and cell). A packed board with no free cell left: the first off-line
    # cell (never observed).
    priority = jax.random.uniform(key, (_CELLS,))
    above = (priority[None, :] > priority[:, None]) & free[None, :]  # [cell, other]
    rank = jnp.where(free, jnp.sum(above, axis=1), -1)  # int32[36]: place among free cells
    ordinal = jnp.cumsum(hidden) - 1  # int32[E]
    match = rank[None, :] == ordinal[:, None]  # bool[E, 36]
    fallback = jnp.argmax(off_line.reshape(-1))
    cell = jnp.where(jnp.any(match, axis=1), jnp.argmax(match, axis=1), fallback)
    new = jnp.stack([cell // GRID_SIZE, cell % GRID_SIZE], axis=1).astype(enemies.pos.dtype)
    # A hidden enemy goes with the first hidden cryptog before it in the list: that cryptog is
    # first on its new cell and hides it there. Which cryptog hid it is itself hidden, so the
    # choice is made from what the player knows (the list order), not from the true cells.
    slot = jnp.arange(hidden.shape[0])
    before = hidden[None, :] & (slot[None, :] < slot[:, None])  # [enemy, cryptog]
    leader = jnp.argmax(before, axis=1)
    new = jnp.where(hidden_under[:, None], new[leader], new)
    return enemies.replace(pos=jnp.where((hidden | hidden_under)[:, None], new, enemies.pos))


def shadowed_enemies(enemies, hidden: jax.Array) -> jax.Array:
    """bool[E]: enemies an invisible cryptog hides by standing first on their cell (§3.5.1).

    Only the first enemy on a cell (list order, hp > 0) is shown, so an invisible cryptog
    there hides the rest. Hidden cryptogs behind it are counted with ``hidden``, not here.
    """
    standing = enemies.alive & (enemies.hp > 0)
    cell = enemies.pos[:, 0].astype(jnp.int32) * GRID_SIZE + enemies.pos[:, 1].astype(jnp.int32)
    slot = jnp.arange(cell.shape[0])
    same = (cell[:, None] == cell[None, :]) & standing[None, :]  # [slot, other]
    first = ~jnp.any(same & (slot[None, :] < slot[:, None]), axis=1)
    # on a cell whose first enemy is a hidden cryptog (so not first there itself)
    under_hidden_first = jnp.any(same & (first & hidden)[None, :], axis=1)
    return standing & ~hidden & under_hidden_first


def _resample_parts(key, grid, enemies, transmissions, player_pos, show, q_key, belief=None):
    k_trans, k_enemy = jax.random.split(key)
    grid = redraw_question_blocks(q_key, grid)
    transmissions = redraw_transmission_kinds(k_trans, transmissions)
    enemies = replace_invisible_cryptogs(
        k_enemy, enemies, transmissions, grid, player_pos, show, belief
    )
    return grid, enemies, transmissions


def resample_hidden(key: jax.Array, state: EnvState, cryptog_belief=None) -> EnvState:
    """A state consistent with ``state``'s observation, its hidden parts re-drawn (module doc).

    ``cryptog_belief`` (bool[6,6], optional): the cells where the player's history leaves an
    invisible cryptog possible (``track_cryptogs``); the invisible cryptogs are drawn among
    them instead of among every cell that hides them. The UNDO ring's snapshots are past
    states the belief does not describe, so theirs are drawn without it.
    Deterministic in ``key``; independent of every hidden field of ``state``.
    """
    k_game, k_snaps, k_question = jax.random.split(key, 3)
    game = state.game
    grid, enemies, transmissions = _resample_parts(
        k_game, game.grid, game.enemies, game.transmissions, game.player.pos, game.show_flag,
        k_question, cryptog_belief,
    )  # fmt: skip
    game = game.replace(grid=grid, enemies=enemies, transmissions=transmissions)
    snaps = state.history.snapshots
    depth = state.history.depth
    grids, senemies, strans = jax.vmap(_resample_parts, in_axes=(0, 0, 0, 0, 0, 0, None))(
        jax.random.split(k_snaps, depth), snaps.grid, snaps.enemies, snaps.transmissions,
        snaps.player.pos, snaps.show_flag, k_question,
    )  # fmt: skip
    snaps = snaps.replace(grid=grids, enemies=senemies, transmissions=strans)
    return state.replace(game=game, history=state.history.replace(snapshots=snaps))


# ------------------------------------------------------------------ the player's cryptog belief
#
# Cryptogs move at most one cell per step (speed 1, one enemy phase per step; PUSH and PULL move
# enemies one cell and run no phase, programs §4.1-4.2), and a cryptog on the player's row or
# column is shown. So the cells where an unseen cryptog can be follow from what the player has
# seen: spread by one cell per step from where cryptogs could have been, and cut to the cells
# the observation leaves dark. The belief is one map for all the invisible cryptogs of a game.


def _spread_rows(cells: jax.Array) -> jax.Array:
    return cells.at[1:, :].max(cells[:-1, :]).at[:-1, :].max(cells[1:, :])


def _spread_cols(cells: jax.Array) -> jax.Array:
    return cells.at[:, 1:].max(cells[:, :-1]).at[:, :-1].max(cells[:, 1:])


def _spread(cells: jax.Array) -> jax.Array:
    """bool[6,6]: ``cells`` and their four neighbours (one move of a speed-1 enemy)."""
    return _spread_rows(cells) | _spread_cols(cells)


def _spread_square(cells: jax.Array) -> jax.Array:
    """bool[6,6]: ``cells`` and their eight neighbours (one PUSH or PULL)."""
    return _spread_cols(_spread_rows(cells))


def _shown_enemies(game) -> jax.Array:
    """bool[E]: enemies the observation shows (first on their cell, interface §3.5.1)."""
    enemies = game.enemies
    hidden = invisible_cryptogs(enemies, game.player.pos, game.show_flag)
    return enemies.alive & (enemies.hp > 0) & ~hidden & ~shadowed_enemies(enemies, hidden)


def track_cryptogs(belief: jax.Array, state: EnvState, action: jax.Array, next_state: EnvState):
    """The belief after ``action`` took ``state`` to ``next_state``, from observed parts only.

    Where a cryptog can have come from: the cells the belief allowed, the shown cryptogs, the
    transmissions that left the board (one can hatch into a cryptog the player does not see),
    and after POLY every shown enemy (it can become a cryptog). One cell of spread, then only
    the cells ``next_state`` leaves dark. With no invisible cryptog left (the player knows how
    many cryptogs are alive, module doc) the belief is empty. UNDO restores an older board and
    a new episode (``next_state.time`` 0) starts over: nothing dark is ruled out.
    """
    game, next_game = state.game, next_state.game
    hatched = transmission_map(game.transmissions) & ~transmission_map(next_game.transmissions)
    shown = _shown_enemies(game)
    cryptogs = shown & (game.enemies.kind == EnemyKind.CRYPTOG)
    sources = belief | enemy_occupancy_map(game.enemies.replace(alive=cryptogs)) | hatched
    polymorphed = enemy_occupancy_map(game.enemies.replace(alive=shown))
    polymorphed = jnp.where(action == Action.POLY, polymorphed, False)
    sources = sources | polymorphed
    # PUSH and PULL move an enemy one cell, diagonally too (programs §4.1-4.2), onto blocks
    # too; a cryptog walks one cell, orthogonally, on free cells only (rules §7.6), so it is on
    # a block only where PUSH, PULL or POLY (of a glitch) put it, and stays there until it
    # walks off. Stage generation never puts a block under an enemy.
    shoved = (action == Action.PUSH) | (action == Action.PULL)
    reached = jnp.where(shoved, _spread_square(sources), _spread(sources))
    block = next_game.grid.content == Content.BLOCK
    stays = (belief | polymorphed) & (game.grid.content == Content.BLOCK)
    reached = reached & (~block | jnp.where(shoved, reached, stays))
    dark = off_lines(next_game.player.pos)
    unseen = jnp.any(
        invisible_cryptogs(next_game.enemies, next_game.player.pos, next_game.show_flag)
    )
    restart = (action == Action.UNDO) | (next_state.time == 0)
    return jnp.where(restart, dark, reached & dark) & unseen


def initial_cryptog_belief(state: EnvState) -> jax.Array:
    """bool[6,6]: the belief at an episode's start: every dark cell if a cryptog is unseen."""
    game = state.game
    unseen = jnp.any(invisible_cryptogs(game.enemies, game.player.pos, game.show_flag))
    return off_lines(game.player.pos) & unseen
