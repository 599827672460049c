"""How far can a network fit the guiding search's targets? The noise floor of their KL.

PPO guided by the search (``long_game.md``) adds KL(target || policy) toward the honest
search's improved policy, and the KL stalls at 0.15-0.16 whatever its weight. An honest target
is a random draw: each search re-draws the hidden parts and its Gumbel candidates. A network
sees the observation only, so the best it can do on a state is the mean of its targets, t_bar,
and E_k KL(t_k || t_bar) is a floor no network goes below. This script searches the same states
``--draws`` times with fresh keys (the teacher of ``--recipe guided``: the start, 16 simulations
as 2 trees of 8, every legal action considered), and prints per network the mean KL from each
draw to its policy beside that floor, and how often its argmax differs from the draws' and from
their mean's. The states are the start's greedy play (``--games`` games x ``--moves`` moves from
stage 1, the live ones).

    uv run python experiments/target_noise.py --compare RUN_DIR ...
"""

from __future__ import annotations

import argparse


def greedy_game_states(policy, games: int, moves: int, seed: int):
    """The env states of ``games`` greedy games of ``policy`` over ``moves`` moves (leaves
    [moves * games, ...]) and whether each game was still running (bool[moves * games])."""
    import jax
    import jax.numpy as jnp
    from hackmatrix_env import HackMatrix
    from hackmatrix_train.search import MASKED_LOGIT

    env = HackMatrix()
    keys = jax.random.split(jax.random.key(seed), games)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, policy.env_params)

    def step(carry, key):
        obs, state, alive = carry
        logits, _ = policy.apply_fn(policy.params, obs)
        action = jnp.argmax(jnp.where(obs.action_mask, logits, MASKED_LOGIT), -1)
        keys = jax.random.split(key, games)
        nxt, after, _, term, trunc, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
            keys, state, action, policy.env_params
        )
        return (nxt, after, alive & ~(term | trunc)), (state, obs, alive)

    run = jax.jit(lambda o, s, k: jax.lax.scan(step, (o, s, jnp.ones(games, bool)), k)[1])
    states, seen, alive = run(obs, state, jax.random.split(jax.random.key(seed + 1), moves))
    flat = lambda tree: jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), tree)  # noqa: E731
    return flat(states), flat(seen), alive.reshape(-1)


def guided_teacher():
    """``(start, search_cfg, search)``: the start of ``--recipe guided``, its search settings
    and its search, jitted: ``search(key, states) -> policy_target``."""
    import jax
    from hackmatrix_train.cli import train as hm_train
    from hackmatrix_train.compile_cache import default_cache_dir, enable
    from hackmatrix_train.policy import load_policy
    from hackmatrix_train.search import run_search, search_config_from_train

    enable(default_cache_dir())
    cfg, _ = hm_train.config_from_args(hm_train.build_parser().parse_args(["--recipe", "guided"]))
    start = load_policy(cfg.init_params)
    search_cfg = search_config_from_train(cfg)
    search = jax.jit(lambda key, part: run_search(start.apply_fn, search_cfg, start.params, key,
                                                  part).policy_target)  # fmt: skip
    return start, search_cfg, search


def pick(tree, rows):
    """The rows ``rows`` of every leaf of ``tree``."""
    import jax

    return jax.tree.map(lambda x: x[rows], tree)


def searched_states(start, search, games, moves, seed, draws, chunk, key_base):
    """The live states of ``games`` greedy games of the start (whole chunks of ``chunk``: one
    compiled search), their observations and ``draws`` searches of each, the draw ``d`` keyed
    ``key_base + d`` (f32[draws, states, actions])."""
    import jax
    import numpy as np

    states, obs, alive = greedy_game_states(start, games, moves, seed)
    live = np.flatnonzero(np.asarray(alive))
    live = live[: len(live) // chunk * chunk]
    states, obs = pick(states, live), pick(obs, live)
    targets = []
    for d in range(draws):
        key = jax.random.key(key_base + d)
        parts = [search(jax.random.fold_in(key, i), pick(states, slice(i, i + chunk)))
                 for i in range(0, len(live), chunk)]  # fmt: skip
        targets.append(np.concatenate([np.asarray(x) for x in parts]))
    return obs, np.stack(targets)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--compare", nargs="*", default=[], help="trained checkpoints to measure")
    p.add_argument("--draws", type=int, default=8)
    p.add_argument("--games", type=int, default=64)
    p.add_argument("--moves", type=int, default=128)
    p.add_argument("--chunk", type=int, default=512, help="states per search call")
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()

    import jax
    import jax.numpy as jnp
    import numpy as np
    from hackmatrix_train.expert_iteration import masked_log_policy
    from hackmatrix_train.guided import log_of
    from hackmatrix_train.policy import load_policy

    start, search_cfg, search = guided_teacher()
    obs, targets = searched_states(start, search, args.games, args.moves, args.seed, args.draws,
                                   args.chunk, 1000)  # fmt: skip
    mask = np.asarray(obs.action_mask)
    print(f"{targets.shape[1]} live states of {args.games} greedy games; {args.draws} draws "
          f"each; search {search_cfg.num_simulations} simulations, "
          f"{search_cfg.determinizations} trees, {search_cfg.max_num_considered_actions} "
          f"considered, {search_cfg.mode}", flush=True)  # fmt: skip
    mean_target = targets.mean(0)

    def kl_to(log_q):
        """The mean over draws and states of KL(t_k || q)."""
        t = jnp.asarray(targets)
        rows = jnp.sum(jnp.where(mask, t * (log_of(t) - log_q), 0.0), -1)
        return float(rows.mean())

    floor = kl_to(log_of(jnp.asarray(mean_target)))
    draw_argmax = targets.argmax(-1)
    split = float((draw_argmax != mean_target.argmax(-1)[None]).mean())
    print(f"floor: E KL(t_k || t_bar) = {floor:.4f}; a draw's argmax differs from the mean "
          f"target's on {split:.1%} of states; target entropy "
          f"{float(-(targets * np.asarray(log_of(jnp.asarray(targets)))).sum(-1).mean()):.3f}",
          flush=True)  # fmt: skip
    for path in [None, *args.compare]:
        policy = start if path is None else load_policy(path)
        logits, _ = jax.jit(policy.apply_fn)(policy.params, obs)
        log_p = masked_log_policy(logits, jnp.asarray(mask))
        argmax = np.asarray(jnp.argmax(jnp.where(mask, logits, -jnp.inf), -1))
        entropy = float(jnp.sum(jnp.where(mask, -jnp.exp(log_p) * log_p, 0.0), -1).mean())
        print(f"{path or 'the start'}: KL(t_k || policy) {kl_to(log_p):.4f} (above the floor "
              f"{kl_to(log_p) - floor:.4f}); argmax differs from a draw's "
              f"{float((draw_argmax != argmax[None]).mean()):.1%}, from the mean target's "
              f"{float((mean_target.argmax(-1) != argmax).mean()):.1%}; entropy {entropy:.3f}",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
