"""Rollout collection: a ``lax.scan`` over ``vmap(env.step)`` storing the *pre-step* observation.

The observation an action was chosen from carries ``action_mask``, so the mask is stored with
each transition and re-applied in the loss. The rollout knows no game: the actor chooses the
moves, ``track`` keeps the episode statistics (HackMatrix's: ``stats.track_episodes``) and
``shaping`` adds the trainer's own terms to each transition (``stats.make_shaping``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from hackmatrix_train.update import reduce_steps


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


def collect_rollout(
    actor, value_fn, key, params, env, env_params, env_state, obs, acc, num_steps: int,
    *, track=None, shaping=None,
):  # fmt: skip
    """Run ``num_steps`` vectorised env steps, each move chosen by ``actor``.

    * ``actor(params, obs, env_state, key) -> (action int32[N], log_prob f32[N], value f32[N],
      extra)``: ``extra`` is any pytree the learner needs later (None for PPO);
    * ``value_fn(params, obs) -> f32[N]``: the value of ``info["final_observation"]``, needed
      where an episode was truncated;
    * ``track(acc, env_state, obs, action, reward, done, info, shaping) -> (acc, sums)``: the
      episode bookkeeping, with the pre-step state and observation; None: ``acc`` passes
      through and no sums come out;
    * ``shaping(obs, final_obs, terminated, env_state, next_state, done) -> f32[N]``: the
      trainer's terms (None: 0), with the pre-step state and the stepped one (after any
      auto-reset: ``done`` says where it is the next episode's start).

    Returns ``(env_state, obs, acc, traj, extras, sums)``: ``traj`` a ``Transition`` with leaves
    [T, N, ...], ``extras`` the actor's ``extra`` stacked over the steps, ``sums`` ``track``'s
    sums over the steps (``update.reduce_steps``).
    """
    num_envs = obs.action_mask.shape[0]
    step_fn = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def one_step(carry, step_key):
        env_state, obs, acc = carry
        k_act, k_env = jax.random.split(step_key)
        action, log_prob, value, extra = actor(params, obs, env_state, k_act)
        next_obs, next_state, reward, terminated, truncated, info = step_fn(
            jax.random.split(k_env, num_envs), env_state, action, env_params
        )
        reward = reward.astype(jnp.float32)
        # V(final obs) is needed only where an episode was truncated: skip the forward otherwise.
        final_value = jax.lax.cond(
            jnp.any(truncated),
            lambda tr, fo: jnp.where(tr, value_fn(params, fo), 0.0),
            lambda tr, fo: jnp.where(tr, 0.0, 0.0),  # zeros with the operands' sharding type
            truncated,
            info["final_observation"],
        )
        done = terminated | truncated
        if shaping is None:
            terms = jnp.zeros(terminated.shape, jnp.float32)
        else:
            terms = shaping(obs, info["final_observation"], terminated, env_state, next_state, done)
        sums = {}
        if track is not None:
            acc, sums = track(acc, env_state, obs, action, reward, done, info, terms)
        t = Transition(
            obs, action, log_prob, value, reward, terminated, truncated, final_value, terms
        )
        return (next_state, next_obs, acc), (t, extra, sums)

    (env_state, obs, acc), (traj, extras, sums) = jax.lax.scan(
        one_step, (env_state, obs, acc), jax.random.split(key, num_steps)
    )
    return env_state, obs, acc, traj, extras, reduce_steps(sums)
