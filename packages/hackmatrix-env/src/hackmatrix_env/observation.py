"""The RL observation (interface §3), layer 4.

``observe(state) -> Observation`` builds the same numbers the original Python
client builds from the JSON observation (interface §3.7): ``k / d`` computed
in float64 and stored as float32. For the integers the state can hold
(int8) and the divisors used (2, 3, 4, 5, 7, 9, 10, 50) a correctly rounded
float32 division gives exactly that value (checked exhaustively at import:
``_check_division``), so the grid divides. The player vector, whose int32
fields can leave that range, reads host tables (float64 quotients) with a
division fallback outside them. The grid is written in one elementwise pass
(``grid_features``); the "first entity on the cell" fields come from one
minimum per pool over packed ``slot << 16 | fields`` words (``_first_words``),
not gathers (the grid takes 0.6x the time of one-hot sums; specs/env-shell.md §7.10).

Layout (interface §3.1-3.4):

* ``player`` float32[10]: row/5, col/5, hp/3, min(credits/50,1),
  min(energy/50,1), (stage-1)/7, siphons/10 (not capped), (attack-1)/2 (not
  capped), SHOW, CALM.
* ``programs`` float32[23]: owned flags in program-index order.
* ``grid`` float32[6,6,42] indexed [row, col, channel], row 0 at the bottom:
  0-3 visible enemy one-hot (virus, daemon, glitch, cryptog), 4 its hp/3,
  5 stunned, 6 from a siphon; 7-9 block data/program/question, 10 points/9,
  11 block siphoned, 12-34 program one-hot, 35 spawn count/9; 36 first
  transmission's min(countdown/4, 1); 37/38 visible credits/energy /3;
  39 data-siphon pickup, 40 exit, 41 siphon centre.
* ``action_mask`` bool[28] (``mask.action_mask``).

``flatten_observation`` gives the 1545-vector of the original training
wrapper: ``[player(10), programs(23), grid C-order(1512)]``, i.e. grid value
(row, col, ch) at ``33 + (row*6 + col)*42 + ch``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hackmatrix_env import programs
from hackmatrix_env.constants import (
    GRID_CHANNELS,
    GRID_SIZE,
    BlockKind,
    Content,
    EnemyKind,
    Resource,
)
from hackmatrix_env.history import has_snapshot
from hackmatrix_env.mask import action_mask
from hackmatrix_env.types import EnvState, GameState, Observation

_TABLE_SIZE = 128  # covers every non-negative int8 value


def _table(divisor: float, cap: float | None = None, size: int = _TABLE_SIZE) -> np.ndarray:
    k = np.arange(size, dtype=np.float64)
    v = k / divisor
    if cap is not None:
        v = np.minimum(v, cap)
    return v.astype(np.float32)


DIV3 = _table(3)
DIV5 = _table(5)
DIV7 = _table(7)
DIV10 = _table(10)
DIV50_CAPPED = _table(50, cap=1.0, size=51)


def _check_division() -> None:
    """float32(k) / float32(d) == float32(k / d) for every int8 k and every divisor used."""
    k = np.arange(-128, 128, dtype=np.float64)
    for d in (2, 3, 4, 5, 7, 9, 10, 50):
        exact = (k / d).astype(np.float32)
        divided = k.astype(np.float32) / np.float32(d)
        if not np.array_equal(exact, divided):  # pragma: no cover - IEEE-754 guarantees it
            raise AssertionError(f"float32 division by {d} is not the float64 quotient")


_check_division()


def _div(value: jax.Array, divisor: float) -> jax.Array:
    """float32 ``value / divisor``, equal to the float64 quotient rounded (``_check_division``)."""
    return value.astype(jnp.float32) / jnp.float32(divisor)


def _scaled(value: jax.Array, table: np.ndarray, divisor: float) -> jax.Array:
    """float32: ``value / divisor`` from the host table, exact fallback outside it."""
    v = value.astype(jnp.int32)
    n = table.shape[0]
    inside = (v >= 0) & (v < n)
    looked = jnp.asarray(table)[jnp.clip(v, 0, n - 1)]
    return jnp.where(inside, looked, v.astype(jnp.float32) / jnp.float32(divisor))


def _capped50(value: jax.Array) -> jax.Array:
    """float32: min(value / 50, 1) (interface §3.2 credits/energy)."""
    v = value.astype(jnp.int32)
    looked = jnp.asarray(DIV50_CAPPED)[jnp.clip(v, 0, 50)]
    return jnp.where(v >= 0, looked, v.astype(jnp.float32) / jnp.float32(50.0))


def player_features(state: GameState) -> jax.Array:
    """float32[10] (interface §3.2)."""
    p = state.player
    f32 = jnp.float32
    return jnp.stack(
        [
            _scaled(p.pos[0], DIV5, 5),
            _scaled(p.pos[1], DIV5, 5),
            _scaled(p.hp, DIV3, 3),
            _capped50(p.credits),
            _capped50(p.energy),
            _scaled(state.stage.astype(jnp.int32) - 1, DIV7, 7),
            _scaled(p.siphons, DIV10, 10),
            (p.attack.astype(jnp.int32) - 1).astype(f32) / f32(2.0),  # halves: exact
            state.show_flag.astype(f32),
            state.calm_flag.astype(f32),
        ]
    )


_NONE = np.int32(0x7FFFFFFF)  # no entry on the cell


def _first_words(pos: jax.Array, alive: jax.Array, fields: jax.Array) -> jax.Array:
    """int32[36]: per cell, ``slot << 16 | fields`` of the earliest alive slot on it, else ``_NONE``.

    ``fields`` (int32[N], below 2**16) packs what the observation reads of a
    slot; the slot in the high bits makes the minimum over the slots on a cell
    the earliest one (rules §2.7), so one reduction gives every field.
    """
    cell = pos[:, 0].astype(jnp.int32) * GRID_SIZE + pos[:, 1].astype(jnp.int32)  # int32[N]
    match = (cell[:, None] == jnp.arange(GRID_SIZE * GRID_SIZE)) & alive[:, None]  # bool[N,36]
    words = (jnp.arange(pos.shape[0], dtype=jnp.int32) << 16) | fields
    return jnp.min(jnp.where(match, words[:, None], _NONE), axis=0)


def _signed_byte(word: jax.Array) -> jax.Array:
    """int32: the low 8 bits of ``word`` as a signed int8 value."""
    return ((word & 0xFF) ^ 0x80) - 0x80


def grid_features(state: GameState) -> jax.Array:
    """float32[6,6,42] (interface §3.4-3.5)."""
    f32 = jnp.float32
    cells = GRID_SIZE * GRID_SIZE
    rows = jnp.arange(cells) // GRID_SIZE
    cols = jnp.arange(cells) % GRID_SIZE
    # Enemies: the first enemy in list order with hp > 0 on the cell; cryptogs need
    # the player's row/col or SHOW.
    en = state.enemies
    enemy = _first_words(
        en.pos,
        en.alive & (en.hp > 0),
        (en.hp.astype(jnp.int32) & 0xFF)
        | (en.kind.astype(jnp.int32) << 8)
        | (en.stunned.astype(jnp.int32) << 10)
        | (en.from_siphon.astype(jnp.int32) << 11),
    )
    found = enemy != _NONE
    kind = (enemy >> 8) & 3
    same_line = (rows == state.player.pos[0]) | (cols == state.player.pos[1])
    visible = found & ((kind != EnemyKind.CRYPTOG) | same_line | state.show_flag)
    hp3 = jnp.where(visible, _div(_signed_byte(enemy), 3), 0.0)
    stunned = visible & (((enemy >> 10) & 1) == 1)
    from_siphon = visible & (((enemy >> 11) & 1) == 1)
    # Blocks: question blocks show only their type and siphoned flag.
    g = jax.tree.map(lambda x: x.reshape(cells), state.grid)
    is_block = g.content == Content.BLOCK
    shown = is_block & ~g.block_question
    is_data = shown & (g.block_kind == BlockKind.DATA)
    is_prog = shown & (g.block_kind == BlockKind.PROGRAM)
    # Transmissions: the first one in list order on the cell.
    tr = state.transmissions
    trans_word = _first_words(tr.pos, tr.alive, tr.countdown.astype(jnp.int32) & 0xFF)
    t_found = trans_word != _NONE
    countdown = _signed_byte(trans_word).astype(f32)
    trans = jnp.where(t_found, jnp.minimum(countdown / f32(4.0), f32(1.0)), 0.0)  # quarters: exact
    # Resources: visible iff no block or siphoned.
    res_visible = (~is_block | g.siphoned) & (g.resource_amount > 0)
    amount = _div(g.resource_amount, 3)

    # One elementwise pass writes the [36, 42] output: every one-hot channel is
    # "channel == the cell's code", every other channel one value per cell. (A
    # concatenation of per-group pieces cost about twice as much on CPU.)
    ch = jnp.arange(GRID_CHANNELS, dtype=jnp.int32)[None, :]
    enemy_code = jnp.where(visible, kind, -1)  # channels 0-3
    block_code = jnp.where(
        is_data, 7, jnp.where(is_prog, 8, jnp.where(is_block & g.block_question, 9, -1))
    )
    program_code = jnp.where(is_prog, 12 + g.block_program.astype(jnp.int32), -1)  # 12-34
    hot = (ch == enemy_code[:, None]) | (ch == block_code[:, None]) | (ch == program_code[:, None])
    values = {
        4: hp3,
        5: stunned,
        6: from_siphon,
        10: jnp.where(is_data, _div(g.block_points, 9), 0.0),
        11: is_block & g.siphoned,
        35: jnp.where(shown, _div(g.block_spawn, 9), 0.0),
        36: trans,
        37: jnp.where(res_visible & (g.resource_kind == Resource.CREDITS), amount, 0.0),
        38: jnp.where(res_visible & (g.resource_kind == Resource.ENERGY), amount, 0.0),
        39: g.content == Content.DATA_SIPHON,
        40: g.content == Content.EXIT,
        41: g.center,
    }
    out = hot.astype(f32)
    for channel, value in values.items():
        out = jnp.where(ch == channel, value.astype(f32)[:, None], out)
    return out.reshape(GRID_SIZE, GRID_SIZE, GRID_CHANNELS)


def observe_game(game: GameState, undo_available: jax.Array | bool) -> Observation:
    """The observation of ``game`` (interface §3), with the action mask.

    ``undo_available``: the UNDO ring holds a snapshot (the mask's UNDO entry).
    """
    return Observation(
        player=player_features(game),
        programs=programs.owned_programs(game).astype(jnp.float32),
        grid=grid_features(game),
        action_mask=action_mask(game, undo_available),
    )


def observe(state: EnvState) -> Observation:
    """The observation of an env state: its game's, with UNDO allowed when its ring holds one."""
    return observe_game(state.game, has_snapshot(state.history))


def flatten_observation(obs: Observation) -> jax.Array:
    """float32[..., 1545]: ``[player, programs, grid (C order)]`` (interface §3.1).

    Works on batched observations (leading axes are kept). The mask is not
    included; take it from ``obs.action_mask``.
    """
    lead = obs.player.shape[:-1]
    return jnp.concatenate(
        [obs.player, obs.programs, obs.grid.reshape(*lead, -1)], axis=-1, dtype=jnp.float32
    )
