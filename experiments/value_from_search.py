"""A value the search can trust: refit a separate value network on the played games' returns.

The honest search values each leaf by the network's value head, which PPO learned for its
sampled policy in its own units (the program bonus included). The searched agent plays better
than that policy, and counts only the game's reward in its tree. This script asks whether a
value fitted to what the searched games actually return lifts the search:

1. ``--games`` games from stage 1 (key ``--data-seed``, not an evaluation key) are played for
   ``--moves`` moves each (auto-reset) by ``--behaviour``: ``greedy`` (the network's argmax),
   ``sampled`` (its masked distribution, whose value PPO learned) or ``search`` (the honest
   search with the play settings at ``--data-sims`` simulations). Each move's observation and
   the game's reward are kept; every state of a finished episode gets its discounted return
   (the run's gamma, the game's reward times the run's reward scale: the search's tree units).
   States of each game's unfinished last episode are dropped.
2. A separate value network (the policy's network, all of its params copied, trained on the
   value output alone: mean squared error to the return) is fitted with Adam. A tenth of the
   games are held out; both values' errors on them are printed per epoch. ``--train critic``
   trains only the critic's own layers instead (the logits stay the policy's: one network).
3. ``hm-eval``'s protocol (256 episodes from stage 1, ``--eval-seeds``, search rows of
   ``--eval-sims`` simulations with the play settings) plays the search with the policy's
   prior and the refitted value (``SplitValue``).

The policy is untouched: only the leaf values change. The control is the same evaluation of the
policy itself (the README's shipped row). ``--value-from policy --value-times X`` skips the fit
and searches with the policy's own value times X (0: no value at the leaves). ::

    uv run python experiments/value_from_search.py --games 512 --moves 1000 --epochs 6
    uv run python experiments/value_from_search.py --value-from policy --value-times 0
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax.numpy as jnp


class SplitValue:
    """A network whose logits are the policy's and whose value is the refitted network's
    (``value_params``; None: the policy's own), averaged with the ``members``' values (params of
    other checkpoints of the same network), plus ``noise`` times ``state_noise``, times
    ``times`` (0: the ablation, every leaf valued 0):
    ``apply(params, obs) -> (logits from params, value)``."""

    def __init__(self, net, value_params, times=1.0, noise=0.0, members=()):
        self.net, self.value_params, self.times, self.noise = net, value_params, times, noise
        self.members = members

    def apply(self, params, obs):
        logits, value = self.net.apply(params, obs)
        if self.value_params is not None:
            _, value = self.net.apply(self.value_params, obs)
        for member in self.members:  # the mean of the value and the members' values
            value = value + self.net.apply(member, obs)[1]
        value = value / (1 + len(self.members))
        if self.noise:
            value = value + self.noise * state_noise(obs)
        return logits, value * self.times


def state_noise(obs) -> jnp.ndarray:
    """f32[...]: a fixed pseudo-random function of the observation with mean 0 and variance 1
    (sqrt(2) sin of a random projection of its features): the same error on the same state
    every time, as a fitted value's error is, and unrelated between states that differ."""
    import numpy as np
    from hackmatrix_train.network import flat_features

    x = flat_features(obs)
    rng = np.random.default_rng(0)
    w = jnp.asarray(rng.normal(0.0, 30.0, (x.shape[-1],)), jnp.float32)
    b = jnp.asarray(rng.uniform(0.0, 2 * np.pi), jnp.float32)
    return jnp.sqrt(2.0) * jnp.sin(x @ w + b)


def collect(policy, env, behaviour: str, games: int, moves: int, seed: int, sims: int):
    """``(obs, reward f32[moves, games], done bool[moves, games])``: ``games`` games played for
    ``moves`` moves by ``behaviour`` (auto-reset), the observation each move saw."""
    import jax
    from hackmatrix_train.network import greedy_action, masked_logits
    from hackmatrix_train.policy import search_config
    from hackmatrix_train.search import run_search

    params, env_params = policy.params, policy.env_params
    cfg = search_config(policy, num_simulations=sims)
    keys = jax.random.split(jax.random.key(seed), games)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, env_params)

    def step(carry, key):
        obs, state = carry
        k_act, k_step = jax.random.split(key)
        if behaviour == "greedy":
            action = greedy_action(policy.apply_fn(params, obs)[0], obs.action_mask)
        elif behaviour == "sampled":  # the policy PPO's value learned for
            logits = masked_logits(policy.apply_fn(params, obs)[0], obs.action_mask)
            action = jax.random.categorical(k_act, logits).astype(jnp.int32)
        else:
            action = run_search(policy.apply_fn, cfg, params, k_act, state).action
        nxt, after, reward, term, trunc, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
            jax.random.split(k_step, games), state, action, env_params
        )
        return (nxt, after), (obs, reward, term | trunc)

    chunk = 50
    run = jax.jit(lambda c, k: jax.lax.scan(step, c, k))
    carry, parts = (obs, state), []
    key = jax.random.key(seed + 1)
    for i in range(0, moves, chunk):
        t0 = time.time()
        carry, out = run(carry, jax.random.split(jax.random.fold_in(key, i), chunk))
        parts.append(jax.device_get(out))
        print(f"  moves {i + chunk}/{moves} ({time.time() - t0:.1f} s)", flush=True)
    return jax.tree.map(lambda *x: jnp.concatenate(x), *parts)


def returns_of(reward, done, gamma: float):
    """``(returns f32[T, B], valid bool[T, B])``: each state's discounted return to the end of
    its episode; states of an episode still running at the last move are not valid."""
    import numpy as np

    reward, done = np.asarray(reward), np.asarray(done)
    ret = np.zeros_like(reward)
    valid = np.zeros(reward.shape, bool)
    running = np.zeros(reward.shape[1], np.float32)
    finished = np.zeros(reward.shape[1], bool)
    for t in range(reward.shape[0] - 1, -1, -1):
        finished = finished | done[t]
        running = reward[t] + gamma * np.where(done[t], 0.0, running)
        ret[t], valid[t] = running, finished
    return ret, valid


def critic_only(params):
    """The optimizer's labels: ``train`` for the critic's own layers of ``GridEncoder`` (its
    hidden critic layer and value output, ``Dense_4`` and ``Dense_6``), ``freeze`` elsewhere: a
    refit of these leaves the policy's logits exactly as they were."""
    import flax

    flat = flax.traverse_util.flatten_dict(params)
    labels = {k: "train" if k[1] in ("Dense_4", "Dense_6") else "freeze" for k in flat}
    return flax.traverse_util.unflatten_dict(labels)


def fit_value(net, start_params, obs, ret, held, epochs: int, lr: float, minibatch: int,
              critic: bool = False):  # fmt: skip
    """The value network (``start_params`` copied) after the epoch of Adam on the squared error
    of its value to ``ret`` (the rows not in ``held``) with the least held-out error (the start
    if none beats it); prints the held-out errors."""
    import jax
    import numpy as np
    import optax
    from target_noise import pick

    tx = optax.adam(lr)
    if critic:
        tx = optax.multi_transform({"train": tx, "freeze": optax.set_to_zero()},
                                   critic_only(start_params))  # fmt: skip
    params, opt = start_params, tx.init(start_params)

    def loss(p, o, g):
        return jnp.mean((net.apply(p, o)[1] - g) ** 2)

    @jax.jit
    def step(p, s, o, g):
        value, grad = jax.value_and_grad(loss)(p, o, g)
        updates, s = tx.update(grad, s)
        return optax.apply_updates(p, updates), s, value

    value_of = jax.jit(lambda p, o: net.apply(p, o)[1])

    def held_error(p):
        rows = np.flatnonzero(held)
        v = np.concatenate([np.asarray(value_of(p, pick(obs, rows[i : i + 4096])))
                            for i in range(0, len(rows), 4096)])  # fmt: skip
        g = ret[rows]
        return float(np.mean((v - g) ** 2)), float(1 - np.var(g - v) / np.var(g))

    base = held_error(start_params)
    print(f"held-out: the policy's own value MSE {base[0]:.2f}, explained variance "
          f"{base[1]:.3f} (its units include the program bonus)", flush=True)  # fmt: skip
    train_rows = np.flatnonzero(~held)
    rng = np.random.default_rng(0)
    best = (base[0], start_params)
    for epoch in range(1, epochs + 1):
        order = rng.permutation(train_rows)
        losses = []
        for i in range(0, len(order) - minibatch + 1, minibatch):
            rows = order[i : i + minibatch]
            params, opt, value = step(params, opt, pick(obs, rows), jnp.asarray(ret[rows]))
            losses.append(float(value))
        err = held_error(params)
        print(f"epoch {epoch}: train MSE {np.mean(losses):.2f}; held-out MSE {err[0]:.2f}, "
              f"explained variance {err[1]:.3f}", flush=True)  # fmt: skip
        if err[0] < best[0]:
            best = (err[0], params)
    return best[1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy", default=None, help="checkpoint (default: the shipped agent)")
    p.add_argument("--behaviour", choices=("greedy", "sampled", "search"), default="search")
    p.add_argument("--data-sims", type=int, default=8)
    p.add_argument("--games", type=int, default=256)
    p.add_argument("--moves", type=int, default=800)
    p.add_argument("--data-seed", type=int, default=100)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument(
        "--train",
        choices=("all", "critic"),
        default="all",
        help="all: a separate value network; critic: the policy's own critic layers "
        "(the logits unchanged, one network)",
    )
    p.add_argument("--minibatch", type=int, default=1024)
    p.add_argument("--eval-seeds", type=int, nargs="*", default=[0])
    p.add_argument("--eval-sims", type=int, nargs="+", default=[8, 32])
    p.add_argument("--episodes", type=int, default=256)
    p.add_argument("--out", default="checkpoints/value_from_search",
                   help="where the fitted value params go (value.msgpack)")  # fmt: skip
    p.add_argument("--value-from", default="fit",
                   help="fit (collect and fit), policy (the policy's own value) or a "
                   "value.msgpack an earlier fit wrote")  # fmt: skip
    p.add_argument("--value-noise", type=float, default=0.0,
                   help="add this much of a fixed random function of the state to the value "
                   "(standard deviation, reward units)")  # fmt: skip
    p.add_argument("--value-mean", nargs="*", default=[],
                   help="checkpoints (same network and units) whose values are averaged with "
                   "the leaf value")  # fmt: skip
    p.add_argument("--value-times", type=float, default=1.0,
                   help="the leaf value's multiplier (0: no value at the leaves)")  # fmt: skip
    args = p.parse_args()

    import flax.serialization
    from hackmatrix_train.compile_cache import default_cache_dir, enable
    from hackmatrix_train.policy import load_policy

    enable(default_cache_dir())
    policy = load_policy(args.policy)
    if args.value_from == "policy":
        value_params = None
    elif args.value_from != "fit":
        blob = Path(args.value_from).read_bytes()
        value_params = flax.serialization.from_bytes(policy.params, blob)
    else:
        value_params = fit_and_save(policy, args)
    evaluate(args, value_params)


def fit_and_save(policy, args):
    """Collect the games, fit the value network, write it to ``args.out``; its params."""
    import flax.serialization
    import jax
    import numpy as np
    from hackmatrix_train.network import make_network
    from hackmatrix_train.trainer import make_env

    cfg = policy.cfg
    if args.train == "critic" and cfg.network != "grid":
        raise SystemExit(f"--train critic names GridEncoder's critic layers; this policy's "
                         f"network is {cfg.network!r}: use --train all")  # fmt: skip
    env = make_env(cfg)
    t0 = time.time()
    print(f"collecting {args.games} games x {args.moves} moves ({args.behaviour})", flush=True)
    obs, reward, done = collect(policy, env, args.behaviour, args.games, args.moves,
                                args.data_seed, args.data_sims)  # fmt: skip
    ret, valid = returns_of(np.asarray(reward) * cfg.reward_scale, done, cfg.gamma)
    held_games = np.arange(args.games) % 10 == 0
    flat = lambda x: np.asarray(x).reshape((-1, *np.shape(x)[2:]))  # noqa: E731
    keep = valid.reshape(-1)
    obs = jax.tree.map(lambda x: flat(x)[keep], obs)
    ret = ret.reshape(-1)[keep]
    held = np.broadcast_to(held_games, valid.shape).reshape(-1)[keep]
    print(f"{keep.sum():,} states with a return ({np.asarray(done).sum():,} episodes ended) in "
          f"{time.time() - t0:.0f} s; return mean {ret.mean():.2f}, std {ret.std():.2f}",
          flush=True)  # fmt: skip

    net = make_network(cfg.network, 28, cfg.hidden_dim, cfg.num_layers)
    value_params = fit_value(net, policy.params, obs, ret, held, args.epochs, args.lr,
                             args.minibatch, args.train == "critic")  # fmt: skip
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "value.msgpack").write_bytes(flax.serialization.to_bytes(value_params))
    return value_params


def evaluate(args, value_params) -> None:
    """The protocol's rows (greedy, then each search) with the value swapped in."""
    from hackmatrix_train.policy import evaluate_checkpoint, load_policy

    rows = [{"num_simulations": n} for n in args.eval_sims]
    members = [load_policy(path).params for path in args.value_mean]

    def wrap(net):
        return SplitValue(net, value_params, args.value_times, args.value_noise, members)

    for seed in args.eval_seeds:
        summary = evaluate_checkpoint(args.policy, episodes=args.episodes, seed=seed,
                                      search=rows, wrap_network=wrap)  # fmt: skip
        for row in [summary, *summary["search"]]:
            keys = ("win_rate", "win_rate_se", "stage_mean", "programs_acquired_per_episode",
                    "block_siphons_per_episode")  # fmt: skip
            what = row.get("search", {}) if isinstance(row.get("search"), dict) else {}
            sims = what.get("num_simulations", "greedy" if row is summary else "?")
            print(json.dumps({"seed": seed, "row": sims, **{k: row.get(k) for k in keys}}),
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
