"""``hm-train``: the flags of a run (``TrainConfig`` fields), then ``run.run``."""

from __future__ import annotations

import argparse
import dataclasses

from hackmatrix_env.argparsing import Parser, fail

from hackmatrix_train import compile_cache, distributed, progress
from hackmatrix_train.cli.common import HelpFormatter, add_search_flags, field_options
from hackmatrix_train.config import (
    GUIDE,
    KNOBS,
    LENGTH,
    LOGS,
    MAIN,
    SEARCH,
    TrainConfig,
)
from hackmatrix_train.guide_config import validate_guide
from hackmatrix_train.search_config import PLAY_SEARCH_FLAGS

# Flags of hm-train that are not TrainConfig fields (process set-up, not the experiment).
NON_CONFIG_ARGS = frozenset({"recipe"}) | distributed.ARG_NAMES | compile_cache.ARG_NAMES
GROUPS = {  # TrainConfig's help groups (config.flag): title, description
    SEARCH: ("search (specs/search.md)", "the settings of the run's own search (its "
             "learner's), saved with the run; hm-eval, hm-watch and hm-play plan with their "
             "own flags' settings in the run's units"),
    GUIDE: ("guided by the search (specs/train.md §11)", "PPO plus a KL term toward the "
            "search's improved policy on PPO's own states, from a start (--init-params)"),
    LOGS: ("checkpoints and logging", None),
    KNOBS: ("research knobs (advanced)", "PPO internals, loss terms and ablations; the default "
            "recipe sets them all (specs/train.md §5, §10)"),
}  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    """A flag per ``TrainConfig`` field that is one (``config.flag``: help, group, options)."""
    from hackmatrix_train.recipe import shipped_recipes

    p = Parser(
        prog="hm-train", formatter_class=HelpFormatter, argument_default=argparse.SUPPRESS,
        description="Masked-categorical PPO on HackMatrix (PureJaxRL style, whole update "
        "jitted). With no flag it trains the default recipe for a 50-minute budget "
        "(specs/train.md §10).",
    )  # fmt: skip
    p.add_argument(
        "--recipe", metavar="NAME|FILE",
        help=f"a recipe shipped with the trainer ({', '.join(shipped_recipes())}) or a TOML "
        "file of settings that replace the defaults; flags given override it",
    )  # fmt: skip
    groups = {MAIN: p, LENGTH: p.add_mutually_exclusive_group()}  # a length or a time budget
    groups.update({k: p.add_argument_group(*v) for k, v in GROUPS.items()})
    for f in dataclasses.fields(TrainConfig):
        if "help" not in f.metadata:
            continue
        kw, text = field_options(f), f.metadata["help"]
        if not ("default" in text or kw.get("action") == "store_true" or f.default is None):
            text += f" (default: {f.default})"
        groups[f.metadata["group"]].add_argument("--" + f.name.replace("_", "-"), dest=f.name,
                                                 help=text, **kw)  # fmt: skip
    # the trainer's search follows no one game, and its tree bonus is its learner's flag
    add_search_flags(groups[SEARCH], {"search_track_cryptogs", *PLAY_SEARCH_FLAGS},
                     argparse.SUPPRESS)  # fmt: skip
    distributed.add_arguments(p)
    compile_cache.add_arguments(groups[LOGS])
    return p


def config_from_args(args: argparse.Namespace) -> tuple[TrainConfig, frozenset[str]]:
    """The config of the given flags over ``--recipe`` (if any) over the defaults; ``explicit``
    names the flags given. A bad recipe or value is a ``ValueError`` with the reason."""
    from hackmatrix_train.recipe import apply_recipe, load_recipe

    ns = {k: v for k, v in vars(args).items() if k not in NON_CONFIG_ARGS}
    if "disabled_programs" in ns:
        ns["disabled_programs"] = tuple(ns["disabled_programs"])
    recipe = load_recipe(args.recipe) if getattr(args, "recipe", None) is not None else {}
    return apply_recipe(TrainConfig().replace(**ns), recipe, frozenset(ns)), frozenset(ns)


def main(argv=None, **parts) -> int:
    """``hm-train``; ``parts`` go to ``trainer.make_train`` (an experiment's ``actor``,
    ``loss``, ``make_env``, ``learner``)."""
    from hackmatrix_train.run import locate_run, run

    args = build_parser().parse_args(argv)
    try:
        cfg, explicit = config_from_args(args)
        validate_guide(cfg)
        place = locate_run(cfg, explicit)  # before JAX: a resume keeps its device count
        devices = place.meta.get("num_devices") if place else None
        distributed.set_cpu_devices(args.cpu_devices, args.distributed, place.cfg if place else cfg,
                        explicit, devices)  # fmt: skip
        if args.distributed:
            distributed.init_distributed(
                args.coordinator_address, args.num_processes, args.process_id
            )
        shown = place.cfg if place else cfg
        length = (f"{shown.time_budget:g} minutes" if shown.time_budget is not None
                  else f"{shown.total_timesteps:,} env steps")  # fmt: skip
        learner = (parts["learner"].name if parts.get("learner")
                   else "guided PPO" if shown.guide_kl > 0 else "ppo")  # fmt: skip
        rounds = f"{shown.guide_rounds} rounds of " if shown.guide_rounds > 1 else "a "
        progress.say(f"hm-train: {'resuming' if place else 'starting'} {rounds}{learner} run, "
                     f"{length} on {shown.num_envs} envs")  # fmt: skip
        compile_cache.enable_from_args(args)
        if cfg.guide_rounds > 1:
            from hackmatrix_train.rounds import run_rounds

            result = run_rounds(cfg, explicit, **parts)
        else:
            result = run(cfg, explicit, place=place, **parts)
    except ValueError as e:
        return fail("hm-train", str(e))
    return 130 if result["interrupted"] else 0
