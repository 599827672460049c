"""Where a search step spends its time: `uv run hm-bench search [--batch 256] [--sims 8 32]`.

Prints, for one batch of mid-game states (random masked play from stage 1), the median wall
time of one batched call of each part a simulation pays for, and of whole searches:

* ``env step``: ``vmap(step_state)``, the model of one simulation;
* ``observe``: the observation and mask of the stepped states;
* ``network``: the policy's forward pass (the shipped default policy's shapes);
* ``resample``: ``resample_hidden`` (once per honest search, not per simulation);
* ``search S``: a whole ``run_search`` with S simulations, honest and oracle, and the
  simulations per second it reaches (batch x S / time); ``--full-ring`` adds the oracle search
  with UNDO in the mask, whose tree keeps the whole UNDO ring in every node (the A/B of the
  slim ring).

All parts run in one process on the same states, so their ratios are comparable; absolute
times on a shared CPU box vary by +-25 % between runs.
"""

from __future__ import annotations

import argparse
import statistics
import time
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp

POLICY = Path(__file__).resolve().parents[1] / "policies" / "default-cpu-42m-s1-vf0125"


def timed(fn, *args, repeats: int = 5) -> float:
    """Median wall seconds of ``fn(*args)`` after one compile-and-warm call."""
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def mid_game_states(batch: int, steps: int, seed: int = 0):
    """A batch of states after ``steps`` random masked moves from stage 1 (auto-reset)."""
    from hackmatrix_env import HackMatrix

    env = HackMatrix()
    params = env.default_params
    keys = jax.random.split(jax.random.key(seed), batch)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)

    @jax.jit
    def play(obs, state, key):
        def body(c, k):
            obs, state = c
            k_a, k_s = jax.random.split(k)
            a = jax.random.categorical(k_a, jnp.where(obs.action_mask, 0.0, -1e9)).astype(jnp.int32)
            obs, state, *_ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(k_s, batch), state, a, params
            )
            return (obs, state), None

        (obs, state), _ = jax.lax.scan(body, (obs, state), jax.random.split(key, steps))
        return obs, state

    return play(obs, state, jax.random.key(seed + 1))


def load_policy(path: Path):
    """(apply_fn, params, TrainConfig) of a saved policy."""
    from hackmatrix_train import checkpoint as ckpt
    from hackmatrix_train.config import TrainConfig
    from hackmatrix_train.network import make_network

    flat, meta = ckpt.load_params(path)
    cfg = TrainConfig.from_dict(meta["config"])
    net = make_network(cfg.network, 28, cfg.hidden_dim, cfg.num_layers)
    from hackmatrix_env import HackMatrix

    env = HackMatrix()
    obs, _ = jax.eval_shape(env.reset, jax.random.key(0), env.default_params)
    one = jax.tree.map(lambda s: jax.ShapeDtypeStruct((1, *s.shape), s.dtype), obs)
    template = jax.eval_shape(net.init, jax.random.key(0), one)
    return net.apply, ckpt.unflatten_state(flat, template, source=str(path)), cfg


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="hm-bench search", description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=256, help="games searched at once")
    p.add_argument("--sims", type=int, nargs="+", default=[8, 32], help="simulations per search")
    p.add_argument("--policy", type=Path, default=POLICY, help="a saved policy (its network)")
    p.add_argument("--warmup-steps", type=int, default=40, help="random moves before timing")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument(
        "--full-ring",
        action="store_true",
        help="also time the oracle search with UNDO in the mask (no slim ring)",
    )
    args = p.parse_args(argv)

    from hackmatrix_env.hidden import resample_hidden
    from hackmatrix_env.observation import observe
    from hackmatrix_env.transition import step_state
    from hackmatrix_train.search import run_search, search_config_from_train

    apply_fn, params, cfg = load_policy(args.policy)
    obs, state = mid_game_states(args.batch, args.warmup_steps)
    b = args.batch
    print(f"hm-bench search: batch {b}, backend {jax.default_backend()}, {args.policy.name}")
    actions = jnp.argmax(obs.action_mask, axis=-1).astype(jnp.int32)
    keys = jax.random.split(jax.random.key(2), b)
    parts = {
        "env step": (jax.jit(jax.vmap(step_state)), keys, state, actions),
        "observe": (jax.jit(jax.vmap(observe)), state),
        "network": (jax.jit(apply_fn), params, obs),
        "resample": (jax.jit(jax.vmap(resample_hidden)), keys, state),
    }
    base = {}
    for name, (fn, *xs) in parts.items():
        base[name] = timed(fn, *xs, repeats=args.repeats)
        print(f"  {name:<22} {base[name] * 1e3:9.2f} ms per batched call")
    per_sim = base["env step"] + base["observe"] + base["network"]
    print(f"  {'parts of one simulation':<22} {per_sim * 1e3:9.2f} ms  -> at most "
          f"{b / per_sim:,.0f} simulations/s")  # fmt: skip
    variants = [("honest", {}), ("oracle", {})]
    if args.full_ring:  # UNDO in the mask: the tree keeps the whole UNDO ring per node
        variants.append(("oracle, full ring", {"disabled": ()}))
    for sims in args.sims:
        for mode, extra in variants:
            scfg = search_config_from_train(
                cfg, num_simulations=sims, mode=mode.split(",")[0], **extra
            )
            fn = jax.jit(partial(run_search, apply_fn, scfg))
            t0 = time.perf_counter()
            jax.block_until_ready(fn(params, jax.random.key(3), state))
            compile_s = time.perf_counter() - t0
            t = timed(fn, params, jax.random.key(3), state, repeats=args.repeats)
            print(
                f"  search {sims:>3} sims {mode:<17} {t * 1e3:9.2f} ms per batched call, "
                f"{b * sims / t:,.0f} simulations/s, {t / b * 1e3:.3f} ms per decision "
                f"(compile {compile_s:.1f} s; {t / (sims * per_sim):.2f}x the parts)"
            )


if __name__ == "__main__":
    main()
