"""Host-side logging: console progress, the run's ``progress.csv``, and wandb (offline unless an
API key exists; never blocks).

wandb runs online only when an API key is visible locally (``WANDB_API_KEY`` or a netrc entry for
api.wandb.ai), checked without any network call. Otherwise ``WANDB_MODE=offline``. Any wandb
failure (import, init timeout, log error) degrades to console-only logging with a warning.
"""

from __future__ import annotations

import csv
import math
import netrc
import os
import sys
import time
import warnings
from pathlib import Path

WANDB_HOST = "api.wandb.ai"


def has_wandb_key() -> bool:
    """True if a wandb API key is configured locally (env var or netrc); no network."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    try:
        path = os.environ.get("NETRC") or os.path.expanduser("~/.netrc")
        if not os.path.exists(path):
            return False
        auth = netrc.netrc(path).authenticators(WANDB_HOST)
        return bool(auth and auth[2])
    except (OSError, netrc.NetrcParseError):
        return False


def format_duration(seconds: float) -> str:
    if not math.isfinite(seconds) or seconds < 0:
        return "?"
    s = int(seconds)
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


def format_progress(
    update: int, num_updates: int, env_steps: int, sps: float, eta_s: float, metrics: dict
) -> str:
    """One console line per chunk."""
    g = metrics.get
    parts = [
        f"update {update}/{num_updates}",
        f"steps {env_steps:,}",
        f"{sps:,.0f} steps/s",
        f"ETA {format_duration(eta_s)}",
        f"return {g('train/episode_return', float('nan')):.3f}",
        f"len {g('train/episode_length', float('nan')):.1f}",
        f"eps {int(g('train/num_episodes', 0))}",
    ]
    if "stats/mean_stage" in metrics:
        parts.append(f"stage {g('stats/mean_stage'):.2f}/{int(g('stats/highest_stage'))}")
        parts.append(
            f"siphon {g('actions/siphon_frac', 0):.3f} prog {g('actions/program_frac', 0):.3f}"
        )
    nan = float("nan")
    if "train/policy_ce" in metrics:  # a distilling learner's figures (search, expert iteration)
        parts.append(
            f"ce {g('train/policy_ce'):.3f} kl {g('train/target_kl', nan):.4f} "
            f"override {g('train/override_frac', nan):.3f} ev {g('train/explained_variance', nan):.2f}"
        )
    else:
        parts.append(
            f"ent {g('train/entropy', nan):.3f} kl {g('train/approx_kl', nan):.4f} "
            f"clip {g('train/clip_frac', nan):.3f} ev {g('train/explained_variance', nan):.2f}"
        )
    return " | ".join(parts)


class WandbLogger:
    """Thin wrapper: every call is a no-op once wandb is disabled or has failed."""

    def __init__(self, enabled: bool, project: str, entity, name: str, config: dict, run_id=None):
        self.run = None
        self.id = run_id
        if not enabled:
            return
        os.environ.setdefault("WANDB_SILENT", "true")
        online = has_wandb_key() and os.environ.get("WANDB_MODE", "") != "offline"
        if not online:
            os.environ["WANDB_MODE"] = "offline"
        try:
            import wandb

            self._wandb = wandb
            self.run = wandb.init(
                project=project,
                entity=entity,
                name=name,
                id=run_id,
                resume="allow" if run_id else None,
                config=config,
                mode="online" if online else "offline",
                settings=wandb.Settings(init_timeout=30, silent=True, console="off"),
            )
            self.id = self.run.id
            print(f"wandb: {'online' if online else 'offline'} run {self.run.id}", file=sys.stderr)
        except Exception as e:  # never let wandb stop training
            warnings.warn(f"wandb disabled ({type(e).__name__}: {e})", stacklevel=2)
            self.run = None

    def log(self, metrics: dict, step: int) -> None:
        if self.run is None:
            return
        try:
            self.run.log(metrics, step=step)
        except Exception as e:
            warnings.warn(f"wandb log failed, disabling: {e}", stacklevel=2)
            self.run = None

    def log_artifact(self, path: str, name: str) -> None:
        if self.run is None:
            return
        try:
            art = self._wandb.Artifact(name, type="model")
            art.add_file(path)
            self.run.log_artifact(art)
        except Exception as e:
            warnings.warn(f"wandb artifact upload failed: {e}", stacklevel=2)

    def finish(self) -> None:
        if self.run is None:
            return
        try:
            self.run.finish()
        except Exception as e:
            warnings.warn(f"wandb finish failed: {e}", stacklevel=2)
        self.run = None


PROGRESS_CSV = "progress.csv"


class ProgressCSV:
    """``<run_dir>/progress.csv``: the metrics of every logged chunk, one row each.

    A run's curves then exist without wandb: ``hm-bench learn --from-runs`` draws them, and any
    CSV reader plots them. Columns: ``update``, ``env_steps``, then the logged metrics by their
    wandb names. A resumed run keeps the rows up to the update it resumes from (``--rewind``
    goes back), so the file is always the curve of the params it ends with; a fresh run in the
    same directory starts the file again, as its checkpoints replace the old ones.
    """

    def __init__(self, run_dir: Path, resume_update: int | None = None):
        self.path = Path(run_dir) / PROGRESS_CSV
        self.fields: list[str] | None = None
        kept: list[dict] = []
        if resume_update is not None and self.path.exists():
            with open(self.path, newline="") as f:
                reader = csv.DictReader(f)
                self.fields = list(reader.fieldnames or []) or None
                kept = [r for r in reader if int(r["update"]) <= resume_update]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "w", newline="") as f:
            if self.fields:
                w = csv.DictWriter(f, fieldnames=self.fields)
                w.writeheader()
                w.writerows(kept)

    def log(self, update: int, env_steps: int, metrics: dict) -> None:
        row = {"update": update, "env_steps": env_steps, **metrics}
        new = self.fields is None
        if new:
            self.fields = list(row)
        with open(self.path, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=self.fields, restval="", extrasaction="ignore")
            if new:
                w.writeheader()
            w.writerow(row)


class Clock:
    """Wall-clock bookkeeping for steps/s (compile excluded) and ETA."""

    def __init__(self):
        self.train_seconds = 0.0
        self.steps = 0
        self._t = None

    def start(self):
        self._t = time.perf_counter()

    def stop(self, steps: int) -> float:
        dt = time.perf_counter() - self._t
        self.train_seconds += dt
        self.steps += steps
        return steps / dt if dt > 0 else float("nan")

    def eta(self, remaining_steps: int) -> float:
        if self.steps == 0:
            return float("nan")
        return remaining_steps * self.train_seconds / self.steps
