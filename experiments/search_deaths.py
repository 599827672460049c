"""Where and why the searched agent dies: the odds of every legal action at each fatal step.

The experiment of "Where the searched agent dies" (experiments/search.md). A batch of games
from stage 1 is played by the honest search (``search.run_search``, the policy's own units);
at every move, before the real step, each legal action is also stepped from 16 sampled
futures of the true state (the oracle's odds) and of 16 re-draws of its hidden parts (what
the player could know). For every game that dies, the fatal move is classified:

* ``trapped``: every legal action dies in all 16 true futures: the game was lost before;
* ``took a known risk``: the honest odds gave the played action a death chance while
  another legal action had none;
* ``hidden``: the played action dies in the true futures, never in the re-drawn ones, and
  another action was safe (what the player could not see killed it);
* ``every action risky``: no legal action is safe in the true futures, but not all die;
* ``unlucky``: the played action was safe in the true futures sampled (and the real one was
  not).

    uv run python experiments/search_deaths.py --episodes 128 --seed 0 --simulations 8
"""

from __future__ import annotations

import argparse
import collections
import json
import sys

from hackmatrix_env.devices import use_cpu_cores

FUTURES = 16
POLICY = "policies/default-cpu-42m-s1-vf0125"


def classify(d: dict) -> str:
    if d["oracle_best"] >= 1.0:
        return "trapped"
    if d["oracle_chosen"] <= 0.0:
        return "unlucky"
    if d["honest_chosen"] > 0.0 and d["honest_best"] == 0.0:
        return "took a known risk"
    if d["oracle_best"] == 0.0 and d["honest_chosen"] == 0.0:
        return "hidden"
    return "every action risky"


def play(policy: str, episodes: int, seed: int, simulations: int, mode: str) -> list[dict]:
    """One record per finished game: its end, and at the last move the stage, hp, legal
    count and the death odds (true and re-drawn futures) of the played and the safest action."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from hackmatrix_env.constants import REWARD_COMPONENTS
    from hackmatrix_env.hidden import resample_hidden
    from hackmatrix_env.transition import step_state
    from hackmatrix_train.config import TrainConfig
    from hackmatrix_train.policy import load_policy
    from hackmatrix_train.search import policy_mask, run_search, search_config_from_train
    from hackmatrix_train.trainer import make_env

    victory = REWARD_COMPONENTS.index("victory")
    apply_fn, params, env_params, meta = load_policy(policy)
    cfg = TrainConfig.from_dict(meta["config"])
    scfg = search_config_from_train(cfg, num_simulations=simulations, mode=mode)
    env = make_env(cfg)
    num_actions = 28

    def death_odds(key, state, honest: bool):
        def one_future(k, s):
            k_hidden, k_step = jax.random.split(k)
            s = resample_hidden(k_hidden, s) if honest else s
            keys = jax.random.split(k_step, num_actions)
            after = jax.vmap(lambda kk, a: step_state(kk, s, a)[0])(keys, jnp.arange(num_actions))
            return after.game.player.hp == 0

        def per_game(k, s):
            futures = jax.random.split(k, FUTURES)
            return jax.vmap(one_future, in_axes=(0, None))(futures, s).mean(0)

        return jax.vmap(per_game)(jax.random.split(key, state.time.shape[0]), state)

    @jax.jit
    def step(key, state):
        k_policy, k_env, k_oracle, k_honest = jax.random.split(key, 4)
        out = run_search(apply_fn, scfg, params, k_policy, state)
        record = dict(
            stage=state.game.stage, hp=state.game.player.hp, action=out.action,
            mask=policy_mask(state, scfg.disabled), oracle=death_odds(k_oracle, state, False),
            honest=death_odds(k_honest, state, True),
        )  # fmt: skip
        _, state, _, term, trunc, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
            jax.random.split(k_env, episodes), state, out.action, env_params
        )
        won = info["reward_breakdown"][:, victory] > 0
        return state, term, trunc, won, record

    keys = jax.random.split(jax.random.key(seed), env_params.max_steps_in_episode + 1)
    _, state = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(keys[0], episodes), env_params
    )
    alive, ends = np.ones(episodes, bool), []
    for key in keys[1:]:
        state, term, trunc, won, rec = jax.device_get(step(key, state))
        for i in np.flatnonzero(alive & (term | trunc)):
            a, legal = int(rec["action"][i]), rec["mask"][i]
            oracle, honest = rec["oracle"][i], rec["honest"][i]
            end = "won" if won[i] else ("died" if term[i] else "time limit")
            record = dict(
                end=end, stage=int(rec["stage"][i]), hp=int(rec["hp"][i]),
                legal=int(legal.sum()), oracle_chosen=float(oracle[a]),
                oracle_best=float(oracle[legal].min()), honest_chosen=float(honest[a]),
                honest_best=float(honest[legal].min()),
            )  # fmt: skip
            ends.append(record)
        alive &= ~(term | trunc)
        if not alive.any():
            break
    return ends


def report(ends: list[dict]) -> dict:
    died = [d for d in ends if d["end"] == "died"]
    count = collections.Counter
    return {
        "games": len(ends),
        "ends": dict(count(d["end"] for d in ends)),
        "death_stage": dict(sorted(count(d["stage"] for d in died).items())),
        "hp_before_the_fatal_move": dict(sorted(count(d["hp"] for d in died).items())),
        "legal_actions_at_the_fatal_move": dict(sorted(count(d["legal"] for d in died).items())),
        "fatal_move": dict(count(classify(d) for d in died).most_common()),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy", default=POLICY)
    p.add_argument("--episodes", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--simulations", type=int, default=8)
    p.add_argument("--mode", choices=("honest", "oracle"), default="honest")
    p.add_argument("--json", help="also write every game's record here")
    args = p.parse_args(argv)
    use_cpu_cores()
    ends = play(args.policy, args.episodes, args.seed, args.simulations, args.mode)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(ends, f)
    print(json.dumps(report(ends), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
