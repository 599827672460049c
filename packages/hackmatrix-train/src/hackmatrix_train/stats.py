"""HackMatrix's training statistics: episode sums, reward-component and action-group names, the
trainer's shaping terms, and the logged names of what an episode did (specs/train.md §2, §5, §6).

The rollout (``rollout.collect_rollout``) knows no game: it calls ``track_episodes`` once per
step. Per-env accumulators (``EpisodeAcc``: return, true length, reward components, stage
reached) live in the runner state, so an episode spanning several rollouts is measured whole;
the sums over episodes completed in a step come out for logging, and ``episode_metrics`` turns a
chunk's sums into the ``train/…``, ``reward/…``, ``actions/…``, ``stats/…`` scalars. An env that
is not HackMatrix (the probe suite) gets the generic part: returns, lengths, action shares.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct
from hackmatrix_env.constants import (
    DISTANCE_COEF,
    FIRST_PROGRAM,
    NUM_ACTIONS,
    NUM_DIRECTIONS,
    NUM_PROGRAMS,
    NUM_REWARD_COMPONENTS,
    NUM_STAGES,
    PROGRAM_NAMES,
    REWARD_COMPONENTS,
    Action,
    ActionKind,
    Program,
)

from hackmatrix_train.config import has_program_bonus

STAGE_COMPONENT = REWARD_COMPONENTS.index("stage_completion")
VICTORY_COMPONENT = REWARD_COMPONENTS.index("victory")
PLAYER_HP = 2  # the observation's player[2] is hp / 3 (interface §3.2)
# The action groups of the logged shares: the 4 directions, the siphon, the 23 programs.
MOVE_ACTIONS = slice(0, NUM_DIRECTIONS)
PROGRAM_ACTIONS = slice(FIRST_PROGRAM, NUM_ACTIONS)
# Action groups the exploration floor keeps alive: the siphon, and the programs together.
EXPLORE_GROUPS = ((int(Action.SIPHON),), tuple(range(FIRST_PROGRAM, NUM_ACTIONS)))
ACTION_KIND_NAMES = tuple(kind.name.lower() for kind in ActionKind)


@struct.dataclass
class EpisodeAcc:
    """Running per-env sums of the episode in progress."""

    ret: jax.Array  # f32[N]
    length: jax.Array  # int32[N]
    breakdown: jax.Array  # f32[N, K]  K reward components (0 if the env has none)
    stage: jax.Array  # int32[N]   highest stage reached so far (0 if the env has none)


def init_episode_acc(num_envs: int, num_components: int) -> EpisodeAcc:
    return EpisodeAcc(
        ret=jnp.zeros(num_envs, jnp.float32),
        length=jnp.zeros(num_envs, jnp.int32),
        breakdown=jnp.zeros((num_envs, num_components), jnp.float32),
        stage=jnp.zeros(num_envs, jnp.int32),
    )


def hackmatrix_game(env_state):
    """The HackMatrix ``GameState`` of a (batched) env state, or None for another env's state."""
    return getattr(env_state, "game", None)


def stage_of(env_state, num_envs: int) -> jax.Array:
    """int32[N]: the HackMatrix stage of each row (0 for another env's state)."""
    game = hackmatrix_game(env_state)
    if game is None:
        return jnp.zeros(num_envs, jnp.int32)
    return game.stage.astype(jnp.int32)


def programs_owned_of(env_state, num_envs: int) -> jax.Array:
    """int32[N]: the programs each HackMatrix row owns (0 for another env's state)."""
    game = hackmatrix_game(env_state)
    if game is None:
        return jnp.zeros(num_envs, jnp.int32)
    return game.num_owned.astype(jnp.int32)


def track_episodes(acc: EpisodeAcc, env_state, obs, action, reward, done, info, shaping):
    """One step's episode bookkeeping: ``(acc, sums)`` (the rollout's ``track``).

    ``env_state`` and ``obs`` are the pre-step ones, ``reward`` (f32[N]) the game's canonical
    reward, ``done`` (bool[N]) terminated or truncated, ``shaping`` (f32[N]) the trainer's terms.
    ``sums`` are over the episodes completed at this step (``ep_*``) and over this step's
    moves; ``ep_stage_max`` is a maximum (``update.is_max_metric``).
    """
    num_envs = obs.action_mask.shape[0]
    num_actions = obs.action_mask.shape[-1]
    num_components = acc.breakdown.shape[-1]
    stage_before = stage_of(env_state, num_envs)
    programs_owned = programs_owned_of(env_state, num_envs)

    breakdown = info.get("reward_breakdown")
    if breakdown is None or num_components == 0:
        breakdown = jnp.zeros((num_envs, num_components), jnp.float32)
    ep_breakdown = acc.breakdown + breakdown.astype(jnp.float32)
    ep_ret = acc.ret + reward
    ep_len = acc.length + 1
    if num_components == NUM_REWARD_COMPONENTS:  # HackMatrix's components, by name
        completed = breakdown[:, STAGE_COMPONENT] > 0
        won = breakdown[:, VICTORY_COMPONENT] > 0
    else:
        completed = won = jnp.zeros_like(done)
    reached = jnp.minimum(stage_before + (completed & ~won).astype(jnp.int32), NUM_STAGES)
    ep_stage = jnp.maximum(acc.stage, reached)

    d = done.astype(jnp.float32)
    kind = info.get("action_kind")
    kind_counts = (
        jnp.zeros(len(ActionKind), jnp.float32)
        if kind is None
        else jax.nn.one_hot(kind.astype(jnp.int32), len(ActionKind)).sum(0)
    )
    sums = {
        "ep_count": d.sum(),
        "ep_return": (ep_ret * d).sum(),
        "ep_length": (ep_len * d).sum(),
        "ep_breakdown": (ep_breakdown * d[:, None]).sum(0),
        "ep_stage": (ep_stage * d).sum(),
        "ep_stage_max": jnp.max(jnp.where(done, ep_stage, 0)).astype(jnp.float32),
        "ep_wins": (won & done).astype(jnp.float32).sum(),
        # episodes whose UNDO ring ran dry while Swift's stack would not (inexact tail)
        "ep_overflow": (info.get("history_overflow", jnp.zeros(num_envs, bool)) & done)
        .astype(jnp.float32)
        .sum(),
        "action_counts": jax.nn.one_hot(action, num_actions).sum(0),
        "kind_counts": kind_counts,
        "invalid": info.get("invalid_action", jnp.zeros(num_envs, bool)).astype(jnp.float32).sum(),
        "shaping": shaping.sum(),
        "programs_owned": programs_owned.sum().astype(jnp.float32),
    }
    keep = ~done
    acc = EpisodeAcc(
        ret=jnp.where(keep, ep_ret, 0.0),
        length=jnp.where(keep, ep_len, 0),
        breakdown=jnp.where(keep[:, None], ep_breakdown, 0.0),
        stage=jnp.where(keep, ep_stage, 0),
    )
    return acc, sums


# ---- the trainer's shaping terms (specs/train.md §5) ---------------------------------------


def program_potential(coef: float, skip_undo: bool = False):
    """``obs -> f32[N]``: the shaping potential ``coef`` x programs owned, or None when 0.

    HackMatrix observations carry ``programs`` (int32[N, 23] ownership flags, interface §3.3).
    ``skip_undo`` leaves UNDO out of the count: with UNDO counted, a bonus pays for taking the
    one program whose cross-stage quirk (rules §11.4) the canonical reward already pays for.
    """
    if coef == 0:
        return None
    weights = jnp.ones(NUM_PROGRAMS, jnp.float32)
    if skip_undo:
        weights = weights.at[Program.UNDO].set(0.0)
    weights = jnp.float32(coef) * weights
    return lambda obs: (obs.programs.astype(jnp.float32) * weights).sum(-1)


def exit_distance_gained(state, next_state) -> jax.Array:
    """f32[N]: how much farther from the exit each game's step took the player, on an ordinary
    step (the stage unchanged, the player alive); 0 where it came no farther.

    The distance is the game's own (``reward.shaping_distance``: BFS through block-free cells,
    0 without a path, interface §4.5). The game pays ``DISTANCE_COEF`` per unit of distance
    closed and nothing for distance gained, so a walk away from the exit and back pays
    ``DISTANCE_COEF`` a cycle, for ever (specs/train.md §5). Charged at the same rate
    (``--away-penalty 1``),
    this term and the game's together pay ``DISTANCE_COEF x (D0 - D1)`` on every ordinary
    step, a potential's difference: no loop pays.
    """
    # imported here: the rule modules build arrays at import, and importing this module must
    # not start JAX before the trainer sets its devices
    from hackmatrix_env.reward import shaping_distance

    d0 = jax.vmap(shaping_distance)(state.game)
    d1 = jax.vmap(shaping_distance)(next_state.game)
    ordinary = (state.game.stage == next_state.game.stage) & (next_state.game.player.hp > 0)
    return jnp.where(ordinary, jnp.maximum(d1 - d0, 0), 0).astype(jnp.float32)


def away_penalty(coef: float):
    """``(state, next_state) -> f32[N]``: minus ``coef`` x ``DISTANCE_COEF`` x the distance
    gained away from the exit (``exit_distance_gained``), or None when ``coef`` is 0."""
    if coef == 0:
        return None
    rate = jnp.float32(coef * DISTANCE_COEF)
    return lambda state, next_state: -rate * exit_distance_gained(state, next_state)


def died_of(final_obs, terminated) -> jax.Array:
    """bool[N]: the episodes that ended by the player's death on this step (hp 0 in the stepped
    state's observation: ``player[PLAYER_HP]`` is hp / 3, interface §3.2); a win is not one."""
    return terminated & (final_obs.player[..., PLAYER_HP] <= 0)


def shaping_term(
    potential, gamma: float, obs, final_obs, terminated, bonus=None, died=None
) -> jax.Array:
    """The trainer's terms for one transition: potential-based shaping plus a kept bonus.

    ``gamma * phi(s') - phi(s)`` for ``potential`` (0 when None): ``s'`` is the stepped state's
    observation (``final_observation``, before any auto-reset), and ``phi(s') = 0`` where the
    episode terminated, so over an episode the terms sum to ``-phi(s_0)`` plus discounting:
    shaping of this form leaves the optimal policy of the game's reward unchanged (Ng, Harada
    and Russell 1999), and a potential cannot be farmed.

    ``bonus(s') - bonus(s)`` for ``bonus`` (0 when None), never zeroed: undiscounted, an
    episode's terms sum to ``bonus(s_T) - bonus(s_0)``, what the episode ends with, so it does
    move the optimum (an intrinsic reward for ending with programs). Under discounting a cycle
    that gives a program back (UNDO) and takes it again nets ``C (1 - gamma)`` per cycle.
    Where ``died`` (bool[N], None: never), ``bonus(s')`` counts 0: a game that dies gives back
    what it earned, and its episode's terms sum to ``-bonus(s_0)``.
    """
    out = jnp.zeros(terminated.shape, jnp.float32)
    if potential is not None:
        phi_next = jnp.where(terminated, 0.0, potential(final_obs))
        out = out + jnp.float32(gamma) * phi_next - potential(obs)
    if bonus is not None:
        kept = bonus(final_obs) if died is None else jnp.where(died, 0.0, bonus(final_obs))
        out = out + kept - bonus(obs)
    return out


def make_shaping(cfg):
    """``bonus_coef -> shaping(obs, final_obs, terminated, state, next_state, done) -> f32[N]``:
    the config's terms (``--program-potential``, ``--program-bonus`` at this update's
    coefficient, given back at a death under ``--no-program-bonus-kept-at-death``, and
    ``--away-penalty``, 0 where the episode ended: ``next_state`` is then the next episode's
    start)."""
    skip_undo = cfg.program_terms_skip_undo
    potential = program_potential(cfg.program_potential, skip_undo)
    # the same count, kept at the end; its coefficient follows the bonus schedule
    counted = program_potential(1.0, skip_undo) if has_program_bonus(cfg) else None
    away = away_penalty(cfg.away_penalty)

    def with_coef(bonus_coef):
        def bonus(obs):
            return bonus_coef * counted(obs)

        def shaping(obs, final_obs, terminated, state, next_state, done):
            died = None if cfg.program_bonus_kept_at_death else died_of(final_obs, terminated)
            out = shaping_term(potential, cfg.gamma, obs, final_obs, terminated,
                               None if counted is None else bonus, died)  # fmt: skip
            if away is not None:
                out = out + jnp.where(done, 0.0, away(state, next_state))
            return out

        return shaping

    return with_coef


# ---- names and logged metrics --------------------------------------------------------------


class EnvNames(NamedTuple):
    """What the logged metrics are called for one env: its components, actions, programs."""

    num_actions: int
    component_names: tuple[str, ...]  # one per reward component (c0, c1, ... if unnamed)
    program_names: tuple[str, ...]  # () for an env that is not HackMatrix
    is_hackmatrix: bool  # HackMatrix's action space: the action groups apply


def env_names(env, env_params) -> EnvNames:
    """The ``EnvNames`` of ``env``, from its shapes (running nothing)."""
    k = jax.random.key(0)
    obs1, state1 = jax.eval_shape(env.reset, k, env_params)
    num_actions = int(obs1.action_mask.shape[-1])
    info = jax.eval_shape(env.step, k, state1, jnp.int32(0), env_params)[-1]
    rb = info.get("reward_breakdown")
    num_components = int(rb.shape[-1]) if rb is not None else 0
    comp_names = tuple(REWARD_COMPONENTS)
    if len(comp_names) != num_components:
        comp_names = tuple(f"c{i}" for i in range(num_components))
    is_hackmatrix = num_actions == NUM_ACTIONS
    programs = tuple(PROGRAM_NAMES) if is_hackmatrix else ()
    return EnvNames(num_actions, comp_names, programs, is_hackmatrix)


def episode_metrics(s: dict, names: EnvNames) -> dict:
    """A chunk's episode sums (``track_episodes``'s, added up) as logged scalars."""
    eps = jnp.maximum(s["ep_count"], 1.0)
    counts = s["action_counts"]
    total = jnp.maximum(counts.sum(), 1.0)
    m = {
        "train/episode_return": s["ep_return"] / eps,
        "train/episode_length": s["ep_length"] / eps,
        "train/num_episodes": s["ep_count"],
        "train/invalid_actions": s["invalid"],
        # the trainer's shaping (loss only), per env step; train/episode_return excludes it
        "train/shaping_per_step": s["shaping"] / total,
    }
    for i, name in enumerate(names.component_names):
        m[f"reward/{name}"] = s["ep_breakdown"][i] / eps
    if not names.is_hackmatrix:
        for i in range(names.num_actions):
            m[f"actions/a{i}_frac"] = counts[i] / total
        return m
    m["actions/move_frac"] = counts[MOVE_ACTIONS].sum() / total
    m["actions/siphon_frac"] = counts[Action.SIPHON] / total
    m["actions/program_frac"] = counts[PROGRAM_ACTIONS].sum() / total
    kinds = s["kind_counts"]
    ktot = jnp.maximum(kinds.sum(), 1.0)
    for i, name in enumerate(ACTION_KIND_NAMES):
        m[f"actions/kind_{name}_frac"] = kinds[i] / ktot
    for i, name in enumerate(names.program_names):
        m[f"actions/program/{name}"] = counts[FIRST_PROGRAM + i]
    m["stats/mean_stage"] = s["ep_stage"] / eps
    m["stats/highest_stage"] = s["ep_stage_max"]
    m["stats/win_rate"] = s["ep_wins"] / eps
    m["stats/history_overflow_frac"] = s["ep_overflow"] / eps
    m["stats/programs_owned"] = s["programs_owned"] / total
    return m
