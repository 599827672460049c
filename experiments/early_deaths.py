"""The games lost in the first stages: how a searched game dies in stage 1 or 2.

With the honest search at 32 simulations the hour's networks end 6-10 % of their games in
stage 1 or 2 (`long_game.md`), where the default policy's search at 8 lost 4-5 % there. A
game lost at stage 1 costs the mean stage about five stages, so these few games weigh on the
issue's mean stage as much as the late ones. This records the protocol's episodes
(``episodes.play``: the same reset and env keys as ``hm-eval``'s), keeps every state of the
games that end at ``--max-stage`` or earlier, and prints for each:

* its end, the move it ended on, the moves it spent in that stage, its hit points then;
* what it did in that stage: moves, siphons, and the programs it ran by name;
* its last moves with the hit points and enemies after each, and its board before the last
  move (``render_text``).

Then the counts over those games: what their last ``--last`` moves were, the hit points when
the stage began, its siphons and programs, the most enemies on the board; and over every game,
how often one that siphons in stage 1 ends there against one that does not.

    uv run python experiments/early_deaths.py CKPT --episodes 256 --seed 0 --search 32
"""

from __future__ import annotations

import argparse
import collections
import json

from hackmatrix_env.constants import Action


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoint", nargs="?", default=None, help="default: the shipped agent")
    p.add_argument("--episodes", type=int, default=256, help="the evaluation's batch")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--search", type=int, default=32, help="simulations; 0: the greedy network")
    p.add_argument("--max-stage", type=int, default=2, help="games that end at this stage or lower")
    p.add_argument("--last", type=int, default=8, help="moves shown before each early end")
    p.add_argument("--show", type=int, default=6, help="games printed in full")
    p.add_argument("--chunk", type=int, default=64, help="episodes recorded at once")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    if args.episodes < 1 or args.chunk < 1 or args.max_stage < 1 or args.search < 0:
        raise SystemExit("--episodes, --chunk, --max-stage must be >= 1, --search >= 0")

    import numpy as np
    from hackmatrix_env.render import render_text
    from hackmatrix_train import episodes as ep_mod
    from hackmatrix_train.compile_cache import default_cache_dir, enable
    from hackmatrix_train.policy import load_policy, search_config

    enable(default_cache_dir())
    policy = load_policy(args.checkpoint, 1, None)
    cfg = search_config(policy, num_simulations=args.search) if args.search else None
    stepper = ep_mod.Stepper(policy.env_params, policy.apply_fn, True, policy.disabled, cfg)
    early, ends, first = [], collections.Counter(), collections.Counter()
    for lo in range(0, args.episodes, args.chunk):
        rows = range(lo, min(lo + args.chunk, args.episodes))
        eps = ep_mod.play(stepper, policy.params, args.seed, args.episodes, rows, keep_states=True)
        for ep in eps:
            ends[(ep.stage, ep.end)] += 1
            first[first_stage(ep)] += 1
            if ep.stage <= args.max_stage and ep.end != "victory":
                early.append(describe(ep, args.last))
                early[-1]["board"] = render_text(ep.states[-2]) if len(ep.states) > 1 else ""
            ep.states.clear()  # only the early ends' summaries are kept
        print(f"recorded {min(lo + args.chunk, args.episodes)} of {args.episodes}", flush=True)

    mode = f"search {args.search} honest" if args.search else "greedy"
    print(f"\n{policy.meta['path']}, {mode}, seed {args.seed}, {args.episodes} episodes")
    print("ends by (stage, cause):", dict(sorted(ends.items())))
    print(f"ended at stage <= {args.max_stage}: {len(early)}")
    for g in early[: args.show]:
        print(f"\n--- episode {g['index']}: {g['end']} at stage {g['stage']}, move {g['length']}, "
              f"{g['stage_moves']} moves in the stage; hp at its start {g['stage_start_hp']}")  # fmt: skip
        print("    stage's actions:", g["stage_actions"])
        print("    last moves (action, hp and enemies after it):",
              " | ".join(f"{a} {h} {e}" for a, h, e in g["tail"]))  # fmt: skip
        print(g["board"])
    last = collections.Counter(a for g in early for a, *_ in g["tail"])
    print("\nover the early ends:")
    print("  their last moves:", dict(last.most_common()))
    for key in ("stage_start_hp", "stage_siphons", "stage_programs", "stage_moves", "max_enemies"):
        vals = [g[key] for g in early]
        if vals:
            print(f"  {key}: mean {np.mean(vals):.2f}, values {sorted(vals)}")
    print("  causes:", dict(collections.Counter(g["end"] for g in early)))
    print("\nstage 1 over every game (siphoned there, ended there): count")
    for siphoned in (True, False):
        n = first[(siphoned, True)] + first[(siphoned, False)]
        ended = first[(siphoned, True)]
        rate = f"{100 * ended / n:.1f} %" if n else "-"
        print(
            f"  {'siphoned' if siphoned else 'no siphon'} in stage 1: {n} games, "
            f"{ended} ended in stage 1 ({rate})"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "ends": {str(k): v for k, v in ends.items()},
                       "early": early, "stage1": {str(k): v for k, v in first.items()}},
                      f, indent=1)  # fmt: skip


def first_stage(ep) -> tuple[bool, bool]:
    """(whether the game siphoned in stage 1, whether it ended there, victory aside)."""
    stages = [int(s.game.stage) for s in ep.states]  # the state each action was chosen in
    in_first = [a for a, st in zip(ep.actions, stages, strict=False) if st == 1]
    return int(Action.SIPHON) in in_first, ep.stage == 1 and ep.end != "victory"


def action_kind(a: int) -> str:
    """``move``, ``siphon`` or ``program:NAME`` for an action index."""
    if a == int(Action.SIPHON):
        return "siphon"
    return "move" if a < int(Action.SIPHON) else "program:" + Action(a).name


def describe(ep, last: int) -> dict:
    """An early end's summary from its kept states (``Episode.states``: one per frame, the
    first the reset's)."""
    import numpy as np

    states = ep.states
    stage = [int(s.game.stage) for s in states]
    hp = [int(s.game.player.hp) for s in states]
    enemies = [int(np.sum(s.game.enemies.alive)) for s in states]
    final_stage = stage[-1]
    begin = stage.index(final_stage)  # the frame the last stage began at
    acts = ep.actions[begin:]
    kinds = collections.Counter(action_kind(a) for a in acts)
    tail = [
        (Action(a).name, hp[i + 1], enemies[i + 1])
        for i, a in enumerate(ep.actions)
        if i >= len(ep.actions) - last
    ]
    return {
        "index": ep.index,
        "end": ep.end,
        "stage": final_stage,
        "length": len(ep.actions),
        "stage_moves": len(acts),
        "stage_start_hp": hp[begin],
        "stage_siphons": kinds.get("siphon", 0),
        "stage_programs": sum(v for k, v in kinds.items() if k.startswith("program")),
        "stage_actions": dict(kinds),
        "max_enemies": max(enemies[begin:]),
        "tail": tail,
    }


if __name__ == "__main__":
    main()
