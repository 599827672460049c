"""Frozen copy of ``game.step_game`` at commit b2cefe1: a test oracle, not game code.

Siphon and programs as two separate sparse jobs, as before they became one
(specs/env-shell.md §7.3); tests/env/test_rewrites.py checks that the current
``step_game`` equals it on random states with owned programs, actions 0-27.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from hackmatrix_env import programs
from hackmatrix_env.batching import compute_where
from hackmatrix_env.board import select_tree
from hackmatrix_env.constants import FIRST_PROGRAM, NUM_PROGRAMS, Action, ActionKind
from hackmatrix_env.enemies import run_enemy_phase
from hackmatrix_env.movement import resolve_direction
from hackmatrix_env.reward import shaping_distance
from hackmatrix_env.siphon import apply_siphon, siphon_quality
from hackmatrix_env.stage import complete_stage
from hackmatrix_env.types import EnvState, StepEvents


def _select_state(pred: jax.Array, a: EnvState, b: EnvState) -> EnvState:
    """``select_tree`` over every field except the history buffer, which is taken from ``a``.

    Callers guarantee both buffers hold the same data where it matters.
    """
    snaps = a.history.snapshots
    strip = lambda s: s.replace(history=s.history.replace(snapshots=None))  # noqa: E731
    out = select_tree(pred, strip(a), strip(b))
    return out.replace(history=out.history.replace(snapshots=snaps))


def _strip(state: EnvState) -> EnvState:
    """The state without the snapshot buffer (for sparse evaluation)."""
    return state.replace(history=state.history.replace(snapshots=None))


def _strip_first(out: tuple) -> tuple:
    return (_strip(out[0]), *out[1:])


def _attach(light: EnvState, full: EnvState) -> EnvState:
    """``light`` with the snapshot buffer of ``full`` (no branch here writes it)."""
    return light.replace(history=light.history.replace(snapshots=full.history.snapshots))


def died_to_siphon_enemy(state: EnvState) -> jax.Array:
    """bool[]: an enemy next to the player carries the siphon flag (interface §1 step 7)."""
    e = state.enemies
    dist = jnp.sum(jnp.abs(e.pos.astype(jnp.int32) - state.player.pos.astype(jnp.int32)), axis=-1)
    return jnp.any(e.alive & e.from_siphon & (dist == 1))


def step_game(key: jax.Array, state: EnvState, action: jax.Array) -> tuple[EnvState, StepEvents]:
    """Apply action 0..27 (interface §1). Returns (state, events); the reward reads both."""
    k_prog, k_stage, k_enemy = jax.random.split(key, 3)
    action = jnp.asarray(action, jnp.int32)
    d0 = shaping_distance(state)  # §1 step 2
    hp0 = state.player.hp.astype(jnp.int32)

    # §1 step 3: the player action, every kind computed, one selected.
    is_dir = action < Action.SIPHON
    is_siphon = action == Action.SIPHON
    is_prog = action >= FIRST_PROGRAM
    prog_idx = jnp.clip(action - FIRST_PROGRAM, 0, NUM_PROGRAMS - 1)
    moved, dir_ok, shot, dir_kills, collected, dir_exit = resolve_direction(
        state, jnp.clip(action, 0, Action.RIGHT)
    )
    light = _strip(state)  # rare branches run sparsely under vmap (batching.compute_where)
    siphoned, missed_c, missed_e = compute_where(
        is_siphon,
        lambda s: (apply_siphon(s), *siphon_quality(s)),
        (light,),
        (light, jnp.int32(0), jnp.int32(0)),
    )
    siphoned = _attach(siphoned, state)
    ran_prog, prog_kills, warp_exit = compute_where(
        is_prog,
        lambda k, s, p: _strip_first(programs.run_program(k, s, p)),
        (k_prog, state, prog_idx),
        (light, jnp.int32(0), jnp.bool_(False)),
    )
    ran_prog = _attach(ran_prog, state)
    prog_ok = programs.program_mask(state)[prog_idx]
    valid = jnp.where(is_dir, dir_ok, jnp.where(is_siphon, state.player.siphons > 0, prog_ok))

    acted = _select_state(is_siphon, siphoned, moved)
    acted = _select_state(is_prog, ran_prog, acted)
    exit_reached = valid & jnp.where(is_dir, dir_exit, is_prog & warp_exit)
    turn_ending = valid & ~exit_reached
    turn_ending &= is_dir | is_siphon | (is_prog & programs.is_turn_ending(prog_idx))

    # §1 steps 5-6: stage completion, or the enemy phase (never both).
    completed = complete_stage(k_stage, acted, needed=exit_reached)
    phased, ran = run_enemy_phase(k_enemy, acted, active=turn_ending)
    after = _select_state(exit_reached, completed.replace(history=phased.history), phased)
    # §1 step 4: a failed action leaves the state untouched (history included: no
    # push happened, turn_ending requires validity).
    after = _select_state(valid, after, state)

    hp1 = after.player.hp.astype(jnp.int32)
    died = valid & (hp1 == 0)
    kind = jnp.where(
        is_dir,
        jnp.where(shot, ActionKind.ATTACK, ActionKind.MOVE),
        jnp.where(is_siphon, ActionKind.SIPHON, ActionKind.PROGRAM),
    )
    quality_on = valid & is_siphon
    events = StepEvents(
        invalid=~valid,
        action_kind=jnp.where(valid, kind, ActionKind.INVALID).astype(jnp.int8),
        kills=jnp.where(
            valid, jnp.where(is_dir, dir_kills, jnp.where(is_prog, prog_kills, 0)), 0
        ).astype(jnp.int32),
        data_siphon_collected=valid & is_dir & collected,
        exit_reached=exit_reached,
        victory=exit_reached & (state.stage >= 8),
        enemy_phase_ran=ran & valid,
        # after any turn-ending action, even a STEP-skipped phase (specs/choices.md)
        died_to_siphon_enemy=died & turn_ending & died_to_siphon_enemy(after),
        siphon_missed_credits=jnp.where(quality_on, missed_c, 0).astype(jnp.int32),
        siphon_missed_energy=jnp.where(quality_on, missed_e, 0).astype(jnp.int32),
        reset_wasteful=valid & (action == Action.RESET) & (hp0 == 2),
        dist_before=d0.astype(jnp.int32),
    )
    return after, events
