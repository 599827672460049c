"""hm-eval's front door: with no checkpoint it scores the shipped agent, ``--random`` needs none,
the summary prints as an aligned table (no Python dict), and the commands search with the play
settings, not with the run's teacher."""

from __future__ import annotations

import json

from hackmatrix_train.cli.evaluate import main as eval_main
from hackmatrix_train.config import disabled_actions
from hackmatrix_train.policy import (
    SHIPPED_POLICY,
    evaluate_checkpoint,
    load_policy,
    search_config,
    shipped_policy,
)
from hackmatrix_train.search_config import SearchConfig, num_determinizations

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


def test_the_commands_search_with_the_play_settings_not_the_runs_teacher():
    """The shipped agent's run searched as its teacher (every legal action considered, 2
    trees); hm-eval, hm-watch and hm-play search with ``SearchConfig``'s settings (2
    considered, a tree per 8 simulations) in the run's units, and a flag overrides them."""
    policy = load_policy(None)
    teacher = policy.cfg.search
    assert (teacher.max_num_considered_actions, teacher.determinizations) == (28, 2)
    for sims in (8, 32):
        cfg = search_config(policy, num_simulations=sims)
        assert cfg.max_num_considered_actions == SearchConfig().max_num_considered_actions == 2
        assert num_determinizations(cfg) == sims // 8 and cfg.num_simulations == sims
        assert cfg.gamma == policy.cfg.gamma and cfg.program_bonus == 0.0
        assert cfg.disabled == tuple(int(a) for a in disabled_actions(policy.cfg)) != ()
        assert cfg.max_steps_in_episode == int(policy.env_params.max_steps_in_episode)
    flagged = search_config(policy, num_simulations=8, max_num_considered_actions=28,
                            determinizations=2)  # fmt: skip
    assert (flagged.max_num_considered_actions, num_determinizations(flagged)) == (28, 2)
