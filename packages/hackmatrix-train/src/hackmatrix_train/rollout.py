"""Rollout collection: a ``lax.scan`` over ``vmap(env.step)`` storing the *pre-step* observation.

The observation an action was chosen from carries ``action_mask``, so the mask is stored with
each transition and re-applied in the loss. Per-env episode accumulators (return, true length,
reward components, stage reached) live in the runner state so episodes spanning several rollouts
are measured whole; completed-episode sums come out of the scan for logging.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct
from hackmatrix_env.constants import NUM_PROGRAMS, Program

from hackmatrix_train.network import masked_categorical

NUM_ACTION_KINDS = 5  # hackmatrix_env.constants.ActionKind: MOVE ATTACK SIPHON PROGRAM INVALID
VICTORY_COMPONENT = 6  # index of "victory" in REWARD_COMPONENTS (interface §4.2)
STAGE_COMPONENT = 1  # index of "stage_completion"


class Transition(NamedTuple):
    """One step of one env. Leading axes [T, N] once stacked by the scan."""

    obs: Any  # Observation pytree the action was chosen from (includes action_mask)
    action: jax.Array  # int32
    log_prob: jax.Array  # f32
    value: jax.Array  # f32   V(obs)
    reward: jax.Array  # f32
    terminated: jax.Array  # bool  zero the bootstrap
    truncated: jax.Array  # bool  bootstrap from final_value
    final_value: jax.Array  # f32   V(info["final_observation"]) where truncated, else 0
    shaping: jax.Array  # f32   the trainer's shaping term (loss only), 0 when off


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


def shaping_term(potential, gamma: float, obs, final_obs, terminated, bonus=None) -> jax.Array:
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
    """
    out = jnp.zeros(terminated.shape, jnp.float32)
    if potential is not None:
        phi_next = jnp.where(terminated, 0.0, potential(final_obs))
        out = out + jnp.float32(gamma) * phi_next - potential(obs)
    if bonus is not None:
        out = out + bonus(final_obs) - bonus(obs)
    return out


def programs_owned_of(env_state, num_envs: int) -> jax.Array:
    """int32[N]: the programs each HackMatrix row owns (0 for another env's state)."""
    game = hackmatrix_game(env_state)
    if game is None:
        return jnp.zeros(num_envs, jnp.int32)
    return game.num_owned.astype(jnp.int32)


def sample_policy(apply_fn):
    """The PPO actor: ``act(params, obs, env_state, key) -> (action, log_prob, value, None)``,
    an action sampled from the masked policy."""

    def act(params, obs, env_state, key):
        del env_state
        logits, value = apply_fn(params, obs)
        pi = masked_categorical(logits, obs.action_mask)
        action = pi.sample(seed=key).astype(jnp.int32)
        return action, pi.log_prob(action), value, None

    return act


def collect_rollout(
    key: jax.Array,
    apply_fn,
    params,
    env,
    env_params,
    env_state,
    obs,
    acc: EpisodeAcc,
    num_steps: int,
    potential=None,
    gamma: float = 0.99,
    bonus=None,
):
    """Run ``num_steps`` vectorised env steps under the current policy.

    Returns ``(env_state, obs, acc, traj, stats)``: ``traj`` a Transition with leaves [T, N, ...]
    and ``stats`` a dict of sums over completed episodes and action counts. ``potential``
    (``program_potential``) and ``bonus`` add the terms of ``shaping_term`` to each transition;
    the game's reward, the episode sums and every logged return stay canonical.
    """
    env_state, obs, acc, traj, _, stats = collect_rollout_with(
        sample_policy(apply_fn), key, apply_fn, params, env, env_params, env_state, obs, acc,
        num_steps, potential, gamma, bonus,
    )  # fmt: skip
    return env_state, obs, acc, traj, stats


def collect_rollout_with(
    act, key, apply_fn, params, env, env_params, env_state, obs, acc, num_steps,
    potential=None, gamma=0.99, bonus=None,
):  # fmt: skip
    """``collect_rollout`` with the actor ``act(params, obs, env_state, key) -> (action,
    log_prob, value, extra)`` (``sample_policy`` for PPO; the search trainer's plans).

    Returns ``(env_state, obs, acc, traj, extras, stats)``: ``extras`` the actor's ``extra``
    stacked over the steps (None for PPO).
    """
    num_envs = obs.action_mask.shape[0]
    num_actions = obs.action_mask.shape[-1]
    num_components = acc.breakdown.shape[-1]
    step_fn = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def one_step(carry, step_key):
        env_state, obs, acc = carry
        k_act, k_env = jax.random.split(step_key)
        action, log_prob, value, extra = act(params, obs, env_state, k_act)
        stage_before = stage_of(env_state, num_envs)
        programs_owned = programs_owned_of(env_state, num_envs)
        next_obs, env_state, reward, terminated, truncated, info = step_fn(
            jax.random.split(k_env, num_envs), env_state, action, env_params
        )
        reward = reward.astype(jnp.float32)
        # V(final obs) is needed only where an episode was truncated: skip the forward otherwise.
        final_value = jax.lax.cond(
            jnp.any(truncated),
            lambda tr, fo: jnp.where(tr, apply_fn(params, fo)[1], 0.0),
            lambda tr, fo: jnp.where(tr, 0.0, 0.0),  # zeros with the operands' sharding type
            truncated,
            info["final_observation"],
        )
        done = terminated | truncated
        shaping = shaping_term(potential, gamma, obs, info["final_observation"], terminated, bonus)

        breakdown = info.get("reward_breakdown")
        if breakdown is None or num_components == 0:
            breakdown = jnp.zeros((num_envs, num_components), jnp.float32)
        ep_breakdown = acc.breakdown + breakdown.astype(jnp.float32)
        ep_ret = acc.ret + reward
        ep_len = acc.length + 1
        completed = breakdown[:, STAGE_COMPONENT] > 0 if num_components else jnp.zeros_like(done)
        won = breakdown[:, VICTORY_COMPONENT] > 0 if num_components else jnp.zeros_like(done)
        reached = jnp.minimum(stage_before + (completed & ~won).astype(jnp.int32), 8)
        ep_stage = jnp.maximum(acc.stage, reached)

        d = done.astype(jnp.float32)
        kind = info.get("action_kind")
        kind_counts = (
            jnp.zeros(NUM_ACTION_KINDS, jnp.float32)
            if kind is None
            else jax.nn.one_hot(kind.astype(jnp.int32), NUM_ACTION_KINDS).sum(0)
        )
        stats = {
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
            "invalid": info.get("invalid_action", jnp.zeros(num_envs, bool))
            .astype(jnp.float32)
            .sum(),
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
        t = Transition(
            obs, action, log_prob, value, reward, terminated, truncated, final_value, shaping
        )
        return (env_state, next_obs, acc), (t, extra, stats)

    (env_state, obs, acc), (traj, extras, stats) = jax.lax.scan(
        one_step, (env_state, obs, acc), jax.random.split(key, num_steps)
    )
    stats = {k: (v.max(0) if k == "ep_stage_max" else v.sum(0)) for k, v in stats.items()}
    return env_state, obs, acc, traj, extras, stats
