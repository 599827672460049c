"""``hm-watch``: play or replay episodes and write one self-contained HTML replay (and a GIF).

Policies: a checkpoint's (greedy or sampled), the uniform masked random policy
(``--random``), or a saved action log (``--actions``, format in ``episodes.py``; with a
checkpoint too, the page shows what that policy thinks of each logged action)::

    uv run hm-watch checkpoints/<run> --episodes 4 --out replay.html
    uv run hm-watch --random --episodes 3 --seed 1 --out replay.html --gif replay.gif
    uv run hm-watch --actions game.json --out game.html
    uv run hm-watch checkpoints/<run> --search 32 --episodes 4 --out search.html

``--search N`` plays each move by a Gumbel search of N simulations (``search.py``; honest by
default, ``--search-mode oracle`` searches the true state) with the checkpoint's network as
prior and value; the page shows each move's visits and Q per action and marks the moves where
the search chose another action than the greedy network. Its action log replays the episodes
without a search.

The episodes are exactly the ones ``hm-eval`` scores with the same checkpoint, seed,
episode count, greedy/sampled mode and step limit (``episodes.py`` shares its keys).
``hm-eval --replay FILE`` calls ``write_eval_replay`` for that; with ``--search`` it shows the
first search row's episodes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hackmatrix_env.argparsing import Parser, fail

from hackmatrix_train import compile_cache

EVAL_REPLAY_EPISODES = 20  # hm-eval --replay keeps the page small: the first 20 episodes


def disabled_of(meta) -> tuple[int, ...]:
    """The action indices a checkpoint's run took out of its policy's mask (--disabled-programs)."""
    from hackmatrix_train.config import TrainConfig, disabled_actions

    return disabled_actions(TrainConfig.from_dict(meta["config"]))


def load_policy(path, start_stage=1, max_steps=None):
    """``(apply_fn, params, env_params, meta)`` of a checkpoint, as ``hm-eval`` loads it."""
    import jax
    from hackmatrix_env import EnvParams, HackMatrix

    from hackmatrix_train import checkpoint as ckpt
    from hackmatrix_train.config import TrainConfig
    from hackmatrix_train.network import make_network

    flat, meta = ckpt.load_params(path)
    cfg = TrainConfig.from_dict(meta["config"])
    env_params = EnvParams(
        max_steps_in_episode=cfg.max_steps_in_episode if max_steps is None else max_steps,
        start_stage=start_stage,
        history_depth=cfg.history_depth,
    )
    obs, _ = jax.eval_shape(HackMatrix().reset, jax.random.key(0), env_params)
    net = make_network(cfg.network, obs.action_mask.shape[-1], cfg.hidden_dim, cfg.num_layers)
    one = jax.tree.map(lambda s: jax.ShapeDtypeStruct((1, *s.shape), s.dtype), obs)
    template = jax.eval_shape(net.init, jax.random.key(0), one)
    params = ckpt.unflatten_state(flat, template, source=str(path))
    return net.apply, params, env_params, meta


def check_env_args(start_stage, max_steps) -> None:
    """A ``ValueError`` for a start stage outside 1..8 or a step limit below 1 (hm-eval too)."""
    if not 1 <= start_stage <= 8:
        raise ValueError(f"--start-stage must be in 1..8, got {start_stage}")
    if max_steps is not None and max_steps < 1:
        raise ValueError(f"--max-steps-in-episode must be >= 1, got {max_steps}")


def record(
    checkpoint=None, random=False, actions=None, episodes=4, greedy=True, seed=0,
    start_stage=1, max_steps=None, search=None, search_mode="honest",
):  # fmt: skip
    """``(episodes, description, action log)`` for the chosen policy (module doc).

    ``search``: the simulations per move of a search that plays instead of the network.
    """
    from hackmatrix_env import EnvParams

    from hackmatrix_train import episodes as ep_mod

    check_env_args(start_stage, max_steps)
    if episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {episodes}")
    check_search_args(search, checkpoint, random, actions, greedy)
    apply_fn, params, env_params, what = None, None, None, "random masked policy"
    if checkpoint is not None and not random:
        apply_fn, params, env_params, meta = load_policy(checkpoint, start_stage, max_steps)
        mode = "greedy" if greedy else "sampled"
        what = f"{Path(checkpoint).name} ({mode}, update {meta.get('update')})"
    if actions is not None:
        log = ep_mod.read_action_log(actions)
        log_params = EnvParams(
            max_steps_in_episode=log["max_steps"],
            start_stage=log["start_stage"],
            history_depth=log["history_depth"],
        )
        disabled = disabled_of(meta) if apply_fn is not None else ()
        stepper = ep_mod.Stepper(log_params, apply_fn, greedy, disabled)
        eps = ep_mod.replay_log(log, stepper, params)
        policy = f", probabilities of {what}" if apply_fn is not None else ""
        return eps, f"replay of {Path(actions).name}{policy}", log
    if apply_fn is None:
        if not random:
            raise ValueError("give a checkpoint, --random or --actions FILE")
        env_params = EnvParams(
            max_steps_in_episode=1000 if max_steps is None else max_steps,
            start_stage=start_stage,
        )
    disabled = disabled_of(meta) if apply_fn is not None else ()
    search_cfg = None
    if search is not None:
        search_cfg = search_config(meta, env_params, search, search_mode)
        update = meta.get("update")
        what = f"{Path(checkpoint).name} (search {search} sims, {search_mode}, update {update})"
    stepper = ep_mod.Stepper(env_params, apply_fn, greedy, disabled, search_cfg)
    eps = ep_mod.play(stepper, params, seed, episodes)
    return eps, f"{what}, seed {seed}", ep_mod.action_log(eps, seed, episodes, env_params)


def check_search_args(search, checkpoint, random, actions, greedy) -> None:
    """A ``ValueError`` for a ``--search`` that cannot run (no network, or another player)."""
    if search is None:
        return
    if search < 1:
        raise ValueError(f"--search must be >= 1 simulations, got {search}")
    if checkpoint is None or random:
        raise ValueError("--search plans with a checkpoint's network; give one (not --random)")
    if actions is not None:
        raise ValueError("--search plays the episodes itself; it cannot replay --actions")
    if not greedy:
        raise ValueError("--search replaces the policy's own choice; drop --sampled")


def search_config(meta, env_params, num_simulations: int, mode: str, **options):
    """The ``SearchConfig`` of a checkpoint's policy, truncating where the episodes do;
    ``options``: other ``SearchConfig`` fields (an ``hm-eval --search`` row's)."""
    from hackmatrix_train.config import TrainConfig
    from hackmatrix_train.search import search_config_from_train

    return search_config_from_train(
        TrainConfig.from_dict(meta["config"]),
        **options,
        num_simulations=int(num_simulations),
        mode=mode,
        max_steps_in_episode=int(env_params.max_steps_in_episode),
    )


def write_gif(path, episode, interval: int = 250) -> Path:
    """Animate one recorded episode's frames (pillow, no download)."""
    from hackmatrix_env.viewer import animate_scenes

    animate_scenes([f["scene"] for f in episode.frames], interval, path)
    return Path(path)


def write_eval_replay(
    path, checkpoint, episodes, greedy, seed, start_stage, max_steps, random, search=None
):  # fmt: skip
    """``hm-eval --replay``: the HTML replay of the first evaluated episodes (module doc).

    ``search``: one ``hm-eval --search`` row's ``SearchConfig`` overrides; the replay then shows
    that search's episodes. They start from the row's games and see its game draws; with no
    more episodes than the page keeps, the search's draws are the row's too, so the replay is
    that row's episodes exactly (``make_refill_evaluate``'s keys); beyond, the shown games are
    searched with a smaller batch, hence other search draws (the subtitle says so).
    """
    from hackmatrix_train import episodes as ep_mod
    from hackmatrix_train.replay_html import write_html

    check_env_args(start_stage, max_steps)
    apply_fn, params, env_params, meta = load_policy(checkpoint, start_stage, max_steps)
    disabled = () if random else disabled_of(meta)
    search_cfg = None if search is None else search_config(meta, env_params, **search)
    stepper = ep_mod.Stepper(env_params, None if random else apply_fn, greedy, disabled, search_cfg)
    rows = range(min(episodes, EVAL_REPLAY_EPISODES))
    eps = ep_mod.play(stepper, params, seed, episodes, rows)
    mode = "random" if random else ("greedy" if greedy else "sampled")
    if search_cfg is not None:
        mode = f"search {search_cfg.num_simulations} sims, {search_cfg.mode}"
    shown = f"first {len(eps)} of {episodes}" if len(eps) < episodes else f"{episodes}"
    if search_cfg is not None and len(eps) < episodes:
        shown += " (the row's games; the search's own draws)"
    sub = f"hm-eval {Path(checkpoint).name} ({mode}, update {meta.get('update')}), seed {seed}, {shown} episodes"
    return write_html(path, eps, subtitle=sub)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="hm-watch",
        description="Play (or replay) HackMatrix episodes and write a self-contained HTML replay.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("checkpoint", nargs="?", help="params.msgpack, ckpt_*.msgpack or a run dir")
    p.add_argument("--random", action="store_true", help="uniform masked random policy")
    p.add_argument("--actions", help="replay this action log (hackmatrix-actions/1 JSON)")
    p.add_argument("--episodes", type=int, default=4, help="episodes to play (the batch size)")
    mode = p.add_mutually_exclusive_group()
    # no default on either flag, so -h shows none; greedy is None unless one is given (main)
    p.set_defaults(greedy=None)  # first: set later, it would become both flags' default
    mode.add_argument(
        "--greedy", dest="greedy", action="store_const", const=True,
        default=argparse.SUPPRESS, help="play the most likely action (the default)",
    )  # fmt: skip
    mode.add_argument(
        "--sampled", dest="greedy", action="store_const", const=False,
        default=argparse.SUPPRESS, help="sample actions from the policy",
    )  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="as hm-eval's --seed: same episodes")
    p.add_argument(
        "--search", type=int, default=None, metavar="N",
        help="play each move by a Gumbel search of N simulations (needs a checkpoint)",
    )  # fmt: skip
    p.add_argument(
        "--search-mode", choices=("honest", "oracle"), default="honest",
        help="honest: plan from states re-drawn from the observation; oracle: the true state",
    )  # fmt: skip
    p.add_argument("--start-stage", type=int, default=1, help="play from this stage")
    p.add_argument("--max-steps-in-episode", type=int, default=None, help="step limit")
    p.add_argument("--out", default="replay.html", help="the HTML replay to write")
    p.add_argument("--save-actions", default=None, help="also write the action log here")
    p.add_argument("--gif", default=None, help="also write an animated GIF of one episode")
    p.add_argument("--gif-episode", type=int, default=0, help="position of that episode")
    p.add_argument("--gif-interval", type=int, default=250, help="milliseconds per frame")
    compile_cache.add_arguments(p)
    return p


def conflicting_flags(args: argparse.Namespace) -> str | None:
    """Why the flags given cannot be played together (one would be ignored), or ``None``.

    ``--search``'s own combinations are refused by ``record``, with its messages.
    """
    if args.search is not None:
        return None
    if args.random and args.checkpoint is not None:
        return "--random plays the random policy; it cannot use the checkpoint given: drop one"
    if args.random and args.actions is not None:
        return "--actions replays a log; --random has nothing to play: drop one"
    if args.random and args.greedy is not None:
        flag = "--greedy" if args.greedy else "--sampled"
        return f"{flag} chooses the checkpoint's actions; --random has none"
    return None


def main(argv=None) -> int:
    import json

    from hackmatrix_train import episodes as ep_mod
    from hackmatrix_train.checkpoint import CheckpointError
    from hackmatrix_train.replay_html import write_html

    parser = build_parser()
    args = parser.parse_args(argv)
    conflict = conflicting_flags(args)
    if conflict:
        return fail("hm-watch", conflict)
    if args.gif and args.actions is None and not 0 <= args.gif_episode < max(args.episodes, 1):
        return fail("hm-watch", f"--gif-episode must be in 0..{max(args.episodes, 1) - 1}")
    args.greedy = args.greedy is not False
    compile_cache.enable_from_args(args)
    try:
        eps, what, log = record(
            args.checkpoint, args.random, args.actions, args.episodes, args.greedy, args.seed,
            args.start_stage, args.max_steps_in_episode, args.search, args.search_mode,
        )  # fmt: skip
        if args.gif and not 0 <= args.gif_episode < len(eps):
            raise ValueError(f"--gif-episode must be in 0..{len(eps) - 1}")
    except (CheckpointError, ValueError) as e:
        return fail("hm-watch", str(e))
    out = write_html(args.out, eps, subtitle=what)
    for ep in eps:
        s = ep.summary()
        differs = ep_mod.search_differs(ep)
        note = "" if differs is None else f"; search ≠ greedy on {differs} of {s['length']} moves"
        print(f"episode {s['index']}: return {s['return']:.3f}, {s['length']} steps, "
              f"stage {s['stage']}, {s['end']}{note}")  # fmt: skip
    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB)")
    if args.save_actions:
        path = Path(args.save_actions)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(log, indent=1))
        print(f"wrote {path}")
    if args.gif:
        gif = write_gif(args.gif, eps[args.gif_episode], args.gif_interval)
        print(f"wrote {gif}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
