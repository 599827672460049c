"""When is a searched game lost? Replay each death from k moves before it, with stronger play.

The experiment of "How early the games are lost" (experiments/search.md). A batch of games
from stage 1 is played by the honest 8-simulation search on the default policy, keeping each
game's last ``max(K)`` states. For every game that dies at move T, the state k moves before
the fatal move (k in ``--back``) is played again, ``--futures`` times with fresh game draws,
by two players:

* ``same``: the search that played the game (honest, 8 simulations): what chance alone changes;
* ``strong``: an oracle search (the true state) of ``--strong-sims`` simulations considering
  every legal action (up to 28): far more look-ahead than the agent has.

A replay is *saved* when the game is still alive ``--margin`` moves after the move on which it
died (or has won). A death whose state k moves back is saved in no future, even by the strong
player, was lost more than k moves before it happened.

    uv run python experiments/search_horizon.py --episodes 128 --seed 0
"""

from __future__ import annotations

import argparse
import collections
import json
import sys

from hackmatrix_env.devices import use_cpu_cores

POLICY = "policies/default-cpu-42m-s1-vf0125"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy", default=POLICY)
    p.add_argument("--episodes", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--back", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    p.add_argument("--futures", type=int, default=8)
    p.add_argument("--margin", type=int, default=8)
    p.add_argument("--strong-sims", type=int, default=64)
    p.add_argument("--chunk", type=int, default=256, help="replays searched at once")
    p.add_argument("--json", help="also write every death's record here")
    args = p.parse_args(argv)
    use_cpu_cores()

    import jax
    import jax.numpy as jnp
    import numpy as np
    from hackmatrix_env.constants import REWARD_COMPONENTS
    from hackmatrix_train.config import TrainConfig
    from hackmatrix_train.policy import load_policy
    from hackmatrix_train.search import run_search, search_config_from_train
    from hackmatrix_train.trainer import make_env

    victory = REWARD_COMPONENTS.index("victory")
    apply_fn, params, env_params, meta = load_policy(args.policy)
    cfg = TrainConfig.from_dict(meta["config"])
    players = {
        "same": search_config_from_train(cfg, num_simulations=8),
        "strong": search_config_from_train(
            cfg, num_simulations=args.strong_sims, mode="oracle", max_num_considered_actions=28
        ),
    }
    env = make_env(cfg)
    depth = max(args.back)

    def make_step(scfg):
        @jax.jit
        def step(key, state):
            k_policy, k_env = jax.random.split(key)
            action = run_search(apply_fn, scfg, params, k_policy, state).action
            _, state, _, term, trunc, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(k_env, action.shape[0]), state, action, env_params
            )
            return state, term, trunc, info["reward_breakdown"][:, victory] > 0

        return step

    steps = {name: make_step(scfg) for name, scfg in players.items()}

    # 1. the games, each keeping its last `depth` states before the move being played
    keys = jax.random.split(jax.random.key(args.seed), env_params.max_steps_in_episode + 1)
    _, state = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(keys[0], args.episodes), env_params
    )
    recent = collections.deque(maxlen=depth)
    alive = np.ones(args.episodes, bool)
    deaths, won = [], 0
    for key in keys[1:]:
        recent.append(jax.device_get(state))
        state, term, trunc, win = jax.device_get(steps["same"](key, state))
        for i in np.flatnonzero(alive & term & ~win):
            past = {k: jax.tree.map(lambda x, i=i: x[i], recent[-k]) for k in args.back
                    if k <= len(recent)}  # fmt: skip
            deaths.append(dict(game=int(i), past=past))
        won += int((alive & win).sum())
        alive &= ~(term | trunc)
        if not alive.any():
            break
    print(f"{args.episodes} games: {won} won, {len(deaths)} died", flush=True)

    # 2. every (death, k, future) replayed by each player for k + margin moves
    jobs = [(d, k) for d, death in enumerate(deaths) for k in death["past"]]
    starts = [deaths[d]["past"][k] for d, k in jobs for _ in range(args.futures)]
    horizon = [k + args.margin for d, k in jobs for _ in range(args.futures)]
    results = {}
    for name, step in steps.items():
        saved = np.zeros(len(starts), bool)
        for lo in range(0, len(starts), args.chunk):
            rows = slice(lo, lo + args.chunk)
            batch = jax.tree.map(lambda *x: jnp.stack(x), *starts[rows])
            need = np.asarray(horizon[rows])
            n = need.shape[0]
            live, ok = np.ones(n, bool), np.zeros(n, bool)
            base = jax.random.fold_in(jax.random.key(args.seed + 1000), lo)
            for t in range(int(need.max())):
                batch, term, trunc, win = jax.device_get(step(jax.random.fold_in(base, t), batch))
                ok |= live & win
                live &= ~(term | trunc)
                if not (live & (need > t + 1)).any():
                    break
            saved[rows] = ok | live  # won, or alive at its horizon
            print(f"{name}: {min(lo + args.chunk, len(starts))}/{len(starts)}", flush=True)
        results[name] = saved.reshape(len(jobs), args.futures)

    # 3. per k: the share of deaths saved in at least one future, and the mean saved share
    table = {}
    for k in args.back:
        idx = [j for j, (_, kk) in enumerate(jobs) if kk == k]
        if not idx:
            continue
        row = {"deaths": len(idx)}
        for name, saved in results.items():
            row[f"{name}_any"] = round(float(saved[idx].any(axis=1).mean()), 3)
            row[f"{name}_mean"] = round(float(saved[idx].mean()), 3)
        table[k] = row
        print(json.dumps({"k": k, **row}), flush=True)
    if args.json:
        records = [
            dict(game=deaths[d]["game"], k=k, **{n: results[n][j].tolist() for n in results})
            for j, (d, k) in enumerate(jobs)
        ]
        with open(args.json, "w") as f:
            json.dump(dict(won=won, died=len(deaths), table=table, replays=records), f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
