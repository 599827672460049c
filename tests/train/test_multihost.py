"""``hm-train --distributed`` as two processes on localhost, against one process with two devices.

Each process is ``multihost_worker.py``: ``hm-train``'s own ``train_main`` (device set-up,
``jax.distributed.initialize`` from the flags, the host loop, checkpoints, the final evaluation)
on the probe suite, so it compiles in seconds. The two processes exchange gradients over gloo,
JAX's CPU collectives. Every process runs in its own session and is killed at the deadline, so
a process that waits for a peer that died cannot hang the test.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hackmatrix_train import checkpoint as ckpt

WORKER = Path(__file__).with_name("multihost_worker.py")
BATCH = 16 * 8  # --num-envs x --num-steps: env steps per update
# Plain PPO on the probe suite: no HackMatrix loss terms, constant schedules (so that 2 updates
# of a 2-update run, resumed to 4, are the first 2 of a 4-update run).
FLAGS = [
    "--network", "mlp", "--num-envs", "16", "--num-steps", "8", "--num-minibatches", "2",
    "--update-epochs", "2", "--hidden-dim", "16", "--num-layers", "1", "--no-anneal-lr",
    "--ent-coef", "0.01", "--ent-coef-end", "0.01", "--explore-floor", "0", "--program-bonus",
    "0", "--disabled-programs", "--log-interval", "1", "--seed", "3", "--no-wandb",
    "--no-compile-cache", "--final-eval-episodes", "4",
]  # fmt: skip
RUN = "ppo-mlp-16x8-s3"
DEADLINE_S = 150  # per group of processes; one leg takes ~30 s on the idle 2-core box


def _free_port() -> int:
    """A port nothing listens on now; the launch retries if another process takes it first."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(jobs: list[tuple[list[str], Path, dict]]) -> list[tuple[int, str, str]]:
    """Run ``(argv, cwd, extra env)`` jobs at once; ``(rc, stdout, stderr)`` each.

    Any job still running at the deadline, or left over when one fails, is killed with its
    whole process group.
    """
    procs = []
    try:
        for argv, cwd, extra in jobs:
            env = dict(os.environ, JAX_PLATFORMS="cpu", **extra)
            env.pop("XLA_FLAGS", None)  # no forced host devices: --cpu-devices decides
            cwd.mkdir(parents=True, exist_ok=True)
            out = open(cwd.parent / f"{cwd.name}.out", "w+")  # noqa: SIM115
            err = open(cwd.parent / f"{cwd.name}.err", "w+")  # noqa: SIM115
            procs.append((subprocess.Popen(
                [sys.executable, str(WORKER), *argv], cwd=cwd, env=env, stdout=out,
                stderr=err, start_new_session=True,
            ), out, err))  # fmt: skip
        end = time.monotonic() + DEADLINE_S
        while time.monotonic() < end and any(p.poll() is None for p, _, _ in procs):
            if any(p.poll() not in (None, 0) for p, _, _ in procs):
                break  # one failed: its peers would wait for it until their own timeouts
            time.sleep(0.2)
    finally:
        for p, _, _ in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    results = []
    for p, out, err in procs:
        out.seek(0), err.seek(0)
        results.append((p.returncode, out.read(), err.read()))
        out.close(), err.close()
    return results


def _distributed(
    flags: list[list[str]], tmp: Path, leg: str, extra: list[tuple[list[str], Path, dict]] = ()
) -> list[tuple[int, str, str]]:
    """Process i of one leg runs with ``flags[i]`` in ``tmp/<leg>-p<i>``; ``extra`` alongside."""
    for _attempt in range(3):
        port = _free_port()
        address = f"127.0.0.1:{port}"
        jobs = [
            ([*flags[i], "--distributed", "--coordinator-address", address, "--num-processes",
              "2", "--process-id", str(i)],
             tmp / f"{leg}-p{i}", {"JAX_COORDINATOR_BIND_ADDRESS": address})
            for i in range(2)
        ]  # fmt: skip
        results = _launch([*jobs, *extra])
        if not any("ddress already in use" in err for _, _, err in results):
            return results
    return results


def _report(result: tuple[int, str, str]) -> dict:
    rc, out, err = result
    assert rc == 0, f"rc {rc}\n{out[-2000:]}\n{err[-3000:]}"
    return json.loads(out.strip().splitlines()[-1])


def _assert_same_state(path_a: Path, path_b: Path) -> None:
    """Every leaf of two full checkpoints: floats to 1e-6, everything else exactly."""
    a = ckpt.read_flat(path_a, ckpt.read_meta(path_a))
    b = ckpt.read_flat(path_b, ckpt.read_meta(path_b))
    assert sorted(a) == sorted(b)
    for k in a:
        x, y = np.asarray(a[k]), np.asarray(b[k])
        assert x.shape == y.shape and x.dtype == y.dtype, k
        if np.issubdtype(x.dtype, np.floating):
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7, err_msg=k)
        else:
            np.testing.assert_array_equal(x, y, err_msg=k)


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


@pytest.mark.slow  # ~90 s: five processes, each compiling the probe trainer
def test_two_processes_train_resume_and_write_like_one_process_with_two_devices(tmp_path):
    # one process, two CPU devices, 4 updates straight (checkpoints after 2 and 4), alongside
    # two processes of one device each, 2 updates, each with its own --checkpoint-dir
    reference = (
        [*FLAGS, "--cpu-devices", "2", "--total-timesteps", str(4 * BATCH), "--save-interval",
         "2", "--checkpoint-dir", str(tmp_path / "ckpt-ref")],
        tmp_path / "ref", {},
    )  # fmt: skip
    first = [[*FLAGS, "--total-timesteps", str(2 * BATCH), "--checkpoint-dir",
              str(tmp_path / f"ckpt-p{i}")] for i in range(2)]  # fmt: skip
    *first, ref = _distributed(first, tmp_path, "first", [reference])
    ref_report = _report(ref)
    assert ref_report["process_count"] == 1 and ref_report["num_devices"] == 2
    ref_dir = tmp_path / "ckpt-ref" / RUN
    assert [u for u, _ in ckpt.list_checkpoints(ref_dir)] == [2, 4]
    run_dir = tmp_path / "ckpt-p0" / RUN
    leg1 = [_report(r) for r in first]
    assert _files(tmp_path / "ckpt-p1") == []  # process 1 wrote nothing

    # --resume to 4 updates in two new processes; process 1 resumes a copy of the run
    # directory (a run continues in its own), which must come out untouched
    copy = tmp_path / "copy" / RUN
    shutil.copytree(run_dir, copy)
    before = {f: (copy / f).read_bytes() for f in _files(copy)}
    resume = [[*FLAGS, "--total-timesteps", str(4 * BATCH), "--resume", str(d)]
              for d in (run_dir, copy)]  # fmt: skip
    second = _distributed(resume, tmp_path, "second")
    leg2 = [_report(r) for r in second]
    assert {f: (copy / f).read_bytes() for f in _files(copy)} == before
    for leg, reports in (("first", leg1), ("second", leg2)):
        assert [r["process_index"] for r in reports] == [0, 1], leg
        assert all(r["process_count"] == 2 and r["num_devices"] == 2 for r in reports), leg
        assert reports[0]["params_sha256"] == reports[1]["params_sha256"], leg  # one replica
    assert [r["update"] for r in leg1] == [2, 2] and [r["update"] for r in leg2] == [4, 4]
    for (_, out, _), d in zip(second, (run_dir, copy), strict=True):
        assert f"resumed from {d / 'ckpt_00000002.msgpack'} at update 2" in out

    # the same state as the one-process run after 2 and after 4 updates, every leaf
    _assert_same_state(run_dir / "ckpt_00000002.msgpack", ref_dir / "ckpt_00000002.msgpack")
    _assert_same_state(run_dir / "ckpt_00000004.msgpack", ref_dir / "ckpt_00000004.msgpack")

    # only process 0 writes: checkpoints, params export, progress.csv, eval_final.json
    assert _files(tmp_path / "ckpt-p0") == [RUN] + [
        f"{RUN}/{f}" for f in sorted([
            "ckpt_00000002.json", "ckpt_00000002.msgpack", "ckpt_00000004.json",
            "ckpt_00000004.msgpack", "eval_final.json", "params.json", "params.msgpack",
            "progress.csv",
        ])
    ]  # fmt: skip
    for leg in ("first", "second"):
        assert _files(tmp_path / f"{leg}-p0") == _files(tmp_path / f"{leg}-p1") == []  # cwd
    with open(run_dir / "progress.csv") as f:
        assert [int(r["update"]) for r in csv.DictReader(f)] == [1, 2, 3, 4]
    final = json.loads((run_dir / "eval_final.json").read_text())
    assert final == json.loads((ref_dir / "eval_final.json").read_text())
    assert final["episodes"] == 4 and final["env_steps"] == 4 * BATCH
