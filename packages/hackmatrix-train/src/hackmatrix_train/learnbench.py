"""``hm-train-learn``: the learning benchmark (fixed env-step budget, several seeds, vs random).

Trains the given config (default: the CLI defaults) for ``--total-timesteps`` with each seed,
reusing one compiled trainer, recording the logged metrics after every chunk. Then evaluates each
final policy, sampled and greedy (argmax over the valid actions), and the uniform random masked
policy on the same number of episodes. Writes ``curves.csv``, ``summary.json`` and
``learning_curve.png`` into ``--out``; ``--save-checkpoints DIR`` also keeps each seed's final
trainer state as a checkpoint that ``hm-eval`` reads.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

CURVE_KEYS = (
    "train/episode_return", "train/episode_length", "train/num_episodes", "stats/mean_stage",
    "stats/highest_stage", "stats/win_rate", "actions/siphon_frac", "actions/program_frac",
    "actions/kind_attack_frac", "train/entropy", "train/approx_kl", "train/clip_frac",
    "train/explained_variance", "train/ent_coef", "train/explore_floor", "train/floor_loss",
)  # fmt: skip
# Periodic evaluation (--eval-every): the sampled policy on whole episodes of the real game
# (stage 1, no curriculum), unbiased by the short-episode skew of training returns.
EVAL_KEYS = ("return_mean", "stage_mean", "stage_3plus_frac", "siphons_per_episode",
             "programs_per_episode", "length_mean")  # fmt: skip
# summary.json: "<sampled|greedy>_<name>" aggregates the final evaluations' <key> over seeds.
SUMMARY_KEYS = (("return", "return_mean"), ("stage", "stage_mean"),
                ("siphons_per_episode", "siphons_per_episode"),
                ("programs_per_episode", "programs_per_episode"),
                ("stage_3plus_frac", "stage_3plus_frac"))  # fmt: skip


def _brief(ev: dict) -> str:
    """One evaluation summary as console text."""
    return (
        f"return {ev['return_mean']:.3f} stage {ev['stage_mean']:.2f} "
        f"stage3+ {ev['stage_3plus_frac']:.2f}"
    )


def main(argv=None) -> int:
    from hackmatrix_train import compile_cache
    from hackmatrix_train.cli import build_parser, config_from_args, warm_start

    p = argparse.ArgumentParser(prog="hm-train-learn", description=__doc__)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--episodes", type=int, default=64, help="evaluation episodes per policy")
    p.add_argument("--out", default="docs/train")
    p.add_argument("--tag", default="default", help="name of this experiment in the outputs")
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
    args, rest = p.parse_known_args(argv)
    train_args = build_parser().parse_args(rest)
    cfg, explicit = config_from_args(train_args)
    compile_cache.enable_from_args(train_args)

    import jax
    import jax.numpy as jnp
    import numpy as np

    from hackmatrix_train.config import describe_plan, plan
    from hackmatrix_train.evaluate import make_evaluate, summarize
    from hackmatrix_train.loop import make_train

    cfg = plan(cfg, explicit, jax.device_count(), jax.default_backend())
    trainer = make_train(cfg)
    print(describe_plan(cfg, trainer.num_devices), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = trainer.program_names
    max_steps = int(trainer.env_params.max_steps_in_episode)
    # One compiled evaluator (sampled policy). The random masked policy is the same network with
    # all-zero params: logits 0 -> uniform over valid actions (saves a second env compilation).
    # A curriculum run (--start-stage-max) trains on wrapped resets; evaluate on the bare env.
    eval_env = getattr(trainer.env, "unwrapped", trainer.env)
    ev_sampled = make_evaluate(
        eval_env, trainer.env_params, trainer.network.apply, args.episodes, max_steps, False
    )
    ev_greedy = make_evaluate(
        eval_env, trainer.env_params, trainer.network.apply, args.episodes, max_steps, True
    )

    rows, finals = [], []
    t_start = time.perf_counter()
    for seed in args.seeds:
        runner = trainer.init(seed)
        if cfg.init_params is not None:
            runner = warm_start(trainer, runner, cfg.init_params)
        t0 = time.perf_counter()
        trainer.compile(runner)
        print(f"seed {seed}: compile {time.perf_counter() - t0:.1f}s", flush=True)
        update, t0 = 0, time.perf_counter()
        while update < trainer.num_updates:
            n = min(cfg.log_interval, trainer.num_updates - update)
            runner, m = trainer.run_chunk(runner, n)
            m = {k: float(v) for k, v in jax.device_get(m).items()}
            update += n
            row = {
                "tag": args.tag,
                "seed": seed,
                "update": update,
                "env_steps": update * cfg.batch_size,
            }
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
                ev = summarize(jax.device_get(ev_sampled(runner.params, k_eval)), names)
                evg = summarize(jax.device_get(ev_greedy(runner.params, k_eval)), names)
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
        train_seconds = time.perf_counter() - t0
        key = jax.random.key(10_000 + seed)
        res = {
            "seed": seed,
            "sampled": summarize(jax.device_get(ev_sampled(runner.params, key)), names),
            "greedy": summarize(jax.device_get(ev_greedy(runner.params, key)), names),
            "train_seconds": train_seconds,
        }
        finals.append(res)
        for kind in ("sampled", "greedy"):
            print(f"seed {seed} eval ({kind}): {_brief(res[kind])}", flush=True)
        if args.save_checkpoints:
            from hackmatrix_train.checkpoint import save_checkpoint

            meta = {"run_name": f"{args.tag}_seed{seed}", "env_steps": update * cfg.batch_size,
                    "num_devices": trainer.num_devices, "reason": "hm-train-learn final",
                    "jax_version": jax.__version__}  # fmt: skip
            path = save_checkpoint(
                Path(args.save_checkpoints) / f"{args.tag}_seed{seed}",
                runner,
                cfg.to_dict(),
                meta,
            )
            print(f"seed {seed}: checkpoint {path}", flush=True)
    zeros = jax.tree.map(jnp.zeros_like, runner.params)
    rand = summarize(jax.device_get(ev_sampled(zeros, jax.random.key(99))), names)
    print(f"random masked policy: return {rand['return_mean']:.3f}", flush=True)

    fields = list(dict.fromkeys(k for r in rows for k in r))
    with open(out / f"curves_{args.tag}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, restval="")
        w.writeheader()
        w.writerows(rows)

    def agg(kind, key):
        vals = [r[kind][key] for r in finals]
        return {"mean": float(np.mean(vals)), "std": float(np.std(vals)), "per_seed": vals}

    summary = {
        "tag": args.tag,
        "config": cfg.to_dict(),
        "seeds": args.seeds,
        "env_steps": trainer.num_updates * cfg.batch_size,
        "wall_seconds": time.perf_counter() - t_start,
        "random": rand,
        "final": finals,
        **{
            f"{kind}_{name}": agg(kind, key)
            for kind in ("sampled", "greedy")
            for name, key in SUMMARY_KEYS
        },
    }
    (out / f"summary_{args.tag}.json").write_text(json.dumps(summary, indent=1))
    plot_curves(rows, rand, out / f"learning_curve_{args.tag}.png", args.tag)
    print(
        f"wrote {out}/curves_{args.tag}.csv, summary_{args.tag}.json, learning_curve_{args.tag}.png"
    )
    return 0


def plot_curves(rows: list[dict], rand: dict, path: Path, title: str) -> None:
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
    has_eval = any(r.get("eval/return_mean", "") != "" for r in rows)
    ret_keys = [("train/episode_return", "PPO, training episodes")]
    stage_keys = [("stats/mean_stage", "PPO, training episodes")]
    if has_eval:
        ret_keys.append(("eval/return_mean", "PPO, eval (stage 1, sampled)"))
        stage_keys.append(("eval/stage_mean", "PPO, eval (stage 1, sampled)"))
    if any(r.get("eval_greedy/return_mean", "") != "" for r in rows):
        ret_keys.append(("eval_greedy/return_mean", "PPO, eval (stage 1, greedy)"))
        stage_keys.append(("eval_greedy/stage_mean", "PPO, eval (stage 1, greedy)"))
    panels = [
        (axes[0], ret_keys, "mean episode return", rand["return_mean"]),
        (axes[1], stage_keys, "mean stage reached", rand["stage_mean"]),
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
    fig.suptitle(f"HackMatrix PPO learning benchmark: {title}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
