"""--time-budget: the run's length is data of the compiled chunk, planned after timing it."""

from __future__ import annotations

import json

import jax
import pytest
from hackmatrix_train import run as run_module
from hackmatrix_train.cli.train import build_parser, config_from_args
from hackmatrix_train.config import TrainConfig, describe_plan, validate
from hackmatrix_train.run import budget_updates, run
from hackmatrix_train.trainer import make_train
from hypothesis import given
from hypothesis import strategies as st
from train.recipes import plain_ppo
from train.train_probes import ProbeParams, ProbeSuite
from train.trees import assert_trees_equal

ENV, PARAMS = ProbeSuite(), ProbeParams()
CFG = plain_ppo(
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

    monkeypatch.setattr(run_module, "budget_updates", fake_budget)
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
    monkeypatch.setattr(run_module, "budget_updates", lambda *a: 4)
    cfg = CFG.replace(time_budget=1.0, checkpoint_dir=str(tmp_path), save_interval=2)
    first = run(cfg, env=ENV, env_params=PARAMS, out=lambda _: None)
    run_dir = first["run_dir"]
    monkeypatch.setattr(
        run_module, "budget_updates", lambda *a: pytest.fail("re-planned on resume")
    )
    args = build_parser().parse_args(["--resume", run_dir, "--rewind", "2", "--no-wandb"])
    again, explicit = config_from_args(args)
    second = run(again, explicit, env=ENV, env_params=PARAMS, out=lambda _: None)
    assert second["update"] == 4
    assert_trees_equal(jax.device_get(second["runner"]), jax.device_get(first["runner"]))


@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_budgets_are_refused(value):
    with pytest.raises(ValueError, match="--time-budget must be > 0"):
        validate(CFG.replace(time_budget=value))


@pytest.mark.parametrize("traced", [False, True])
def test_the_annealed_rate_is_optax_linear_schedule_with_the_length_as_data(traced):
    """--anneal-lr steps exactly as optax's linear schedule over the run's gradient steps,
    whether the length is a Python int or a traced int32 (the compiled chunk's case)."""
    import jax.numpy as jnp
    import optax
    from hackmatrix_train.schedules import make_optimizer

    cfg = CFG.replace(anneal_lr=True, lr=1e-3)  # 3 updates x 2 epochs x 2 minibatches
    reference = optax.chain(
        optax.clip_by_global_norm(cfg.max_grad_norm),
        optax.adam(optax.linear_schedule(cfg.lr, 0.0, 12), eps=1e-5),
    )
    params = {"w": jnp.linspace(-1.0, 1.0, 5)}

    def steps(tx):  # 14 steps in a scan, as the trainer's epochs run them; past the end: 0
        def step(carry, i):
            p, state = carry
            grads = {"w": jnp.sin(p["w"] * (i + 1).astype(jnp.float32))}
            updates, state = tx.update(grads, state, p)
            return (optax.apply_updates(p, updates), state), None

        return jax.lax.scan(step, (params, tx.init(params)), jnp.arange(14))[0][0]

    want = jax.jit(lambda: steps(reference))()
    if traced:
        got = jax.jit(lambda n: steps(make_optimizer(cfg, n)))(jnp.int32(3))
    else:
        got = jax.jit(lambda: steps(make_optimizer(cfg, 3)))()
    assert_trees_equal(got, want)
    with pytest.raises(AssertionError):  # and the length is what it anneals over
        assert_trees_equal(jax.jit(lambda: steps(make_optimizer(cfg, 4)))(), want)


def test_a_budgeted_run_with_lr_annealing_equals_the_fixed_run_of_its_planned_length(
    tmp_path, monkeypatch
):
    """The learning rate anneals over the length the budget plans, as every other schedule."""
    monkeypatch.setattr(run_module, "budget_updates", lambda *a: 5)
    cfg = CFG.replace(anneal_lr=True, time_budget=2.0, checkpoint_dir=str(tmp_path / "a"))
    budgeted = run(cfg, env=ENV, env_params=PARAMS, out=lambda _: None)
    fixed = run(
        CFG.replace(
            anneal_lr=True, total_timesteps=5 * CFG.batch_size, checkpoint_dir=str(tmp_path / "b")
        ),
        env=ENV, env_params=PARAMS, out=lambda _: None,
    )  # fmt: skip
    assert budgeted["update"] == 5
    assert_trees_equal(jax.device_get(budgeted["runner"]), jax.device_get(fixed["runner"]))
    # the length matters: the first 5 updates of an annealed 10-update run step differently
    ten = make_train(CFG.replace(anneal_lr=True, total_timesteps=10 * CFG.batch_size), ENV, PARAMS)
    first_five = ten.run_chunk(ten.init(), 5)[0]
    with pytest.raises(AssertionError):
        assert_trees_equal(
            jax.device_get(first_five.params), jax.device_get(fixed["runner"].params)
        )


def test_cli_flag():
    cfg, explicit = config_from_args(build_parser().parse_args(["--time-budget", "30"]))
    assert cfg.time_budget == 30.0 and "time_budget" in explicit


def test_the_default_is_a_budget_and_an_explicit_length_replaces_it(capsys):
    """``hm-train`` alone trains for the default recipe's budget; ``--total-timesteps`` gives a
    fixed length instead (the budget would otherwise replace it), and asking for both is an
    error rather than a silent choice of one."""
    default, explicit = config_from_args(build_parser().parse_args([]))
    assert default.time_budget == TrainConfig().time_budget == 50.0 and not explicit
    fixed, explicit = config_from_args(build_parser().parse_args(["--total-timesteps", "2M"]))
    assert fixed.time_budget is None and fixed.total_timesteps == 2_000_000
    assert fixed == default.replace(time_budget=None, total_timesteps=2_000_000)
    assert "as many updates as fit" not in describe_plan(fixed)
    assert "as many updates as fit --time-budget 50 min" in describe_plan(default)
    depth = "depth"  # a shipped recipe, by name
    other_recipe, _ = config_from_args(build_parser().parse_args(["--recipe", depth]))
    assert other_recipe.time_budget is None  # a recipe's length replaces the budget too
    budgeted, _ = config_from_args(
        build_parser().parse_args(["--recipe", depth, "--time-budget", "9"])
    )
    assert budgeted.time_budget == 9.0  # unless a budget is given as well
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--total-timesteps", "2M", "--time-budget", "5"])
    assert "not allowed with" in capsys.readouterr().err
