"""--time-budget: the run's length is data of the compiled chunk, planned after timing it."""

from __future__ import annotations

import json

import jax
import pytest
from hackmatrix_train import cli
from hackmatrix_train.cli import budget_updates, build_parser, config_from_args, run
from hackmatrix_train.config import TrainConfig, validate
from hackmatrix_train.loop import make_train
from hypothesis import given
from hypothesis import strategies as st
from train.train_probes import ProbeParams, ProbeSuite
from train.trees import assert_trees_equal

ENV, PARAMS = ProbeSuite(), ProbeParams()
CFG = TrainConfig(
    num_envs=8, num_steps=8, total_timesteps=8 * 8 * 50, num_minibatches=2, update_epochs=2,
    hidden_dim=16, num_layers=1, log_interval=2, no_wandb=True, seed=3, ent_coef=0.1,
    ent_coef_end=0.0, final_eval_episodes=0,
)  # fmt: skip


@given(
    budget=st.floats(1.0, 1e5),
    elapsed=st.floats(0.0, 2e5),
    sps=st.floats(1.0, 1e7),
    batch=st.integers(1, 1 << 20),
)
def test_budget_updates_fit_the_time_left(budget, elapsed, sps, batch):
    updates = budget_updates(budget, elapsed, sps, batch)
    left = max(budget - elapsed, 0.0)
    assert updates >= 1
    if updates > 1:  # the planned steps fit the seconds left, and one more update would not
        assert updates * batch / sps <= left * (1 + 1e-9)
    assert (updates + 1) * batch / sps > left * (1 - 1e-9)


def test_the_run_length_is_data_of_the_compiled_chunk():
    """set_num_updates changes the schedules (here the entropy coefficient's anneal) with no
    new compilation."""
    trainer = make_train(CFG.replace(total_timesteps=8 * 8 * 4, log_interval=1), ENV, PARAMS)
    runner = trainer.init()
    compiled = trainer.compile(runner)
    _, m4 = trainer.run_chunk(trainer.run_chunk(runner, 2)[0], 1)  # update 2 of 4: half-way
    trainer.set_num_updates(8)
    _, m8 = trainer.run_chunk(trainer.run_chunk(runner, 2)[0], 1)  # update 2 of 8: a quarter
    assert trainer.compile(runner) is compiled
    assert float(m4["train/ent_coef"]) == pytest.approx(0.05)
    assert float(m8["train/ent_coef"]) == pytest.approx(0.075)
    assert trainer.cfg.total_timesteps == 8 * trainer.cfg.batch_size
    with pytest.raises(ValueError, match="at least one update"):
        trainer.set_num_updates(0)


def test_a_budgeted_run_equals_the_fixed_run_of_its_planned_length(tmp_path, monkeypatch):
    planned = []

    def fake_budget(budget_s, elapsed_s, sps, batch):
        planned.append((budget_s, elapsed_s, sps, batch))
        return 5

    monkeypatch.setattr(cli, "budget_updates", fake_budget)
    lines = []
    cfg = CFG.replace(time_budget=2.0, checkpoint_dir=str(tmp_path / "a"))
    budgeted = run(cfg, env=ENV, env_params=PARAMS, out=lines.append)
    (budget_s, elapsed_s, sps, batch) = planned[0]
    assert budget_s == 120.0 and batch == CFG.batch_size and sps > 0 and elapsed_s > 0
    assert budgeted["update"] == 5 and budgeted["env_steps"] == 5 * CFG.batch_size
    assert any(line.startswith("time budget 2 min:") for line in lines)
    saved = json.loads(next((tmp_path / "a").glob("*/params.json")).read_text())["config"]
    assert saved["total_timesteps"] == 5 * CFG.batch_size and saved["time_budget"] == 2.0

    fixed = run(
        CFG.replace(total_timesteps=5 * CFG.batch_size, checkpoint_dir=str(tmp_path / "b")),
        env=ENV, env_params=PARAMS, out=lambda _: None,
    )  # fmt: skip
    assert_trees_equal(jax.device_get(budgeted["runner"]), jax.device_get(fixed["runner"]))


def test_a_resumed_budgeted_run_keeps_its_planned_length(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "budget_updates", lambda *a: 4)
    cfg = CFG.replace(time_budget=1.0, checkpoint_dir=str(tmp_path), save_interval=2)
    first = run(cfg, env=ENV, env_params=PARAMS, out=lambda _: None)
    run_dir = first["run_dir"]
    monkeypatch.setattr(cli, "budget_updates", lambda *a: pytest.fail("re-planned on resume"))
    args = build_parser().parse_args(["--resume", run_dir, "--rewind", "2", "--no-wandb"])
    again, explicit = config_from_args(args)
    second = run(again, explicit, env=ENV, env_params=PARAMS, out=lambda _: None)
    assert second["update"] == 4
    assert_trees_equal(jax.device_get(second["runner"]), jax.device_get(first["runner"]))


@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_budgets_are_refused(value):
    with pytest.raises(ValueError, match="--time-budget must be > 0"):
        validate(CFG.replace(time_budget=value))


def test_budget_and_lr_annealing_are_refused_together():
    with pytest.raises(ValueError, match="--anneal-lr"):
        validate(CFG.replace(time_budget=5.0, anneal_lr=True))
    trainer = make_train(CFG.replace(anneal_lr=True), ENV, PARAMS)
    with pytest.raises(ValueError, match="--anneal-lr"):
        trainer.set_num_updates(3)


def test_cli_flag():
    cfg, explicit = config_from_args(build_parser().parse_args(["--time-budget", "55"]))
    assert cfg.time_budget == 55.0 and "time_budget" in explicit
    assert config_from_args(build_parser().parse_args([]))[0].time_budget is None
