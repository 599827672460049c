"""``hm-train`` and ``hm-eval``: argument parsing and the host training loop.

The host loop calls the jitted chunk of ``log_interval`` updates, then logs (console + wandb) and
checkpoints between chunks: every ``--save-interval`` updates, every ``--save-interval-minutes``,
at the end, and on Ctrl+C. ``--resume`` restores the whole runner state and runs only the
remaining updates, so an interrupted-and-resumed run equals an uninterrupted one bit for bit. It
continues in the resumed checkpoint's own directory (a copied or moved run too), sets a rewound
run's later files aside, and logs to the checkpoint's wandb run only where it was written
(specs/train.md §7).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from hackmatrix_env.argparsing import Parser

from hackmatrix_train import compile_cache
from hackmatrix_train.config import (
    ALGORITHMS,
    NETWORKS,
    RUN_BOOKKEEPING,
    SEARCH_TARGETS,
    TrainConfig,
    apply_recipe,
    describe_plan,
    load_recipe,
    plan,
)

# Flags of hm-train that are not TrainConfig fields (process set-up, not the experiment).
NON_CONFIG_ARGS = (
    frozenset({"distributed", "coordinator_address", "num_processes", "process_id"})
    | frozenset({"recipe", "cpu_devices"})
    | compile_cache.ARG_NAMES
)

# Flags that would name another run directory: refused with --resume (it continues in place).
RESUME_ELSEWHERE = frozenset({"checkpoint_dir", "run_name", "run_suffix"})

# Flags that may differ from the checkpoint's config on --resume (they change no state shape).
RESUME_MUTABLE = RUN_BOOKKEEPING | {
    "total_timesteps", "auto_tune", "final_eval_episodes", "final_eval_seed",
}  # fmt: skip


def parse_count(text: str) -> int:
    """``10M``, ``500k``, ``1e7``, ``1_000_000`` -> int."""
    t = text.strip().lower().replace("_", "").replace(",", "")
    mult = {"k": 10**3, "m": 10**6, "g": 10**9, "b": 10**9}.get(t[-1:], 1)
    if mult != 1:
        t = t[:-1]
    try:
        value = float(t) * mult
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a count: {text!r} (e.g. 10M, 500k, 1e7)") from None
    if value < 0 or not math.isfinite(value) or value != int(value):
        raise argparse.ArgumentTypeError(f"not a whole non-negative count: {text!r}")
    return int(value)


def build_parser() -> argparse.ArgumentParser:
    d = TrainConfig()
    p = Parser(
        prog="hm-train",
        description="Masked-categorical PPO on HackMatrix (PureJaxRL style, whole update jitted). "
        "With no flag it trains the default recipe for a 50-minute budget (specs/train.md §10).",
        argument_default=argparse.SUPPRESS,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    logs = p.add_argument_group("checkpoints and logging")
    knobs = p.add_argument_group(
        "research knobs (advanced)",
        "PPO internals, loss terms and ablations; the default recipe sets them all "
        "(specs/train.md §5, §10)",
    )

    def add(flag, to=p, default_text=None, **kw):
        dest = flag.lstrip("-").replace("-", "_")
        if kw.get("action") not in ("store_true", argparse.BooleanOptionalAction):
            kw.setdefault("type", type(getattr(d, dest)) if getattr(d, dest) is not None else str)
        kw["help"] = kw.get("help", "") + f" (default: {default_text or getattr(d, dest)})"
        to.add_argument(flag, dest=dest, **kw)

    p.add_argument(
        "--recipe",
        metavar="FILE",
        default=None,
        help="a TOML file of settings that replace the defaults, e.g. "
        "experiments/recipes/depth.toml; flags given override it",
    )
    add("--seed")
    add("--num-envs", help="parallel environments")
    add("--num-steps", help="steps per env per rollout")
    length = p.add_mutually_exclusive_group()  # a run has a fixed length or a time budget
    add(
        "--total-timesteps",
        to=length,
        type=parse_count,
        default_text="as many as fit --time-budget",
        help="env steps to train (10M, 5e6, ...); given, it replaces the time budget",
    )
    add(
        "--time-budget",
        to=length,
        type=float,
        help="minutes for compiling and training: time the compiled update, then train as "
        "many steps as fit (the final evaluation follows)",
    )
    add("--auto-tune", action="store_true", help="pick num_envs for the hardware")
    add("--network", choices=NETWORKS, help="mlp (flattened obs) or grid (conv over 6x6 cells)")
    add("--lr", help="Adam learning rate")
    add("--anneal-lr", action=argparse.BooleanOptionalAction, help="linear LR decay to 0")
    add("--ent-coef", help="entropy coefficient (start value when annealed)")
    add("--vf-coef", help="value-loss weight")
    add("--checkpoint-dir", help="root of run directories")
    add("--resume", help="checkpoint file or run directory to continue")
    add(
        "--init-params",
        help="warm start: start from the params of this checkpoint (file, run dir or params "
        "export) with a fresh optimizer, schedules and envs; the network must match",
    )
    add("--no-wandb", action="store_true", help="disable wandb")
    search = p.add_argument_group(
        "search trainer (--algo search; specs/search.md)",
        "Gumbel AlphaZero with the game as model: the search acts, the network learns its "
        "improved policy and lambda-returns",
    )
    add("--algo", to=search, choices=ALGORITHMS, help="ppo, or search")
    add("--search-simulations", to=search, help="simulations per move")
    add(
        "--search-mode",
        to=search,
        choices=("honest", "oracle"),
        help="honest: plan from states re-drawn from the observation; oracle: the true state",
    )
    add("--search-depth", to=search, type=int, default_text="no limit", help="tree depth bound")
    add("--search-gumbel-scale", to=search, help="0: deterministic search")
    add("--search-considered", to=search, help="actions the root's Gumbel-Top-k considers")
    add(
        "--search-target-value-scale",
        to=search,
        type=float,
        default_text="the acting search's, 0.1",
        help="value scale of the improved-policy target (smaller: closer to the network's policy)",
    )
    add(
        "--search-target",
        to=search,
        choices=SEARCH_TARGETS,
        help="the policy target: the search's improved policy (its Q rescaled to [0, 1], or raw: "
        "in the value's units; overrides: learnt only where the search overruled the network's "
        "argmax), or the action it played",
    )
    add(
        "--final-eval-episodes",
        help="greedy episodes from stage 1 evaluated at the end of the run (0 = skip)",
    )

    add("--run-name", to=logs, default_text="derived from the config", help="run name")
    add("--log-interval", to=logs, help="updates per jitted chunk / log line")
    add("--project", to=logs, help="wandb project")
    add("--entity", to=logs, help="wandb entity")
    add("--run-suffix", to=logs, help="appended to the run name")
    add(
        "--rewind",
        to=logs,
        type=int,
        help="with --resume DIR: the latest checkpoint <= this update",
    )
    add("--save-interval", to=logs, type=int, help="also checkpoint every N updates")
    add("--save-interval-minutes", to=logs, help="checkpoint every N minutes")
    add("--keep-checkpoints", to=logs, help="full checkpoints kept per run")
    add(
        "--no-artifact",
        to=logs,
        action="store_true",
        help="do not log the final params as a wandb artifact",
    )

    add(
        "--ent-coef-end",
        to=knobs,
        type=float,
        help="anneal the entropy coefficient linearly to this",
    )
    add("--gamma", to=knobs)
    add("--gae-lambda", to=knobs)
    add("--num-minibatches", to=knobs)
    add("--update-epochs", to=knobs)
    add("--clip-eps", to=knobs)
    add(
        "--vf-clip-eps",
        to=knobs,
        type=float,
        default_text="--clip-eps",
        help="clip range of the value loss around the rollout's value, in return units "
        "(0: no value clipping)",
    )
    add("--max-grad-norm", to=knobs)
    add("--hidden-dim", to=knobs)
    add("--num-layers", to=knobs)
    add(
        "--explore-floor",
        to=knobs,
        help="exploration floor: a loss penalty keeps P(siphon) and P(any program) >= this "
        "wherever they are valid (0 = off; specs/train.md §5)",
    )
    add("--explore-floor-end", to=knobs, type=float, help="anneal the floor linearly to this")
    add(
        "--explore-floor-start",
        to=knobs,
        help="fraction of the run before the floor switches on (then annealed over the rest)",
    )
    add("--explore-coef", to=knobs, help="weight of the exploration-floor penalty")
    add(
        "--explore-floor-ramp",
        to=knobs,
        help="fraction of the run over which the penalty's weight rises from 0 to "
        "--explore-coef after the switch-on (0: at once)",
    )
    add("--reward-scale", to=knobs, help="multiply rewards by this inside the loss")
    add(
        "--program-potential",
        to=knobs,
        help="potential-based shaping inside the loss: phi = this x programs owned (0: off); "
        "returns and evaluations stay the game's reward",
    )
    add(
        "--program-bonus",
        to=knobs,
        help="intrinsic reward inside the loss: this x each program acquired, kept at death "
        "(0: off); returns and evaluations stay the game's reward",
    )
    add(
        "--program-bonus-end",
        to=knobs,
        type=float,
        help="move the program bonus linearly from --program-bonus to this over the run "
        "(unset: constant)",
    )
    add(
        "--program-terms-skip-undo",
        to=knobs,
        action=argparse.BooleanOptionalAction,
        help="the program potential and bonus count every program but UNDO",
    )
    add(
        "--disabled-programs",
        to=knobs,
        type=str,
        nargs="*",
        metavar="NAME",
        help="programs taken out of the agent's action mask in training and evaluation, e.g. "
        "'undo' (an ablation of the agent; the game is unchanged); the flag alone: none",
    )
    add("--max-steps-in-episode", to=knobs, help="truncation limit (EnvParams)")
    add(
        "--history-depth",
        to=knobs,
        help="UNDO snapshots kept (EnvParams.history_depth); raise it for UNDO-heavy "
        "policies, see stats/history_overflow_frac",
    )
    add(
        "--final-eval-seed",
        to=knobs,
        help="key of the end-of-run evaluation (fixed: runs compare)",
    )
    p.add_argument(
        "--cpu-devices",
        type=int,
        default=None,
        help="on CPU, JAX devices to split envs and minibatches over (default: one per usable "
        "core; 1 = a single device)",
    )
    p.add_argument(
        "--distributed",
        action="store_true",
        default=False,
        help="multi-host: call jax.distributed.initialize() first; SLURM / Open MPI set the "
        "process layout, else the three flags below do (specs/train.md §6)",
    )
    p.add_argument(
        "--coordinator-address",
        default=None,
        metavar="HOST:PORT",
        help="with --distributed: process 0's address, the same for every process "
        "(default: $JAX_COORDINATOR_ADDRESS or the cluster's)",
    )
    p.add_argument(
        "--num-processes",
        type=int,
        default=None,
        help="with --distributed: how many processes train (default: the cluster's)",
    )
    p.add_argument(
        "--process-id",
        type=int,
        default=None,
        help="with --distributed: this process's index, 0..N-1; 0 writes every file "
        "(default: the cluster's)",
    )
    compile_cache.add_arguments(logs)
    return p


def default_run_name(cfg: TrainConfig) -> str:
    """``{algo}-{network}-{envs}x{steps}-s{seed}[-suffix]``, or ``--run-name``."""
    name = cfg.run_name or f"{cfg.algo}-{cfg.network}-{cfg.num_envs}x{cfg.num_steps}-s{cfg.seed}"
    return name + (f"-{cfg.run_suffix}" if cfg.run_suffix else "")


def config_from_args(args: argparse.Namespace) -> tuple[TrainConfig, frozenset[str]]:
    """The config of the given flags over ``--recipe`` (if any) over the defaults; ``explicit``
    names the flags given. An unreadable or invalid recipe exits with the reason."""
    ns = {k: v for k, v in vars(args).items() if k not in NON_CONFIG_ARGS}
    explicit = frozenset(ns)
    if "disabled_programs" in ns:
        ns["disabled_programs"] = tuple(ns["disabled_programs"])
    recipe = {}
    if getattr(args, "recipe", None) is not None:
        try:
            recipe = load_recipe(args.recipe)
        except ValueError as e:
            raise SystemExit(f"error: {e}") from None
    return apply_recipe(TrainConfig(**ns), recipe, explicit), explicit


def _merge_resume(saved: TrainConfig, given: TrainConfig, explicit: frozenset[str]) -> TrainConfig:
    bad = [
        k for k in explicit - RESUME_MUTABLE if getattr(given, k) != getattr(saved, k)
    ]  # fmt: skip
    if bad:
        raise SystemExit(
            "error: --resume keeps the run's configuration; these flags differ from the "
            f"checkpoint: {', '.join('--' + b.replace('_', '-') for b in sorted(bad))}"
        )
    return saved.replace(**{k: getattr(given, k) for k in explicit & RESUME_MUTABLE})


def warm_start(trainer, runner, path: str):
    """``runner`` with the params of checkpoint ``path`` and an optimizer state fresh for them.

    A missing, corrupt or mismatched checkpoint (other network, sizes) exits with the reason.
    """
    from hackmatrix_train import checkpoint as ckpt

    try:
        params, _ = ckpt.load_params(path, trainer.abstract_runner().params)
    except (ckpt.CheckpointError, OSError, ValueError, KeyError) as e:
        raise SystemExit(f"error: cannot load --init-params: {e}") from None
    return trainer.with_params(runner, params)


@dataclass
class RunPlace:
    """Where a run's state comes from and where it goes: a new run, or a checkpoint's."""

    cfg: TrainConfig
    run_name: str
    run_dir: Path
    resume_path: Path | None = None  # the checkpoint continued, None for a new run
    meta: dict = field(default_factory=dict)  # its metadata ({} for a new run)


def run(cfg: TrainConfig, explicit=frozenset(), env=None, env_params=None, out=print) -> dict:
    """Train (or resume) with ``cfg``; returns a summary dict. ``env`` defaults to HackMatrix.

    The steps: resume or plan the run, build the trainer, restore or initialise its state,
    compile (and fit ``--time-budget``), the loop of chunks, the last save, the final
    evaluation.
    """
    import jax

    from hackmatrix_train.logging import Clock, ProgressCSV, WandbLogger
    from hackmatrix_train.trainer import make_train

    t_start = time.monotonic()
    place = resume_or_plan(cfg, explicit, jax.devices())
    cfg = place.cfg
    try:
        trainer = make_train(cfg, env, env_params)
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    out(describe_plan(cfg, trainer.num_devices))
    out(f"run {place.run_name}: checkpoints in {place.run_dir}")
    runner, meta = start_runner(trainer, cfg, place, out)
    resumed = place.resume_path is not None

    cfg, compile_s = compile_run(trainer, runner, cfg, t_start, resumed, out)
    update = int(jax.device_get(runner.update))
    out(f"compiled in {compile_s:.1f}s; training {trainer.num_updates - update} updates")

    config_dict = cfg.to_dict()
    logger = WandbLogger(
        enabled=not cfg.no_wandb and jax.process_index() == 0,
        project=cfg.project,
        entity=cfg.entity,
        name=place.run_name,
        config=config_dict,
        run_id=wandb_run_id(meta, place.run_dir),
    )
    progress = None
    if jax.process_index() == 0:
        progress = ProgressCSV(place.run_dir, update if resumed else None)
    clock = Clock()
    save = make_save(trainer, cfg, config_dict, place, meta, logger, clock, out)
    runner, update, metrics, last_saved_update, interrupted = train_loop(
        trainer, runner, cfg, update, save, logger, progress, clock, out,
        last_saved_update=update if resumed else -1,
    )  # fmt: skip

    final_eval = end_run(
        trainer, runner, cfg, place, update, last_saved_update, interrupted, save, logger, out
    )
    return {
        "run_dir": str(place.run_dir),
        "update": update,
        "env_steps": update * cfg.batch_size,
        "compile_seconds": compile_s,
        "train_seconds": clock.train_seconds,
        "steps_per_second": clock.steps / clock.train_seconds if clock.train_seconds else math.nan,
        "metrics": metrics,
        "interrupted": interrupted,
        "final_eval": final_eval,
        "runner": runner,
        "config": cfg,
    }


def resume_or_plan(cfg: TrainConfig, explicit, devices) -> RunPlace:
    """The run's config and directory: the checkpoint's on ``--resume``, else ``plan``'s.

    A refused flag or an unreadable checkpoint exits with the reason.
    """
    from hackmatrix_train import checkpoint as ckpt

    if cfg.rewind is not None and cfg.resume is None:
        raise SystemExit("error: --rewind needs --resume RUN_DIR")
    if cfg.resume is not None and explicit & RESUME_ELSEWHERE:
        flags = ", ".join("--" + f.replace("_", "-") for f in sorted(explicit & RESUME_ELSEWHERE))
        raise SystemExit(
            f"error: --resume continues in the run's own directory; {flags} cannot move it "
            "(copy the run directory and resume the copy)"
        )
    if cfg.resume is None:
        cfg = plan(cfg, explicit, len(devices), devices[0].platform)
        run_name = default_run_name(cfg)
        return RunPlace(cfg, run_name, Path(cfg.checkpoint_dir) / run_name)
    try:
        resume_path = ckpt.resolve_checkpoint(cfg.resume, cfg.rewind)
        meta = ckpt.read_meta(resume_path)
        saved = TrainConfig.from_dict(meta["config"])
    except (ckpt.CheckpointError, ValueError, KeyError) as e:
        raise SystemExit(f"error: cannot resume: {e}") from None
    cfg = _merge_resume(saved, cfg, explicit)
    run_name = meta.get("run_name") or default_run_name(cfg)
    # the run continues where its checkpoint lies (a copied or moved run too), only there
    run_dir = resume_path.parent
    cfg = cfg.replace(checkpoint_dir=str(run_dir.parent))
    return RunPlace(cfg, run_name, run_dir, resume_path, meta)


def start_runner(trainer, cfg: TrainConfig, place: RunPlace, out=print):
    """``(runner, meta)``: the checkpoint's state placed on the mesh, or a fresh (or warm-started)
    one. On resume, what a rewound run wrote after its checkpoint is set aside."""
    import jax

    from hackmatrix_train import checkpoint as ckpt

    if place.resume_path is None:
        runner = trainer.init()
        if cfg.init_params is not None:
            runner = warm_start(trainer, runner, cfg.init_params)
            out(f"params initialised from {cfg.init_params}")
        return runner, place.meta
    try:
        host, meta = ckpt.load_checkpoint(place.resume_path, trainer.abstract_runner())
    except ckpt.CheckpointError as e:
        raise SystemExit(f"error: cannot resume: {e}") from None
    runner = trainer.place(host)
    out(f"resumed from {place.resume_path} at update {meta['update']}")
    if meta.get("wandb_id") and wandb_run_id(meta, place.run_dir) is None:
        out(
            f"wandb: {place.run_dir} is not where this checkpoint was written (a copy or a "
            f"move): it logs to a new wandb run, not to {meta['wandb_id']}"
        )
    if jax.process_index() == 0:
        ckpt.remove_temp_files(place.run_dir)
        aside = ckpt.set_aside_later(place.run_dir, int(meta["update"]))
        if aside is not None:
            out(f"rewind: what the run wrote after update {meta['update']} is kept in {aside}")
    return runner, meta


def wandb_run_id(meta: dict, run_dir: Path) -> str | None:
    """The wandb run a resumed run logs to: the checkpoint's, if ``run_dir`` is where it was
    written; ``None`` (a new wandb run) for a new run and for a copied or moved run directory.

    A copy is another run from the update it resumes: it would interleave its metrics with the
    original's (which may go on too) under the same run id. A checkpoint records the absolute
    run directory it was written in (``run_dir``); one from before that field is taken to lie in
    ``checkpoint_dir / run_name`` of its config.
    """
    saved = meta.get("wandb_id")
    if not saved:
        return None
    written = meta.get("run_dir")
    if written is None:
        config = meta.get("config") or {}
        if not config.get("checkpoint_dir") or not meta.get("run_name"):
            return None
        written = Path(config["checkpoint_dir"]) / meta["run_name"]
    run_dir, written = Path(run_dir), Path(written)
    try:
        same = os.path.samefile(run_dir, written)
    except OSError:  # the original is gone (a move) or unreadable
        same = run_dir.resolve() == written.resolve()
    return saved if same else None


def make_save(trainer, cfg: TrainConfig, config_dict, place: RunPlace, meta, logger, clock,
              out=print):  # fmt: skip
    """``save(runner, why) -> path``: a full checkpoint whose metadata carries the run's
    bookkeeping (name, env steps, devices, wandb id, training seconds over every resume)."""
    import jax

    from hackmatrix_train import checkpoint as ckpt

    def save(r, why: str) -> Path:
        u = int(jax.device_get(r.update))
        m = {
            "run_name": place.run_name,
            "run_dir": str(place.run_dir.resolve()),  # where it was written (wandb_run_id)
            "env_steps": u * cfg.batch_size,
            "num_devices": trainer.num_devices,
            "wandb_id": logger.id,
            "reason": why,
            # training wall time so far, over every process that trained this run (resumes)
            "train_seconds": float(meta.get("train_seconds", 0.0)) + clock.train_seconds,
            "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "jax_version": jax.__version__,
        }
        path = ckpt.save_checkpoint(place.run_dir, r, config_dict, m, keep=cfg.keep_checkpoints)
        out(f"checkpoint ({why}) update {u}: {path}")
        return path

    return save


class Trained(NamedTuple):
    """Where ``train_loop`` stopped."""

    runner: Any
    update: int
    metrics: dict  # the last chunk's, {} if none ran
    last_saved_update: int
    interrupted: bool  # by Ctrl+C


def train_loop(trainer, runner, cfg: TrainConfig, update: int, save, logger, progress, clock,
               out=print, last_saved_update: int = -1) -> Trained:  # fmt: skip
    """Chunks of ``--log-interval`` updates up to the run's length, each logged; a checkpoint
    every ``--save-interval`` updates and ``--save-interval-minutes``. Ctrl+C stops it after
    the last completed chunk."""
    import jax
    import numpy as np

    from hackmatrix_train.logging import format_progress

    batch = cfg.batch_size
    num_updates = trainer.num_updates
    last_save_t = time.monotonic()
    metrics: dict = {}
    interrupted = False
    first_chunk = True
    try:
        while update < num_updates:
            n = min(cfg.log_interval, num_updates - update)
            if cfg.save_interval:
                n = min(n, cfg.save_interval - update % cfg.save_interval)
            clock.start()
            new_runner, m = trainer.run_chunk(runner, n)
            m = jax.device_get(m)
            sps = clock.stop(n * batch)
            runner, update = new_runner, update + n
            metrics = {k: float(np.asarray(v)) for k, v in m.items()}
            metrics["train/steps_per_second"] = sps
            metrics["train/env_steps"] = float(update * batch)
            eta = clock.eta((num_updates - update) * batch)
            if first_chunk:
                out(describe_budget(num_updates * batch, update * batch, sps, eta))
                first_chunk = False
            out(format_progress(update, num_updates, update * batch, sps, eta, metrics))
            logger.log(metrics, step=update * batch)
            if progress is not None:
                progress.log(update, update * batch, metrics)
            due_updates = bool(cfg.save_interval) and update % cfg.save_interval == 0
            # process 0's clock decides for all: a save gathers the state across processes
            due_time = agree(time.monotonic() - last_save_t >= cfg.save_interval_minutes * 60)
            if (due_updates or due_time) and update < num_updates:
                save(runner, "interval" if due_updates else "timer")
                last_save_t, last_saved_update = time.monotonic(), update
    except KeyboardInterrupt:
        interrupted = True
        if jax.process_count() > 1:  # the others may be inside a chunk: no gather can be safe
            out("interrupted: a multi-process run resumes from its last saved checkpoint")
        else:
            out("interrupted: saving the last completed update ...")
    return Trained(runner, update, metrics, last_saved_update, interrupted)


def compile_run(trainer, runner, cfg: TrainConfig, t_start: float, resumed: bool, out=print):
    """``(cfg, compile seconds)``: the chunk compiled ahead of time; a new run with
    ``--time-budget`` then gets the length that fits (``plan_time_budget``)."""
    out("compiling ...")
    t0 = time.perf_counter()
    trainer.compile(runner)
    compile_s = time.perf_counter() - t0
    if cfg.time_budget is not None and not resumed:
        cfg = plan_time_budget(trainer, runner, time.monotonic() - t_start, out)
    return cfg, compile_s


def end_run(
    trainer, runner, cfg: TrainConfig, place: RunPlace, update: int, last_saved_update: int,
    interrupted: bool, save, logger, out=print,
) -> dict | None:  # fmt: skip
    """The last checkpoint, the params artifact and the final evaluation (its summary, or None).

    An interrupted multi-process run saves nothing (another process may be inside a chunk);
    only a run that reached its length is evaluated.
    """
    import jax

    path = None
    if update != last_saved_update and not (interrupted and jax.process_count() > 1):
        path = save(runner, "interrupt" if interrupted else "final")
    if path is not None and not interrupted and not cfg.no_artifact:
        logger.log_artifact(str(place.run_dir / "params.msgpack"), f"{place.run_name}-params")
    final_eval = None
    if not interrupted and update == trainer.num_updates and cfg.final_eval_episodes > 0:
        final_eval = final_evaluation(trainer, runner.params, cfg, place.run_dir, out)
        logger.log(
            {f"final_eval/{k}": v for k, v in final_eval.items() if isinstance(v, int | float)},
            step=update * cfg.batch_size,
        )
    logger.finish()
    return final_eval


def agree(value: int) -> int:
    """Process 0's ``value`` on every process: a host decision that gates a collective.

    A multi-host run must take such decisions (the time budget's length, a timer's save)
    together, or one process waits in a gather the others never start.
    """
    import jax

    if jax.process_count() == 1:
        return value
    import numpy as np
    from jax.experimental import multihost_utils

    return int(multihost_utils.broadcast_one_to_all(np.int32(value)))


PROBE_UPDATES = 10  # updates timed by --time-budget's probe (at most --log-interval)


def budget_updates(budget_s: float, elapsed_s: float, steps_per_second: float, batch: int) -> int:
    """Updates of ``batch`` env steps that fit the seconds left of the budget (at least one)."""
    left = max(budget_s - elapsed_s, 0.0)
    return max(1, int(left * steps_per_second // batch))


def plan_time_budget(trainer, runner, elapsed_s: float, out=print) -> TrainConfig:
    """Fix the run's length so that compiling and training fit ``--time-budget`` minutes.

    A probe times the compiled chunk from ``runner`` and its result is dropped: the run still
    starts from ``runner``, so a budgeted run equals the fixed-length run of its planned length
    (same seed, same trajectory), and its checkpoints record that length for ``--resume``. The
    schedules are data of the compiled chunk (``ppo.Schedule``), so nothing compiles again.
    Returns the trainer's config with ``total_timesteps`` set to the planned length.
    """
    import jax

    cfg = trainer.cfg
    t0 = time.perf_counter()
    jax.block_until_ready(trainer.run_chunk(runner, 1))  # the first dispatch is not timed
    probe = min(cfg.log_interval, PROBE_UPDATES)  # validate: log_interval >= 1
    t1 = time.perf_counter()
    jax.block_until_ready(trainer.run_chunk(runner, probe))
    sps = probe * cfg.batch_size / (time.perf_counter() - t1)
    elapsed_s += time.perf_counter() - t0
    # process 0's measurement sets every process's length (multi-host: one run, one length)
    updates = agree(budget_updates(cfg.time_budget * 60.0, elapsed_s, sps, cfg.batch_size))
    trainer.set_num_updates(updates)
    line = (
        f"time budget {cfg.time_budget:g} min: {sps:,.0f} steps/s over a {probe}-update probe, "
        f"{elapsed_s:.0f} s spent: {updates} updates = {updates * cfg.batch_size:,} env steps"
    )
    out(line)
    return trainer.cfg.replace(notes=(*trainer.cfg.notes, line))


def describe_budget(total_steps: int, done_steps: int, sps: float, eta_s: float) -> str:
    """The plan's budget line once the first chunk has measured the speed."""
    end = time.strftime("%H:%M", time.localtime(time.time() + eta_s)) if eta_s == eta_s else "?"
    return (
        f"budget: {total_steps:,} env steps; {done_steps:,} done at {sps:,.0f} steps/s: "
        f"about {eta_s / 60:.0f} min more (ETA {end}), then the final evaluation"
    )


def final_evaluation(trainer, params, cfg: TrainConfig, run_dir: Path, out=print) -> dict:
    """Greedy episodes from stage 1 with a fixed key: printed, written to ``eval_final.json``.

    Every run ends with this evaluation (``--final-eval-episodes``, ``--final-eval-seed``), so
    runs compare on the canonical return of the real game: stage 1, no shaping (the trainer's
    extra loss terms never enter an evaluation).
    """
    import jax

    from hackmatrix_train.evaluate import evaluate_params, format_table

    env, env_params = trainer.env, trainer.env_params
    if hasattr(env_params, "start_stage"):  # an injected EnvParams may start elsewhere
        env_params = env_params.replace(start_stage=1)
    out(f"final evaluation: {cfg.final_eval_episodes} greedy episodes from stage 1 ...")
    summary = evaluate_params(
        env, env_params, trainer.network.apply, jax.device_get(params), cfg.final_eval_episodes,
        cfg.final_eval_seed, greedy=True, program_names=trainer.program_names,
    )  # fmt: skip
    summary["env_steps"] = cfg.num_updates * cfg.batch_size
    summary["disabled_programs"] = list(cfg.disabled_programs)
    out(format_table(summary, f"final evaluation ({summary['episodes']} greedy episodes)"))
    if cfg.algo == "search":  # the search trainer's policy is evaluated with its search too
        from hackmatrix_train.alphazero import search_config
        from hackmatrix_train.evaluate import search_summary

        row = search_summary(
            env, env_params, trainer.network.apply, jax.device_get(params), search_config(cfg),
            cfg.final_eval_episodes, cfg.final_eval_seed, trainer.program_names,
        )  # fmt: skip
        summary["search"] = [row]
        title = f"final evaluation with search ({cfg.search_simulations} simulations, "
        out(format_table(row, title + f"{cfg.search_mode})"))
    if jax.process_index() == 0:  # every process evaluates the same params; one writes
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "eval_final.json").write_text(json.dumps(summary, indent=1))
        out(f"wrote {run_dir / 'eval_final.json'}")
    return summary


def cpu_device_count(cfg: TrainConfig, cores: int) -> int:
    """The most CPU devices, at most ``cores``, that split the envs and minibatches evenly."""
    for n in range(max(cores, 1), 0, -1):
        if cfg.num_envs % n == 0 and (cfg.batch_size // n) % cfg.num_minibatches == 0:
            return n
    return 1


def set_cpu_devices(args: argparse.Namespace, cfg: TrainConfig, explicit=frozenset(),
                    saved_devices: int | None = None) -> None:  # fmt: skip
    """One JAX device per CPU core (``--cpu-devices`` overrides), before any backend starts.

    Multi-host runs (``--distributed``) keep JAX's own devices, one per process on CPU, unless
    ``--cpu-devices`` is given (specs/train.md §6). A resumed run keeps the device count of its
    checkpoint (``saved_devices``). A batch that does not divide over the devices asked for
    (``--cpu-devices``, or the cores when ``--num-envs``, ``--num-steps`` or
    ``--num-minibatches`` is given) is a ``ValueError`` naming both numbers and the fix, never a
    quiet fallback; the default batch on an odd core count falls back with a printed note.
    """
    if args.distributed and args.cpu_devices is None:
        return
    from hackmatrix_env.devices import usable_cores, use_cpu_cores

    wanted = args.cpu_devices or saved_devices
    if wanted is not None:
        if wanted < 1:
            raise ValueError(f"--cpu-devices must be >= 1, got {wanted}")
        if cpu_device_count(cfg, wanted) != wanted:
            raise ValueError(_indivisible(cfg, wanted))
        use_cpu_cores(wanted)
        return
    cores = usable_cores()
    n = cpu_device_count(cfg, cores)
    if n < cores:
        if explicit & {"num_envs", "num_steps", "num_minibatches"}:
            raise ValueError(_indivisible(cfg, cores))
        print(f"note: {_indivisible(cfg, cores).split(':')[0]}; training on {n} device(s)")
    use_cpu_cores(n)


def _indivisible(cfg: TrainConfig, n: int) -> str:
    fewer = cpu_device_count(cfg, n)
    envs = -(-cfg.num_envs // n) * n
    return (
        f"--num-envs {cfg.num_envs} x --num-steps {cfg.num_steps} in {cfg.num_minibatches} "
        f"minibatches does not divide over {n} CPU devices: give --num-envs a multiple of {n} "
        f"(e.g. {envs}) with minibatches that divide each device's share, or --cpu-devices "
        f"{fewer}"
    )


def check_train_args(cfg: TrainConfig, explicit) -> tuple[TrainConfig, int | None]:
    """Host checks of hm-train's flags before JAX starts: ``(config, saved device count)``.

    A ``ValueError`` for a path that does not exist, flags that conflict, or a checkpoint that
    cannot be read; on ``--resume`` the config is the checkpoint's (it fixes the device count).
    """
    from hackmatrix_env.argparsing import missing

    from hackmatrix_train import checkpoint as ckpt

    if cfg.rewind is not None and cfg.resume is None:
        raise ValueError("--rewind needs --resume RUN_DIR")
    for path in (cfg.resume, cfg.init_params):
        if path is not None and not Path(path).exists():
            raise ValueError(missing(path))
    if cfg.resume is None:
        return cfg, None
    if cfg.init_params is not None and "init_params" in explicit:
        raise ValueError("--init-params starts a new run; --resume continues one: give one")
    if explicit & RESUME_ELSEWHERE:
        flags = ", ".join("--" + f.replace("_", "-") for f in sorted(explicit & RESUME_ELSEWHERE))
        raise ValueError(
            f"--resume continues in the run's own directory; {flags} cannot move it "
            "(copy the run directory and resume the copy)"
        )
    try:
        meta = ckpt.read_meta(ckpt.resolve_checkpoint(cfg.resume, cfg.rewind))
        saved = TrainConfig.from_dict(meta["config"])
    except (ckpt.CheckpointError, ValueError, KeyError) as e:
        raise ValueError(f"cannot resume: {e}") from None
    return saved, meta.get("num_devices")


def init_distributed(args: argparse.Namespace) -> None:
    """``jax.distributed.initialize`` with the flags given; the cluster (SLURM, ...) fills the rest.

    On CPU the processes exchange gradients over gloo (``jax_cpu_collectives_implementation``,
    JAX 0.10's default; set here when unset, since a CPU cluster without cross-process
    collectives cannot run the chunk).
    """
    import jax

    if args.num_processes is not None and args.num_processes < 1:
        raise SystemExit(f"error: --num-processes must be >= 1, got {args.num_processes}")
    if jax.config.jax_cpu_collectives_implementation is None:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=args.coordinator_address,
        num_processes=args.num_processes,
        process_id=args.process_id,
    )


def train_main(argv=None) -> int:
    from hackmatrix_env.argparsing import fail

    args = build_parser().parse_args(argv)
    cfg, explicit = config_from_args(args)
    try:
        device_cfg, saved_devices = check_train_args(cfg, explicit)
        set_cpu_devices(args, device_cfg, explicit, saved_devices)
    except ValueError as e:
        return fail("hm-train", str(e))
    if args.distributed:
        init_distributed(args)
    compile_cache.enable_from_args(args)
    try:
        result = run(cfg, explicit)
    except SystemExit as e:  # run's refusals: one line, exit status 2
        if not isinstance(e.code, str):
            raise
        return fail("hm-train", e.code.removeprefix("error: "))
    return 130 if result["interrupted"] else 0


# ---- hm-eval --------------------------------------------------------------------------------
def build_eval_parser() -> argparse.ArgumentParser:
    p = Parser(prog="hm-eval", description="Evaluate a HackMatrix policy.")
    p.add_argument("checkpoint", help="params.msgpack, ckpt_*.msgpack or a run directory")
    p.add_argument("--episodes", type=int, default=100)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--greedy", dest="greedy", action="store_true", default=True)
    mode.add_argument("--sampled", dest="greedy", action="store_false")
    p.add_argument("--random", action="store_true", help="ignore the params: uniform masked policy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--start-stage", type=int, default=1, help="evaluate from this stage (1 = the real game)"
    )
    p.add_argument("--max-steps-in-episode", type=int, default=None)
    p.add_argument("--json", default=None, help="write the summary JSON here ('-' = stdout)")
    p.add_argument(
        "--replay", default=None,
        help="write an HTML replay of the first 20 episodes here (with --search: the first "
        "search row's)",
    )  # fmt: skip
    s = p.add_argument_group("search (planning with the game as model; specs/search.md)")
    s.add_argument(
        "--search", type=int, nargs="+", default=(), metavar="N",
        help="also evaluate Gumbel search with N simulations per move (one row per N)",
    )  # fmt: skip
    s.add_argument(
        "--search-mode", choices=("honest", "oracle", "both"), default="honest",
        help="honest: plan from states re-drawn from the observation (default); oracle: from "
        "the true state; both: a row for each",
    )  # fmt: skip
    s.add_argument("--search-depth", type=int, default=None, help="maximum tree depth")
    s.add_argument(
        "--determinizations", type=int, default=None, metavar="K",
        help="honest mode: K searches from independent re-draws of the hidden parts, N/K "
        "simulations each, improved policies averaged (default: one per 8 simulations)",
    )  # fmt: skip
    s.add_argument(
        "--track-cryptogs", action=argparse.BooleanOptionalAction, default=None,
        help="honest mode: draw the unseen cryptogs where the game's history so far leaves them "
        "possible, not on any dark cell (default: SearchConfig's)",
    )  # fmt: skip
    s.add_argument("--gumbel-scale", type=float, default=1.0, help="0: deterministic search")
    s.add_argument(
        "--search-considered", type=int, default=None, metavar="M",
        help="actions the root's Gumbel-Top-k considers, sequential halving among them "
        "(default: SearchConfig's, 2)",
    )  # fmt: skip
    s.add_argument(
        "--search-value-scale", type=float, default=None, metavar="C",
        help="weight of the root's rescaled Q values in the improved policy (mctx's value_scale; "
        "default: SearchConfig's, 0.1)",
    )  # fmt: skip
    s.add_argument(
        "--search-selection", choices=("gumbel", "improved"), default="gumbel",
        help="play mctx's Gumbel action or the argmax of the improved policy",
    )  # fmt: skip
    s.add_argument(
        "--search-chance", choices=("sampled", "common"), default=None,
        help="the game's draws in the tree: sampled per simulation, or common to a node's "
        "children (default: SearchConfig's)",
    )  # fmt: skip
    compile_cache.add_arguments(p)
    return p


def search_settings(args: argparse.Namespace) -> list[dict]:
    """The ``--search`` rows asked for: one dict of ``SearchConfig`` overrides each."""
    if any(n < 1 for n in args.search):
        raise ValueError(f"--search: simulation counts must be >= 1, got {list(args.search)}")
    if args.search and args.random:
        raise ValueError(
            "--search plans with the policy's network; it cannot be used with --random"
        )
    if args.search and not args.greedy:
        raise ValueError("--search replaces the policy's own choice; drop --sampled")
    if args.track_cryptogs is not None and (not args.search or args.search_mode == "oracle"):
        raise ValueError("--track-cryptogs sets the honest search's re-draws: give --search N "
                         "with --search-mode honest or both")  # fmt: skip
    modes = ("honest", "oracle") if args.search_mode == "both" else (args.search_mode,)
    return [
        dict(
            num_simulations=n,
            mode=m,
            max_depth=args.search_depth,
            gumbel_scale=args.gumbel_scale,
            max_num_considered_actions=args.search_considered,
            value_scale=args.search_value_scale,
            selection=args.search_selection,
            chance=args.search_chance,
            determinizations=args.determinizations if m == "honest" else None,
            track_cryptogs=args.track_cryptogs if m == "honest" else None,
        )
        for n in args.search
        for m in modes
    ]


def evaluate_checkpoint(
    path, episodes=100, greedy=True, seed=0, start_stage=1, max_steps=None, random=False,
    env=None, env_params=None, wrap_network=None, search=(),
) -> dict:  # fmt: skip
    """Evaluate a saved policy (or the random masked policy) from ``start_stage``; the summary.

    ``wrap_network(net) -> net`` lets diagnostics alter the loaded policy (e.g. shift logits,
    ``benchmarks/siphon_bias.py``); the parameters are loaded into the unwrapped network's shapes.
    """
    import jax

    from hackmatrix_train import checkpoint as ckpt
    from hackmatrix_train.evaluate import make_evaluate, summarize
    from hackmatrix_train.network import make_network
    from hackmatrix_train.watch import check_env_args

    if episodes < 1:
        raise ValueError("--episodes must be >= 1")
    if random and not greedy:  # the same refusal as hm-watch's
        raise ValueError("--sampled chooses the checkpoint's actions; --random has none")
    check_env_args(start_stage, max_steps)
    flat, meta = ckpt.load_params(path)
    cfg = TrainConfig.from_dict(meta["config"])
    if max_steps is not None:
        cfg = cfg.replace(max_steps_in_episode=max_steps)
    program_names = ()
    # the policy sees the mask it trained with; the random baseline, and an injected env, theirs
    disabled = [] if random or env is not None else list(cfg.disabled_programs)
    if env is None:
        from hackmatrix_env import EnvParams, HackMatrix
        from hackmatrix_env.constants import PROGRAM_NAMES

        from hackmatrix_train.trainer import make_env

        env, program_names = (HackMatrix() if random else make_env(cfg)), PROGRAM_NAMES
        env_params = EnvParams(
            max_steps_in_episode=cfg.max_steps_in_episode,
            start_stage=start_stage,
            history_depth=cfg.history_depth,
        )
    elif env_params is None:
        env_params = env.default_params
    obs, _ = jax.eval_shape(env.reset, jax.random.key(0), env_params)
    num_actions = obs.action_mask.shape[-1]
    net = make_network(cfg.network, num_actions, cfg.hidden_dim, cfg.num_layers)
    one = jax.tree.map(lambda s: jax.ShapeDtypeStruct((1, *s.shape), s.dtype), obs)
    template = jax.eval_shape(net.init, jax.random.key(0), one)
    params = ckpt.unflatten_state(flat, template, source=str(path))
    if wrap_network is not None:
        net = wrap_network(net)
    evaluate = make_evaluate(
        env, env_params, None if random else net.apply, episodes,
        int(env_params.max_steps_in_episode), greedy,
    )  # fmt: skip
    result = evaluate(params, jax.random.key(seed))
    summary = summarize(jax.device_get(result), program_names)
    summary["policy"] = "random" if random else ("greedy" if greedy else "sampled")
    summary["checkpoint"] = str(path)
    summary["update"] = meta.get("update")
    summary["env_steps"] = meta.get("env_steps")
    summary["start_stage"] = start_stage
    summary["eval_seed"] = seed
    summary["disabled_programs"] = disabled
    if search:
        from hackmatrix_train.evaluate import search_summary
        from hackmatrix_train.search import search_config_from_train

        summary["search"] = []
        for overrides in search:
            row = search_summary(
                env, env_params, net.apply, params, search_config_from_train(cfg, **overrides),
                episodes, seed, program_names,
            )  # fmt: skip
            row["disabled_programs"] = disabled
            summary["search"].append(row)
    return summary


def eval_main(argv=None) -> int:
    from hackmatrix_env.argparsing import fail

    from hackmatrix_train import checkpoint as ckpt
    from hackmatrix_train.evaluate import format_table

    args = build_eval_parser().parse_args(argv)
    compile_cache.enable_from_args(args)
    try:
        summary = evaluate_checkpoint(
            args.checkpoint, args.episodes, args.greedy, args.seed, args.start_stage,
            args.max_steps_in_episode, args.random, search=search_settings(args),
        )  # fmt: skip
    except (ckpt.CheckpointError, ValueError) as e:
        return fail("hm-eval", str(e))
    print(format_table(summary, f"hm-eval {args.checkpoint} ({summary['policy']})"))
    for row in summary.get("search", ()):
        cfg = row["search"]
        print()
        print(format_table(row, f"search: {cfg['num_simulations']} simulations, {cfg['mode']}"))
        print(
            f"time: {row['seconds_per_decision'] * 1e3:.2f} ms per decision "
            f"({row['decisions']} decisions in {row['seconds']:.1f} s, compiled in "
            f"{row['compile_seconds']:.1f} s)"
        )
    if args.json:
        text = json.dumps(summary, indent=1)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(text)
    if args.replay:
        from hackmatrix_train.watch import write_eval_replay

        first = (search_settings(args) or [None])[0]  # the first search row, if any
        print(f"wrote {write_eval_replay(args.replay, args.checkpoint, args.episodes, args.greedy, args.seed, args.start_stage, args.max_steps_in_episode, args.random, first)}")  # fmt: skip
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(train_main())
