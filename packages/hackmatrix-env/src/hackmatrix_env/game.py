"""One game step as a straight pipeline of phases (interface §1, rules §3), layer 5.

``step_game`` reads as the list of phases, one per line::

    after, turn = player_action(k_prog, state, action, undo)   §1 steps 3-4
    after, owed = owe_stage(k_stage, after, turn.exit_reached)  §1 step 5
    after, ran = enemy_phase(k_enemy, after, turn.ends_turn)    §1 step 6
    events = step_events(state, after, action, turn, ran)       §1 steps 2, 7
    after = generate_owed(after, owed)                          §1 step 5: the new stage

The new stage's generation comes last (``step_game_owing`` stops before it): on the rows
that complete a stage nothing after it changes the state, and the env shell generates it
together with the auto-reset's fresh game, one traced generation for both.

Each phase is a function of the state that leaves the rows it does not concern unchanged, so
under ``vmap`` every row takes the same straight path and no branch is selected afterwards.
The rare parts (siphon or program, the new stage's generation, the enemy phase's placements
and its per-enemy loop) run through the sparse scheduler of ``batching`` (``compute_where``,
``ragged_fori_loop``) inside the phase that owns them: under ``vmap`` only the rows that need
them pay (specs/env-shell.md §4); unbatched they are a ``lax.cond`` and a ``fori_loop``. This
module is the only rule module that names the scheduler: the rule modules compute one game's
phase, and take the loop or the sparse evaluation as an argument where they have one.

Whether a step ends the episode (rules §13) is decided here only, by ``is_episode_over``: the
env step (``transition.step_state``) and the gymnax state predicate (``env.is_terminated``)
both call it.

The game never holds the UNDO ring: a step reads ``undo`` (``history.undo_top``) and says in
its events whether UNDO ran and whether a real enemy phase ran; the env shell pops and pushes
(``history.record_step``). ``EnvState.time`` is the shell's too.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from hackmatrix_env import enemies, programs
from hackmatrix_env.batching import compute_where, ragged_fori_loop
from hackmatrix_env.board import select_tree
from hackmatrix_env.constants import (
    FIRST_PROGRAM,
    NUM_PROGRAMS,
    NUM_STAGES,
    Action,
    ActionKind,
    Content,
)
from hackmatrix_env.movement import resolve_direction
from hackmatrix_env.reward import shaping_distance
from hackmatrix_env.siphon import apply_siphon, siphon_quality
from hackmatrix_env.stage import advance_stage, generate_from_seed, stage_seed
from hackmatrix_env.types import GameState, StepEvents, UndoTop


class Turn(NamedTuple):
    """What the player's action did, as the later phases and the events read it."""

    valid: jax.Array  # bool[]   the action succeeded (interface §1 step 4)
    kind: jax.Array  # int32[]  ActionKind the action has if it succeeds
    kills: jax.Array  # int32[]  kills of the direction or program, were it valid
    collected: jax.Array  # bool[]   a move picked up a data siphon
    exit_reached: jax.Array  # bool[]   a valid move or WARP reached the exit
    ends_turn: jax.Array  # bool[]   the enemy phase follows (interface §1 step 6)
    missed_credits: jax.Array  # int32[]  siphon quality (interface §4.6), siphon rows
    missed_energy: jax.Array  # int32[]


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


def player_action(
    key: jax.Array, state: GameState, action: jax.Array, undo: UndoTop
) -> tuple[GameState, Turn]:
    """The player's action (interface §1 step 3: rules §4, §5, programs §3), then the
    failure rule (§1 step 4: a failed action changes nothing).

    The direction (rules §4) is resolved on every row (cheap, dense) and is the default of
    the sparse siphon/program job, so the job's result is already the state the chosen
    action gives. Validity: direction, the resolution succeeded; siphon, siphons > 0;
    program, ``program_mask`` (programs §2), read inside the sparse job.
    """
    is_dir = action < Action.SIPHON
    is_siphon = action == Action.SIPHON
    is_prog = action >= FIRST_PROGRAM
    prog_idx = jnp.clip(action - FIRST_PROGRAM, 0, NUM_PROGRAMS - 1)

    moved, dir_ok, shot, dir_kills, collected, dir_exit = resolve_direction(
        state, jnp.clip(action, 0, Action.RIGHT)
    )
    no = jnp.bool_(False)
    acted, missed_c, missed_e, prog_kills, warp_exit, prog_ok = compute_where(
        is_siphon | is_prog,
        siphon_or_program,
        (key, state, prog_idx, is_siphon, undo),
        (moved, jnp.int32(0), jnp.int32(0), jnp.int32(0), no, no),
    )
    valid = jnp.where(is_dir, dir_ok, jnp.where(is_siphon, state.player.siphons > 0, prog_ok))
    after = select_tree(valid, acted, state)

    exit_reached = valid & jnp.where(is_dir, dir_exit, is_prog & warp_exit)
    ends_turn = valid & ~exit_reached
    ends_turn &= is_dir | is_siphon | (is_prog & programs.is_turn_ending(prog_idx))
    kind = jnp.where(
        is_dir,
        jnp.where(shot, ActionKind.ATTACK, ActionKind.MOVE),
        jnp.where(is_siphon, ActionKind.SIPHON, ActionKind.PROGRAM),
    )
    quality_on = valid & is_siphon
    turn = Turn(
        valid=valid,
        kind=kind,
        kills=jnp.where(is_dir, dir_kills, jnp.where(is_prog, prog_kills, 0)),
        collected=valid & is_dir & collected,
        exit_reached=exit_reached,
        ends_turn=ends_turn,
        missed_credits=jnp.where(quality_on, missed_c, 0),
        missed_energy=jnp.where(quality_on, missed_e, 0),
    )
    return after, turn


class OwedStage(NamedTuple):
    """A new stage the step owes (rules §9.2): where it is due, and the seed it is generated
    from (``stage.generate_from_seed``)."""

    due: jax.Array  # bool[]    stage completed below stage 8
    seed: jax.Array  # uint32[]  ``stage.stage_seed`` of the step's stage key


def owe_stage(key: jax.Array, state: GameState, reached: jax.Array) -> tuple[GameState, OwedStage]:
    """Stage completion where ``reached`` (rules §9.2): hp + 1; below stage 8 the next stage
    number, with the new stage's generation owed (``generate_owed``)."""
    advanced, generate = advance_stage(state)
    state = select_tree(reached, advanced, state)
    return state, OwedStage(due=reached & generate, seed=stage_seed(key))


def generate_owed(state: GameState, owed: OwedStage) -> GameState:
    """The owed new stage generated where it is due (rules §10.2). Rare (one step in dozens)
    and long: sparse."""
    return compute_where(owed.due, generate_from_seed, (owed.seed, state), state)


def complete_stage(key: jax.Array, state: GameState, reached: jax.Array) -> GameState:
    """Stage completion where ``reached`` (rules §9.2): hp + 1; below stage 8 the next stage."""
    return generate_owed(*owe_stage(key, state, reached))


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


def step_events(
    before: GameState, after: GameState, action: jax.Array, turn: Turn, ran: jax.Array
) -> StepEvents:
    """What the reward reads of the step (interface §1 steps 2 and 7, §4).

    D0 (``shaping_distance``, §4.5) is the distance on ``before``; ``died_to_siphon_enemy``
    is checked after every turn-ending action, even a STEP-skipped phase (specs/choices.md).
    """
    valid = turn.valid
    hp0 = before.player.hp.astype(jnp.int32)
    died = valid & (after.player.hp.astype(jnp.int32) == 0)
    return StepEvents(
        invalid=~valid,
        action_kind=jnp.where(valid, turn.kind, ActionKind.INVALID).astype(jnp.int8),
        kills=jnp.where(valid, turn.kills, 0).astype(jnp.int32),
        data_siphon_collected=turn.collected,
        exit_reached=turn.exit_reached,
        victory=turn.exit_reached & (before.stage >= NUM_STAGES),
        enemy_phase_ran=ran,
        died_to_siphon_enemy=died & turn.ends_turn & died_to_siphon_enemy(after),
        siphon_missed_credits=turn.missed_credits.astype(jnp.int32),
        siphon_missed_energy=turn.missed_energy.astype(jnp.int32),
        reset_wasteful=valid & (action == Action.RESET) & (hp0 == 2),
        dist_before=shaping_distance(before).astype(jnp.int32),
        undone=valid & (action == Action.UNDO),
    )


def step_game(
    key: jax.Array, state: GameState, action: jax.Array, undo: UndoTop
) -> tuple[GameState, StepEvents]:
    """Apply action 0..27 (interface §1). Returns (state, events); the reward reads both.

    ``undo``: what the step reads of the UNDO ring (``history.undo_top``). Stage completion
    and the enemy phase are exclusive: a step that reaches the exit does not end the turn.
    """
    after, events, owed = step_game_owing(key, state, action, undo)
    return generate_owed(after, owed), events


def step_game_owing(
    key: jax.Array, state: GameState, action: jax.Array, undo: UndoTop
) -> tuple[GameState, StepEvents, OwedStage]:
    """``step_game`` with the new stage's generation left owed: ``(state, events, owed)``.

    Stage completion and the enemy phase are exclusive, so on the rows that owe a stage the
    enemy phase changes nothing and the events read nothing the generation writes: generating
    at the end (``generate_owed``) gives ``step_game``'s state and events exactly. The env
    shell owes it so that one traced generation serves the new stage and the auto-reset
    (``env.generate_and_reset``: the graph holds one copy instead of two).
    """
    k_prog, k_stage, k_enemy = jax.random.split(key, 3)
    action = jnp.asarray(action, jnp.int32)
    after, turn = player_action(k_prog, state, action, undo)  # §1 steps 3-4
    after, owed = owe_stage(k_stage, after, turn.exit_reached)  # §1 step 5
    after, ran = enemy_phase(k_enemy, after, turn.ends_turn)  # §1 step 6
    return after, step_events(state, after, action, turn, ran), owed  # §1 steps 2, 7


def on_final_exit(state: GameState) -> jax.Array:
    """bool[]: the player stands on the exit of stage 8, where a victory leaves it (rules §9.2)."""
    r, c = state.player.pos[0].astype(jnp.int32), state.player.pos[1].astype(jnp.int32)
    on_exit = state.grid.content[r, c] == Content.EXIT
    return (state.stage >= NUM_STAGES) & on_exit


def is_episode_over(state: GameState, *, failed: jax.Array, won: jax.Array) -> jax.Array:
    """bool[]: done (rules §13): the action ``failed``, stage 8 was ``won``, or hp is 0.

    The one place that decides termination: ``transition.step_state`` passes the step's
    events (``invalid``, ``victory``); ``env.is_terminated``, which sees a state only, passes
    no failure and ``on_final_exit``.
    """
    return failed | won | (state.player.hp == 0)
