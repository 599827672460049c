"""A training run on the host: where it lives, the loop of jitted chunks, the end.

``run(cfg)`` is ``hm-train`` as a library call. Its steps: ``locate_run`` (a new run's directory,
or on ``--resume`` the checkpoint's own, with its config: the one place resume is decided),
``make_train``, the runner's state (restored, warm-started or fresh), the compile (and
``--time-budget``'s planned length, ``plan_time_budget``), ``train_chunks`` (chunks of
``--log-interval`` updates with a per-chunk callback: console, wandb, ``progress.csv``,
checkpoints every ``--save-interval`` updates and ``--save-interval-minutes``), then the last
save and the final evaluation. Ctrl+C stops after the last completed chunk and saves it. A
resumed run equals an uninterrupted one bit for bit; it continues in the checkpoint's own
directory and logs to its wandb run only where it was written (specs/train.md §7).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from hackmatrix_train.config import RUN_BOOKKEEPING, TrainConfig, describe_plan, plan
from hackmatrix_train.distributed import agree

# Flags that would name another run directory: refused with --resume (it continues in place).
RESUME_ELSEWHERE = frozenset({"checkpoint_dir", "run_name", "run_suffix"})
# Flags that may differ from the checkpoint's config on --resume (they change no state shape).
RESUME_MUTABLE = RUN_BOOKKEEPING | {
    "total_timesteps", "auto_tune", "final_eval_episodes", "final_eval_seed",
}  # fmt: skip
PROBE_UPDATES = 10  # updates timed by --time-budget's probe (at most --log-interval)


def default_run_name(cfg: TrainConfig) -> str:
    """``{ppo|guided}-{network}[-resN]-{envs}x{steps}-s{seed}[-suffix]``, or ``--run-name``."""
    kind = "guided" if cfg.guide_kl > 0 else "ppo"
    network = cfg.network + (f"-res{cfg.res_blocks}" if cfg.res_blocks else "")
    name = cfg.run_name or f"{kind}-{network}-{cfg.num_envs}x{cfg.num_steps}-s{cfg.seed}"
    return name + (f"-{cfg.run_suffix}" if cfg.run_suffix else "")


@dataclass
class RunPlace:
    """Where a run's state comes from and where it goes: a new run, or a checkpoint's."""

    cfg: TrainConfig
    run_name: str
    run_dir: Path
    resume_path: Path | None = None  # the checkpoint continued, None for a new run
    meta: dict = field(default_factory=dict)  # its metadata ({} for a new run)


def merge_resume(saved: TrainConfig, given: TrainConfig, explicit: frozenset[str]) -> TrainConfig:
    """The checkpoint's config with the flags ``RESUME_MUTABLE`` lets a resume change; a
    ``ValueError`` naming any other flag given with another value."""
    bad = [k for k in explicit - RESUME_MUTABLE if given.setting(k) != saved.setting(k)]
    if bad:
        raise ValueError(
            "--resume keeps the run's configuration; these flags differ from the "
            f"checkpoint: {', '.join('--' + b.replace('_', '-') for b in sorted(bad))}"
        )
    return saved.replace(**{k: given.setting(k) for k in explicit & RESUME_MUTABLE})


def locate_run(cfg: TrainConfig, explicit=frozenset()) -> RunPlace | None:
    """The resumed run's place (``--resume``), or ``None`` for a new run. Host only: called
    before JAX starts, since a resumed run keeps its checkpoint's device count.

    A ``ValueError`` for a path that does not exist, flags that conflict or would move the
    run, or a checkpoint that cannot be read. The config is the checkpoint's, with the flags
    a resume may change (``merge_resume``); the run continues where its checkpoint lies (a
    copied or moved run too), and only there.
    """
    from hackmatrix_env.argparsing import missing

    from hackmatrix_train import checkpoint as ckpt

    if cfg.rewind is not None and cfg.resume is None:
        raise ValueError("--rewind needs --resume RUN_DIR")
    for path in (cfg.resume, cfg.init_params):
        if path is not None and not Path(path).exists():
            raise ValueError(missing(path))
    if cfg.resume is None:
        return None
    if cfg.init_params is not None and "init_params" in explicit:
        raise ValueError("--init-params starts a new run; --resume continues one: give one")
    if explicit & RESUME_ELSEWHERE:
        flags = ", ".join("--" + f.replace("_", "-") for f in sorted(explicit & RESUME_ELSEWHERE))
        raise ValueError(
            f"--resume continues in the run's own directory; {flags} cannot move it "
            "(copy the run directory and resume the copy)"
        )
    try:
        resume_path = ckpt.resolve_checkpoint(cfg.resume, cfg.rewind)
        meta = ckpt.read_meta(resume_path)
        saved = TrainConfig.from_dict(meta["config"])
    except (ckpt.CheckpointError, ValueError, KeyError) as e:
        raise ValueError(f"cannot resume: {e}") from None
    cfg = merge_resume(saved, cfg, explicit)
    run_dir = resume_path.parent
    cfg = cfg.replace(checkpoint_dir=str(run_dir.parent))
    run_name = meta.get("run_name") or default_run_name(cfg)
    return RunPlace(cfg, run_name, run_dir, resume_path, meta)


def check_learner(place: RunPlace, learner: str) -> None:
    """A ``ValueError`` when a resume would continue a run with another learner than its own
    (the checkpoint's ``learner``; older ones name it in their config's ``algo``)."""
    if place.resume_path is None:
        return
    saved = place.meta.get("learner") or place.meta.get("config", {}).get("algo", "ppo")
    if saved != learner:
        where = " (experiments/search_trainer.py)" if saved.startswith("search") else ""
        raise ValueError(f"cannot resume: the run was trained by the {saved} learner{where}, "
                         f"not {learner}; resume it with its own")  # fmt: skip


def new_run(cfg: TrainConfig, explicit, devices) -> RunPlace:
    """A new run's place: ``plan``'s config for ``devices``, its directory by its name."""
    cfg = plan(cfg, explicit, len(devices), devices[0].platform)
    run_name = default_run_name(cfg)
    return RunPlace(cfg, run_name, Path(cfg.checkpoint_dir) / run_name)


def warm_start(trainer, runner, path: str):
    """``runner`` with the params of checkpoint ``path`` and a fresh optimizer state; a start of
    another network layout grown (``network.adapt_params``: the same function, new blocks from
    ``runner``'s init). A missing, corrupt or mismatched checkpoint is a ``ValueError``."""
    from hackmatrix_train import checkpoint as ckpt
    from hackmatrix_train.config import network_layout
    from hackmatrix_train.network import adapt_params
    from hackmatrix_train.policy import load_policy

    try:
        flat, meta = ckpt.load_params(path)
        start = TrainConfig.from_dict(meta["config"]) if "config" in meta else None
        cfg = trainer.cfg
        if start is None or network_layout(start) == network_layout(cfg):
            params = ckpt.unflatten_state(flat, trainer.abstract_runner().params, str(path))
        else:  # the start in its own network's layout, then grown
            params = load_policy(path, env=trainer.env, env_params=trainer.env_params).params
            params = adapt_params(params, start.network, cfg.network, start.res_blocks,
                                  cfg.res_blocks, runner.params)  # fmt: skip
    except (ckpt.CheckpointError, OSError, ValueError, KeyError) as e:
        raise ValueError(f"cannot load --init-params: {e}") from None
    return trainer.with_params(runner, params)


def run(
    cfg: TrainConfig, explicit=frozenset(), env=None, env_params=None, out=print,
    place: RunPlace | None = None, **parts,
) -> dict:  # fmt: skip
    """Train (or resume) with ``cfg``; returns a summary dict. ``env`` defaults to HackMatrix.
    ``parts`` go to ``trainer.make_train`` (``learner``, ``actor``, ``loss``, ``make_env``).

    ``place``: ``locate_run``'s answer when the caller already has it (``hm-train``). A refused
    setting is a ``ValueError`` with the reason.
    """
    import jax

    from hackmatrix_train.logging import Clock, ProgressCSV, WandbLogger
    from hackmatrix_train.trainer import make_train

    t_start = time.monotonic()
    place = place or locate_run(cfg, explicit) or new_run(cfg, explicit, jax.devices())
    cfg = place.cfg
    trainer = make_train(cfg, env, env_params, **parts)
    check_learner(place, trainer.learner.name)
    out(describe_plan(cfg, trainer.num_devices))
    out(f"run {place.run_name}: checkpoints in {place.run_dir}")
    runner, meta = start_runner(trainer, cfg, place, out)
    resumed = place.resume_path is not None

    cfg, compile_s = compile_run(trainer, runner, cfg, t_start, resumed, out)
    update = int(jax.device_get(runner.update))
    out(f"compiled in {compile_s:.1f}s; training {trainer.num_updates - update} updates")

    config_dict = cfg.to_dict()
    logger = WandbLogger(
        enabled=not cfg.no_wandb and jax.process_index() == 0, project=cfg.project,
        entity=cfg.entity, name=place.run_name, config=config_dict,
        run_id=wandb_run_id(meta, place.run_dir),
    )  # fmt: skip
    progress = None
    if jax.process_index() == 0:
        progress = ProgressCSV(place.run_dir, update if resumed else None)
    clock = Clock()
    save = make_save(trainer, cfg, config_dict, place, meta, logger, clock, out)
    on_chunk = make_chunk_callback(trainer, cfg, save, logger, progress, clock, out)
    last_saved = update if resumed else -1
    interrupted = False
    try:
        runner, update, metrics = train_chunks(trainer, runner, update, clock, on_chunk)
    except ChunkInterrupt as stop:
        runner, update, metrics = stop.args
        interrupted = True
        if jax.process_count() > 1:  # the others may be inside a chunk: no gather can be safe
            out("interrupted: a multi-process run resumes from its last saved checkpoint")
        else:
            out("interrupted: saving the last completed update ...")
    last_saved = max(last_saved, on_chunk.last_saved)
    final_eval = end_run(
        trainer, runner, cfg, place, update, last_saved, interrupted, save, logger, out
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
        raise ValueError(f"cannot resume: {e}") from None
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
            "learner": trainer.learner.name,  # a resume continues with the same learner
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


class ChunkInterrupt(Exception):
    """Ctrl+C during ``train_chunks``; ``args``: ``(runner, update, metrics)`` of the last
    completed chunk."""


class Chunk(NamedTuple):
    """What ``train_chunks`` hands its callback after each chunk."""

    runner: Any
    update: int  # updates done
    metrics: dict  # the chunk's, floats, with train/steps_per_second and train/env_steps
    steps_per_second: float


def train_chunks(
    trainer, runner, update: int, clock, on_chunk: Callable[[Chunk], None] | None = None
) -> tuple[Any, int, dict]:
    """Chunks of ``--log-interval`` updates (cut at ``--save-interval`` multiples) up to the
    run's length, timed by ``clock``; ``on_chunk(Chunk)`` after each. Returns ``(runner,
    update, last metrics)``; Ctrl+C raises ``ChunkInterrupt`` with those of the last chunk."""
    import jax
    import numpy as np

    cfg, batch, metrics = trainer.cfg, trainer.cfg.batch_size, {}
    try:
        while update < trainer.num_updates:
            n = min(cfg.log_interval, trainer.num_updates - update)
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
            if on_chunk is not None:
                on_chunk(Chunk(runner, update, metrics, sps))
    except KeyboardInterrupt:
        raise ChunkInterrupt(runner, update, metrics) from None
    return runner, update, metrics


def make_chunk_callback(trainer, cfg: TrainConfig, save, logger, progress, clock, out=print):
    """``hm-train``'s per-chunk work: the progress line (the budget line first), wandb,
    ``progress.csv``, and the checkpoints due. ``.last_saved``: the update saved last."""
    from hackmatrix_train.logging import format_progress

    batch, num_updates = cfg.batch_size, trainer.num_updates
    state = {"first": True, "last_save_t": time.monotonic()}

    def on_chunk(c: Chunk) -> None:
        eta = clock.eta((num_updates - c.update) * batch)
        if state["first"]:
            out(describe_budget(num_updates * batch, c.update * batch, c.steps_per_second, eta))
            state["first"] = False
        out(format_progress(c.update, num_updates, c.update * batch, c.steps_per_second, eta,
                            c.metrics))  # fmt: skip
        logger.log(c.metrics, step=c.update * batch)
        if progress is not None:
            progress.log(c.update, c.update * batch, c.metrics)
        due_updates = bool(cfg.save_interval) and c.update % cfg.save_interval == 0
        # process 0's clock decides for all: a save gathers the state across processes
        due_time = agree(time.monotonic() - state["last_save_t"] >= cfg.save_interval_minutes * 60)
        if (due_updates or due_time) and c.update < num_updates:
            save(c.runner, "interval" if due_updates else "timer")
            state["last_save_t"], on_chunk.last_saved = time.monotonic(), c.update

    on_chunk.last_saved = -1
    return on_chunk


def compile_run(trainer, runner, cfg: TrainConfig, t_start: float, resumed: bool, out=print):
    """``(cfg, compile seconds)``: the chunk compiled ahead of time; a new run with
    ``--time-budget`` then gets the length that fits (``plan_time_budget``)."""
    from hackmatrix_train.progress import COLD_COMPILE_S, compiling

    t0 = time.perf_counter()
    with compiling("the training update", estimate_s=COLD_COMPILE_S["training"]):
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


def budget_updates(budget_s: float, elapsed_s: float, steps_per_second: float, batch: int) -> int:
    """Updates of ``batch`` env steps that fit the seconds left of the budget (at least one)."""
    left = max(budget_s - elapsed_s, 0.0)
    return max(1, int(left * steps_per_second // batch))


def plan_time_budget(trainer, runner, elapsed_s: float, out=print) -> TrainConfig:
    """Fix the run's length so that compiling and training fit ``--time-budget`` minutes.

    A probe times the compiled chunk from ``runner`` and its result is dropped: the run still
    starts from ``runner``, so a budgeted run equals the fixed-length run of its planned length
    (same seed, same trajectory), and its checkpoints record that length for ``--resume``. The
    schedules are data of the compiled chunk (``schedules.Schedule``), so nothing compiles
    again. Returns the trainer's config with ``total_timesteps`` set to the planned length.
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

    from hackmatrix_train import progress
    from hackmatrix_train.evaluate import evaluate_params
    from hackmatrix_train.tables import format_table

    # compile notice and progress bar on stderr, from one process of a multi-host run
    report = progress.Reporter(quiet=jax.process_index() != 0)
    env, env_params = trainer.env, trainer.env_params
    if hasattr(env_params, "start_stage"):  # an injected EnvParams may start elsewhere
        env_params = env_params.replace(start_stage=1)
    out(f"final evaluation: {cfg.final_eval_episodes} greedy episodes from stage 1 ...")
    summary = evaluate_params(
        env, env_params, trainer.network.apply, jax.device_get(params), cfg.final_eval_episodes,
        cfg.final_eval_seed, greedy=True, program_names=trainer.program_names, report=report,
    )  # fmt: skip
    summary["env_steps"] = cfg.num_updates * cfg.batch_size
    summary["disabled_programs"] = list(cfg.disabled_programs)
    out(format_table(summary, f"final evaluation ({summary['episodes']} greedy episodes)"))
    if jax.process_index() == 0:  # every process evaluates the same params; one writes
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "eval_final.json").write_text(json.dumps(summary, indent=1))
        out(f"wrote {run_dir / 'eval_final.json'}")
    return summary
