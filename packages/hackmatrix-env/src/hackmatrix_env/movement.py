"""Direction actions: target search, shooting, moving, pickups (rules §4), layer 3."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hackmatrix_env.board import (
    at_cell,
    block_map,
    first_enemy_at,
    first_transmission_at,
    in_bounds,
    neighbour,
    remove_slot,
)
from hackmatrix_env.constants import DIR_OFFSETS, GRID_SIZE, Content
from hackmatrix_env.types import GameState

_STEPS = jnp.arange(1, GRID_SIZE, dtype=jnp.int32)  # distances 1..5 along a line


def direction_mask(state: GameState) -> jax.Array:
    """bool[4]: the mask of the 4 directions (interface §2.2), in canonical order.

    A direction is valid iff the adjacent cell is on the board and holds no
    block, or an enemy stands on it. The 4 cells are compared with the 36 cells
    and the 32 enemy slots (no gather of cell maps: under vmap on CPU a one-hot
    compare of this size is cheaper, and the mask runs on every step).
    """
    pos = state.player.pos.astype(jnp.int32)
    offsets = jnp.asarray(DIR_OFFSETS, jnp.int32)
    r, c = pos[0] + offsets[:, 0], pos[1] + offsets[:, 1]  # int32[4]
    on_board = (r >= 0) & (r < GRID_SIZE) & (c >= 0) & (c < GRID_SIZE)
    cell = jnp.where(on_board, r * GRID_SIZE + c, -1)  # int32[4]
    block_cells = (state.grid.content == Content.BLOCK).reshape(-1)  # bool[36]
    blocked = jnp.any(
        (cell[:, None] == jnp.arange(GRID_SIZE * GRID_SIZE)) & block_cells[None, :], axis=1
    )
    e = state.enemies
    enemy_cell = e.pos[:, 0].astype(jnp.int32) * GRID_SIZE + e.pos[:, 1].astype(jnp.int32)
    enemy = jnp.any((cell[:, None] == enemy_cell[None, :]) & e.alive[None, :], axis=1)
    return on_board & (~blocked | enemy)


def find_target(state: GameState, d: jax.Array):
    """Walk the line of fire from the player (rules §4.1).

    Returns (is_transmission bool[], is_enemy bool[], idx int32[]): the first
    transmission (else enemy) in list order on the first cell of the line that
    holds either, unless the board edge or a block comes first. An enemy or
    transmission standing on a block is hit; the block stops the line after it.
    """
    off = jnp.asarray(DIR_OFFSETS, jnp.int32)[d]
    cells = state.player.pos.astype(jnp.int32)[None, :] + _STEPS[:, None] * off[None, :]  # [5,2]
    inb = in_bounds(cells)
    t_found, t_idx = jax.vmap(lambda c: first_transmission_at(state.transmissions, c))(cells)
    e_found, e_idx = jax.vmap(lambda c: first_enemy_at(state.enemies, c))(cells)
    blocks = jax.vmap(lambda c: at_cell(block_map(state.grid), c, False))(cells)
    t_found &= inb
    e_found &= inb
    passes = inb & ~t_found & ~e_found & ~blocks  # the line continues past this cell
    reached = jnp.concatenate([jnp.ones(1, jnp.bool_), jnp.cumprod(passes)[:-1].astype(jnp.bool_)])
    hit = reached & (t_found | e_found)  # at most one True
    k = jnp.argmax(hit)
    any_hit = jnp.any(hit)
    is_t = any_hit & t_found[k]
    is_e = any_hit & ~t_found[k] & e_found[k]
    idx = jnp.where(is_t, t_idx[k], e_idx[k])
    return is_t, is_e, idx


def resolve_direction(state: GameState, d: jax.Array):
    """Execute direction ``d``: shoot the first target in line, else move (rules §4.2-4.3).

    Returns (state, ok, shot, kills, collected, exit_reached):
      ok — the action succeeded (a target was shot, or the move was possible);
        when False the returned state is unusable and callers keep the old one;
      shot — a target was shot (the player did not move);
      kills — int32 kill events (interface §4.7: not for scheduled-task targets);
      collected — a data-siphon pickup was taken;
      exit_reached — the move landed on an exit cell.
    """
    is_t, is_e, idx = find_target(state, d)
    player = state.player

    # Shot at a transmission: destroyed. (One-hot reads and writes of slot idx:
    # gathers and scatters are slow under vmap on CPU.)
    t = state.transmissions
    at_idx = jnp.arange(t.alive.shape[0]) == idx  # bool[N]
    t_kill = is_t & ~jnp.any(at_idx & t.from_task)
    t = remove_slot(t, idx, is_t)

    # Shot at an enemy: hp -= attack; survivors stunned, the dead removed.
    e = state.enemies
    at_idx = jnp.arange(e.alive.shape[0]) == idx  # bool[N]
    hp_at = jnp.sum(jnp.where(at_idx, e.hp.astype(jnp.int32), 0))
    hp = jnp.maximum(hp_at - player.attack.astype(jnp.int32), 0)
    dies = is_e & (hp == 0)
    e_kill = dies & ~jnp.any(at_idx & e.from_task)
    hit = at_idx & is_e
    e = e.replace(
        hp=jnp.where(hit, hp, e.hp).astype(jnp.int8),
        stunned=e.stunned | (hit & (hp > 0)),
    )
    e = remove_slot(e, idx, dies)
    shot = is_t | is_e

    # Move: onto an on-board cell without a block; pick up a data siphon.
    dest = neighbour(player.pos, d)
    content = at_cell(state.grid.content, dest, Content.BLOCK)
    can_move = in_bounds(dest) & (content != Content.BLOCK)
    moving = ~shot & can_move
    collected = moving & (content == Content.DATA_SIPHON)
    exit_reached = moving & (content == Content.EXIT)
    dest_c = jnp.clip(dest, 0, GRID_SIZE - 1)
    grid_content = state.grid.content.at[dest_c[0], dest_c[1]].set(
        jnp.where(collected, jnp.int8(Content.EMPTY), state.grid.content[dest_c[0], dest_c[1]])
    )
    player = player.replace(
        pos=jnp.where(moving, dest, player.pos).astype(jnp.int8),
        siphons=player.siphons + collected.astype(jnp.int32),
    )
    new_state = state.replace(
        player=player,
        grid=state.grid.replace(content=grid_content),
        transmissions=t,
        enemies=e,
    )
    kills = (t_kill | e_kill).astype(jnp.int32)
    return new_state, shot | can_move, shot, kills, collected, exit_reached
