"""Checkpoints: exact resume (also through hm-train's loop and Ctrl+C), corruption, mismatch."""

from __future__ import annotations

import csv
import json

import jax
import pytest
from hackmatrix_train import checkpoint as ckpt
from hackmatrix_train import trainer as trainer_module
from hackmatrix_train.cli.train import build_parser, config_from_args
from hackmatrix_train.policy import evaluate_checkpoint
from hackmatrix_train.run import run
from hackmatrix_train.trainer import make_train
from train.recipes import plain_ppo
from train.train_probes import ProbeParams, ProbeSuite
from train.trees import assert_trees_equal

ENV, PARAMS = ProbeSuite(), ProbeParams()
CFG = plain_ppo(
    num_envs=8, num_steps=8, total_timesteps=8 * 8 * 4, num_minibatches=2, update_epochs=2,
    hidden_dim=16, num_layers=1, log_interval=1, no_wandb=True, seed=7,
)  # fmt: skip


@pytest.fixture(scope="module")
def reference():
    """Four updates straight through, and the trainer that ran them."""
    trainer = make_train(CFG, ENV, PARAMS)
    runner, _ = trainer.run_chunk(trainer.init(), 4)
    return trainer, jax.device_get(runner)


def test_save_load_resume_is_exact(reference, tmp_path):
    trainer, final = reference
    half, _ = trainer.run_chunk(trainer.init(), 2)
    path = ckpt.save_checkpoint(tmp_path, half, CFG.to_dict(), {"run_name": "t"})
    loaded, meta = ckpt.load_checkpoint(path, trainer.abstract_runner())
    assert meta["update"] == 2
    assert_trees_equal(loaded, half)
    resumed, _ = trainer.run_chunk(trainer.place(loaded), 2)
    assert int(resumed.update) == 4
    assert_trees_equal(resumed, final)


def test_cli_interrupt_then_resume_is_exact(reference, tmp_path, monkeypatch):
    _, final = reference
    calls = []
    real = trainer_module.Trainer.run_chunk

    def interrupt_on_third(self, runner, n):
        calls.append(n)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, runner, n)

    monkeypatch.setattr(trainer_module.Trainer, "run_chunk", interrupt_on_third)
    cfg = CFG.replace(checkpoint_dir=str(tmp_path))
    lines = []
    first = run(cfg, env=ENV, env_params=PARAMS, out=lines.append)
    assert first["interrupted"] and first["update"] == 2
    assert any("interrupt" in line for line in lines)
    run_dir = tmp_path / "ppo-mlp-8x8-s7"
    assert [u for u, _ in ckpt.list_checkpoints(run_dir)] == [2]

    calls.clear()
    monkeypatch.setattr(
        trainer_module.Trainer, "run_chunk", lambda self, r, n: calls.append(n) or real(self, r, n)
    )
    args = build_parser().parse_args(["--resume", str(run_dir), "--no-wandb"])
    cfg2, explicit = config_from_args(args)
    second = run(cfg2, explicit, env=ENV, env_params=PARAMS, out=lines.append)
    assert sum(calls) == 2  # only the remaining updates
    assert second["update"] == 4 and not second["interrupted"]
    with open(run_dir / "progress.csv", newline="") as f:  # one curve across the resume
        assert [int(r["update"]) for r in csv.DictReader(f)] == [1, 2, 3, 4]
    assert_trees_equal(jax.device_get(second["runner"]), final)
    # the params export holds the final params
    params, meta = ckpt.load_params(run_dir, template=final.params)
    assert meta["update"] == 4
    assert_trees_equal(params, final.params)

    # hm-eval on the export: every episode of the probe suite ends within 4 steps
    summary = evaluate_checkpoint(run_dir, episodes=64, env=ENV, env_params=PARAMS)
    assert summary["episodes"] == 64 and summary["unfinished"] == 0
    assert 1.0 <= summary["length_mean"] <= 4.0
    assert summary["policy"] == "greedy" and summary["update"] == 4

    # wrap_network (diagnostics): the wrapped apply is the one evaluated, on the loaded params
    class Spy:
        def __init__(self, net):
            self.net, self.calls = net, 0

        def apply(self, params, obs):
            self.calls += 1
            return self.net.apply(params, obs)

    spies = []
    wrapped = evaluate_checkpoint(
        run_dir, episodes=64, env=ENV, env_params=PARAMS,
        wrap_network=lambda net: spies.append(Spy(net)) or spies[-1],
    )  # fmt: skip
    assert len(spies) == 1 and spies[0].calls > 0
    assert wrapped == summary


def test_resume_rejects_changed_shape_flags(reference, tmp_path):
    _, final = reference
    ckpt.save_checkpoint(tmp_path / "r", final, CFG.to_dict(), {"run_name": "r"})
    args = build_parser().parse_args(["--resume", str(tmp_path / "r"), "--hidden-dim", "32"])
    cfg, explicit = config_from_args(args)
    with pytest.raises(ValueError, match="--hidden-dim"):
        run(cfg, explicit, env=ENV, env_params=PARAMS, out=lambda s: None)


def test_mismatched_checkpoint_gives_clear_error(reference, tmp_path):
    _, final = reference
    path = ckpt.save_checkpoint(tmp_path, final, CFG.to_dict(), {})
    other = make_train(CFG.replace(hidden_dim=32), ENV, PARAMS)
    with pytest.raises(ckpt.CheckpointError, match=r"expects .*hidden-dim"):
        ckpt.load_checkpoint(path, other.abstract_runner())
    fewer = make_train(CFG.replace(num_envs=16), ENV, PARAMS)
    with pytest.raises(ckpt.CheckpointError, match="num-envs"):
        ckpt.load_checkpoint(path, fewer.abstract_runner())


def test_corrupt_checkpoint_gives_clear_error(reference, tmp_path):
    trainer, final = reference
    path = ckpt.save_checkpoint(tmp_path, final, CFG.to_dict(), {})
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    path.write_bytes(bytes(blob))
    with pytest.raises(ckpt.CheckpointError, match="corrupt"):
        ckpt.load_checkpoint(path, trainer.abstract_runner())
    path.write_bytes(b"")
    with pytest.raises(ckpt.CheckpointError, match="corrupt"):
        ckpt.load_checkpoint(path, trainer.abstract_runner())
    path.with_suffix(".json").write_text("{not json")
    with pytest.raises(ckpt.CheckpointError, match="corrupt sidecar"):
        ckpt.load_checkpoint(path, trainer.abstract_runner())
    with pytest.raises(ckpt.CheckpointError, match=r"no such file or directory: .*nowhere"):
        ckpt.resolve_checkpoint(tmp_path / "nowhere")
    for load in (ckpt.load_params, ckpt.read_meta):
        with pytest.raises(ckpt.CheckpointError, match=r"no such file or directory: .*nowhere"):
            load(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ckpt.CheckpointError, match="no checkpoint in"):
        ckpt.resolve_checkpoint(tmp_path / "empty")


def test_rewind_and_pruning(reference, tmp_path):
    trainer, _ = reference
    r = trainer.init()
    for _ in range(4):
        r, _ = trainer.run_chunk(r, 1)
        ckpt.save_checkpoint(tmp_path, r, CFG.to_dict(), {}, keep=3)
    assert [u for u, _ in ckpt.list_checkpoints(tmp_path)] == [2, 3, 4]
    assert ckpt.resolve_checkpoint(tmp_path).name == "ckpt_00000004.msgpack"
    assert ckpt.resolve_checkpoint(tmp_path, rewind=3).name == "ckpt_00000003.msgpack"
    with pytest.raises(ckpt.CheckpointError, match="at or before update 1"):
        ckpt.resolve_checkpoint(tmp_path, rewind=1)
    meta = json.loads((tmp_path / "ckpt_00000004.json").read_text())
    assert meta["config"]["hidden_dim"] == 16 and meta["format"] == ckpt.FORMAT


def test_init_params_warm_starts_with_a_fresh_optimizer(reference, tmp_path):
    """--init-params: the trained params, but update 0, a fresh Adam and this run's envs/keys."""
    _, final = reference
    ckpt.save_checkpoint(tmp_path / "src", final, CFG.to_dict(), {"run_name": "src"})
    args = build_parser().parse_args(
        ["--init-params", str(tmp_path / "src"), "--seed", "3", "--no-wandb",
         "--checkpoint-dir", str(tmp_path / "out")]
    )  # fmt: skip
    cfg, explicit = config_from_args(args)
    cfg = CFG.replace(init_params=cfg.init_params, seed=3, checkpoint_dir=cfg.checkpoint_dir)
    seen = []
    real = trainer_module.Trainer.run_chunk

    def spy(self, runner, n):
        if not seen:
            seen.append(jax.device_get(runner))
        return real(self, runner, n)

    lines = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(trainer_module.Trainer, "run_chunk", spy)
        summary = run(cfg, explicit, env=ENV, env_params=PARAMS, out=lines.append)
    start = seen[0]
    assert_trees_equal(start.params, final.params)
    fresh = make_train(cfg, ENV, PARAMS).init()
    assert_trees_equal(start.opt_state, jax.device_get(fresh.opt_state))  # zero moments
    assert int(start.update) == 0 and summary["update"] == 4
    assert_trees_equal(start.env_state, jax.device_get(fresh.env_state))  # seed 3's envs
    assert any("params initialised from" in line for line in lines)


def test_init_params_errors_are_clear(reference, tmp_path):
    _, final = reference
    path = ckpt.save_checkpoint(tmp_path, final, CFG.to_dict(), {})
    bad = CFG.replace(hidden_dim=32, init_params=str(path), checkpoint_dir=str(tmp_path / "o"))
    with pytest.raises(ValueError, match=r"cannot load --init-params.*hidden-dim"):
        run(bad, env=ENV, env_params=PARAMS, out=lambda s: None)
    missing = CFG.replace(init_params=str(tmp_path / "nowhere"), checkpoint_dir=str(tmp_path))
    with pytest.raises(ValueError, match="no such file or directory"):
        run(missing, env=ENV, env_params=PARAMS, out=lambda s: None)
    path.write_bytes(b"garbage")
    corrupt = CFG.replace(init_params=str(path), checkpoint_dir=str(tmp_path / "o"))
    with pytest.raises(ValueError, match=r"cannot load --init-params.*corrupt"):
        run(corrupt, env=ENV, env_params=PARAMS, out=lambda s: None)
