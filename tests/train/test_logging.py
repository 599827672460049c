"""Host logging: wandb key detection without network, graceful wandb failure, console line,
the run's progress.csv."""

from __future__ import annotations

import math

import pytest
from hackmatrix_train import logging as hm_logging


def test_key_from_env_var(monkeypatch, tmp_path):
    monkeypatch.setenv("NETRC", str(tmp_path / "none"))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    assert not hm_logging.has_wandb_key()
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    assert hm_logging.has_wandb_key()


def test_key_from_netrc(monkeypatch, tmp_path):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    rc = tmp_path / "netrc"
    rc.write_text("machine example.com login a password b\n")
    rc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(rc))
    assert not hm_logging.has_wandb_key()
    rc.write_text("machine api.wandb.ai login user password " + "k" * 40 + "\n")
    assert hm_logging.has_wandb_key()
    rc.write_text("machine api.wandb.ai login")  # malformed: no key, no crash
    assert not hm_logging.has_wandb_key()


def test_wandb_failure_degrades_to_console(monkeypatch, tmp_path):
    import wandb

    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "none"))
    monkeypatch.delenv("WANDB_MODE", raising=False)
    seen = {}

    def boom(**kw):
        seen.update(kw)
        raise TimeoutError("init timed out")

    monkeypatch.setattr(wandb, "init", boom)
    with pytest.warns(UserWarning, match="wandb disabled"):
        logger = hm_logging.WandbLogger(True, "hackmatrix", None, "run", {"a": 1})
    assert logger.run is None
    assert seen["mode"] == "offline"  # no key -> offline, never online
    import os

    assert os.environ["WANDB_MODE"] == "offline"
    logger.log({"train/x": 1.0}, step=1)  # no-ops, no exceptions
    logger.log_artifact("nowhere", "n")
    logger.finish()


def test_disabled_logger_never_imports_wandb(monkeypatch):
    logger = hm_logging.WandbLogger(False, "hackmatrix", None, "run", {})
    assert logger.run is None
    logger.log({"x": 1.0}, step=0)


def test_progress_line_and_eta():
    metrics = {
        "train/episode_return": 1.5, "train/episode_length": 20.0, "train/num_episodes": 7,
        "stats/mean_stage": 1.25, "stats/highest_stage": 3.0, "actions/siphon_frac": 0.1,
        "actions/program_frac": 0.05, "train/entropy": 1.2, "train/approx_kl": 0.01,
        "train/clip_frac": 0.1, "train/explained_variance": 0.5,
    }  # fmt: skip
    line = hm_logging.format_progress(10, 40, 327680, 12345.6, 3725.0, metrics)
    for part in ("update 10/40", "steps 327,680", "12,346 steps/s", "ETA 1h02m05s", "stage 1.25/3"):
        assert part in line
    clock = hm_logging.Clock()
    assert math.isnan(clock.eta(100))
    clock.train_seconds, clock.steps = 2.0, 1000
    assert clock.eta(500) == 1.0


def test_progress_csv_keeps_the_curve_of_the_params_a_run_ends_with(tmp_path):
    """One row per logged chunk; a resume keeps the rows up to its update (a rewind drops the
    later ones), a fresh run starts the file again, and a metric missing from a row is blank."""
    import csv

    def rows():
        with open(tmp_path / "run" / hm_logging.PROGRESS_CSV, newline="") as f:
            return list(csv.DictReader(f))

    first = hm_logging.ProgressCSV(tmp_path / "run")
    for update in (1, 2, 3):
        first.log(update, 8 * update, {"train/episode_return": float(update), "stats/x": 0.5})
    assert [r["update"] for r in rows()] == ["1", "2", "3"]
    assert rows()[2] == {"update": "3", "env_steps": "24", "train/episode_return": "3.0",
                         "stats/x": "0.5"}  # fmt: skip
    rewound = hm_logging.ProgressCSV(tmp_path / "run", resume_update=2)
    assert [r["update"] for r in rows()] == ["1", "2"]
    rewound.log(3, 24, {"train/episode_return": -1.0})
    assert [(r["update"], r["train/episode_return"], r["stats/x"]) for r in rows()] == [
        ("1", "1.0", "0.5"), ("2", "2.0", "0.5"), ("3", "-1.0", ""),
    ]  # fmt: skip
    hm_logging.ProgressCSV(tmp_path / "run")  # a fresh run of the same name
    assert rows() == []
