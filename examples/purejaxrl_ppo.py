"""Masked PPO on HackMatrix in one file, in the style of purejaxrl's ``ppo.py``.

The env comes through ``hackmatrix_env.adapters.make_legacy_env``: gymnax's
pre-1.0 5-tuple ``step`` and a flat ``float32[1573]`` observation whose last 28
entries are the action mask, with gymnax's own ``FlattenObservationWrapper`` and
``LogWrapper`` in the stack. Everything else is the usual purejaxrl recipe: one
``jax.jit`` around the whole training run, a ``lax.scan`` of rollouts over
``vmap``-ped envs, GAE, and minibatch epochs. Two changes make it right for this game:

* the policy never samples a masked action (its logits are set to the float
  minimum there), so no episode ends on an invalid action;
* a time-limit truncation is not a death: GAE bootstraps from the value of the
  truncated episode's last observation (``info["final_observation"]``) and zeroes
  the bootstrap only on ``info["terminated"]``.

    uv run python examples/purejaxrl_ppo.py                      # 1M steps
    uv run python examples/purejaxrl_ppo.py --total-timesteps 65536 --num-envs 64
"""

from __future__ import annotations

import argparse
import time
from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax.training.train_state import TrainState
from hackmatrix_env.adapters import MASK_SLICE, make_legacy_env

CONFIG = {
    "LR": 2.5e-4,
    "NUM_ENVS": 64,
    "NUM_STEPS": 128,
    "TOTAL_TIMESTEPS": 1_000_000,
    "UPDATE_EPOCHS": 4,
    "NUM_MINIBATCHES": 4,
    "GAMMA": 0.99,
    "GAE_LAMBDA": 0.95,
    "CLIP_EPS": 0.2,
    "ENT_COEF": 0.01,
    "VF_COEF": 0.5,
    "MAX_GRAD_NORM": 0.5,
    "HIDDEN": 256,
    "MAX_STEPS_IN_EPISODE": 1000,
}


class ActorCritic(nn.Module):
    """Two tanh MLPs; the actor's logits are masked by the mask carried in the observation."""

    num_actions: int
    hidden: int = 256

    @nn.compact
    def __call__(self, obs):
        def mlp(x, out, scale):
            for _ in range(2):
                x = nn.tanh(
                    nn.Dense(self.hidden, kernel_init=nn.initializers.orthogonal(np.sqrt(2)))(x)
                )
            return nn.Dense(out, kernel_init=nn.initializers.orthogonal(scale))(x)

        logits = mlp(obs, self.num_actions, 0.01)
        mask = obs[..., MASK_SLICE] > 0.5
        logits = jnp.where(mask, logits, jnp.finfo(logits.dtype).min)
        return logits, jnp.squeeze(mlp(obs, 1, 1.0), axis=-1)


def sample(logits, key):
    """(action, log-prob) from masked logits; a masked action has probability exactly 0."""
    action = jax.random.categorical(key, logits)
    return action, log_prob(logits, action)


def log_prob(logits, action):
    return jnp.take_along_axis(jax.nn.log_softmax(logits), action[..., None], axis=-1)[..., 0]


def entropy(logits):
    """Masked actions add exactly 0: their p is 0 and their log p finite (the float minimum)."""
    logp = jax.nn.log_softmax(logits)
    return -jnp.sum(jnp.exp(logp) * logp, axis=-1)


LOGGED = ("returned_episode", "returned_episode_returns", "invalid_action")


class Transition(NamedTuple):
    obs: jnp.ndarray  # the observation the action was chosen from
    action: jnp.ndarray
    log_prob: jnp.ndarray
    value: jnp.ndarray
    reward: jnp.ndarray
    done: jnp.ndarray  # terminated | truncated: the trace stops here
    terminated: jnp.ndarray  # the bootstrap is zero only here
    final_value: jnp.ndarray  # V(last observation) of an episode that ended here
    info: dict  # LogWrapper's episode statistics and the game's invalid_action flag


def make_train(config):
    """``train(rng) -> (runner_state, metrics)``, to be jitted whole."""
    config = {**CONFIG, **config}
    num_updates = config["TOTAL_TIMESTEPS"] // (config["NUM_STEPS"] * config["NUM_ENVS"])
    batch_size = config["NUM_ENVS"] * config["NUM_STEPS"]
    minibatch_size = batch_size // config["NUM_MINIBATCHES"]
    if num_updates < 1 or minibatch_size * config["NUM_MINIBATCHES"] != batch_size:
        raise ValueError("need TOTAL_TIMESTEPS >= NUM_STEPS * NUM_ENVS, divisible minibatches")
    env, env_params = make_legacy_env(max_steps_in_episode=config["MAX_STEPS_IN_EPISODE"])
    network = ActorCritic(env.action_space(env_params).n, config["HIDDEN"])

    def train(rng):
        rng, k_init, k_reset = jax.random.split(rng, 3)
        obs_shape = env.observation_space(env_params).shape
        params = network.init(k_init, jnp.zeros(obs_shape))
        tx = optax.chain(
            optax.clip_by_global_norm(config["MAX_GRAD_NORM"]), optax.adam(config["LR"], eps=1e-5)
        )
        train_state = TrainState.create(apply_fn=network.apply, params=params, tx=tx)
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(k_reset, config["NUM_ENVS"]), env_params
        )

        def env_step(runner, _):
            train_state, env_state, obs, rng = runner
            rng, k_act, k_env = jax.random.split(rng, 3)
            logits, value = network.apply(train_state.params, obs)
            action, logp = sample(logits, k_act)
            next_obs, env_state, reward, done, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(k_env, config["NUM_ENVS"]), env_state, action, env_params
            )
            _, final_value = network.apply(train_state.params, info["final_observation"])
            logged = {k: info[k] for k in LOGGED}
            t = Transition(
                obs, action, logp, value, reward, done, info["terminated"], final_value, logged
            )
            return (train_state, env_state, next_obs, rng), t

        def gae(traj, last_value):
            def backward(carry, t):
                advantage, next_value = carry
                # After an episode end next_value is the fresh game's: use the ended one's.
                next_value = jnp.where(t.done, t.final_value, next_value)
                delta = t.reward + config["GAMMA"] * next_value * (1.0 - t.terminated) - t.value
                advantage = (
                    delta + config["GAMMA"] * config["GAE_LAMBDA"] * (1.0 - t.done) * advantage
                )
                return (advantage, t.value), advantage

            _, adv = jax.lax.scan(
                backward, (jnp.zeros_like(last_value), last_value), traj, reverse=True
            )
            return adv, adv + traj.value

        def loss_fn(params, t, adv, target):
            logits, value = network.apply(params, t.obs)
            logp = log_prob(logits, t.action)
            v_clipped = t.value + jnp.clip(value - t.value, -config["CLIP_EPS"], config["CLIP_EPS"])
            v_loss = 0.5 * jnp.maximum((value - target) ** 2, (v_clipped - target) ** 2).mean()
            ratio = jnp.exp(logp - t.log_prob)
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            clipped = jnp.clip(ratio, 1.0 - config["CLIP_EPS"], 1.0 + config["CLIP_EPS"])
            pi_loss = -jnp.minimum(ratio * adv, clipped * adv).mean()
            ent = entropy(logits).mean()
            return pi_loss + config["VF_COEF"] * v_loss - config["ENT_COEF"] * ent, (v_loss, ent)

        def update(runner, _):
            runner, traj = jax.lax.scan(env_step, runner, None, config["NUM_STEPS"])
            train_state, env_state, obs, rng = runner
            _, last_value = network.apply(train_state.params, obs)
            adv, target = gae(traj, last_value)

            def epoch(carry, _):
                train_state, rng = carry
                rng, k_perm = jax.random.split(rng)
                perm = jax.random.permutation(k_perm, batch_size)
                batch = jax.tree.map(
                    lambda x: x.reshape((batch_size, *x.shape[2:]))[perm].reshape(
                        (config["NUM_MINIBATCHES"], minibatch_size, *x.shape[2:])
                    ),
                    (traj._replace(info={}), adv, target),
                )

                def minibatch(train_state, mb):
                    grads, aux = jax.grad(loss_fn, has_aux=True)(train_state.params, *mb)
                    return train_state.apply_gradients(grads=grads), aux

                train_state, aux = jax.lax.scan(minibatch, train_state, batch)
                return (train_state, rng), aux

            (train_state, rng), (v_loss, ent) = jax.lax.scan(
                epoch, (train_state, rng), None, config["UPDATE_EPOCHS"]
            )
            ended = traj.info["returned_episode"]
            metrics = {
                "episodes": ended.sum(),
                "mean_return": jnp.where(ended, traj.info["returned_episode_returns"], 0.0).sum()
                / jnp.maximum(ended.sum(), 1),
                "invalid_actions": traj.info["invalid_action"].sum(),
                "value_loss": v_loss.mean(),
                "entropy": ent.mean(),
            }
            return (train_state, env_state, obs, rng), metrics

        runner = (train_state, env_state, obs, rng)
        return jax.lax.scan(update, runner, None, num_updates)

    return train


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--total-timesteps", type=int, default=CONFIG["TOTAL_TIMESTEPS"])
    parser.add_argument("--num-envs", type=int, default=CONFIG["NUM_ENVS"])
    parser.add_argument("--num-steps", type=int, default=CONFIG["NUM_STEPS"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    config = {
        "TOTAL_TIMESTEPS": args.total_timesteps,
        "NUM_ENVS": args.num_envs,
        "NUM_STEPS": args.num_steps,
    }
    t0 = time.perf_counter()
    _, metrics = jax.block_until_ready(jax.jit(make_train(config))(jax.random.key(args.seed)))
    secs = time.perf_counter() - t0
    m = jax.device_get(metrics)
    n = len(m["episodes"])
    for i in sorted({0, n // 4, n // 2, 3 * n // 4, n - 1}):
        print(
            f"update {i + 1:>4}/{n}: {int(m['episodes'][i]):>4} episodes, mean return "
            f"{float(m['mean_return'][i]):7.3f}, entropy {float(m['entropy'][i]):.3f}, "
            f"invalid actions {int(m['invalid_actions'][i])}"
        )
    print(f"{args.total_timesteps:,} steps in {secs:.1f} s (compile included)")


if __name__ == "__main__":
    main()
