"""``hm-train``: the flags of a run (``TrainConfig`` fields), then ``run.run``."""

from __future__ import annotations

import argparse
import math
import sys

from hackmatrix_env.argparsing import Parser, fail

from hackmatrix_train import compile_cache, progress
from hackmatrix_train.cli.common import HelpFormatter, add_search_flags
from hackmatrix_train.config import ALGORITHMS, NETWORKS, SEARCH_TARGETS, TrainConfig

# Flags of hm-train that are not TrainConfig fields (process set-up, not the experiment).
NON_CONFIG_ARGS = (
    frozenset({"distributed", "coordinator_address", "num_processes", "process_id"})
    | frozenset({"recipe", "cpu_devices"})
    | compile_cache.ARG_NAMES
)
MAIN, LOGS, SEARCH, KNOBS = "main", "checkpoints and logging", "search", "knobs"
GROUPS = {
    SEARCH: ("search trainer (--algo search; specs/search.md)", "Gumbel AlphaZero with the game "
             "as model: the search acts, the network learns its improved policy and returns"),
    LOGS: ("checkpoints and logging", None),
    KNOBS: ("research knobs (advanced)", "PPO internals, loss terms and ablations; the default "
            "recipe sets them all (specs/train.md §5, §10)"),
}  # fmt: skip
B, OPT = "store_true", argparse.BooleanOptionalAction
# (flag, group, help, options): every TrainConfig flag; the default shown is TrainConfig's
# unless the help gives it
FLAGS = (
    ("--seed", MAIN, "the run's random seed (params, envs, actions)", {}),
    ("--num-envs", MAIN, "parallel environments", {}),
    ("--num-steps", MAIN, "steps per env per rollout", {}),
    ("--total-timesteps", "length", "env steps to train (10M, 5e6, ...); given, it replaces the "
     "time budget (default: as many as fit --time-budget)", {"type": "count"}),
    ("--time-budget", "length", "minutes for compiling and training: time the compiled update, "
     "then train as many steps as fit (the final evaluation follows)", {"type": float}),
    ("--auto-tune", MAIN, "pick num_envs for the hardware", {"action": B}),
    ("--network", MAIN, "mlp (flattened obs) or grid (conv over 6x6 cells)", {"choices": NETWORKS}),
    ("--lr", MAIN, "Adam learning rate", {}),
    ("--anneal-lr", MAIN, "linear LR decay to 0", {"action": OPT}),
    ("--ent-coef", MAIN, "entropy coefficient (start value when annealed)", {}),
    ("--vf-coef", MAIN, "value-loss weight", {}),
    ("--checkpoint-dir", MAIN, "root of run directories", {}),
    ("--resume", MAIN, "checkpoint file or run directory to continue", {}),
    ("--init-params", MAIN, "warm start: start from the params of this checkpoint (file, run dir "
     "or params export) with a fresh optimizer, schedules and envs; the network must match", {}),
    ("--no-wandb", MAIN, "disable wandb", {"action": B}),
    ("--final-eval-episodes", MAIN, "greedy episodes from stage 1 evaluated at the end of the "
     "run (0 = skip)", {}),
    ("--algo", SEARCH, "ppo, or search", {"choices": ALGORITHMS}),
    ("--search-simulations", SEARCH, "simulations per move", {"type": int}),
    ("--search-target-value-scale", SEARCH, "value scale of the improved-policy target "
     "(smaller: closer to the network's policy; default: the acting search's)", {"type": float}),
    ("--search-target", SEARCH, "the policy target: the search's improved policy (its Q rescaled "
     "to [0, 1], or raw: in the value's units; overrides: learnt only where the search overruled "
     "the network's argmax), or the action it played", {"choices": SEARCH_TARGETS}),
    ("--run-name", LOGS, "run name (default: derived from the config)", {}),
    ("--log-interval", LOGS, "updates per jitted chunk / log line", {}),
    ("--project", LOGS, "wandb project", {}),
    ("--entity", LOGS, "wandb entity (default: wandb's)", {}),
    ("--run-suffix", LOGS, "appended to the run name", {}),
    ("--rewind", LOGS, "with --resume DIR: the latest checkpoint <= this update", {"type": int}),
    ("--save-interval", LOGS, "also checkpoint every N updates (default: by time only)",
     {"type": int}),
    ("--save-interval-minutes", LOGS, "checkpoint every N minutes", {}),
    ("--keep-checkpoints", LOGS, "full checkpoints kept per run", {}),
    ("--no-artifact", LOGS, "do not log the final params as a wandb artifact", {"action": B}),
    ("--ent-coef-end", KNOBS, "anneal the entropy coefficient linearly to this (none: constant)",
     {"type": float}),
    ("--gamma", KNOBS, "discount factor", {}),
    ("--gae-lambda", KNOBS, "GAE's lambda (bias-variance of the advantages)", {}),
    ("--num-minibatches", KNOBS, "minibatches per epoch (auto-scaled for large batches)", {}),
    ("--update-epochs", KNOBS, "passes over each rollout per update", {}),
    ("--clip-eps", KNOBS, "PPO's clip range of the probability ratio", {}),
    ("--vf-clip-eps", KNOBS, "clip range of the value loss around the rollout's value, in return "
     "units (0: no value clipping; default: --clip-eps)", {"type": float}),
    ("--max-grad-norm", KNOBS, "global gradient-norm clip", {}),
    ("--hidden-dim", KNOBS, "width of the network's hidden layers", {}),
    ("--num-layers", KNOBS, "hidden layers of the network's trunk", {}),
    ("--explore-floor", KNOBS, "exploration floor: a loss penalty keeps P(siphon) and P(any "
     "program) >= this wherever they are valid (0 = off; specs/train.md §5)", {}),
    ("--explore-floor-end", KNOBS, "anneal the floor linearly to this", {"type": float}),
    ("--explore-floor-start", KNOBS, "fraction of the run before the floor switches on (then "
     "annealed over the rest)", {}),
    ("--explore-coef", KNOBS, "weight of the exploration-floor penalty", {}),
    ("--explore-floor-ramp", KNOBS, "fraction of the run over which the penalty's weight rises "
     "from 0 to --explore-coef after the switch-on (0: at once)", {}),
    ("--reward-scale", KNOBS, "multiply rewards by this inside the loss", {}),
    ("--program-potential", KNOBS, "potential-based shaping inside the loss: phi = this x "
     "programs owned (0: off); returns and evaluations stay the game's reward", {}),
    ("--program-bonus", KNOBS, "intrinsic reward inside the loss: this x each program acquired, "
     "kept at death (0: off); returns and evaluations stay the game's reward", {}),
    ("--program-bonus-end", KNOBS, "move the program bonus linearly from --program-bonus to "
     "this over the run (default: constant)", {"type": float}),
    ("--program-terms-skip-undo", KNOBS, "the program potential and bonus count every program "
     "but UNDO", {"action": OPT}),
    ("--disabled-programs", KNOBS, "programs taken out of the agent's action mask in training "
     "and evaluation, e.g. 'undo' (an ablation of the agent; the game is unchanged); the flag "
     "alone: none", {"type": str, "nargs": "*", "metavar": "NAME"}),
    ("--max-steps-in-episode", KNOBS, "truncation limit (EnvParams)", {}),
    ("--history-depth", KNOBS, "UNDO snapshots kept (EnvParams.history_depth); raise it for "
     "UNDO-heavy policies, see stats/history_overflow_frac", {}),
    ("--final-eval-seed", KNOBS, "key of the end-of-run evaluation (fixed: runs compare)", {}),
)  # fmt: skip

# Flags of the process, not of the run (NON_CONFIG_ARGS)
PROCESS_FLAGS = (
    ("--cpu-devices", "on CPU, JAX devices to split envs and minibatches over (default: one per "
     "usable core; 1: one device)", {"type": int}),
    ("--distributed", "multi-host: call jax.distributed.initialize() first; SLURM / Open MPI set "
     "the process layout, else the three flags below do (specs/train.md §6)", {"action": B}),
    ("--coordinator-address", "with --distributed: process 0's address, the same for every "
     "process (default: $JAX_COORDINATOR_ADDRESS or the cluster's)", {"metavar": "HOST:PORT"}),
    ("--num-processes", "with --distributed: how many processes train (default: the cluster's)",
     {"type": int}),
    ("--process-id", "with --distributed: this process's index, 0..N-1; 0 writes every file "
     "(default: the cluster's)", {"type": int}),
)  # fmt: skip


def parse_count(text: str) -> int:
    """``10M``, ``500k``, ``1e7``, ``1_000_000`` -> int."""
    t = text.strip().lower().replace("_", "").replace(",", "")
    mult = {"k": 10**3, "m": 10**6, "g": 10**9, "b": 10**9}.get(t[-1:], 1)
    try:
        value = float(t[:-1] if mult != 1 else t) * mult
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a count: {text!r} (e.g. 10M, 500k, 1e7)") from None
    if value < 0 or not math.isfinite(value) or value != int(value):
        raise argparse.ArgumentTypeError(f"not a whole non-negative count: {text!r}")
    return int(value)


def build_parser() -> argparse.ArgumentParser:
    d = TrainConfig()
    p = Parser(
        prog="hm-train", formatter_class=HelpFormatter, argument_default=argparse.SUPPRESS,
        description="Masked-categorical PPO on HackMatrix (PureJaxRL style, whole update "
        "jitted). With no flag it trains the default recipe for a 50-minute budget "
        "(specs/train.md §10).",
    )  # fmt: skip
    p.add_argument(
        "--recipe", metavar="NAME|FILE",
        help="a recipe shipped with the trainer (depth, programs, reference) or a TOML file of "
        "settings that replace the defaults; flags given override it",
    )  # fmt: skip
    groups = {MAIN: p, "length": p.add_mutually_exclusive_group()}  # a length or a time budget
    groups.update({k: p.add_argument_group(*v) for k, v in GROUPS.items()})
    for flag, group, text, kw in FLAGS:
        dest = flag[2:].replace("-", "_")
        kw = dict(kw)
        value = d.setting(dest)
        if kw.get("type") == "count":
            kw["type"] = parse_count
        if kw.get("action") not in (B, OPT):
            kw.setdefault("type", type(value) if value is not None else str)
        plain = "default" in text or kw.get("action") == B or value is None
        shown = "" if plain else f" (default: {value})"
        groups[group].add_argument(flag, dest=dest, help=text + shown, **kw)
    add_search_flags(groups[SEARCH], "", {"search_track_cryptogs"}, argparse.SUPPRESS)
    for flag, text, kw in PROCESS_FLAGS:
        p.add_argument(flag, default=None, help=text, **kw)
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
    from hackmatrix_train.distributed import init_distributed, set_cpu_devices
    from hackmatrix_train.run import locate_run, run

    args = build_parser().parse_args(argv)
    try:
        cfg, explicit = config_from_args(args)
        place = locate_run(cfg, explicit)  # before JAX: a resume keeps its device count
        devices = place.meta.get("num_devices") if place else None
        set_cpu_devices(args.cpu_devices, args.distributed, place.cfg if place else cfg,
                        explicit, devices)  # fmt: skip
        if args.distributed:
            init_distributed(args.coordinator_address, args.num_processes, args.process_id)
        shown = place.cfg if place else cfg
        length = (f"{shown.time_budget:g} minutes" if shown.time_budget is not None
                  else f"{shown.total_timesteps:,} env steps")  # fmt: skip
        progress.say(f"hm-train: {'resuming' if place else 'starting'} a {shown.algo} run, "
                     f"{length} on {shown.num_envs} envs")  # fmt: skip
        compile_cache.enable_from_args(args)
        result = run(cfg, explicit, place=place, **parts)
    except ValueError as e:
        return fail("hm-train", str(e))
    return 130 if result["interrupted"] else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
