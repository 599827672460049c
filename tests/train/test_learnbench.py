"""``hm-bench learn``: the curve plot, the merging of seeds' summaries,
and a tiny benchmark end to end."""

from __future__ import annotations

import numpy as np
import pytest
from hackmatrix_bench.learn import ALGO_NAMES, CURVE_KEYS, EVAL_KEYS, curve_keys, plot_curves
from hackmatrix_train.evaluate import summarize


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


def test_curve_labels_name_the_trainer_that_made_them():
    assert set(ALGO_NAMES) == {"ppo", "search"}  # hm-train's, and the search trainer's records
    for with_eval in (False, True):
        rows = _rows(with_eval)
        ppo_ret, ppo_stage = curve_keys(rows, "ppo")
        search_ret, search_stage = curve_keys(rows, "search")
        assert [k for k, _ in ppo_ret] == [k for k, _ in search_ret]  # the same series
        assert len(ppo_ret) == (3 if with_eval else 1) and len(ppo_stage) == len(ppo_ret)
        assert all(label.startswith("PPO,") for _, label in ppo_ret + ppo_stage)
        assert all(label.startswith("search trainer,") for _, label in search_ret + search_stage)
        assert "the search plays" in search_ret[0][1] and "search" not in ppo_ret[0][1]


def test_summary_has_every_eval_key_and_stage_3plus_fraction():
    n = 4
    result = {
        "alive": np.zeros(n, bool),
        "ret": np.array([1.0, 2.0, 3.0, 4.0], np.float32),
        "length": np.full(n, 10),
        "stage": np.array([1, 2, 3, 5]),
        "won": np.zeros(n, bool),
        "actions": np.zeros((n, 28), np.int32),
        # the evaluator's economy tallies (evaluate.tally_step)
        "block_siphons": np.array([0, 1, 2, 1]),
        "data_blocks": np.array([0, 1, 1, 1]),
        "program_blocks": np.array([0, 0, 1, 0]),
        "programs_acquired": np.array([0, 0, 1, 0]),
    }
    s = summarize(result)
    assert set(EVAL_KEYS) <= s.keys()
    assert s["block_siphons_per_episode"] == 1.0 and s["programs_acquired_per_episode"] == 0.25
    assert s["stage_3plus_frac"] == 0.5  # stages 3 and 5 of four episodes


def _summary(seed: int, ret: float, **config) -> dict:
    ev = {
        "return_mean": ret, "stage_mean": 3.0 + seed, "stage_3plus_frac": 0.5,
        "stage_5plus_frac": 0.25, "win_rate": 0.0, "siphons_per_episode": 3.0,
        "programs_per_episode": 1.0, "non_undo_programs_per_episode": 0.5,
        "distinct_programs_used": 4 + seed, "stage_completions_by_exit": 10,
        "stage_completions_by_undo_quirk": seed,
    }  # fmt: skip
    return {
        "tag": f"s{seed}", "config": {"seed": seed, "final_eval_episodes": 256,
                                      "final_eval_seed": 0, "lr": 5e-4, **config},
        "seeds": [seed], "env_steps": 1000, "random": dict(ev, return_mean=-3.0),
        "final": [{"seed": seed, "greedy": ev, "sampled": ev, "train_seconds": 60.0}],
        "command": "uv run hm-bench learn",
    }  # fmt: skip


def test_combine_merges_seeds_into_one_table(tmp_path):
    import json

    from hackmatrix_bench.learn import combine

    paths = []
    for seed, ret in ((0, 8.0), (1, 10.0)):
        path = tmp_path / f"summary_s{seed}.json"
        path.write_text(json.dumps(_summary(seed, ret)))
        paths.append(str(path))
    out = tmp_path / "results"
    summary = combine(paths, out, "both", "uv run hm-bench learn --combine a b")
    assert summary["seeds"] == [0, 1]
    assert summary["greedy_return"]["mean"] == 9.0 and summary["greedy_return"]["per_seed"] == [
        8,
        10,
    ]
    table = (out / "results_both.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert any(r.startswith("| 0 | +8.00") for r in rows)
    assert any(r.startswith("| 1 | +10.00") for r in rows)
    assert any(r.startswith("| **mean** | +9.00") and "20 / 1 (sum)" in r for r in rows)
    assert any(r.startswith("| random masked | -3.00") for r in rows)
    saved = json.loads((out / "summary_both.json").read_text())
    assert saved["combined_from"] == ["summary_s0.json", "summary_s1.json"]
    assert saved["command"] == "uv run hm-bench learn --combine a b"
    assert saved["commands_combined"] == ["uv run hm-bench learn"] * 2
    assert "Merged from runs made by:" in table


def test_combine_refuses_other_configs_and_repeated_seeds(tmp_path):
    import json

    from hackmatrix_bench.learn import combine

    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    a.write_text(json.dumps(_summary(0, 1.0)))
    b.write_text(json.dumps(_summary(1, 1.0, lr=1e-3)))
    c.write_text(json.dumps(_summary(0, 2.0)))
    with pytest.raises(ValueError, match="differ in \\['lr'\\]"):
        combine([str(a), str(b)], tmp_path / "o", "x")
    with pytest.raises(ValueError, match="seed appears twice"):
        combine([str(a), str(c)], tmp_path / "o", "x")


def test_combine_ignores_bookkeeping_fields_only(tmp_path):
    import json

    from hackmatrix_bench.learn import BOOKKEEPING_FIELDS, combine

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_summary(0, 1.0, run_name="x", checkpoint_dir="/a", log_interval=10)))
    b.write_text(json.dumps(_summary(1, 3.0, run_name="y", checkpoint_dir="/b", log_interval=5)))
    assert combine([str(a), str(b)], tmp_path / "o", "x")["greedy_return"]["mean"] == 2.0
    # what changes learning is never bookkeeping
    assert (
        not {"lr", "total_timesteps", "num_envs", "network", "explore_floor"} & BOOKKEEPING_FIELDS
    )
    b.write_text(json.dumps(_summary(1, 3.0, run_name="y", total_timesteps=5)))
    with pytest.raises(ValueError, match="total_timesteps"):
        combine([str(a), str(b)], tmp_path / "o", "x")


def test_combine_reads_a_field_missing_from_an_older_config_as_its_default(tmp_path):
    import json

    from hackmatrix_bench.learn import combine
    from hackmatrix_train.config import TrainConfig

    old, same, other = tmp_path / "old.json", tmp_path / "same.json", tmp_path / "other.json"
    old.write_text(json.dumps(_summary(0, 1.0)))  # saved before explore_floor_ramp existed
    ramp_off = TrainConfig().explore_floor_ramp
    same.write_text(json.dumps(_summary(1, 3.0, explore_floor_ramp=ramp_off)))
    other.write_text(json.dumps(_summary(1, 3.0, explore_floor_ramp=ramp_off + 0.1)))
    assert combine([str(old), str(same)], tmp_path / "o", "x")["seeds"] == [0, 1]
    with pytest.raises(ValueError, match="explore_floor_ramp"):
        combine([str(old), str(other)], tmp_path / "o", "x")


def test_from_runs_refuses_missing_runs_with_a_clear_error(tmp_path, capsys):
    from hackmatrix_bench.learn import main

    with pytest.raises(SystemExit) as e:
        main(["--from-runs", str(tmp_path / "nope"), "--out", str(tmp_path)])
    assert e.value.code == 2
    assert "nope" in capsys.readouterr().err


def test_combine_takes_budgeted_seeds_of_other_lengths_as_one_config(tmp_path):
    """Under a time budget each run plans its own length from its measured speed: the planned
    ``total_timesteps`` is then no learning field, and each seed's steps reach the table."""
    import json

    from hackmatrix_bench.learn import combine

    paths = []
    for seed, steps in ((0, 52_690_944), (1, 51_798_016)):
        summary = _summary(seed, 1.0, time_budget=55.0, total_timesteps=steps)
        summary["env_steps"] = steps
        path = tmp_path / f"summary_s{seed}.json"
        path.write_text(json.dumps(summary))
        paths.append(str(path))
    merged = combine(paths, tmp_path / "o", "budget")
    assert merged["env_steps"] == [52_690_944, 51_798_016]
    assert [f["env_steps"] for f in merged["final"]] == merged["env_steps"]
    text = (tmp_path / "o" / "results_budget.md").read_text()
    assert "a time budget of 55 min per seed" in text and "52.7M, 51.8M env steps" in text
    rows = [line for line in text.splitlines() if line.startswith("| 0 | ")]
    assert rows and "| 52.7M | 1 |" in rows[0]  # the seed's steps, then its minutes
    # the budget itself is a learning field, and so is the length of fixed-length runs
    other = _summary(2, 1.0, time_budget=30.0, total_timesteps=51_798_016)
    (tmp_path / "other.json").write_text(json.dumps(other))
    with pytest.raises(ValueError, match="time_budget"):
        combine([paths[0], str(tmp_path / "other.json")], tmp_path / "o", "x")


def test_runs_of_other_explicit_lengths_are_one_config_only_when_asked(monkeypatch, tmp_path):
    """Fixed-length runs of other lengths are other configs, unless ``--lengths-may-differ``
    says each was given its own length; every other learning field must still agree."""
    from hackmatrix_bench import learn as learnbench

    short, long = (_summary(s, 1.0, total_timesteps=n)["config"] for s, n in ((0, 10), (1, 20)))
    with pytest.raises(ValueError, match="differ in \\['total_timesteps'\\]"):
        learnbench.check_same_config([short, long], "--from-runs")
    learnbench.check_same_config([short, long], "--from-runs", lengths_may_differ=True)
    other_rate = {**long, "lr": 1e-3}
    with pytest.raises(ValueError, match="differ in \\['lr'\\]"):
        learnbench.check_same_config([short, other_rate], "--from-runs", lengths_may_differ=True)
    seen = []
    monkeypatch.setattr(learnbench, "from_runs", lambda *args: seen.append(args[-1]))
    for flag, expected in (([], False), (["--lengths-may-differ"], True)):
        assert learnbench.main(["--from-runs", "a", "--out", str(tmp_path), *flag]) == 0
        assert seen.pop() is expected


def test_the_table_gives_one_length_for_equal_seeds(tmp_path):
    import json

    from hackmatrix_bench.learn import combine

    paths = []
    for seed in (0, 1):
        path = tmp_path / f"summary_s{seed}.json"
        path.write_text(json.dumps(_summary(seed, 1.0)))
        paths.append(str(path))
    merged = combine(paths, tmp_path / "o", "fixed")
    assert merged["env_steps"] == 1000
    text = (tmp_path / "o" / "results_fixed.md").read_text()
    assert "1,000 env steps per seed, seeds [0, 1]" in text and "time budget" not in text


@pytest.mark.slow  # dominated by compiling the env step (see specs/train.md §9)
def test_the_benchmark_trains_each_seed_for_its_own_budgeted_length(tmp_path, monkeypatch):
    """``hm-bench learn`` under ``--time-budget`` plans each seed's length with the trainer's
    probe (here: 1 update for seed 0, 2 for seed 1), trains and evaluates each seed for that
    length, and writes the outputs and checkpoints that ``--from-runs`` reads back."""
    import json

    from hackmatrix_bench.learn import from_runs, main, read_curves
    from hackmatrix_train import run as run_module

    planned = iter([1, 2])
    monkeypatch.setattr(run_module, "budget_updates", lambda *_: next(planned))
    out, ckpts = tmp_path / "results", tmp_path / "ckpt"
    argv = (
        f"--seeds 0 1 --out {out} --tag tiny --save-checkpoints {ckpts} --time-budget 5 "
        "--num-envs 8 --num-steps 16 --log-interval 1 --hidden-dim 16 --num-layers 1 "
        "--num-minibatches 2 --update-epochs 1 --network mlp --max-steps-in-episode 30 "
        "--final-eval-episodes 4 --cpu-devices 1"  # the test process already has its devices
    ).split()
    assert main(argv) == 0
    batch = 8 * 16
    summary = json.loads((out / "summary_tiny.json").read_text())
    assert summary["env_steps"] == [batch, 2 * batch] and summary["seeds"] == [0, 1]
    assert summary["config"]["time_budget"] == 5.0
    for final in summary["final"]:
        assert final["greedy"]["episodes"] == 4 and final["greedy"]["policy"] == "greedy"
        assert final["steps_per_second"] > 0
    rows = read_curves(out / "curves_tiny.csv")
    assert [(r["seed"], r["env_steps"]) for r in rows] == [(0, batch), (1, batch), (1, 2 * batch)]
    assert (out / "learning_curve_tiny.png").stat().st_size > 0
    text = (out / "results_tiny.md").read_text()
    assert "a time budget of 5 min per seed" in text
    # the saved checkpoints are each seed's own run: its seed and the length it trained
    again = from_runs(
        [str(ckpts / "tiny_seed0"), str(ckpts / "tiny_seed1")], tmp_path / "again", "again",
        None, "cmd",
    )  # fmt: skip
    assert again["env_steps"] == summary["env_steps"] and again["seeds"] == [0, 1]
    for ours, theirs in zip(summary["final"], again["final"], strict=True):
        assert theirs["greedy"]["return_mean"] == pytest.approx(ours["greedy"]["return_mean"])


def test_a_search_run_gets_its_search_table_and_aggregate(tmp_path):
    """A search trainer's seeds carry a ``search`` evaluation: aggregated and tabled apart."""
    from hackmatrix_bench.learn import aggregate, write_outputs

    summary = _summary(0, 8.0, algo="search")
    final = summary["final"][0]
    final["env_steps"] = 1000
    search = dict(final["greedy"], return_mean=20.0, win_rate=0.25)
    final["search"] = {**search, "search": {"num_simulations": 8, "mode": "honest"}}
    agg = aggregate(summary["final"])
    assert agg["search_return"]["mean"] == 20.0 and agg["greedy_return"]["mean"] == 8.0
    write_outputs(summary, [], tmp_path, "search")
    table = (tmp_path / "results_search.md").read_text()
    head, _, tail = table.partition("With its search (8 simulations per move, honest")
    assert tail and any(r.startswith("| 0 | +20.00") for r in tail.splitlines())
    assert not any(r.startswith("| 0 | +20.00") for r in head.splitlines())
