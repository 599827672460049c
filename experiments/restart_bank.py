"""PPO restarted from the searched agent's late-game states (experiments/search.md).

The experiment of "Training on the searched agent's late game". The searched games are lost
at stages 5-8, 16 to 4 moves before the death, while most of a PPO run's moves are spent in
stages 1-4, where every episode starts. Here PPO fine-tunes the default policy with a share
of its episodes restarted from a bank of states that the honest 8-simulation search reached
in its own games: the late stages, with the hit points, programs and resources the searched
agent brings into them.

1. ``--bank-episodes`` games from stage 1 (key ``--bank-seed``, not an evaluation key) are
   played by the honest 8-simulation search on ``--policy``; every ``--bank-every``-th state
   at stage >= ``--bank-min-stage`` goes into the bank (the game only; the UNDO ring empty).
2. ``hm-train`` runs with its env wrapped (the trainer's ``make_env``): where an episode ends,
   with probability
   ``--bank-prob``, the fresh game of the auto-reset is replaced by a bank state with its
   hidden parts re-drawn (``resample_hidden``: "?" contents, transmissions' kinds, unseen
   cryptogs), time 0, so that no bank state replays one fixed hidden future.

The game's rules and reward are untouched; only where episodes start changes. The control is
``hm-train`` with the same arguments (the same seed, no bank). The trainer's end-of-run
evaluation would play the wrapped env, so the script turns it off (``--final-eval-episodes
0``) and the run is evaluated by ``hm-eval`` on its checkpoint. Every argument after ``--``
goes to ``hm-train``, e.g.

    uv run python experiments/restart_bank.py --bank-episodes 256 -- \\
        --init-params policies/default-cpu-42m-s1-vf0125 --lr 3e-4 --program-bonus 0 \\
        --ent-coef 0.002 --ent-coef-end 0.002 --explore-floor 0.001 --explore-floor-end 0.001 \\
        --total-timesteps 8388608 --no-wandb --seed 3
"""

from __future__ import annotations

import argparse
import sys

from hackmatrix_env.devices import use_cpu_cores

POLICY = "policies/default-cpu-42m-s1-vf0125"


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy", default=POLICY, help="the searched agent that fills the bank")
    p.add_argument("--bank-episodes", type=int, default=256)
    p.add_argument("--bank-seed", type=int, default=100)
    p.add_argument("--bank-every", type=int, default=3, help="keep every n-th eligible state")
    p.add_argument("--bank-min-stage", type=int, default=4)
    p.add_argument("--bank-prob", type=float, default=0.5, help="share of restarts from the bank")
    split = argv.index("--") if "--" in argv else len(argv)
    args = p.parse_args(argv[:split])
    if not 0.0 <= args.bank_prob <= 1.0:
        p.error("--bank-prob must be in [0, 1]")
    if not 1 <= args.bank_min_stage <= 8:
        p.error("--bank-min-stage must be in 1..8")
    if args.bank_episodes < 1 or args.bank_every < 1:
        p.error("--bank-episodes and --bank-every must be >= 1")
    # the end-of-run evaluation would play the wrapped env: hm-eval evaluates the checkpoint
    args.train_args = [*argv[split + 1 :], "--final-eval-episodes", "0"]
    return args


def collect_bank(args):
    """The games (stacked ``GameState``) of the searched agent's states at late stages."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from hackmatrix_train.config import TrainConfig
    from hackmatrix_train.policy import load_policy
    from hackmatrix_train.search import run_search, search_config_from_train
    from hackmatrix_train.trainer import make_env

    apply_fn, params, env_params, meta = load_policy(args.policy)
    cfg = TrainConfig.from_dict(meta["config"])
    scfg = search_config_from_train(cfg, num_simulations=8)
    env = make_env(cfg)

    @jax.jit
    def step(key, state):
        k_policy, k_env = jax.random.split(key)
        action = run_search(apply_fn, scfg, params, k_policy, state).action
        _, state, _, term, trunc, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
            jax.random.split(k_env, action.shape[0]), state, action, env_params
        )
        return state, term | trunc

    keys = jax.random.split(jax.random.key(args.bank_seed), env_params.max_steps_in_episode + 1)
    _, state = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(keys[0], args.bank_episodes), env_params
    )
    alive = np.ones(args.bank_episodes, bool)
    kept = []
    for t, key in enumerate(keys[1:]):
        if t % args.bank_every == 0:
            stage = np.asarray(state.game.stage)
            rows = np.flatnonzero(alive & (stage >= args.bank_min_stage))
            if rows.size:
                kept.append(jax.tree.map(lambda x, r=rows: np.asarray(x)[r], state.game))
        state, done = step(key, state)
        alive &= ~np.asarray(done)
        if not alive.any():
            break
    if not kept:
        raise SystemExit(f"no searched game reached stage {args.bank_min_stage}: the bank is empty")
    bank = jax.tree.map(lambda *x: jnp.asarray(np.concatenate(x)), *kept)
    stages = np.bincount(np.asarray(bank.stage), minlength=9)[1:]
    print(f"bank: {int(stages.sum())} states, by stage 1-8: {stages.tolist()}", flush=True)
    return bank


def bank_restarts(env, bank, prob: float):
    """``env`` whose auto-reset starts a ``prob`` share of new episodes from ``bank``."""
    import jax
    import jax.numpy as jnp
    from gymnax.wrappers.purerl import GymnaxWrapper
    from hackmatrix_env.batching import compute_where
    from hackmatrix_env.hidden import resample_hidden
    from hackmatrix_env.types import EnvState

    size = int(bank.stage.shape[0])

    class BankRestarts(GymnaxWrapper):
        def step(self, key, state, action, params=None):
            k_step, k_pick, k_row, k_hidden = jax.random.split(key, 4)
            obs, state, reward, term, trunc, info = self._env.step(k_step, state, action, params)
            use = (term | trunc) & (jax.random.uniform(k_pick) < prob)

            def from_bank(row, k, history):
                game = jax.tree.map(lambda b: b[row], bank)
                start = resample_hidden(k, EnvState(time=jnp.int32(0), game=game, history=history))
                return start.time, start.game, self._env.get_obs(start)

            row = jax.random.randint(k_row, (), 0, size)
            time, game, obs = compute_where(
                use, from_bank, (row, k_hidden, state.history), (state.time, state.game, obs)
            )
            return obs, state.replace(time=time, game=game), reward, term, trunc, info

    return BankRestarts(env)


def main(argv=None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    use_cpu_cores()
    from hackmatrix_train.cli import train
    from hackmatrix_train.trainer import make_env

    bank = collect_bank(args)
    return train.main(
        args.train_args, make_env=lambda cfg: bank_restarts(make_env(cfg), bank, args.bank_prob)
    )


if __name__ == "__main__":
    sys.exit(main())
