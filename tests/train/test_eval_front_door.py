"""hm-eval's front door: with no checkpoint it scores the shipped agent, ``--random`` needs none,
and the summary prints as an aligned table (no Python dict)."""

from __future__ import annotations

import json

from hackmatrix_train.cli.evaluate import main as eval_main
from hackmatrix_train.policy import SHIPPED_POLICY, evaluate_checkpoint, shipped_policy

EPISODES, MAX_STEPS = 3, 25


def _eval(args, tmp_path, capsys) -> tuple[dict, str]:
    out = tmp_path / "summary.json"
    argv = [
        "--episodes",
        str(EPISODES),
        "--max-steps-in-episode",
        str(MAX_STEPS),
        "--json",
        str(out),
    ]
    assert eval_main([*argv, *args]) == 0
    return json.loads(out.read_text()), capsys.readouterr().out


def test_no_checkpoint_evaluates_the_shipped_agent(tmp_path, capsys):
    summary, text = _eval([], tmp_path, capsys)
    assert summary["checkpoint"].endswith(SHIPPED_POLICY) and summary["policy"] == "greedy"
    direct = evaluate_checkpoint(str(shipped_policy()), EPISODES, max_steps=MAX_STEPS)
    for key in ("return_mean", "length_mean", "stage_distribution", "disabled_programs"):
        assert summary[key] == direct[key], key
    assert "{" not in text and "wins by the exit" in text and SHIPPED_POLICY in text
    header = text.splitlines()[2]
    assert header.split() == ["greedy"]


def test_random_needs_no_checkpoint(tmp_path, capsys):
    summary, text = _eval(["--random"], tmp_path, capsys)
    assert summary["policy"] == "random" and summary["checkpoint"] is None
    assert summary["disabled_programs"] == [] and summary["update"] is None
    assert summary["episodes"] == EPISODES and "no checkpoint" in text
