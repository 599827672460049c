"""How well a network's value predicts the returns its own policy gets.

The value the search reads at its leaves is the critic's estimate of the discounted return in
the run's units (the game's reward plus the run's shaping: the program bonus, the away
charge). Training logs an explained variance against GAE's targets, which lean on the value
itself (lambda 0.95); this measures the value against Monte Carlo returns instead. It samples
the run's own policy (PPO's sampled moves, the run's masked actions) on ``--envs`` games for
``--steps`` steps with the trainer's rollout and shaping, then for every step whose episode
ends inside the rollout compares the value with the discounted sum of reward + shaping to that
end (the run's gamma). Printed per group of the state's stage: the steps, the correlation, the
explained variance ``1 - Var(G - V) / Var(G)``, and the mean value and return.

    uv run python experiments/value_fit.py CKPT [CKPT ...] --envs 64 --steps 1500 --seed 0

``--json F`` keeps the rows.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

import numpy as np

STAGE_GROUPS = ((1, 2), (3, 5), (6, 8))


def returns_of(reward, done, gamma: float):
    """``value_from_search.returns_of``: each step's discounted return to its episode's end,
    and whether that end lies inside the rollout."""
    spec = importlib.util.spec_from_file_location(
        "value_from_search", Path(__file__).with_name("value_from_search.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.returns_of(reward, done, gamma)


def fit_rows(value, returns, stage) -> list[dict]:
    """One row per stage group and one over all steps: how ``value`` predicts ``returns``."""
    rows = []
    for lo, hi in ((1, 8), *STAGE_GROUPS):
        pick = (stage >= lo) & (stage <= hi)
        v, g = value[pick], returns[pick]
        if len(g) < 2 or np.var(g) == 0:
            continue
        varies = np.var(v) > 0  # a constant value has no correlation
        rows.append({
            "stages": f"{lo}-{hi}", "steps": len(g),
            "correlation": float(np.corrcoef(v, g)[0, 1]) if varies else float("nan"),
            "explained_variance": float(1.0 - np.var(g - v) / np.var(g)),
            "mean_value": float(v.mean()), "mean_return": float(g.mean()),
        })  # fmt: skip
    return rows


def measure(path: str, envs: int, steps: int, seed: int) -> list[dict]:
    import jax
    import jax.numpy as jnp
    from hackmatrix_train.policy import load_policy
    from hackmatrix_train.ppo import sample_actor
    from hackmatrix_train.rollout import collect_rollout
    from hackmatrix_train.stats import make_shaping, stage_of
    from hackmatrix_train.trainer import make_env

    policy = load_policy(path)
    cfg = policy.cfg
    env = make_env(cfg)
    bonus = cfg.program_bonus if cfg.program_bonus_end is None else cfg.program_bonus_end
    k_reset, k_run = jax.random.split(jax.random.key(seed))
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(k_reset, envs), policy.env_params
    )

    @jax.jit
    def rollout(params, state, obs):
        def value_fn(p, o):
            return policy.apply_fn(p, o)[1]

        def act(p, o, s, k):  # the stage the move was chosen in rides as the actor's extra
            return (*sample_actor(cfg, policy.apply_fn)(p, o, s, k)[:3], stage_of(s, envs))

        out = collect_rollout(
            act, value_fn, k_run, params, env, policy.env_params, state, obs, None, steps,
            shaping=make_shaping(cfg)(jnp.float32(bonus)),
        )  # fmt: skip
        return out[3], out[4]

    traj, stage = jax.device_get(rollout(policy.params, state, obs))
    done = np.asarray(traj.terminated | traj.truncated)
    # the value's units: GAE's (reward + shaping) x the run's reward scale
    reward = (np.asarray(traj.reward, np.float64) + np.asarray(traj.shaping, np.float64)) * (
        cfg.reward_scale
    )
    returns, ended = returns_of(reward, done, cfg.gamma)
    # a truncated episode's return stops at the limit: keep only episodes that terminated
    # (their last step is terminal) by dropping the steps whose end is a truncation
    truncated_end = np.zeros_like(ended)
    last_trunc = np.zeros(envs, bool)
    for t in range(steps - 1, -1, -1):
        last_trunc = np.where(done[t], np.asarray(traj.truncated[t]), last_trunc)
        truncated_end[t] = last_trunc
    keep = ended & ~truncated_end
    value = np.asarray(traj.value, np.float64)
    return fit_rows(value[keep], returns[keep], np.asarray(stage)[keep])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoints", nargs="+")
    p.add_argument("--envs", type=int, default=64)
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    results = {}
    for path in args.checkpoints:
        rows = measure(path, args.envs, args.steps, args.seed)
        results[path] = rows
        print(path)
        print(f"  {'stages':7} {'steps':>7} {'corr':>6} {'expl.var':>8} {'value':>8} {'return':>8}")
        for r in rows:
            print(f"  {r['stages']:7} {r['steps']:7d} {r['correlation']:6.3f} "
                  f"{r['explained_variance']:8.3f} {r['mean_value']:8.2f} {r['mean_return']:8.2f}")  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"envs": args.envs, "steps": args.steps, "seed": args.seed,
                       "rows": results}, f, indent=1)  # fmt: skip


if __name__ == "__main__":
    main()
