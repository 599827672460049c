"""``hm-watch``: play or replay episodes and write one self-contained HTML replay (and a GIF).

Policies: a checkpoint's (greedy or sampled; none given: the shipped agent), the uniform masked
random policy (``--random``), or a saved action log (``--actions``, format in ``episodes.py``;
with a checkpoint too, the page shows what that policy thinks of each logged action). The
command's flags are in ``cli/watch.py``::

    uv run hm-watch checkpoints/<run> --episodes 4 --out replay.html
    uv run hm-watch --random --episodes 3 --seed 1 --out replay.html --gif replay.gif
    uv run hm-watch --actions game.json --out game.html
    uv run hm-watch checkpoints/<run> --search 32 --episodes 4 --out search.html

``--search N`` plays each move by a Gumbel search of N simulations (``search.py``; honest by
default, ``--search-mode oracle`` searches the true state; the other ``--search-*`` flags as
``hm-eval``'s) with the checkpoint's network as
prior and value; the page shows each move's visits and Q per action and marks the moves where
the search chose another action than the greedy network. Its action log replays the episodes
without a search.

The episodes are exactly the ones ``hm-eval`` scores with the same checkpoint, seed,
episode count, greedy/sampled mode and step limit (``episodes.py`` shares its keys).
``hm-eval --replay FILE`` calls ``write_eval_replay`` for that; with ``--search`` it shows the
first search row's episodes.
"""

from __future__ import annotations

from pathlib import Path

EVAL_REPLAY_EPISODES = 20  # hm-eval --replay keeps the page small: the first 20 episodes


def record(
    checkpoint=None, random=False, actions=None, episodes=4, greedy=True, seed=0,
    start_stage=1, max_steps=None, search=None, report=None, views=1,
):  # fmt: skip
    """``(episodes, description, action log)`` for the chosen policy (module doc).

    ``search``: ``SearchConfig`` overrides (``num_simulations`` at least) of a search that plays
    instead of the network. ``views``: ``load_policy``'s. No checkpoint, no ``random`` and no
    ``actions``: the shipped agent.
    ``report`` (``progress.Reporter``; None: silent) hears of the compile and the recording.
    """
    from hackmatrix_env import EnvParams

    from hackmatrix_train import episodes as ep_mod
    from hackmatrix_train import progress

    report = progress.QUIET if report is None else report
    from hackmatrix_train.policy import (
        check_env_args,
        check_random_views,
        load_policy,
        random_policy,
        search_config,
    )

    check_env_args(start_stage, max_steps)
    if episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {episodes}")
    check_search_args(search, random, actions, greedy)
    check_random_views(random, views)
    policy, what = None, "random masked policy"
    if not random and (checkpoint is not None or actions is None):
        policy = load_policy(checkpoint, start_stage, max_steps, views=views)
        mode = ("greedy" if greedy else "sampled") + (f", {views} views" if views > 1 else "")
        what = f"{Path(policy.meta['path']).name} ({mode}, update {policy.meta.get('update')})"
    if actions is not None:
        log = ep_mod.read_action_log(actions)
        log_params = EnvParams(
            max_steps_in_episode=log["max_steps"],
            start_stage=log["start_stage"],
            history_depth=log["history_depth"],
        )
        apply_fn, params = (None, None) if policy is None else (policy.apply_fn, policy.params)
        disabled = () if policy is None else policy.disabled
        stepper = ep_mod.Stepper(log_params, apply_fn, greedy, disabled, report=report)
        report.say(f"replaying {len(log['episodes'])} episodes of {Path(actions).name}")
        eps = ep_mod.replay_log(log, stepper, params, report)
        probabilities = f", probabilities of {what}" if policy is not None else ""
        return eps, f"replay of {Path(actions).name}{probabilities}", log
    if policy is None:
        policy = random_policy(start_stage, max_steps)
    search_cfg = None
    if search is not None:
        search_cfg = search_config(policy, **search)
        update = policy.meta.get("update")
        what = (f"{Path(policy.meta['path']).name} (search {search_cfg.num_simulations} sims, "
                f"{search_cfg.mode}, update {update})")  # fmt: skip
    stepper = ep_mod.Stepper(
        policy.env_params, policy.apply_fn, greedy, policy.disabled, search_cfg, report
    )
    report.say(f"recording {episodes} episodes of {what}, seed {seed}")
    eps = ep_mod.play(stepper, policy.params, seed, episodes, report=report)
    return eps, f"{what}, seed {seed}", ep_mod.action_log(eps, seed, episodes, policy.env_params)


def check_search_args(search, random, actions, greedy) -> None:
    """A ``ValueError`` for a ``--search`` that cannot run (no network, or another player)."""
    if search is None:
        return
    if search["num_simulations"] < 1:
        raise ValueError(f"--search must be >= 1 simulations, got {search['num_simulations']}")
    if random:
        raise ValueError(
            "--search plans with a checkpoint's network; it cannot be used with --random"
        )
    if actions is not None:
        raise ValueError("--search plays the episodes itself; it cannot replay --actions")
    if not greedy:
        raise ValueError("--search replaces the policy's own choice; drop --sampled")


def write_gif(path, episode, interval: int = 250) -> Path:
    """Animate one recorded episode's frames (pillow, no download)."""
    from hackmatrix_env.viewer import animate_scenes

    animate_scenes([f["scene"] for f in episode.frames], interval, path)
    return Path(path)


def write_eval_replay(
    path, checkpoint, episodes, greedy, seed, start_stage, max_steps, random, search=None,
    report=None, views=1,
):  # fmt: skip
    """``hm-eval --replay``: the HTML replay of the first evaluated episodes (module doc).

    ``search``: one ``hm-eval --search`` row's ``SearchConfig`` overrides; the replay then shows
    that search's episodes. They start from the row's games and see its game draws; with no
    more episodes than the page keeps, the search's draws are the row's too, so the replay is
    that row's episodes exactly (``make_refill_evaluate``'s keys); beyond, the shown games are
    searched with a smaller batch, hence other search draws (the subtitle says so).
    """
    from hackmatrix_train import episodes as ep_mod
    from hackmatrix_train import progress
    from hackmatrix_train.policy import check_env_args, load_policy, random_policy, search_config
    from hackmatrix_train.replay_html import write_html

    report = progress.QUIET if report is None else report
    check_env_args(start_stage, max_steps)
    if random and checkpoint is None:
        policy = random_policy(start_stage, max_steps)
    else:
        policy = load_policy(checkpoint, start_stage, max_steps, views=1 if random else views)
    disabled = () if random else policy.disabled
    search_cfg = None if search is None else search_config(policy, **search)
    apply_fn = None if random else policy.apply_fn
    stepper = ep_mod.Stepper(policy.env_params, apply_fn, greedy, disabled, search_cfg, report)
    rows = range(min(episodes, EVAL_REPLAY_EPISODES))
    eps = ep_mod.play(stepper, policy.params, seed, episodes, rows, report=report)
    mode = "random" if random else ("greedy" if greedy else "sampled")
    if search_cfg is not None:
        mode = f"search {search_cfg.num_simulations} sims, {search_cfg.mode}"
    shown = f"first {len(eps)} of {episodes}" if len(eps) < episodes else f"{episodes}"
    if search_cfg is not None and len(eps) < episodes:
        shown += " (the row's games; the search's own draws)"
    name = Path(policy.meta["path"]).name if policy.meta["path"] else "no checkpoint"
    sub = f"hm-eval {name} ({mode}, update {policy.meta.get('update')}), seed {seed}, {shown} episodes"
    return write_html(path, eps, subtitle=sub)


def write_outputs(eps, what, log, out, save_actions=None, gif=None, gif_episode=0,
                  gif_interval=250) -> None:  # fmt: skip
    """``hm-watch``'s files: the HTML replay, the action log, the GIF; a line for each episode."""
    import json

    from hackmatrix_train import episodes as ep_mod
    from hackmatrix_train.replay_html import write_html

    page = write_html(out, eps, subtitle=what)
    for ep in eps:
        s = ep.summary()
        differs = ep_mod.search_differs(ep)
        note = "" if differs is None else f"; search ≠ greedy on {differs} of {s['length']} moves"
        print(f"episode {s['index']}: return {s['return']:.3f}, {s['length']} steps, "
              f"stage {s['stage']}, {s['end']}{note}")  # fmt: skip
    print(f"wrote {page} ({page.stat().st_size / 1e6:.2f} MB)")
    if save_actions:
        path = Path(save_actions)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(log, indent=1))
        print(f"wrote {path}")
    if gif:
        print(f"wrote {write_gif(gif, eps[gif_episode], gif_interval)}")
