"""Host logging: wandb key detection without network, graceful wandb failure, console line."""

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
    wandb = pytest.importorskip("wandb")
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
