"""``hm-bench learn``: the learning benchmark of a config over several seeds.

Trains the given config (default: ``hm-train``'s, the default recipe) for its
``--total-timesteps`` (or, under ``--time-budget``, the length each seed's own probe plans) with
each seed, reusing one compiled trainer and recording the logged metrics after every chunk.
Each final policy then gets the evaluation protocol of ``hm-train``'s end-of-run evaluation:
``--final-eval-episodes`` greedy episodes from stage 1 with the fixed key ``--final-eval-seed``
(and the sampled policy on the same key), next to the uniform random masked policy. Writes
into ``--out`` (default ``experiments/results``): ``curves_<tag>.csv``, ``summary_<tag>.json``,
``results_<tag>.md`` (the table the README shows) and ``learning_curve_<tag>.png``.
``--combine SUMMARY.json ...`` merges the summaries (and curves) of runs of one config made
separately, e.g. one seed per machine, into the same outputs.
``--from-runs RUN_DIR ...`` puts finished plain ``hm-train`` runs of one config into the same
outputs: each run's final params get the same protocol and its ``progress.csv`` gives the
curves, so seeds trained by the README's command make the same table and figure
(``--lengths-may-differ`` admits runs given lengths of their own).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import shlex
import sys
import time
from pathlib import Path

from hackmatrix_train.config import RUN_BOOKKEEPING, TrainConfig
from hackmatrix_train.logging import PROGRESS_CSV

CURVE_KEYS = (
    "train/episode_return", "train/episode_length", "train/num_episodes", "stats/mean_stage",
    "stats/highest_stage", "stats/win_rate", "actions/siphon_frac", "actions/program_frac",
    "actions/kind_attack_frac", "train/entropy", "train/approx_kl", "train/clip_frac",
    "train/explained_variance", "train/ent_coef", "train/explore_floor", "train/explore_weight", "train/floor_loss",
    "train/program_bonus",
    # a distilling learner's (the search trainer's record): cross-entropy, KL to the target, overrides
    "train/policy_ce", "train/target_kl", "train/override_frac",
)  # fmt: skip
# Periodic evaluation (--eval-every): the sampled policy on whole episodes of the real game
# (stage 1), unbiased by the short-episode skew of training returns.
EVAL_KEYS = ("return_mean", "stage_mean", "stage_3plus_frac", "win_rate", "siphons_per_episode",
             "block_siphons_per_episode", "programs_acquired_per_episode",
             "programs_per_episode", "length_mean")  # fmt: skip
# summary.json: "<sampled|greedy>_<name>" aggregates the final evaluations' <key> over seeds.
SUMMARY_KEYS = (("return", "return_mean"), ("stage", "stage_mean"),
                ("siphons_per_episode", "siphons_per_episode"),
                ("block_siphons_per_episode", "block_siphons_per_episode"),
                ("programs_acquired_per_episode", "programs_acquired_per_episode"),
                ("programs_per_episode", "programs_per_episode"),
                ("stage_3plus_frac", "stage_3plus_frac"), ("stage_5plus_frac", "stage_5plus_frac"),
                ("win_rate", "win_rate"), ("win_rate_without_quirk", "win_rate_without_quirk"),
                ("non_undo_programs_per_episode", "non_undo_programs_per_episode"),
                ("distinct_programs_used", "distinct_programs_used"),
                ("episodes_at_step_limit", "episodes_at_step_limit"))  # fmt: skip
# results_<tag>.md: one row per seed, then the mean; (header, summary key, format)
TABLE_COLUMNS = (
    ("return", "return_mean", "{:+.2f}"), ("mean stage", "stage_mean", "{:.2f}"),
    ("stage 3+", "stage_3plus_frac", "{:.0%}"), ("stage 5+", "stage_5plus_frac", "{:.0%}"),
    ("wins", "win_rate", "{:.1%}"), ("wins without the quirk", "win_rate_without_quirk", "{:.1%}"),
    ("siphons/ep", "siphons_per_episode", "{:.2f}"),
    ("of them on blocks", "block_siphons_per_episode", "{:.2f}"),
    ("programs acquired/ep", "programs_acquired_per_episode", "{:.2f}"),
    ("programs/ep", "programs_per_episode", "{:.2f}"),
    ("non-UNDO programs/ep", "non_undo_programs_per_episode", "{:.2f}"),
    ("distinct programs", "distinct_programs_used", "{:d}"),
    ("completions exit / UNDO quirk", None, None),
    ("episodes at the step limit", "episodes_at_step_limit", "{:d}"),
)  # fmt: skip


def _brief(ev: dict) -> str:
    """One evaluation summary as console text."""
    return (
        f"return {ev['return_mean']:.3f} stage {ev['stage_mean']:.2f} "
        f"stage3+ {ev['stage_3plus_frac']:.2f} wins {ev['win_rate']:.1%} programs acquired "
        f"{ev['programs_acquired_per_episode']:.2f} blocks {ev['block_siphons_per_episode']:.2f}"
    )


def aggregate(finals: list[dict]) -> dict:
    """``<kind>_<name>: {mean, std, per_seed}`` over the seeds' final evaluations."""
    import numpy as np

    out = {}
    for kind in ("sampled", "greedy", "search"):
        for name, key in SUMMARY_KEYS:
            vals = [r[kind][key] for r in finals if kind in r and key in r[kind]]
            if vals:
                out[f"{kind}_{name}"] = {
                    "mean": float(np.mean(vals)), "std": float(np.std(vals)), "per_seed": vals,
                }  # fmt: skip
    return out


def results_table(summary: dict, kind: str = "greedy") -> str:
    """The markdown table of the final evaluations: one row per seed and the mean over seeds."""
    finals = summary["final"]
    head = ["seed", *(c[0] for c in TABLE_COLUMNS), "env steps", "train min", "where"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def cells(ev: dict) -> list[str]:
        row = []
        for _, key, fmt in TABLE_COLUMNS:
            if key is None:
                row.append(
                    f"{ev.get('stage_completions_by_exit', 0)} / "
                    f"{ev.get('stage_completions_by_undo_quirk', 0)}"
                )
            else:
                row.append(fmt.format(ev[key]) if key in ev else "-")
        return row

    for r in finals:
        seconds = r.get("train_seconds")
        minutes = "-" if seconds is None else f"{seconds / 60:.0f}"
        steps = f"{r['env_steps'] / 1e6:.1f}M"
        lines.append(
            "| " + " | ".join([str(r["seed"]), *cells(r[kind]), steps, minutes,
                               r.get("hardware", "")]) + " |"
        )  # fmt: skip
    agg = aggregate(finals)
    mean_row = []
    for _, key, fmt in TABLE_COLUMNS:
        name = next((n for n, k in SUMMARY_KEYS if k == key), None)
        a = agg.get(f"{kind}_{name}") if name else None
        if key is None:
            tot = [sum(r[kind].get(k, 0) for r in finals) for k in (
                "stage_completions_by_exit", "stage_completions_by_undo_quirk")]  # fmt: skip
            mean_row.append(f"{tot[0]} / {tot[1]} (sum)")
        elif a is None:  # an older summary without this figure
            mean_row.append("-")
        else:
            value = a["mean"]
            mean_row.append(
                fmt.format(round(value)) if fmt == "{:d}" else fmt.format(value)
            )  # fmt: skip
    lines.append("| **mean** | " + " | ".join(mean_row) + " | | | |")
    rand = summary.get("random")
    if rand:
        rr = cells(rand)
        lines.append("| random masked | " + " | ".join(rr) + " | | | |")
    return "\n".join(lines)


def env_steps_of(finals: list[dict]) -> int | list[int]:
    """The summary's ``env_steps``: one number when the seeds trained equally long, else the
    list in seed order (runs under a time budget plan their own lengths)."""
    steps = [f["env_steps"] for f in finals]
    return steps[0] if len(set(steps)) == 1 else steps


def describe_length(summary: dict) -> str:
    """How long each seed trained, for the results page."""
    steps = summary["env_steps"]
    budget = summary["config"].get("time_budget")
    if isinstance(steps, list):
        each = ", ".join(f"{s / 1e6:.1f}M" for s in steps)
        length = f"{each} env steps (seeds {summary['seeds']})"
    else:
        length = f"{steps:,} env steps per seed, seeds {summary['seeds']}"
    if budget is not None:
        length = f"a time budget of {budget:g} min per seed, planned by each run: {length}"
    return length


def write_outputs(summary: dict, rows: list[dict], out: Path, tag: str) -> None:
    """``curves_<tag>.csv``, ``summary_<tag>.json``, ``results_<tag>.md``, the curve PNG."""
    out.mkdir(parents=True, exist_ok=True)
    if rows:
        fields = list(dict.fromkeys(k for r in rows for k in r))
        with open(out / f"curves_{tag}.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields, restval="")
            w.writeheader()
            w.writerows(rows)
        algo = summary["config"].get("algo", "ppo")
        plot_curves(rows, summary.get("random", {}), out / f"learning_curve_{tag}.png", tag, algo)
    (out / f"summary_{tag}.json").write_text(json.dumps(summary, indent=1))
    cfg = summary["config"]
    text = [
        f"# Learning benchmark: {tag}",
        "",
        f"{describe_length(summary)}; evaluation: "
        f"{cfg.get('final_eval_episodes')} greedy episodes from stage 1 per seed, key "
        f"{cfg.get('final_eval_seed')} (the same for every seed); the canonical game reward.",
        "",
        results_table(summary, "greedy"),
        "",
        "Sampled policy (same episodes and key):",
        "",
        results_table(summary, "sampled"),
        "",
    ]
    if all("search" in r for r in summary["final"]):  # the search trainer's own search
        search = summary["final"][0]["search"]["search"]
        text += [
            f"With its search ({search['num_simulations']} simulations per move, "
            f"{search['mode']}; same episodes and key):",
            "",
            results_table(summary, "search"),
            "",
        ]
    text += [
        f"Reproduce: `{summary.get('command', 'uv run hm-bench learn')}`",
        "",
    ]
    if summary.get("commands_combined"):
        text += ["Merged from runs made by:", ""]
        text += [f"- `{c}`" for c in summary["commands_combined"]] + [""]
    (out / f"results_{tag}.md").write_text("\n".join(text))


def read_curves(path: Path) -> list[dict]:
    """Rows of a ``curves_*.csv`` with numbers parsed (empty cells stay empty strings)."""
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            parsed = {}
            for k, v in r.items():
                try:
                    parsed[k] = float(v) if v != "" else ""
                except ValueError:
                    parsed[k] = v
            for k in ("seed", "update", "env_steps"):
                if parsed.get(k, "") != "":
                    parsed[k] = int(parsed[k])
            rows.append(parsed)
    return rows


# The evaluation protocol's episodes for a run saved without its own (--final-eval-episodes 0)
PROTOCOL_EPISODES = TrainConfig.final_eval_episodes

# Runs whose configs differ only in these fields are runs of one config (other seeds).
BOOKKEEPING_FIELDS = RUN_BOOKKEEPING | {"seed", "notes", "run_name"}


def _learning_fields(config: dict, lengths_may_differ: bool = False) -> dict:
    """The fields of a saved config that change what a run learns; a field added to
    ``TrainConfig`` after the config was saved counts as its default (what the run used).
    Under a time budget the length is the budget's (each run plans its own steps from its
    measured speed), so ``total_timesteps`` is not one of them."""
    config = TrainConfig.from_dict(config).to_dict()  # every field; flat search keys nested
    budgeted = config["time_budget"] is not None
    skip = BOOKKEEPING_FIELDS | ({"total_timesteps"} if budgeted or lengths_may_differ else set())
    return {k: v for k, v in config.items() if k not in skip}


def check_same_config(configs: list[dict], what: str, lengths_may_differ: bool = False) -> None:
    """Raise ``ValueError`` naming the fields where the configs differ (bookkeeping aside, and
    ``total_timesteps`` too where ``lengths_may_differ``: runs each given its own length)."""
    base = _learning_fields(configs[0], lengths_may_differ)
    for other in configs[1:]:
        a = _learning_fields(other, lengths_may_differ)
        if a != base:
            diff = sorted(k for k in a.keys() | base.keys() if a.get(k) != base.get(k))
            raise ValueError(f"{what}: the runs' configs differ in {diff}")


def combine(paths: list[str], out: Path, tag: str, command: str | None = None) -> dict:
    """Merge separately made runs of one config (e.g. one seed per machine) into one result.

    ``command`` (the merge's own command line) replaces the first run's; every run's own
    command is kept in ``commands_combined``, and the table lists them.
    """
    summaries = [json.loads(Path(p).read_text()) for p in paths]
    base = summaries[0]
    check_same_config([s["config"] for s in summaries], "--combine")
    # each seed's own length; a summary written before the per-seed figure holds it once
    finals = [{"env_steps": s["env_steps"], **f} for s in summaries for f in s["final"]]
    seeds = [f["seed"] for f in finals]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"--combine: a seed appears twice: {seeds}")
    rows = []
    for p in paths:
        csv_path = Path(p).with_name(Path(p).name.replace("summary_", "curves_", 1))
        csv_path = csv_path.with_suffix(".csv")
        if csv_path.exists():
            rows += read_curves(csv_path)
    summary = {
        **base, "tag": tag, "seeds": seeds, "final": finals, "env_steps": env_steps_of(finals),
        **aggregate(finals),
        "combined_from": [Path(p).name for p in paths],
        "commands_combined": [s.get("command", "") for s in summaries],
    }  # fmt: skip
    if command:
        summary["command"] = command
    write_outputs(summary, rows, out, tag)
    return summary


def from_runs(
    paths: list[str], out: Path, tag: str, hardware: str | None, command: str,
    lengths_may_differ: bool = False,
) -> dict:  # fmt: skip
    """The benchmark's outputs for finished ``hm-train`` runs of one config (one seed each).

    ``lengths_may_differ`` admits runs given different explicit ``--total-timesteps`` (e.g. each
    seed paired with the length another recipe's time budget planned on it); the results page
    then lists each seed's length, as it does for budgeted runs.

    Each run's final params get the protocol of the end-of-run evaluation (greedy and sampled,
    ``final_eval_episodes`` from stage 1, key ``final_eval_seed``), the random masked policy
    the same episodes; the training time comes from the checkpoint (``train_seconds``), the
    curves from the run's ``progress.csv`` where it has one.
    """
    from hackmatrix_train import checkpoint as ckpt
    from hackmatrix_train.policy import evaluate_checkpoint

    metas = [ckpt.load_params(p)[1] for p in paths]
    check_same_config([m["config"] for m in metas], "--from-runs", lengths_may_differ)
    # a run that skipped its own evaluation (--final-eval-episodes 0, e.g. on a GPU machine
    # with a per-command time limit) gets the protocol's episode count
    cfgs = [
        dataclasses.replace(c, final_eval_episodes=c.final_eval_episodes or PROTOCOL_EPISODES)
        for c in (TrainConfig.from_dict(m["config"]) for m in metas)
    ]
    for path, cfg, meta in zip(paths, cfgs, metas, strict=True):
        planned = cfg.num_updates * cfg.batch_size
        if meta.get("env_steps") != planned:
            raise ValueError(
                f"--from-runs: {path} stopped at {meta.get('env_steps')} of its {planned} env "
                "steps (interrupted?); finish it with hm-train --resume"
            )
    if len({c.seed for c in cfgs}) != len(cfgs):
        raise ValueError(f"--from-runs: a seed appears twice: {[c.seed for c in cfgs]}")

    def protocol(path, cfg, greedy: bool, random: bool = False) -> dict:
        ev = evaluate_checkpoint(
            path, cfg.final_eval_episodes, greedy, cfg.final_eval_seed, 1,
            cfg.max_steps_in_episode, random,
        )  # fmt: skip
        # the schema of hm-train's eval_final.json (the run is named once, in the seed's entry)
        return {k: v for k, v in ev.items() if k not in ("checkpoint", "update", "start_stage")}

    finals, rows = [], []
    for path, cfg, meta in zip(paths, cfgs, metas, strict=True):
        run_dir = Path(path) if Path(path).is_dir() else Path(path).parent
        if (run_dir / PROGRESS_CSV).exists():
            rows += [
                {"tag": tag, "seed": cfg.seed, **r} for r in read_curves(run_dir / PROGRESS_CSV)
            ]
        seconds = meta.get("train_seconds")
        res = {
            "seed": cfg.seed,
            "env_steps": meta["env_steps"],
            "greedy": protocol(path, cfg, True),
            "sampled": protocol(path, cfg, False),
            "train_seconds": seconds,
            "steps_per_second": meta["env_steps"] / seconds if seconds else None,
            "hardware": hardware or f"hm-train run {meta.get('run_name', path)}",
            "run": Path(path).name,
        }
        finals.append(res)
        for kind in ("sampled", "greedy"):
            print(f"seed {cfg.seed} eval ({kind}): {_brief(res[kind])}", flush=True)
    summary = {
        "tag": tag,
        "config": cfgs[0].to_dict(),
        "seeds": [c.seed for c in cfgs],
        "env_steps": env_steps_of(finals),
        "command": command,
        "random": protocol(paths[0], cfgs[0], True, random=True),  # random samples anyway
        "final": finals,
        **aggregate(finals),
    }
    write_outputs(summary, rows, out, tag)
    return summary


def main(argv=None) -> int:
    from hackmatrix_train import compile_cache
    from hackmatrix_train.cli.train import build_parser, config_from_args
    from hackmatrix_train.distributed import set_cpu_devices
    from hackmatrix_train.logging import Clock
    from hackmatrix_train.run import plan_time_budget, train_chunks, warm_start

    p = argparse.ArgumentParser(prog="hm-bench learn", description=__doc__)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--episodes", type=int, default=64, help="episodes of each --eval-every check")
    p.add_argument("--out", default="experiments/results")
    p.add_argument("--tag", default="default", help="name of this experiment in the outputs")
    p.add_argument("--hardware", default=None, help="machine name recorded with each seed")
    p.add_argument(
        "--eval-every",
        type=int,
        default=0,
        help="also evaluate the sampled and the greedy policy (--episodes, stage 1) every N "
        "chunks; 0: off",
    )
    p.add_argument(
        "--save-checkpoints", default=None, metavar="DIR",
        help="save each seed's final state to DIR/<tag>_seed<seed> (for hm-eval)",
    )  # fmt: skip
    p.add_argument(
        "--combine", nargs="+", default=None, metavar="SUMMARY",
        help="merge these summary_*.json files (one config, other seeds) instead of training",
    )  # fmt: skip
    p.add_argument(
        "--from-runs", nargs="+", default=None, metavar="RUN_DIR",
        help="evaluate these finished hm-train runs (one config, one seed each) instead of "
        "training",
    )  # fmt: skip
    p.add_argument(
        "--lengths-may-differ", action="store_true",
        help="with --from-runs: admit runs of different --total-timesteps (each seed's length "
        "is listed)",
    )  # fmt: skip
    args, rest = p.parse_known_args(argv)
    command = "uv run hm-bench learn " + shlex.join(sys.argv[1:] if argv is None else argv)
    if args.from_runs:
        from hackmatrix_train.checkpoint import CheckpointError

        try:
            from_runs(
                args.from_runs, Path(args.out), args.tag, args.hardware, command,
                args.lengths_may_differ,
            )  # fmt: skip
        except (ValueError, OSError, KeyError, CheckpointError) as e:
            p.error(str(e))
        print(f"wrote {args.out}/results_{args.tag}.md, summary_{args.tag}.json")
        return 0
    if args.combine:
        try:
            combine(args.combine, Path(args.out), args.tag, command)
        except (ValueError, OSError, KeyError) as e:
            p.error(str(e))
        print(f"wrote {args.out}/results_{args.tag}.md, summary_{args.tag}.json")
        return 0
    train_args = build_parser().parse_args(rest)
    try:
        cfg, explicit = config_from_args(train_args)
        set_cpu_devices(train_args.cpu_devices, False, cfg)
    except ValueError as e:
        p.error(str(e))
    compile_cache.enable_from_args(train_args)

    import platform

    import jax
    import jax.numpy as jnp
    from hackmatrix_train.config import describe_plan, plan
    from hackmatrix_train.evaluate import evaluate_params, make_evaluate, summarize
    from hackmatrix_train.trainer import make_train

    cfg = plan(cfg, explicit, jax.device_count(), jax.default_backend())
    trainer = make_train(cfg)
    print(describe_plan(cfg, trainer.num_devices), flush=True)
    out = Path(args.out)
    names = trainer.program_names
    hardware = args.hardware or (
        f"{jax.default_backend()} x{trainer.num_devices} ({platform.machine()}, "
        f"{jax.devices()[0].device_kind})"
    )
    max_steps = int(trainer.env_params.max_steps_in_episode)
    # the training env at stage 1: the protocol of hm-train's end-of-run evaluation
    eval_env, eval_params = trainer.env, trainer.env_params
    ev_sampled = make_evaluate(
        eval_env, eval_params, trainer.network.apply, args.episodes, max_steps, False
    )
    ev_greedy = make_evaluate(
        eval_env, eval_params, trainer.network.apply, args.episodes, max_steps, True
    )

    def protocol(params, greedy: bool) -> dict:
        return evaluate_params(
            eval_env, eval_params, trainer.network.apply, params, cfg.final_eval_episodes,
            cfg.final_eval_seed, greedy=greedy, program_names=names,
        )  # fmt: skip

    rows, finals = [], []
    t_start = time.perf_counter()
    for seed in args.seeds:
        runner = trainer.init(seed)
        if cfg.init_params is not None:
            runner = warm_start(trainer, runner, cfg.init_params)
        t0 = time.perf_counter()
        trainer.compile(runner)
        print(f"seed {seed}: compile {time.perf_counter() - t0:.1f}s", flush=True)
        if cfg.time_budget is not None:  # each seed plans its own length, as hm-train does
            plan_time_budget(trainer, runner, time.perf_counter() - t0, print)
        t0 = time.perf_counter()

        def on_chunk(c, seed=seed):  # one curve row per chunk (run.train_chunks)
            nonlocal t0
            update, m = c.update, c.metrics
            row = {"tag": args.tag, "seed": seed, "update": update,
                   "env_steps": update * cfg.batch_size}  # fmt: skip
            row.update({k: m.get(k, float("nan")) for k in CURVE_KEYS})
            # what training returns are made of (per-episode reward components, per-program uses)
            row.update(
                {k: v for k, v in m.items() if k.startswith(("reward/", "actions/program/"))}
            )
            row["wall_seconds"] = time.perf_counter() - t0
            chunk = -(-update // cfg.log_interval)
            if args.eval_every and (chunk % args.eval_every == 0 or update == trainer.num_updates):
                t_eval = time.perf_counter()
                k_eval = jax.random.key(20_000 + chunk)
                ev = summarize(jax.device_get(ev_sampled(c.runner.params, k_eval)), names)
                evg = summarize(jax.device_get(ev_greedy(c.runner.params, k_eval)), names)
                row.update({f"eval/{k}": ev[k] for k in EVAL_KEYS})
                row.update({f"eval_greedy/{k}": evg[k] for k in EVAL_KEYS})
                print(
                    f"seed {seed} eval at {row['env_steps']:,} steps: sampled {_brief(ev)}; "
                    f"greedy {_brief(evg)}",
                    flush=True,
                )
                t0 += time.perf_counter() - t_eval  # steps/s and wall time exclude evaluation
                row["wall_seconds"] = time.perf_counter() - t0
            rows.append(row)
            print(
                f"seed {seed} update {update}/{trainer.num_updates} steps {row['env_steps']:,} "
                f"return {row['train/episode_return']:.3f} stage {row['stats/mean_stage']:.2f} "
                f"siphon {row['actions/siphon_frac']:.3f} prog {row['actions/program_frac']:.3f} "
                f"({row['env_steps'] / row['wall_seconds']:,.0f} steps/s)",
                flush=True,
            )

        runner, update, _ = train_chunks(trainer, runner, 0, Clock(), on_chunk)
        train_seconds = time.perf_counter() - t0
        params = jax.device_get(runner.params)
        res = {
            "seed": seed,
            "env_steps": update * cfg.batch_size,
            "greedy": protocol(params, True),
            "sampled": protocol(params, False),
            "train_seconds": train_seconds,
            "steps_per_second": update * cfg.batch_size / train_seconds,
            "hardware": hardware,
        }
        finals.append(res)
        for kind in ("sampled", "greedy", "search")[: 3 if "search" in res else 2]:
            print(f"seed {seed} eval ({kind}): {_brief(res[kind])}", flush=True)
        if args.save_checkpoints:
            from hackmatrix_train.checkpoint import save_checkpoint

            meta = {"run_name": f"{args.tag}_seed{seed}", "env_steps": update * cfg.batch_size,
                    "num_devices": trainer.num_devices, "reason": "hm-bench learn final",
                    "train_seconds": train_seconds, "jax_version": jax.__version__}  # fmt: skip
            path = save_checkpoint(
                Path(args.save_checkpoints) / f"{args.tag}_seed{seed}",
                runner,
                trainer.cfg.replace(seed=seed).to_dict(),  # the length this seed trained
                meta,
            )
            print(f"seed {seed}: checkpoint {path}", flush=True)
    zeros = jax.tree.map(jnp.zeros_like, jax.device_get(runner.params))
    # all-zero params: logits 0, i.e. the uniform policy over valid actions
    rand = protocol(zeros, False)
    print(f"random masked policy: return {rand['return_mean']:.3f}", flush=True)
    summary = {
        "tag": args.tag,
        "config": cfg.to_dict(),
        "seeds": args.seeds,
        "env_steps": env_steps_of(finals),
        "wall_seconds": time.perf_counter() - t_start,
        "command": command,
        "random": rand,
        "final": finals,
        **aggregate(finals),
    }
    write_outputs(summary, rows, out, args.tag)
    print(f"wrote {out}/results_{args.tag}.md, summary_{args.tag}.json, curves, learning curve")
    return 0


# the trainer's name in the curves' labels, by the saved config's algo (records of the search
# trainer, which has left hm-train, carry "search")
ALGO_NAMES = {"ppo": "PPO", "search": "search trainer"}


def curve_keys(rows: list[dict], algo: str = "ppo") -> tuple[list, list]:
    """The (metric key, label) pairs of the return and stage panels: the training episodes,
    and the evaluations the rows hold. The search trainer's training episodes are the
    search's play, so their label says so."""
    name = ALGO_NAMES[algo]
    training = f"{name}, training episodes" + (" (the search plays)" if algo == "search" else "")
    ret_keys = [("train/episode_return", training)]
    stage_keys = [("stats/mean_stage", training)]
    for kind, prefix in (("sampled", "eval"), ("greedy", "eval_greedy")):
        if any(r.get(f"{prefix}/return_mean", "") != "" for r in rows):
            ret_keys.append((f"{prefix}/return_mean", f"{name}, eval (stage 1, {kind})"))
            stage_keys.append((f"{prefix}/stage_mean", f"{name}, eval (stage 1, {kind})"))
    return ret_keys, stage_keys


def plot_curves(rows: list[dict], rand: dict, path: Path, title: str, algo: str = "ppo") -> None:
    """Return, mean stage and siphon/program fractions vs env steps (mean over seeds, min-max band)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    seeds = sorted({r["seed"] for r in rows})
    steps = sorted({r["env_steps"] for r in rows})

    def series(key):
        table = np.full((len(seeds), len(steps)), np.nan)
        for r in rows:
            if r.get(key, "") != "":
                table[seeds.index(r["seed"]), steps.index(r["env_steps"])] = r[key]
        return table

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    x = np.array(steps) / 1e6
    ret_keys, stage_keys = curve_keys(rows, algo)
    panels = [
        (axes[0], ret_keys, "mean episode return", rand.get("return_mean")),
        (axes[1], stage_keys, "mean stage reached", rand.get("stage_mean")),
        (
            axes[2],
            [
                ("actions/siphon_frac", "siphon, training"),
                ("actions/program_frac", "program, training"),
            ],
            "action fraction",
            None,
        ),
    ]
    for ax, keys, label, baseline in panels:
        for key, name in keys:
            t = series(key)
            ok = ~np.all(np.isnan(t), 0)
            ax.plot(
                x[ok], np.nanmean(t[:, ok], 0), marker="o" if key.startswith("eval") else None,
                ms=3, label=f"{name} ({len(seeds)} seeds)",
            )  # fmt: skip
            ax.fill_between(x[ok], np.nanmin(t[:, ok], 0), np.nanmax(t[:, ok], 0), alpha=0.25)
        if baseline is not None:
            ax.axhline(baseline, color="gray", ls="--", label="random masked policy (eval)")
        ax.set_xlabel("env steps (M)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"HackMatrix learning benchmark ({ALGO_NAMES[algo]}): {title}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
