"""Diagnostic: is the search a good teacher for the network it searches with? (host script)

Plays the checkpoint's sampled policy from stage 1 and collects ``--batches`` x ``--games``
states (one batch every 40 moves), then, for the search with the settings given:

* **targets**: the policy target's entropy against the prior's, its KL from the prior, the KL
  between the targets of two search keys (noise), how often its argmax differs from the
  prior's (``flip``) and from the other key's (``flip_keys``), and the probability it moves
  from the prior to the moves, the siphon and the programs (``shift_*``: a target that moves
  mass one way on average moves the network that way, update after update), and the Q gaps
  of the other visited actions to the greedy action (``q_gap_*``, value units);
* **overrides** (``--reps`` > 0): on the states where the search plays another action than the
  greedy network, the discounted canonical return of the search's action and of the greedy
  one, each followed by greedy play for ``--rollout-steps`` moves from the true state, paired
  (the same keys), ``--reps`` times. ``mean_delta`` > 0: the override improves the greedy
  policy's own return, which is what a policy target teaches.

    uv run hm-bench search-teacher CHECKPOINT --settings '[{}, {"mode": "oracle"}]'
"""

from __future__ import annotations

import argparse
import json
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from hackmatrix_env.constants import FIRST_PROGRAM, Action
from hackmatrix_train.compile_cache import default_cache_dir, enable
from hackmatrix_train.config import TrainConfig
from hackmatrix_train.policy import load_policy
from hackmatrix_train.search import make_search, search_config_from_train
from hackmatrix_train.trainer import make_env

COLLECT_EVERY = 40  # moves between two collected batches


def entropy(p):
    return -jnp.sum(jnp.where(p > 0, p * jnp.log(jnp.maximum(p, 1e-30)), 0.0), -1)


def kl(p, q):
    logs = jnp.log(jnp.maximum(p, 1e-30)) - jnp.log(jnp.maximum(q, 1e-30))
    return jnp.sum(jnp.where(p > 0, p * logs, 0.0), -1)


def class_shift(target, prior):
    """f32[3]: the mean probability the target moves from the prior to the moves, the siphon
    and the programs (they sum to 0)."""
    delta = (target - prior).mean(0)
    return jnp.stack([
        delta[: Action.SIPHON].sum(), delta[Action.SIPHON], delta[FIRST_PROGRAM:].sum()
    ])  # fmt: skip


def q_gaps(out) -> np.ndarray:
    """The search's Q of each visited action other than the greedy one, less the greedy
    action's Q (value units; states where the greedy action went unvisited are left out)."""
    q, visits = np.asarray(out.q_values), np.asarray(out.visit_counts)
    top = np.asarray(out.prior_action)
    rows = np.arange(len(top))
    others = (visits > 0) & (visits[rows, top] > 0)[:, None]
    others[rows, top] = False
    return (q - q[rows, top][:, None])[others]


def repeat_rows(x, idx, reps):
    """The rows ``idx`` of a batched leaf, each repeated ``reps`` times."""
    return jnp.repeat(x[idx], reps, axis=0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoint")
    p.add_argument("--settings", default="[{}]", help="JSON list of SearchConfig overrides")
    p.add_argument("--games", type=int, default=256)
    p.add_argument("--batches", type=int, default=4)
    p.add_argument("--reps", type=int, default=16, help="rollouts per action (0: targets only)")
    p.add_argument("--rollout-steps", type=int, default=150)
    p.add_argument("--seed", type=int, default=5)
    args = p.parse_args()
    enable(default_cache_dir())
    apply_fn, params, env_params, meta = load_policy(args.checkpoint)
    cfg = TrainConfig.from_dict(meta["config"])
    env = make_env(cfg)
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def policy(obs, key=None):
        logits, _ = apply_fn(params, obs)
        logits = jnp.where(obs.action_mask, logits, -1e9)
        return jnp.argmax(logits, -1) if key is None else jax.random.categorical(key, logits)

    def env_step(keys, state, action):
        obs, state, reward, terminated, truncated, _ = step(keys, state, action, env_params)
        return obs, state, reward, terminated | truncated

    @jax.jit
    def play(state, obs, key):
        def body(carry, k):
            state, obs = carry
            n = obs.action_mask.shape[0]
            obs, state, _, _ = env_step(jax.random.split(k, n), state, policy(obs, k))
            return (state, obs), None

        return jax.lax.scan(body, (state, obs), jax.random.split(key, COLLECT_EVERY))[0]

    @jax.jit
    def greedy_return(state, action, key):
        """Discounted canonical return of ``action`` then greedy play, per row."""
        n = action.shape[0]
        k0, k1 = jax.random.split(key)
        obs, state, reward, done = env_step(jax.random.split(k0, n), state, action)

        def body(carry, k):
            state, obs, alive, ret, disc = carry
            obs, state, reward, done = env_step(jax.random.split(k, n), state, policy(obs))
            return (state, obs, alive & ~done, ret + alive * disc * reward, disc * cfg.gamma), None

        start = (state, obs, ~done, reward.astype(jnp.float32), jnp.float32(cfg.gamma))
        keys = jax.random.split(k1, args.rollout_steps)
        return jax.lax.scan(body, start, keys)[0][3]

    keys = jax.random.split(jax.random.key(args.seed), args.games)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, env_params)
    batches, key = [], jax.random.key(args.seed + 1)
    for _ in range(args.batches):
        key, sub = jax.random.split(key)
        state, obs = play(state, obs, sub)
        batches.append((state, obs))
    for overrides in json.loads(args.settings):
        search = make_search(apply_fn, search_config_from_train(cfg, **overrides))
        rows, deltas, gaps = [], [], []
        for b, (state, obs) in enumerate(batches):
            inner = getattr(state, "env_state", state)
            one, two = (
                search(params, jax.random.key(1), inner),
                search(params, jax.random.key(2), inner),
            )
            target, other = one.policy_target, two.policy_target
            rows.append([
                entropy(one.prior).mean(), entropy(target).mean(), kl(target, one.prior).mean(),
                kl(target, other).mean(), (jnp.argmax(target, -1) != one.prior_action).mean(),
                (jnp.argmax(target, -1) != jnp.argmax(other, -1)).mean(),
                *class_shift(target, one.prior),
            ])  # fmt: skip
            gaps.append(q_gaps(one))
            greedy = policy(obs)
            idx = np.nonzero(np.asarray(one.action != greedy))[0]
            if args.reps and len(idx):
                rep = jax.tree.map(partial(repeat_rows, idx=idx, reps=args.reps), state)
                k = jax.random.key(100 + b)  # the same keys for both actions: paired
                searched = greedy_return(rep, jnp.repeat(one.action[idx], args.reps), k)
                kept = greedy_return(rep, jnp.repeat(greedy[idx], args.reps), k)
                deltas += np.asarray(searched - kept).reshape(len(idx), args.reps).mean(1).tolist()
        names = ("entropy_prior", "entropy_target", "kl_target_prior", "kl_two_keys", "flip",
                 "flip_keys", "shift_moves", "shift_siphon", "shift_programs")  # fmt: skip
        out = {
            **overrides,
            **dict(zip(names, np.asarray(rows, np.float64).mean(0).round(5).tolist(), strict=True)),
        }
        g = np.concatenate(gaps)
        out.update(
            q_gap_count=len(g), q_gap_better=round(float((g > 0).mean()), 3),
            q_gap_quantiles_5_50_95=np.quantile(g, [0.05, 0.5, 0.95]).round(2).tolist(),
        )  # fmt: skip
        if deltas:
            d = np.asarray(deltas)
            out.update(
                overrides=len(d), states=args.batches * args.games,
                mean_delta=round(float(d.mean()), 3), se=round(float(d.std() / len(d) ** 0.5), 3),
                better=round(float((d > 0).mean()), 3), worse=round(float((d < 0).mean()), 3),
            )  # fmt: skip
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
