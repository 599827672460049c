"""One transition of the env state (game + UNDO ring), shared by the gymnax env and Jumanji.

A game step reads the ring's top (``history.undo_top``), runs ``game.step_game``, and
records the step in the ring (``history.record_step``: pop if UNDO ran, push after a real
enemy phase); the reward (interface §4) reads the games before and after. Layer 5.5: the
two adapters (``env.HackMatrix``, ``jumanji.HackMatrixJumanji``) differ only in what they
do around it (auto-reset, observation, key handling).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from hackmatrix_env.game import OwedStage, generate_owed, is_episode_over, step_game_owing
from hackmatrix_env.history import record_step, undo_top
from hackmatrix_env.reward import reward_breakdown, total_reward
from hackmatrix_env.stage import reset_game
from hackmatrix_env.types import EnvParams, EnvState, History, StepEvents, blank_history


def action_index(action: int | jax.Array, where: str = "step") -> jax.Array:
    """``action`` as int32 (interface §0.2); a ``TypeError`` at trace time unless its dtype is an
    integer one. A float is never rounded to an action; an integer outside 0..27 stays an
    invalid action (interface §2)."""
    dtype = jnp.result_type(action)
    if not jnp.issubdtype(dtype, jnp.integer):
        raise TypeError(
            f"{where}: the action must have an integer dtype (an index 0..27), got {dtype}; "
            "cast it explicitly, e.g. jnp.int32(a), if a rounded value is meant"
        )
    return jnp.asarray(action, jnp.int32)


def advance(key: jax.Array, state: EnvState, action: jax.Array) -> tuple[EnvState, StepEvents]:
    """The game step and its ring update (``time`` unchanged): ``(state, events)``.

    The ring pops if UNDO ran and pushes after a real enemy phase; an UNDO that empties a
    ring which dropped snapshots sets ``overflow`` (``history.drop_snapshot``).
    """
    after, ev, owed = advance_owing(key, state, action)
    return after.replace(game=generate_owed(after.game, owed)), ev


def advance_owing(
    key: jax.Array, state: EnvState, action: jax.Array
) -> tuple[EnvState, StepEvents, OwedStage]:
    """``advance`` with the new stage's generation owed (``game.step_game_owing``): the ring
    pushes only after a real enemy phase, never on a step that completes a stage."""
    game, ev, owed = step_game_owing(key, state.game, action, undo_top(state.history))
    history, diverged = record_step(state.history, game, ev.undone, ev.enemy_phase_ran)
    game = game.replace(overflow=game.overflow | diverged)
    return state.replace(game=game, history=history), ev, owed


def step_state(
    key: jax.Array, state: EnvState, action: jax.Array
) -> tuple[EnvState, jax.Array, jax.Array, dict[str, Any]]:
    """One env step without auto-reset: ``(state, reward f32, terminated, info)`` (§4).

    ``advance`` with ``time`` + 1; ``terminated``: ``game.is_episode_over`` (rules §13: the
    action was invalid, stage 8 was completed, or the player died).
    """
    after, reward, terminated, info, owed = step_state_owing(key, state, action)
    return after.replace(game=generate_owed(after.game, owed)), reward, terminated, info


def step_state_owing(
    key: jax.Array, state: EnvState, action: jax.Array
) -> tuple[EnvState, jax.Array, jax.Array, dict[str, Any], OwedStage]:
    """``step_state`` with the new stage's generation owed: ``(..., owed)``. The reward and
    ``terminated`` read nothing the generation writes (a completed stage's distance term is
    D0, its player is the generation's input), so they are ``step_state``'s exactly."""
    after, ev, owed = advance_owing(key, state, action)
    breakdown = reward_breakdown(state.game, after.game, ev)
    reward = total_reward(breakdown).astype(jnp.float32)
    terminated = is_episode_over(after.game, failed=ev.invalid, won=ev.victory)
    info = {
        "reward_breakdown": breakdown,
        "action_kind": ev.action_kind,
        "invalid_action": ev.invalid,
        "history_overflow": after.game.overflow,
    }
    after = after.replace(time=(state.time + 1).astype(jnp.int32))
    return after, reward, terminated, info, owed


def reset_state(key: jax.Array, params: EnvParams) -> EnvState:
    """A fresh game (rules §10.1) at time 0 with an empty UNDO ring of ``params.history_depth``."""
    game = reset_game(key, params)
    return EnvState(time=jnp.int32(0), game=game, history=blank_history(params.history_depth))


def clear_history(hist: History, where: jax.Array) -> History:
    """``hist`` emptied where ``where``: the counters only (an empty ring's buffer is never read)."""
    zero = jnp.int32(0)
    return hist.replace(
        top=jnp.where(where, zero, hist.top),
        size=jnp.where(where, zero, hist.size),
        lost=jnp.where(where, zero, hist.lost),
    )
