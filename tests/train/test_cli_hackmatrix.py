"""``hm-train`` smoke run on the real HackMatrix env (tiny config), as a fresh clone would run it."""

from __future__ import annotations

import json
import math

import pytest
from hackmatrix_env.constants import PROGRAM_NAMES, REWARD_COMPONENTS
from hackmatrix_train.checkpoint import list_checkpoints
from hackmatrix_train.cli.train import build_parser, config_from_args
from hackmatrix_train.run import run


def _copy_run(run_dir, dest, **config):
    """A copy of a finished run's params export with these config fields changed."""
    sidecar = json.loads((run_dir / "params.json").read_text())
    sidecar["config"].update(config)
    dest.mkdir()
    (dest / "params.msgpack").write_bytes((run_dir / "params.msgpack").read_bytes())
    (dest / "params.json").write_text(json.dumps(sidecar))
    return dest


@pytest.mark.slow  # dominated by compiling the env step (see specs/train.md §9)
def test_hm_train_tiny_on_hackmatrix(tmp_path):
    argv = (
        "--num-envs 8 --num-steps 32 --total-timesteps 512 --log-interval 1 --hidden-dim 16 "
        "--num-layers 1 --num-minibatches 2 --update-epochs 1 --no-wandb "
        f"--max-steps-in-episode 40 --checkpoint-dir {tmp_path} --final-eval-episodes 6"
    ).split()
    cfg, explicit = config_from_args(build_parser().parse_args(argv))
    lines: list[str] = []
    result = run(cfg, explicit, out=lines.append)  # env defaults to HackMatrix
    text = "\n".join(lines)
    assert "compiled in" in text and "update 2/2" in text and "steps/s" in text and "ETA" in text
    assert result["update"] == 2 and result["env_steps"] == 512
    run_dir = tmp_path / "ppo-grid-8x32-s0"  # the default preset: grid encoder
    assert [u for u, _ in list_checkpoints(run_dir)] == [2]
    assert (run_dir / "params.msgpack").exists()
    assert "budget: 512 env steps" in text

    # every run ends with the evaluation protocol: greedy episodes from stage 1, fixed key
    final = json.loads((run_dir / "eval_final.json").read_text())
    assert final == result["final_eval"]
    assert final["episodes"] == 6 and final["policy"] == "greedy" and final["eval_seed"] == 0
    for key in ("return_mean", "stage_distribution", "win_rate", "siphons_per_episode",
                "program_use", "non_undo_programs_per_episode", "distinct_programs_used",
                "stage_completions_by_exit", "stage_completions_by_undo_quirk",
                "episodes_using_the_quirk", "win_rate_without_quirk"):  # fmt: skip
        assert key in final, key
    assert set(final["program_use"]) == set(PROGRAM_NAMES)
    assert sum(int(c) for c in final["stage_distribution"].values()) == 6
    assert "final evaluation" in text and "UNDO quirk" in text

    # the checkpoint keeps the training time; the learning benchmark's protocol applied to the
    # finished run (hm-bench learn --from-runs) is exactly hm-train's own end-of-run evaluation
    meta = json.loads((run_dir / "params.json").read_text())
    assert meta["train_seconds"] == pytest.approx(result["train_seconds"])
    from hackmatrix_bench.learn import from_runs, read_curves

    summary = from_runs([str(run_dir)], tmp_path / "bench", "tiny", None, "cmd")
    assert summary["final"][0]["greedy"] == final
    assert summary["final"][0]["sampled"]["policy"] == "sampled"
    assert summary["env_steps"] == 512 and summary["seeds"] == [0]
    assert summary["final"][0]["env_steps"] == 512
    assert "| 0 | " in (tmp_path / "bench" / "results_tiny.md").read_text()
    # the run's progress.csv holds its curve (one row per logged update), which --from-runs draws
    curve = read_curves(run_dir / "progress.csv")
    assert [(r["update"], r["env_steps"]) for r in curve] == [(1, 256), (2, 512)]
    assert curve[-1]["train/episode_return"] == pytest.approx(
        result["metrics"]["train/episode_return"]
    )
    drawn = read_curves(tmp_path / "bench" / "curves_tiny.csv")
    assert [(r["seed"], r["update"]) for r in drawn] == [(0, 1), (0, 2)]
    assert (tmp_path / "bench" / "learning_curve_tiny.png").stat().st_size > 0
    # a run saved without its own evaluation (--final-eval-episodes 0) gets the protocol's
    # episode count, here shrunk to this run's 6: the same evaluation as hm-train's own
    import hackmatrix_bench.learn as learnbench

    skipped = _copy_run(run_dir, tmp_path / "skipped", final_eval_episodes=0)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(learnbench, "PROTOCOL_EPISODES", 6)
        later = from_runs([str(skipped)], tmp_path / "bench", "skipped", None, "cmd")
    assert later["final"][0]["greedy"] == final and later["config"]["final_eval_episodes"] == 6
    assert "6 greedy episodes" in (tmp_path / "bench" / "results_skipped.md").read_text()
    # a run that stopped short of its planned length (interrupted) is refused, not averaged in
    short = _copy_run(run_dir, tmp_path / "short", total_timesteps=1024)
    with pytest.raises(ValueError, match="stopped at 512 of its 1024 env steps"):
        from_runs([str(short)], tmp_path / "bench", "short", None, "cmd")

    m = result["metrics"]
    # 8 envs x 32 steps per update, episodes capped at 40 steps: some complete every update
    assert m["train/num_episodes"] >= 1
    assert 1 <= m["train/episode_length"] <= 40
    assert m["train/invalid_actions"] == 0.0  # masked policy never takes an invalid action
    # reward/ holds the 15 components per completed episode; they sum to the episode return
    comps = [m[f"reward/{name}"] for name in REWARD_COMPONENTS]
    assert math.isclose(sum(comps), m["train/episode_return"], rel_tol=1e-4, abs_tol=1e-4)
    assert m["reward/step_penalty"] < 0
    assert {f"actions/program/{n}" for n in PROGRAM_NAMES} <= m.keys()
    fracs = m["actions/move_frac"] + m["actions/siphon_frac"] + m["actions/program_frac"]
    assert math.isclose(fracs, 1.0, rel_tol=1e-5)
    assert 1 <= m["stats/mean_stage"] <= m["stats/highest_stage"] <= 8
    assert 0 <= m["stats/win_rate"] <= 1
