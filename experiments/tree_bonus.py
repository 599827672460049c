"""Does the guiding search's tree steer away from programs? Its targets with and without the bonus.

The guided teacher (``--recipe guided``) searches with the start's network, whose value learned
the trainer's program bonus (+5 per program acquired, UNDO aside): it counts the programs still
to come. A tree on the canonical reward alone pays nothing for acquiring one, so the step that
acquires a program lands on a state whose value no longer counts it: the tree sees it as the
bonus lost. This script searches the same states of the start's greedy play with the same keys,
the tree's bonus 0 (the recipe) and ``--bonus`` (``hm-train --guide-bonus``), and prints for the
prior and each target the mass on the siphon and on the programs, where the siphon acquires a
program and where it does not.

    uv run python experiments/tree_bonus.py [--bonus 5] [--games 64 --moves 128]
"""

from __future__ import annotations

import argparse


def siphon_acquires(states, chunk):
    """bool[states]: a siphon from the state adds a program (UNDO aside) to those owned."""
    import jax
    import numpy as np
    from hackmatrix_env.constants import Action
    from hackmatrix_env.transition import step_state
    from hackmatrix_train.search import programs_counted
    from target_noise import pick

    @jax.jit
    def gains(part):
        n = jax.tree.leaves(part)[0].shape[0]
        keys = jax.random.split(jax.random.key(0), n)
        action = jax.numpy.full((n,), int(Action.SIPHON))
        after = jax.vmap(step_state)(keys, part, action)[0]
        return programs_counted(after, True) > programs_counted(part, True)

    n = jax.tree.leaves(states)[0].shape[0]
    return np.concatenate(
        [np.asarray(gains(pick(states, slice(i, i + chunk)))) for i in range(0, n, chunk)]
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bonus", type=float, default=5.0, help="the tree's bonus to compare with 0")
    p.add_argument("--games", type=int, default=64)
    p.add_argument("--moves", type=int, default=128)
    p.add_argument("--chunk", type=int, default=512, help="states per search call")
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()

    import dataclasses

    import jax
    import jax.numpy as jnp
    import numpy as np
    from hackmatrix_env.constants import Action
    from hackmatrix_train.search import run_search
    from target_noise import greedy_game_states, guided_teacher, pick

    start, search_cfg, _ = guided_teacher()
    states, obs, alive = greedy_game_states(start, args.games, args.moves, args.seed)
    live = np.flatnonzero(np.asarray(alive))
    live = live[: len(live) // args.chunk * args.chunk]
    states, obs = pick(states, live), pick(obs, live)
    mask = np.asarray(obs.action_mask)
    can_siphon = mask[:, Action.SIPHON]
    acquires = siphon_acquires(states, args.chunk) & can_siphon
    logits, _ = jax.jit(start.apply_fn)(start.params, obs)
    prior = np.asarray(jax.nn.softmax(jnp.where(mask, logits, -jnp.inf), -1))
    rows = {"the prior": prior}
    for bonus in (0.0, args.bonus):
        cfg = dataclasses.replace(search_cfg, program_bonus=bonus)
        search = jax.jit(lambda key, part, cfg=cfg: run_search(start.apply_fn, cfg, start.params,
                                                               key, part).policy_target)  # fmt: skip
        parts = [search(jax.random.fold_in(jax.random.key(1000), i),
                        pick(states, slice(i, i + args.chunk)))
                 for i in range(0, len(live), args.chunk)]  # fmt: skip
        rows[f"target, tree bonus {bonus:g}"] = np.concatenate([np.asarray(x) for x in parts])
    print(f"{len(live)} live states of {args.games} greedy games of the start; the siphon legal "
          f"on {can_siphon.sum()}, acquiring a program on {acquires.sum()}; search "
          f"{search_cfg.num_simulations} simulations, {search_cfg.determinizations} trees, "
          f"{search_cfg.max_num_considered_actions} considered, {search_cfg.mode}")  # fmt: skip
    other = can_siphon & ~acquires
    programs = slice(int(Action.SIPHON) + 1, None)
    print(
        "| policy | siphon mass where it acquires a program | argmax siphon there | siphon "
        "mass elsewhere | argmax siphon elsewhere | program mass (all states) |"
    )
    print("|---|---|---|---|---|---|")
    for name, dist in rows.items():
        argmax_siphon = dist.argmax(-1) == Action.SIPHON
        print(
            f"| {name} | {dist[acquires, Action.SIPHON].mean():.3f} | "
            f"{argmax_siphon[acquires].mean():.1%} | {dist[other, Action.SIPHON].mean():.3f} | "
            f"{argmax_siphon[other].mean():.1%} | {dist[:, programs].sum(-1).mean():.3f} |"
        )


if __name__ == "__main__":
    main()
