"""What the commands share: the help layout, the search's flags, the policy's options."""

from __future__ import annotations

import argparse
import dataclasses

from hackmatrix_env.argparsing import count

from hackmatrix_train.config import SEARCH_FLAGS
from hackmatrix_train.policy import SHIPPED_POLICY
from hackmatrix_train.search_config import PLAY_SEARCH_FLAGS, SearchConfig

# hm-train's alone: the other commands take the simulations as --search N and learn no target
TRAINER_SEARCH_FLAGS = frozenset({"search_simulations", "search_target_value_scale"})
# every command's search flags: the shared ones and those of the commands that play
ALL_SEARCH_FLAGS = {**SEARCH_FLAGS, **PLAY_SEARCH_FLAGS}


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


def field_options(f: dataclasses.Field) -> dict:
    """The argparse options of a config field declared by ``flag`` (``config``,
    ``search_config``): its own, with the value's type from the default (text for None) unless
    given or an action; ``type="count"`` reads ``10M``, ``5e6``, ..."""
    kw = dict(f.metadata["options"])
    if "action" not in kw:
        kind = kw.get("type", str if f.default is None else type(f.default))
        kw["type"] = count if kind == "count" else kind
    return kw


def add_search_flags(group, skip=TRAINER_SEARCH_FLAGS, default=None) -> None:
    """The search's flags (``SEARCH_FLAGS`` and ``PLAY_SEARCH_FLAGS`` less ``skip``), their
    help and shown default ``SearchConfig``'s (``search_config.flag``); ``default=None`` stands
    for that default (``policy.search_config`` fills it in)."""
    fields = {f.name: f for f in dataclasses.fields(SearchConfig)}
    for dest, name in ALL_SEARCH_FLAGS.items():
        if dest in skip:
            continue
        f, meta = fields[name], fields[name].metadata
        shown = meta["shown"] or f.default
        if isinstance(f.default, bool):
            shown = "on" if f.default else "off"
        group.add_argument("--" + dest.replace("_", "-"), dest=dest, default=default,
                           help=f"{meta['help']} (default: {shown})", **field_options(f))  # fmt: skip


# The one line of every playing command given a --search-* flag without a search to set
SEARCH_FLAGS_NEED_SEARCH = "the --search-* flags set a search: give --search N"


def search_overrides(args: argparse.Namespace) -> dict:
    """``SearchConfig`` fields of the search flags given (a flag left out: the default)."""
    return {
        ALL_SEARCH_FLAGS[k]: v
        for k, v in vars(args).items()
        if k in ALL_SEARCH_FLAGS and v is not None
    }


def tree_bonus_problem(args: argparse.Namespace) -> str | None:
    """Why the tree bonus's flags (``PLAY_SEARCH_FLAGS``) given cannot be played
    (``SearchConfig``'s own checks, or a first stage without a bonus), or ``None``; the other
    search flags are checked with the simulations, where the search is built."""
    options = search_overrides(args)
    bonus = {k: v for k, v in options.items() if k in PLAY_SEARCH_FLAGS.values()}
    if "program_bonus_from_stage" in bonus and not bonus.get("program_bonus"):
        return ("--search-program-bonus-from-stage sets where the tree's bonus starts: give "
                "--search-program-bonus B > 0 with it")  # fmt: skip
    try:
        SearchConfig(**bonus)
    except ValueError as e:
        return f"--search-program-bonus: {e}"
    return None


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
        ("--views", "the network averaged over this many of the board's 8 symmetries, each "
         "view's answer mapped back (1: the network itself; 8: the best play measured)",
         {"type": int, "default": 1}),
    ))  # fmt: skip
    p.set_defaults(greedy=None)  # before the flags: it would become both flags' default
    mode = p.add_mutually_exclusive_group()
    for flag, const, text in (("--greedy", True, "play the most likely action (the default)"),
                              ("--sampled", False, "sample actions from the policy")):  # fmt: skip
        mode.add_argument(flag, dest="greedy", action="store_const", const=const,
                          default=argparse.SUPPRESS, help=text)  # fmt: skip
