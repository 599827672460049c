"""The RL observation (interface §3), layer 4.

``observe(state) -> Observation`` builds the same numbers the original Python
client builds from the JSON observation (interface §3.7): every normalised
value comes from a small float32 lookup table computed on the host in float64
(``k/3``, ``k/5``, ``k/7``, ``k/9``, ``k/10``, ``min(k/50, 1)``), so the
result is bit-exact on any backend; values outside a table fall back to a
float32 division, which is exact for the quarter/half scales and correctly
rounded elsewhere on CPU.

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

from hackmatrix_env.constants import (
    GRID_CHANNELS,
    GRID_SIZE,
    NUM_PROGRAMS,
    BlockKind,
    Content,
    EnemyKind,
    Resource,
)
from hackmatrix_env.mask import action_mask
from hackmatrix_env.types import EnvState, Observation

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
DIV9 = _table(9)
DIV10 = _table(10)
DIV50_CAPPED = _table(50, cap=1.0, size=51)


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


def player_features(state: EnvState) -> jax.Array:
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


def owned_programs(state: EnvState) -> jax.Array:
    """bool[23]: program p is in the owned list (duplicates allowed, interface §3.7)."""
    slots = jnp.arange(state.owned_list.shape[0]) < state.num_owned.astype(jnp.int32)
    hits = (state.owned_list[:, None].astype(jnp.int32) == jnp.arange(NUM_PROGRAMS)) & slots[
        :, None
    ]
    return jnp.any(hits, axis=0)


def _first_at_cells(pos: jax.Array, alive: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(found bool[36], idx int32[36]): earliest pool slot on each cell (rules §2.7)."""
    cell = pos[:, 0].astype(jnp.int32) * GRID_SIZE + pos[:, 1].astype(jnp.int32)  # int32[N]
    match = (cell[:, None] == jnp.arange(GRID_SIZE * GRID_SIZE)) & alive[:, None]  # bool[N,36]
    return jnp.any(match, axis=0), jnp.argmax(match, axis=0).astype(jnp.int32)


def grid_features(state: EnvState) -> jax.Array:
    """float32[6,6,42] (interface §3.4-3.5)."""
    f32 = jnp.float32
    cells = GRID_SIZE * GRID_SIZE
    rows = jnp.arange(cells) // GRID_SIZE
    cols = jnp.arange(cells) % GRID_SIZE
    # Enemies: the first enemy in list order with hp > 0 on the cell; cryptogs need
    # the player's row/col or SHOW.
    en = state.enemies
    found, idx = _first_at_cells(en.pos, en.alive & (en.hp > 0))
    kind = en.kind[idx].astype(jnp.int32)
    same_line = (rows == state.player.pos[0]) | (cols == state.player.pos[1])
    visible = found & ((kind != EnemyKind.CRYPTOG) | same_line | state.show_flag)
    enemy = jnp.concatenate(
        [
            (kind[:, None] == jnp.arange(4)) & visible[:, None],
            jnp.where(visible, _scaled(en.hp[idx], DIV3, 3), 0.0)[:, None],
            (visible & en.stunned[idx])[:, None],
            (visible & en.from_siphon[idx])[:, None],
        ],
        axis=1,
        dtype=f32,
    )  # [36, 7]
    # Blocks: question blocks show only their type and siphoned flag.
    g = jax.tree.map(lambda x: x.reshape(cells), state.grid)
    is_block = g.content == Content.BLOCK
    shown = is_block & ~g.block_question
    is_data = shown & (g.block_kind == BlockKind.DATA)
    is_prog = shown & (g.block_kind == BlockKind.PROGRAM)
    prog_onehot = (
        g.block_program[:, None].astype(jnp.int32) == jnp.arange(NUM_PROGRAMS)
    ) & is_prog[:, None]
    block = jnp.concatenate(
        [
            jnp.stack([is_data, is_prog, is_block & g.block_question], axis=1).astype(f32),
            jnp.where(is_data, _scaled(g.block_points, DIV9, 9), 0.0)[:, None],
            (is_block & g.siphoned)[:, None].astype(f32),
            prog_onehot.astype(f32),
            jnp.where(shown, _scaled(g.block_spawn, DIV9, 9), 0.0)[:, None],
        ],
        axis=1,
    )  # [36, 29]
    # Transmissions: the first one in list order on the cell.
    tr = state.transmissions
    t_found, t_idx = _first_at_cells(tr.pos, tr.alive)
    countdown = tr.countdown[t_idx].astype(f32)
    trans = jnp.where(t_found, jnp.minimum(countdown / f32(4.0), f32(1.0)), 0.0)  # quarters: exact
    # Resources: visible iff no block or siphoned.
    res_visible = (~is_block | g.siphoned) & (g.resource_amount > 0)
    amount = _scaled(g.resource_amount, DIV3, 3)
    credits = jnp.where(res_visible & (g.resource_kind == Resource.CREDITS), amount, 0.0)
    energy = jnp.where(res_visible & (g.resource_kind == Resource.ENERGY), amount, 0.0)
    flags = jnp.stack(
        [g.content == Content.DATA_SIPHON, g.content == Content.EXIT, g.center], axis=1
    ).astype(f32)
    out = jnp.concatenate(
        [enemy, block, trans[:, None], credits[:, None], energy[:, None], flags], axis=1
    )
    return out.reshape(GRID_SIZE, GRID_SIZE, GRID_CHANNELS)


def observe(state: EnvState) -> Observation:
    """The observation of ``state`` (interface §3), with the action mask."""
    return Observation(
        player=player_features(state),
        programs=owned_programs(state).astype(jnp.float32),
        grid=grid_features(state),
        action_mask=action_mask(state),
    )


def flatten_observation(obs: Observation) -> jax.Array:
    """float32[..., 1545]: ``[player, programs, grid (C order)]`` (interface §3.1).

    Works on batched observations (leading axes are kept). The mask is not
    included; take it from ``obs.action_mask``.
    """
    lead = obs.player.shape[:-1]
    return jnp.concatenate(
        [obs.player, obs.programs, obs.grid.reshape(*lead, -1)], axis=-1, dtype=jnp.float32
    )
