"""``hm-train-learn`` host-side pieces: the curve plot with and without periodic evaluation."""

from __future__ import annotations

import numpy as np
from hackmatrix_train.evaluate import summarize
from hackmatrix_train.learnbench import CURVE_KEYS, EVAL_KEYS, plot_curves


def _rows(with_eval: bool) -> list[dict]:
    rows = []
    for seed in (0, 1):
        for update in (1, 2, 3):
            row = {"tag": "t", "seed": seed, "update": update, "env_steps": update * 1000}
            row.update({k: float(update + seed) for k in CURVE_KEYS})
            if with_eval and update != 2:  # evaluation only every other chunk: gaps in the table
                row.update({f"eval/{k}": float(update) for k in EVAL_KEYS})
                row.update({f"eval_greedy/{k}": float(update) + 0.5 for k in EVAL_KEYS})
            rows.append(row)
    return rows


def test_plot_curves_writes_png_with_and_without_eval(tmp_path):
    rand = {"return_mean": -2.7, "stage_mean": 1.3}
    for with_eval in (False, True):
        path = tmp_path / f"curve_{with_eval}.png"
        plot_curves(_rows(with_eval), rand, path, "test")
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_summary_has_every_eval_key_and_stage_3plus_fraction():
    n = 4
    result = {
        "alive": np.zeros(n, bool),
        "ret": np.array([1.0, 2.0, 3.0, 4.0], np.float32),
        "length": np.full(n, 10),
        "stage": np.array([1, 2, 3, 5]),
        "won": np.zeros(n, bool),
        "actions": np.zeros((n, 28), np.int32),
    }
    s = summarize(result)
    assert set(EVAL_KEYS) <= s.keys()
    assert s["stage_3plus_frac"] == 0.5  # stages 3 and 5 of four episodes
