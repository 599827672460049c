"""What the commands share: the help layout and the search's flags."""

from __future__ import annotations

import argparse

from hackmatrix_train.config import SEARCH_FLAGS
from hackmatrix_train.policy import SHIPPED_POLICY
from hackmatrix_train.search_config import CHANCES, MODES, SELECTIONS, SearchConfig


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help with each option's default shown once: appended as ``(default: X)`` unless the
    help already says it, and never for a default that means "not given" (None, False)."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        unset = default is None or default is False or default is argparse.SUPPRESS
        if "default" in text or unset or (isinstance(default, tuple) and not default):
            return text
        return f"{text} (default: %(default)s)"


# The search's flags (SearchConfig fields by config.SEARCH_FLAGS): argparse options and help;
# "{own}" in the help names whose setting the default is.
_D = SearchConfig()
SEARCH_ARGS = {
    "search_mode": dict(choices=MODES, help="honest: plan from states re-drawn from the "
                        f"observation; oracle: from the true state (default: {{own}}{_D.mode})"),
    "search_depth": dict(type=int, metavar="D", help="the tree's maximum depth (default: "
                         "{own}no limit)"),
    "search_gumbel_scale": dict(type=float, metavar="G", help="scale of the root's Gumbel "
                                f"noise, 0: deterministic (default: {{own}}{_D.gumbel_scale})"),
    "search_considered": dict(type=int, metavar="M", help="actions the root's Gumbel-Top-k "
                              "considers, sequential halving among them (default: "
                              f"{{own}}{_D.max_num_considered_actions})"),
    "search_value_scale": dict(type=float, metavar="C", help="weight of the root's rescaled Q "
                               "in the improved policy (mctx's value_scale; default: "
                               f"{{own}}{_D.value_scale})"),
    "search_selection": dict(choices=SELECTIONS, help="play mctx's Gumbel action or the "
                             f"improved policy's argmax (default: {{own}}{_D.selection})"),
    "search_chance": dict(choices=CHANCES, help="the game's draws in the tree: sampled per "
                          "simulation, or common to a node's children (default: "
                          f"{{own}}{_D.chance})"),
    "search_determinizations": dict(type=int, metavar="K", help="honest mode: K searches from "
                                    "independent re-draws of the hidden parts, N/K simulations "
                                    "each, improved policies averaged (default: {own}one per 8 "
                                    "simulations)"),
    "search_track_cryptogs": dict(action=argparse.BooleanOptionalAction, help="honest mode: "
                                  "draw the unseen cryptogs where the game's history leaves "
                                  "them possible, not on any dark cell (default: "
                                  f"{{own}}{'on' if _D.track_cryptogs else 'off'})"),
}  # fmt: skip


def add_search_flags(group, own: str = "the policy's, ", skip=(), default=None) -> None:
    """The search's flags (``SEARCH_ARGS``, less ``skip``); ``default=None`` stands for the
    policy's run's setting, which ``own`` names in the help."""
    for dest, kw in SEARCH_ARGS.items():
        if dest in skip:
            continue
        kw = {**kw, "help": kw["help"].format(own=own)}
        group.add_argument("--" + dest.replace("_", "-"), dest=dest, default=default, **kw)


def search_overrides(args: argparse.Namespace) -> dict:
    """``SearchConfig`` fields of the search flags given (``None``: the run's)."""
    return {
        SEARCH_FLAGS[k]: v for k, v in vars(args).items() if k in SEARCH_FLAGS and v is not None
    }


def add_options(group, rows) -> None:
    """``(flag, help, argparse options)`` rows added to ``group``."""
    for flag, text, kw in rows:
        group.add_argument(flag, help=text, **kw)


def add_policy_options(p, episodes: int, seed_help: str) -> None:
    """The policy and its episodes, the same in ``hm-eval`` and ``hm-watch``: ``greedy`` is
    None unless ``--greedy`` or ``--sampled`` is given (``--random`` refuses both)."""
    add_options(p, (
        ("checkpoint", "params.msgpack, ckpt_*.msgpack or a run directory (default: the "
         f"shipped agent, {SHIPPED_POLICY})", {"nargs": "?", "default": None}),
        ("--episodes", "episodes played (one batch)", {"type": int, "default": episodes}),
        ("--random", "the uniform masked random policy (needs no checkpoint)",
         {"action": "store_true"}),
        ("--seed", seed_help, {"type": int, "default": 0}),
        ("--start-stage", "play from this stage (1 = the real game)", {"type": int, "default": 1}),
        ("--max-steps-in-episode", "step limit (default: the checkpoint's)", {"type": int}),
    ))  # fmt: skip
    p.set_defaults(greedy=None)  # before the flags: it would become both flags' default
    mode = p.add_mutually_exclusive_group()
    for flag, const, text in (("--greedy", True, "play the most likely action (the default)"),
                              ("--sampled", False, "sample actions from the policy")):  # fmt: skip
        mode.add_argument(flag, dest="greedy", action="store_const", const=const,
                          default=argparse.SUPPRESS, help=text)  # fmt: skip
