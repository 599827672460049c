"""Digest of a random-policy rollout: compare backends, versions or machines (host script).

    uv run hm-bench digest --envs 2048 --steps 60

Plays ``--envs`` games for ``--steps`` auto-reset steps of ``jit(vmap(env.step))``
with the uniform masked policy of ``hm-bench`` (actions drawn from the observed
masks with fixed keys), and prints SHA-256 digests of (a) every state leaf (by field
name, so the digest does not depend on how the state's fields are grouped), the
actions and the done flags, (b) the observation grids, (c) the rewards, plus the
reward sum; ``--save FILE`` keeps the rewards (``float32[steps, envs]``) for an
element-wise comparison. Two runs with equal digests played the same games.

Measured: CPU (jax 0.10.2) vs an H100 (jax 0.11.2), 2,048 envs x 60 steps: (a) and
(b) identical; rewards equal except 92 of 122,880 values, off by at most 2.4e-7
(float32 rounding of the reward sum; experiments/bench/rollout_digest_*.txt).
``--devices N`` plays the same games with the envs split over N CPU devices
(``devices.sharded_vmap``), with the same digests as ``--devices 1``.
"""

from __future__ import annotations

import argparse
import hashlib

import jax
import numpy as np
from hackmatrix_env.devices import sharded_vmap, use_cpu_cores


def state_leaves_by_name(state) -> list[tuple[str, object]]:
    """The state's leaves sorted by field path, the game's fields named as at top level.

    ``EnvState`` groups the game's fields under ``game``; naming them without that prefix
    and sorting makes the digest the same for any grouping of the same fields.
    """
    named = [
        (jax.tree_util.keystr(path).replace(".game.", "."), leaf)
        for path, leaf in jax.tree_util.tree_flatten_with_path(state)[0]
    ]
    return sorted(named, key=lambda item: item[0])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--envs", type=int, default=2048)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--devices", type=int, default=1, help="CPU devices to split the envs over")
    p.add_argument("--save", default=None, help="write the rewards here (.npy)")
    args = p.parse_args(argv)
    use_cpu_cores(args.devices)  # before anything starts JAX
    from hackmatrix_bench.bench import uniform_masked_actions
    from hackmatrix_env.env import HackMatrix

    env = HackMatrix()
    params = env.default_params
    n = args.envs
    step = jax.jit(sharded_vmap(env.step, in_axes=(0, 0, 0, None)))
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    obs, state = reset(jax.random.split(jax.random.key(0), n), params)
    h_state, h_obs, h_reward = hashlib.sha256(), hashlib.sha256(), hashlib.sha256()
    rewards = []
    for t in range(args.steps):
        k = jax.random.fold_in(jax.random.key(1), t)
        action = uniform_masked_actions(jax.random.fold_in(k, 0), obs.action_mask)
        keys = jax.random.split(jax.random.fold_in(k, 1), n)
        obs, state, reward, term, trunc, _ = step(keys, state, action, params)
        for _, leaf in state_leaves_by_name(state):
            h_state.update(np.asarray(leaf).tobytes())
        h_state.update(np.asarray(action).tobytes())
        h_state.update(np.asarray(term | trunc).tobytes())
        h_obs.update(np.asarray(obs.grid).tobytes())
        h_reward.update(np.asarray(reward).tobytes())
        rewards.append(np.asarray(reward))
    rewards = np.stack(rewards)
    if args.save:
        np.save(args.save, rewards)
    print(
        f"backend {jax.default_backend()}, jax {jax.__version__}, {n} envs x {args.steps} steps, "
        f"{len(jax.local_devices())} device(s)"
    )
    print(f"state+actions+done digest {h_state.hexdigest()[:16]}")
    print(f"observation grid digest   {h_obs.hexdigest()[:16]}")
    print(f"reward digest             {h_reward.hexdigest()[:16]}")
    print(f"reward sum {float(np.sum(rewards, dtype=np.float64))!r}")


if __name__ == "__main__":
    main()
