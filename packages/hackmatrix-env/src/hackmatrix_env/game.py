"""One game step as a straight pipeline of phases (interface §1, rules §3), layer 5.

    state = direction(action)                        §1 step 3, every row (cheap, dense)
    state = siphon_or_program(k_prog, ...)           §1 step 3, rows that siphon or run one
    state = state if the action was valid else the old state            §1 step 4
    state = complete_stage(...); generate_stage(k_stage, ...)  §1 step 5, rows on the exit
    state = enemy_phase(k_enemy, ...)                §1 step 6, rows whose turn ended
    events for the reward                            §1 steps 2, 7

Each phase is a function of the state that leaves the rows it does not concern unchanged, so
under ``vmap`` every row takes the same straight path and no branch is selected afterwards.
The rare phases (siphon or program, the new stage's generation, the enemy phase's placements
and its per-enemy loop) run through the sparse scheduler of ``batching`` (``compute_where``,
``ragged_fori_loop``): under ``vmap`` only the rows that need them pay (specs/env-shell.md §4);
unbatched they are a ``lax.cond`` and a ``fori_loop``. This module is the only rule module that
names the scheduler: the rule modules compute one game's phase, and take the loop or the
sparse evaluation as an argument where they have one.

The game never holds the UNDO ring: a step reads ``undo`` (``history.undo_top``) and says in
its events whether UNDO ran and whether a real enemy phase ran; the env shell pops and pushes
(``history.record_step``). ``EnvState.time`` is the shell's too.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hackmatrix_env import enemies, programs
from hackmatrix_env.batching import compute_where, ragged_fori_loop
from hackmatrix_env.board import select_tree
from hackmatrix_env.constants import FIRST_PROGRAM, NUM_PROGRAMS, Action, ActionKind
from hackmatrix_env.movement import resolve_direction
from hackmatrix_env.reward import shaping_distance
from hackmatrix_env.siphon import apply_siphon, siphon_quality
from hackmatrix_env.stage import advance_stage, generate_stage
from hackmatrix_env.types import GameState, StepEvents, UndoTop


def died_to_siphon_enemy(state: GameState) -> jax.Array:
    """bool[]: an enemy next to the player carries the siphon flag (interface §1 step 7)."""
    e = state.enemies
    dist = jnp.sum(jnp.abs(e.pos.astype(jnp.int32) - state.player.pos.astype(jnp.int32)), axis=-1)
    return jnp.any(e.alive & e.from_siphon & (dist == 1))


def siphon_or_program(
    key: jax.Array, state: GameState, prog_idx: jax.Array, siphon: jax.Array, undo: UndoTop
) -> tuple[GameState, jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]:
    """The siphon (``siphon`` True) or program ``prog_idx``, and what the step reads of it.

    Returns ``(state, missed_credits, missed_energy, kills, warp_exit, program_valid)``. The
    program's validity is read only on program rows, so it is computed here, in the sparse
    job (a dense ``program_mask`` per step costs about 3 % of the step).
    """
    siphoned = apply_siphon(state)
    missed_c, missed_e = siphon_quality(state)
    ran, kills, warp = programs.run_program(key, state, prog_idx, undo.snapshot)
    ok = programs.program_mask(state, undo.available)[prog_idx]
    return select_tree(siphon, siphoned, ran), missed_c, missed_e, kills, warp, ok


def complete_stage(key: jax.Array, state: GameState, reached: jax.Array) -> GameState:
    """Stage completion where ``reached`` (rules §9.2): hp + 1; below stage 8 the next stage.

    The new stage's generation is rare (one step in dozens) and long: sparse.
    """
    advanced, generate = advance_stage(state)
    state = select_tree(reached, advanced, state)
    return compute_where(reached & generate, generate_stage, (key, state), state)


def enemy_phase(key: jax.Array, state: GameState, active: jax.Array) -> tuple[GameState, jax.Array]:
    """The enemy phase after a turn-ending action (rules §7) where ``active``: (state, ran).

    ``ran`` is True iff a real phase ran; under STEP (``step_flag``) the phase is skipped
    and only the flag is cleared. The UNDO snapshot that ends a real phase (§7.2 step 8) is
    pushed by the env shell.
    """
    order_seed, seed_sched, seed_owed = enemies.phase_seeds(key)  # rules §12.1
    real = active & ~state.step_flag
    phased = enemies.hatch_transmissions(enemies.next_turn(state))
    phased = enemies.move_enemies(order_seed, phased, loop=ragged_fori_loop)
    phased = enemies.place_scheduled_and_owed(seed_sched, seed_owed, phased, sparse=compute_where)
    phased = enemies.clear_statuses(phased)
    state = select_tree(real, phased, state)
    return state.replace(step_flag=state.step_flag & ~active), real


def step_game(
    key: jax.Array, state: GameState, action: jax.Array, undo: UndoTop
) -> tuple[GameState, StepEvents]:
    """Apply action 0..27 (interface §1). Returns (state, events); the reward reads both.

    ``undo``: what the step reads of the UNDO ring (``history.undo_top``).
    """
    k_prog, k_stage, k_enemy = jax.random.split(key, 3)
    action = jnp.asarray(action, jnp.int32)
    before = state
    d0 = shaping_distance(state)  # §1 step 2
    hp0 = state.player.hp.astype(jnp.int32)
    is_dir = action < Action.SIPHON
    is_siphon = action == Action.SIPHON
    is_prog = action >= FIRST_PROGRAM
    prog_idx = jnp.clip(action - FIRST_PROGRAM, 0, NUM_PROGRAMS - 1)

    # §1 step 3: the player action. The direction's state is the sparse job's default, so
    # the job's result is already the state the chosen action gives.
    moved, dir_ok, shot, dir_kills, collected, dir_exit = resolve_direction(
        state, jnp.clip(action, 0, Action.RIGHT)
    )
    no = jnp.bool_(False)
    state, missed_c, missed_e, prog_kills, warp_exit, prog_ok = compute_where(
        is_siphon | is_prog,
        siphon_or_program,
        (k_prog, state, prog_idx, is_siphon, undo),
        (moved, jnp.int32(0), jnp.int32(0), jnp.int32(0), no, no),
    )
    valid = jnp.where(is_dir, dir_ok, jnp.where(is_siphon, before.player.siphons > 0, prog_ok))
    state = select_tree(valid, state, before)  # §1 step 4: a failed action changes nothing

    exit_reached = valid & jnp.where(is_dir, dir_exit, is_prog & warp_exit)
    turn_ending = valid & ~exit_reached
    turn_ending &= is_dir | is_siphon | (is_prog & programs.is_turn_ending(prog_idx))

    # §1 steps 5-6: stage completion, or the enemy phase (never both).
    state = complete_stage(k_stage, state, exit_reached)
    state, ran = enemy_phase(k_enemy, state, turn_ending)

    hp1 = state.player.hp.astype(jnp.int32)
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
        victory=exit_reached & (before.stage >= 8),
        enemy_phase_ran=ran,
        # after any turn-ending action, even a STEP-skipped phase (specs/choices.md)
        died_to_siphon_enemy=died & turn_ending & died_to_siphon_enemy(state),
        siphon_missed_credits=jnp.where(quality_on, missed_c, 0).astype(jnp.int32),
        siphon_missed_energy=jnp.where(quality_on, missed_e, 0).astype(jnp.int32),
        reset_wasteful=valid & (action == Action.RESET) & (hp0 == 2),
        dist_before=d0.astype(jnp.int32),
        undone=valid & (action == Action.UNDO),
    )
    return state, events
