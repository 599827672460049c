"""``--resume DIR`` continues in DIR only: copies, moves, rewinds, and kills during a save.

The original of a copied run stays byte for byte what it was; a rewind keeps the later history
under a named subfolder; a ``kill -9`` at any file operation of a checkpoint write leaves a run
that resumes to the same final state as one never interrupted.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import pytest
from hackmatrix_train import checkpoint as ckpt
from hackmatrix_train.cli.train import build_parser, config_from_args
from hackmatrix_train.run import run, wandb_run_id
from hackmatrix_train.trainer import make_train
from train.test_checkpoint import CFG as CHECKPOINT_CFG
from train.train_probes import ProbeParams, ProbeSuite
from train.trees import assert_trees_equal

TESTS = Path(__file__).resolve().parents[1]
ENV, PARAMS = ProbeSuite(), ProbeParams()
CFG = CHECKPOINT_CFG.replace(final_eval_episodes=0)  # plain PPO, 8 envs x 8 steps, 4 updates
NAME = "ppo-mlp-8x8-s7"
STEPS = 8 * 8  # env steps per update


@pytest.fixture(scope="module")
def states():
    """The runner state after 0..4 updates straight through, and the trainer."""
    trainer = make_train(CFG, ENV, PARAMS)
    runner, out = trainer.init(), [jax.device_get(trainer.init())]
    for _ in range(4):
        runner, _ = trainer.run_chunk(runner, 1)
        out.append(jax.device_get(runner))
    return trainer, out


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by relative path, with its bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def train(ck: Path, updates: int, **config) -> dict:
    cfg = CFG.replace(checkpoint_dir=str(ck), total_timesteps=updates * STEPS, **config)
    return run(cfg, env=ENV, env_params=PARAMS, out=lambda s: None)


def resume(path: Path, *flags: str, out=None) -> dict:
    args = build_parser().parse_args(["--resume", str(path), "--no-wandb", *flags])
    cfg, explicit = config_from_args(args)
    return run(cfg, explicit, env=ENV, env_params=PARAMS, out=out or (lambda s: None))


def updates_in(run_dir: Path) -> list[int]:
    return [u for u, _ in ckpt.list_checkpoints(run_dir)]


def progress_updates(run_dir: Path) -> list[int]:
    with open(run_dir / "progress.csv", newline="") as f:
        return [int(r["update"]) for r in csv.DictReader(f)]


def test_resume_of_a_copy_writes_only_into_the_copy(states, tmp_path):
    _, ref = states
    ck = tmp_path / "ck"
    train(ck, 2)
    original = snapshot(ck)
    shutil.copytree(ck / NAME, ck / "copy")
    result = resume(ck / "copy", "--total-timesteps", str(3 * STEPS))
    assert result["run_dir"] == str(ck / "copy") and result["update"] == 3
    assert updates_in(ck / "copy") == [2, 3]
    assert_trees_equal(jax.device_get(result["runner"]), ref[3])
    # resumed twice: still in the copy, still the uninterrupted run's state
    result = resume(ck / "copy", "--total-timesteps", str(4 * STEPS))
    assert updates_in(ck / "copy") == [2, 3, 4] and progress_updates(ck / "copy") == [1, 2, 3, 4]
    assert_trees_equal(jax.device_get(result["runner"]), ref[4])
    params, meta = ckpt.load_params(ck / "copy", template=ref[4].params)
    assert meta["update"] == 4 and meta["config"]["checkpoint_dir"] == str(ck)
    assert_trees_equal(params, ref[4].params)
    # the original: byte-identical, nothing added beside it but the copy
    after = {k: v for k, v in snapshot(ck).items() if not k.startswith("copy/")}
    assert after == original
    assert sorted(p.name for p in ck.iterdir()) == sorted([NAME, "copy"])


def test_resume_of_a_moved_run_stays_where_it_is(states, tmp_path):
    _, ref = states
    train(tmp_path / "ck", 2)
    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    (tmp_path / "ck" / NAME).rename(moved)
    result = resume(moved, "--total-timesteps", str(4 * STEPS))
    assert updates_in(moved) == [2, 4]
    assert list((tmp_path / "ck").iterdir()) == []  # the old place is not written again
    assert_trees_equal(jax.device_get(result["runner"]), ref[4])


def test_rewind_keeps_the_later_history_in_a_named_subfolder(states, tmp_path):
    _, ref = states
    train(tmp_path / "ck", 4, save_interval=1)
    run_dir = tmp_path / "ck" / NAME
    assert updates_in(run_dir) == [1, 2, 3, 4]
    before = snapshot(run_dir)
    lines: list[str] = []
    result = resume(run_dir, "--rewind", "2", out=lines.append)
    (aside,) = [p for p in run_dir.iterdir() if p.is_dir()]
    assert aside.name.startswith("rewound_from_00000004_")
    assert any(f"kept in {aside}" in line for line in lines)
    kept = snapshot(aside)
    moved = ["ckpt_00000003.json", "ckpt_00000003.msgpack", "ckpt_00000004.json",
             "ckpt_00000004.msgpack", "params.json", "params.msgpack", "progress.csv"]  # fmt: skip
    assert sorted(kept) == moved
    assert all(kept[name] == before[name] for name in moved)  # kept byte for byte
    # the rewound run played updates 3 and 4 again, to the same state
    assert updates_in(run_dir) == [1, 2, 3, 4] and progress_updates(run_dir) == [1, 2, 3, 4]
    assert_trees_equal(jax.device_get(result["runner"]), ref[4])
    # resuming an older checkpoint *file* is a rewind too
    resume(run_dir / "ckpt_00000003.msgpack", out=lines.append)
    assert len([p for p in run_dir.iterdir() if p.is_dir()]) == 2
    assert updates_in(run_dir) == [1, 2, 3, 4]


def test_resume_refuses_flags_that_would_move_the_run(states, tmp_path):
    train(tmp_path / "ck", 2)
    for flags in (["--checkpoint-dir", str(tmp_path / "x")], ["--run-name", "x"],
                  ["--run-suffix", "x"]):  # fmt: skip
        with pytest.raises(ValueError, match="continues in the run's own directory"):
            resume(tmp_path / "ck" / NAME, *flags)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]


def test_wandb_run_id_is_kept_only_where_the_checkpoint_was_written(tmp_path):
    here, copy = tmp_path / "ck" / NAME, tmp_path / "ck" / "copy"
    here.mkdir(parents=True)
    copy.mkdir()
    meta = {"wandb_id": "abc123", "run_dir": str(here.resolve()), "run_name": NAME}
    assert wandb_run_id(meta, here) == "abc123"
    assert wandb_run_id(meta, tmp_path / "ck" / ".." / "ck" / NAME) == "abc123"  # same place
    assert wandb_run_id(meta, copy) is None  # a copy: a new wandb run
    assert wandb_run_id({**meta, "wandb_id": None}, here) is None  # no wandb run to continue
    assert wandb_run_id({}, here) is None  # a new run
    moved = {**meta, "run_dir": str(tmp_path / "gone" / NAME)}  # the original moved away
    assert wandb_run_id(moved, here) is None
    # a checkpoint from before the run_dir field: its config's checkpoint_dir / run_name
    old = {"wandb_id": "abc123", "run_name": NAME, "config": {"checkpoint_dir": str(here.parent)}}
    assert wandb_run_id(old, here) == "abc123" and wandb_run_id(old, copy) is None


def test_a_resumed_copy_starts_a_new_wandb_run_and_the_original_keeps_its_own(states, tmp_path):
    train(tmp_path / "ck", 2)
    run_dir = tmp_path / "ck" / NAME
    sidecar = run_dir / "ckpt_00000002.json"
    meta = json.loads(sidecar.read_text())
    assert meta["run_dir"] == str(run_dir.resolve())  # each checkpoint records where it lies
    sidecar.write_text(json.dumps({**meta, "wandb_id": "orig123"}))  # as if wandb had run
    shutil.copytree(run_dir, tmp_path / "copy")
    lines: list[str] = []
    resume(tmp_path / "copy", "--total-timesteps", str(3 * STEPS), out=lines.append)
    assert any("logs to a new wandb run, not to orig123" in line for line in lines)
    copied = ckpt.read_meta(tmp_path / "copy" / "ckpt_00000003.msgpack")
    assert copied["wandb_id"] != "orig123"
    assert copied["run_dir"] == str((tmp_path / "copy").resolve())
    lines.clear()
    resume(run_dir, "--total-timesteps", str(3 * STEPS), out=lines.append)
    assert not any("wandb" in line for line in lines)
    assert ckpt.read_meta(run_dir / "ckpt_00000003.msgpack")["wandb_id"] == "orig123"


# A subprocess saves update 3's checkpoint into copies of a run directory holding updates 1 and 2
# (keep=2, so the save also prunes update 1): for each K it forks a child that SIGKILLs itself
# at file operation number K: half-way through a write, before an fsync, before or after a
# rename, before or after an unlink. The state is read and flattened once, before the forks, so
# a child runs only the save's file operations (no JAX work after a fork).
KILL_SCRIPT = textwrap.dedent(
    """
    import json, os, pathlib, shutil, signal, sys
    from hackmatrix_train import checkpoint as ckpt
    from hackmatrix_train.config import TrainConfig
    from hackmatrix_train.trainer import make_train
    from train.train_probes import ProbeParams, ProbeSuite

    src, base, root, name, cfg = sys.argv[1:6]
    cfg = TrainConfig.from_dict(json.loads(cfg))
    template = make_train(cfg, ProbeSuite(), ProbeParams()).abstract_runner()
    runner, meta = ckpt.load_checkpoint(src, template)
    flat = {id(runner): ckpt.flatten_state(runner), id(runner.params): ckpt.flatten_state(runner.params)}
    ckpt.flatten_state = lambda tree: flat[id(tree)]
    results = []
    for kill_at in range(60):
        run_dir = pathlib.Path(root) / f"kill{kill_at}" / name
        shutil.copytree(base, run_dir)
        pid = os.fork()
        if pid == 0:  # the child: one save, killed at operation kill_at
            count = [0]

            def event():
                if count[0] == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
                count[0] += 1

            class HalfWriter:
                def __init__(self, f):
                    self.f = f
                def __enter__(self):
                    return self
                def __exit__(self, *exc):
                    return self.f.__exit__(*exc)
                def write(self, data):
                    if count[0] == kill_at:
                        self.f.write(data[: len(data) // 2])
                        self.f.flush()
                    event()
                    return self.f.write(data)
                def __getattr__(self, attr):
                    return getattr(self.f, attr)

            real_fdopen, real_fsync, real_replace = os.fdopen, os.fsync, os.replace
            real_unlink = pathlib.Path.unlink
            os.fdopen = lambda *a, **k: HalfWriter(real_fdopen(*a, **k))
            os.fsync = lambda fd: (event(), real_fsync(fd))
            os.replace = lambda a, b: (event(), real_replace(a, b), event())
            pathlib.Path.unlink = lambda self, **k: (event(), real_unlink(self, **k), event())
            ckpt.save_checkpoint(run_dir, runner, meta["config"], {"run_name": meta["run_name"]},
                                 keep=2)
            (run_dir.parent / "operations").write_text(str(count[0]))
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        if not killed and not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
            sys.exit(f"the save at kill point {kill_at} failed: status {status}")
        results.append([str(run_dir), killed])
        if not killed:
            results[-1].append(int((run_dir.parent / "operations").read_text()))
            break
    print(json.dumps(results))
    """
)


@pytest.mark.slow  # a forked save per file operation of a save (about 20)
def test_kill_at_any_moment_of_a_save_leaves_a_resumable_run(states, tmp_path):
    _, ref = states
    train(tmp_path / "base", 2, save_interval=1)  # checkpoints 1 and 2, update 2's export
    train(tmp_path / "src", 3, save_interval=1)
    base, src = tmp_path / "base" / NAME, tmp_path / "src" / NAME / "ckpt_00000003.msgpack"
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = str(TESTS) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-c", KILL_SCRIPT, str(src), str(base), str(tmp_path), NAME,
         json.dumps(CFG.to_dict())],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.splitlines()[-1])
    template = make_train(CFG, ENV, PARAMS).abstract_runner()
    seen: set[tuple[int, bool]] = set()
    killed_dirs: list[Path] = []
    for kill_at, (run_dir, killed, *operations) in enumerate(results):
        run_dir = Path(run_dir)
        # whatever the moment: the latest checkpoint loads, and is update 2's or update 3's state
        state, meta = ckpt.load_checkpoint(ckpt.resolve_checkpoint(run_dir), template)
        assert meta["update"] in (2, 3)
        assert_trees_equal(state, ref[meta["update"]])
        params, pmeta = ckpt.load_params(run_dir, template=ref[2].params)  # what hm-eval loads
        assert_trees_equal(params, ref[pmeta["update"]].params)
        seen.add((meta["update"], killed))
        if killed:
            killed_dirs.append(run_dir)
        else:
            assert kill_at == len(results) - 1 and operations == [kill_at]  # every op a kill point
    assert len(killed_dirs) >= 15 and {(2, True), (3, True), (3, False)} <= seen
    # resumed in place, a killed run ends in the uninterrupted run's final state
    for run_dir in (killed_dirs[0], killed_dirs[len(killed_dirs) // 2], killed_dirs[-1]):
        result = resume(run_dir, "--total-timesteps", str(4 * STEPS))
        assert result["run_dir"] == str(run_dir) and updates_in(run_dir)[-1] == 4
        assert not [p for p in run_dir.iterdir() if p.name.endswith(".tmp")]
        assert_trees_equal(jax.device_get(result["runner"]), ref[4])
