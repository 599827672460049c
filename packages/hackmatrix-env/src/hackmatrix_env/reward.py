"""The reward: 15 components in summation order (interface §4), layer 4.

``reward_breakdown(before, after, events)`` reads only the state before the
action, the state after the whole step, and the step's events. An invalid
action gives exactly 0 in every component. ``total_reward`` adds the
components left to right in table order, as Swift does (interface §4.1).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from hackmatrix_env.board import block_map
from hackmatrix_env.constants import (
    DAMAGE_COEF,
    DATA_SIPHON_REWARD,
    DEATH_COEF,
    DISTANCE_COEF,
    HOLDING_COEF,
    KILL_COEF,
    NUM_STAGES,
    PROGRAM_WASTE_PENALTY,
    RECOVERY_COEF,
    RESOURCE_COEF,
    SCORE_COEF,
    SIPHON_DEATH_PENALTY,
    SIPHON_QUALITY_COEF,
    STAGE_REWARD,
    STEP_PENALTY,
    VICTORY_BASE,
    VICTORY_SCORE_COEF,
)
from hackmatrix_env.pathfinding import bfs_distance
from hackmatrix_env.types import GameState, StepEvents

# Death penalty by stage_after (interface §4.4): -0.5 * sum(T[0 .. stage-2]); 0 (-0.0) at
# stage 1. Index NUM_STAGES + 1 stands for every injected stage > 8: all 8 entries of T
# (specs/choices.md, as the Swift twin).
DEATH_PENALTY = np.array(
    [DEATH_COEF * float(STAGE_REWARD[: max(s - 1, 0)].sum()) for s in range(NUM_STAGES + 2)],
    np.float32,
)


def shaping_distance(state: GameState) -> jax.Array:
    """int32[]: BFS distance player -> exit_pos (interface §4.5), 0 when there is no path."""
    d = bfs_distance(block_map(state.grid), state.player.pos, state.exit_pos)
    return jnp.maximum(d, 0)


def reward_breakdown(before: GameState, after: GameState, events: StepEvents) -> jax.Array:
    """float32[15] in the order of constants.REWARD_COMPONENTS (interface §4.2)."""
    f32 = jnp.float32
    hp0 = before.player.hp.astype(jnp.int32)
    hp1 = after.player.hp.astype(jnp.int32)
    died = hp1 == 0
    completed = events.exit_reached
    stage1 = after.stage.astype(jnp.int32)
    table = jnp.asarray(STAGE_REWARD)

    k = stage1 - 1
    stage_reward = jnp.where(completed & (k >= 1) & (k <= 8), table[jnp.clip(k - 1, 0, 7)], 0.0)
    score = SCORE_COEF * (after.player.score - before.player.score).astype(f32)
    kills = KILL_COEF * events.kills.astype(f32)
    data_siphon = jnp.where(events.data_siphon_collected, f32(DATA_SIPHON_REWARD), 0.0)
    d0 = events.dist_before
    delta = jnp.where(died, 0, jnp.where(completed, d0, d0 - shaping_distance(after)))
    distance = DISTANCE_COEF * jnp.maximum(delta, 0).astype(f32)
    score1 = after.player.score.astype(f32)
    victory = jnp.where(events.victory, VICTORY_BASE + VICTORY_SCORE_COEF * score1, 0.0)
    death = jnp.where(died, jnp.asarray(DEATH_PENALTY)[jnp.clip(stage1, 0, NUM_STAGES + 1)], 0.0)
    dc = (after.player.credits - before.player.credits).astype(f32)
    de = (after.player.energy - before.player.energy).astype(f32)
    resource = RESOURCE_COEF * dc + RESOURCE_COEF * de
    c1 = after.player.credits.astype(f32)
    e1 = after.player.energy.astype(f32)
    holding = jnp.where(completed, HOLDING_COEF * c1 + HOLDING_COEF * e1, 0.0)
    damage = DAMAGE_COEF * jnp.maximum(hp0 - hp1, 0).astype(f32)
    recovery = RECOVERY_COEF * jnp.maximum(hp1 - hp0, 0).astype(f32)
    mc = events.siphon_missed_credits.astype(f32)
    me = events.siphon_missed_energy.astype(f32)
    quality = jnp.where(
        (mc > 0) | (me > 0), SIPHON_QUALITY_COEF * (RESOURCE_COEF * mc + RESOURCE_COEF * me), 0.0
    )
    waste = jnp.where(events.reset_wasteful, f32(PROGRAM_WASTE_PENALTY), 0.0)
    siphon_death = jnp.where(events.died_to_siphon_enemy, f32(SIPHON_DEATH_PENALTY), 0.0)

    parts = [
        jnp.full((), STEP_PENALTY, f32),
        stage_reward,
        score,
        kills,
        data_siphon,
        distance,
        victory,
        death,
        resource,
        holding,
        damage,
        recovery,
        quality,
        waste,
        siphon_death,
    ]
    breakdown = jnp.stack([jnp.asarray(p, f32) for p in parts])
    return jnp.where(events.invalid, jnp.zeros_like(breakdown), breakdown)


def total_reward(breakdown: jax.Array) -> jax.Array:
    """float32[]: the components summed left to right in table order (interface §4.1)."""
    parts = [breakdown[..., i] for i in range(breakdown.shape[-1])]
    return functools.reduce(lambda a, b: a + b, parts)
