"""The README's figures of plain ``hm-train`` runs, from their printed progress lines.

A plain ``hm-train`` run logs its curves to wandb and prints one progress line per chunk; on a
lent GPU machine, or for a run outside ``hm-bench learn``, the printed log is what comes back.
This script turns such logs into the curve CSVs in ``parts/`` and draws the figures from them:

    uv run python experiments/results/plot_logs.py curves train.log parts/curves_<tag>.csv
    uv run python experiments/results/plot_logs.py figures
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PARTS = HERE / "parts"
DOCS = HERE.parents[1] / "docs" / "results"  # the figures the README and its summary show
COLUMNS = [
    "update", "env_steps", "steps_per_second", "train/episode_return", "train/episode_length",
    "train/num_episodes", "stats/mean_stage", "stats/highest_stage", "actions/siphon_frac",
    "actions/program_frac", "train/entropy", "train/approx_kl", "train/clip_frac",
    "train/explained_variance",
]  # fmt: skip
PROGRESS = re.compile(
    r"update (\d+)/\d+ \| steps ([\d,]+) \| ([\d,]+) steps/s \| ETA \S+ \| return (\S+) \| "
    r"len (\S+) \| eps (\d+) \| stage ([\d.]+)/(\d+) \| siphon (\S+) prog (\S+) \| ent (\S+) "
    r"kl (\S+) clip (\S+) ev (\S+)"
)

SCALE = (  # the depth recipe at CPU and at GPU scale
    ("curves_default_s1_cpu.csv", "depth, 256 envs, 25M steps (2-core CPU, 57 min)"),
    ("curves_gpu_s0_h200.csv", "depth at 16,384 envs, 257M steps (one H200, 6 min)"),
    ("curves_gpu_default579m_s0_h200.csv", "depth at 65,536 envs, 579M steps (one H200, 6.5 min)"),
)
BONUS = (  # the program bonus at GPU scale against the depth recipe
    ("curves_gpu_s0_h200.csv", "depth, 16,384 envs, 257M"),
    ("curves_gpu_default65k_s0_h200.csv", "depth, 65,536 envs, 178M (a shorter run)"),
    ("curves_gpu_default579m_s0_h200.csv", "depth, 65,536 envs, 579M"),
    ("curves_gpu_bonus2_s0_h200.csv", "depth + --program-bonus 2, 65,536 envs, 593M"),
    ("curves_gpu_bonus2skip166m_s0_h200.csv", "the same with --program-terms-skip-undo, 166M"),
)
NO_UNDO = (  # the early floor with the program bonus, with and without UNDO in the mask
    ("curves_gpu_default579m_s0_h200.csv", "depth, 65,536 envs, 579M (one H200)"),
    (
        "curves_gpu_earlyfloor145m_s0_h100.csv",
        "early floor + bonus 2, UNDO in reach, 145M (one H100)",
    ),
    (
        "curves_gpu_noundo487m_s0_h100.csv",
        "the same with --disabled-programs undo, 487M (one H100)",
    ),
)
DEFAULT_CPU = (  # the default on the CPU against its constant-rate form and the depth recipe
    ("curves_default_s1_cpu.csv", "the depth recipe, seed 1"),
    ("curves_noundo5_s0_cpu.csv", "constant rate 5e-4, seed 0"),
    ("curves_noundo5_s1_cpu.csv", "constant rate 5e-4, seed 1"),
    ("curves_noundo5_s2_cpu.csv", "constant rate 5e-4, seed 2"),
    ("curves_default25m_cpu.csv", "1e-3 annealed over 25M, seed 0", 0),
    ("curves_default25m_cpu.csv", "1e-3 annealed over 25M, seed 1", 1),
    ("curves_default25m_cpu.csv", "1e-3 annealed over 25M, seed 2", 2),
    ("curves_default.csv", "the default: 1e-3 annealed over a 50-min budget, seed 0", 0),
    ("curves_default.csv", "the default: 1e-3 annealed over a 50-min budget, seed 1", 1),
    ("curves_default.csv", "the default: 1e-3 annealed over a 50-min budget, seed 2", 2),
)
DEFAULT_GPU = (  # the default at GPU scale against its constant-rate form and other recipes
    ("curves_gpu_default579m_s0_h200.csv", "the depth recipe, 579M (one H200)"),
    ("curves_gpu_noundo487m_s0_h100.csv", "early floor + bonus 2, no UNDO, 487M (one H100)"),
    ("curves_gpu_default480m_s0_h100.csv", "default at a constant rate 5e-4, 480M (one H100)"),
    ("curves_gpu_annealed579m_s0_h100.csv", "the default: 1e-3 annealed, 579M (one H100)"),
    ("curves_gpu_default507m_s1_h100.csv", "the default, seed 1: 507M (one H100)", 1),
)


def curves_from_log(log: Path, out: Path) -> int:
    """Write the progress lines of an ``hm-train`` log as a curve CSV; returns the row count."""
    rows = 0
    with open(out, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        for line in log.read_text().splitlines():
            if m := PROGRESS.search(line):
                fields = list(m.groups())
                fields[1], fields[2] = fields[1].replace(",", ""), fields[2].replace(",", "")
                writer.writerow(fields)
                rows += 1
    return rows


def _rows(name: str, seed: int | None) -> list[dict]:
    """The rows of curve CSV ``name`` (in ``parts/``, else beside this script); with ``seed``,
    that seed's rows of a multi-seed CSV of ``hm-bench learn``."""
    path = PARTS / name if (PARTS / name).exists() else HERE / name
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return rows if seed is None else [r for r in rows if int(r["seed"]) == seed]


def _plot(runs, keys, path: Path, title: str, log_x: bool) -> None:
    """One panel per key; ``runs`` holds (CSV name, label) or (CSV name, label, seed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(keys), figsize=(6 * len(keys), 4.2))
    for name, label, *seed in runs:
        rows = _rows(name, seed[0] if seed else None)
        steps = [int(r["env_steps"]) / (1 if log_x else 1e6) for r in rows]
        for ax, (key, ylabel) in zip(axes, keys, strict=True):
            ax.plot(steps, [float(r[key]) for r in rows], label=label, lw=1.2)
            ax.set_ylabel(ylabel)
    for ax in axes:
        ax.set_xscale("log" if log_x else "linear")
        ax.set_xlabel("env steps" if log_x else "env steps (M)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def figures() -> None:
    """Draw ``learning_curve_gpu_h200.png``, ``learning_curve_gpu_bonus2_h200.png``,
    ``learning_curve_gpu_noundo.png``, ``learning_curve_default_vs_depth.png`` and
    ``learning_curve_gpu_default.png``."""
    stage = ("stats/mean_stage", "mean stage (training episodes)")
    ret = ("train/episode_return", "mean training-episode return")
    _plot(SCALE, (ret, stage), HERE / "learning_curve_gpu_h200.png",
          "the depth recipe: CPU scale vs GPU scale (--time-budget on one H200)", True)  # fmt: skip
    programs = ("actions/program_frac", "program fraction of actions (training)")
    _plot(BONUS, (ret, stage, programs), HERE / "learning_curve_gpu_bonus2_h200.png",
          "HackMatrix PPO at GPU scale (one NVIDIA H200, seed 0): training curves", False)  # fmt: skip
    siphons = ("actions/siphon_frac", "siphon fraction of actions (training)")
    _plot(NO_UNDO, (stage, siphons, programs), HERE / "learning_curve_gpu_noundo.png",
          "Without UNDO in the agent's mask (seed 0, 65,536 envs): training curves", False)  # fmt: skip
    _plot(DEFAULT_CPU, (stage, siphons, programs), DOCS / "learning_curve_default_vs_depth.png",
          "The default on the 2-core CPU against 25M steps and other recipes: training curves",
          False)  # fmt: skip
    _plot(DEFAULT_GPU, (stage, siphons, programs), DOCS / "learning_curve_gpu_default.png",
          "The default at GPU scale (65,536 envs, seeds 0 and 1): training curves", False)  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1:2] == ["curves"] and len(sys.argv) == 4:
        print(curves_from_log(Path(sys.argv[2]), Path(sys.argv[3])), "rows")
    elif sys.argv[1:] == ["figures"]:
        figures()
    else:
        sys.exit(__doc__)
