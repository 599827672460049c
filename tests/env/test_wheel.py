"""The ``hackmatrix-env`` wheel: minimal runtime dependencies, and it plays outside the workspace.

``uv build`` makes the wheel (hatchling from the uv cache or PyPI), ``uv venv`` +
``uv pip install`` put it in a fresh virtual environment (no workspace, no extras;
versions pinned to this environment's, so the install comes from the uv cache),
and a subprocess there runs a jitted, ``vmap``-ped random masked rollout
(``hackmatrix_env.vector``). The same rollout run in this process, from the source
tree, must give the same games. The rollout compiles the programs ``test_gymnasium`` compiles,
so the suite's persistent compilation cache serves the subprocess.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = {"jax", "jaxlib", "numpy", "flax", "gymnax", "six"}  # six: gymnax imports it undeclared
EXTRAS = {"jumanji": {"jumanji", "chex"}, "gymnasium": {"gymnasium"}, "viewer": {"matplotlib"}}

# Only in the fresh venv: the suite's compilation cache (the test process has it on already).
CACHE_SETUP = r"""
import os
import jax
cache = os.environ.get("HACKMATRIX_JAX_CACHE", "")
if cache and cache.lower() not in ("0", "off", "none", "false", "no"):
    jax.config.update("jax_compilation_cache_dir", cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
"""
ROLLOUT = r"""
import importlib.util, json
import jax
import jax.numpy as jnp
import numpy as np
import hackmatrix_env
from hackmatrix_env import EnvParams
from hackmatrix_env.vector import reset_batch, step_batch

try:
    import hackmatrix_env.jumanji
    jumanji_error = None
except ModuleNotFoundError as e:
    jumanji_error = str(e)
num_envs, params = 3, EnvParams(max_steps_in_episode=7)
chains = jnp.stack([jax.random.key(11 + i) for i in range(num_envs)])
chains, obs, state = reset_batch(chains, params)
rng = np.random.default_rng(0)
rewards, ends, invalid = [], 0, 0
for _ in range(12):
    masks = np.asarray(obs.action_mask)
    actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks], np.int32)
    chains, obs, state, reward, term, trunc, info = step_batch(chains, state, actions, params)
    rewards += np.asarray(reward).tolist()
    ends += int(np.sum(np.asarray(term) | np.asarray(trunc)))
    invalid += int(np.sum(np.asarray(info["invalid_action"])))
print(json.dumps({
    "module": hackmatrix_env.__file__,
    "has_jumanji": importlib.util.find_spec("jumanji") is not None,
    "jumanji_error": jumanji_error,
    "rewards": rewards,
    "ends": ends,
    "invalid": invalid,
    "grid_sum": float(np.asarray(obs.grid, np.float64).sum()),
}))
"""


def _uv() -> str:
    uv = os.environ.get("UV") or shutil.which("uv")
    if uv is None:
        pytest.skip("needs uv (run the suite with `uv run pytest`)")
    return uv


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _requirements(wheel: Path) -> dict[str | None, set[str]]:
    """Requires-Dist names of the wheel, by extra (None: always)."""
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        lines = z.read(meta).decode().splitlines()
    out: dict[str | None, set[str]] = {}
    for line in lines:
        if line.startswith("Requires-Dist:"):
            req = line.split(":", 1)[1].strip()
            name = re.match(r"[A-Za-z0-9_.\-]+", req).group(0).lower().replace("_", "-")
            extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", req)
            out.setdefault(extra.group(1) if extra else None, set()).add(name)
    return out


@pytest.mark.slow
def test_wheel_installs_alone_and_plays_the_same_games(tmp_path, capsys):
    uv = _uv()
    dist = tmp_path / "dist"
    _run([uv, "build", "--package", "hackmatrix-env", "--wheel", "--out-dir", str(dist)], ROOT)
    (wheel,) = dist.glob("hackmatrix_env-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        entry_points = [z.read(n).decode() for n in names if n.endswith("entry_points.txt")]
    assert {"hackmatrix_env/vector.py", "hackmatrix_env/gymnasium.py"} <= names
    # the game, its adapters and its viewer: no benchmark module, no console script
    assert not [n for n in names if "bench" in n.rsplit("/", 1)[-1]], sorted(names)
    assert not any("console_scripts" in text for text in entry_points), entry_points
    assert _requirements(wheel) == {None: CORE, **EXTRAS}

    # Pin every package to this environment's version (workspace members left out).
    frozen = _run([uv, "pip", "freeze", "--python", sys.executable], ROOT).splitlines()
    pins = [p for p in frozen if p and not p.startswith("-e") and "hackmatrix" not in p]
    (tmp_path / "constraints.txt").write_text("\n".join(pins) + "\n")
    venv = tmp_path / "venv"
    _run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], tmp_path)
    python = venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    _run(
        [
            uv,
            "pip",
            "install",
            "--quiet",
            "--python",
            str(python),
            str(wheel),
            "-c",
            "constraints.txt",
        ],
        tmp_path,
    )

    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    script = CACHE_SETUP + ROLLOUT
    installed = json.loads(_run([str(python), "-c", script], tmp_path, env).splitlines()[-1])
    assert Path(installed["module"]).resolve().is_relative_to(venv.resolve())
    assert not installed["has_jumanji"]  # the extra is not installed, and nothing pulled it in
    assert "pip install 'hackmatrix-env[jumanji]'" in installed["jumanji_error"]
    assert installed["invalid"] == 0 and installed["ends"] >= 3  # masked actions; 7-step episodes

    # The same rollout here, from the source tree (in-process: test_gymnasium's programs).
    capsys.readouterr()
    exec(ROLLOUT, {"__name__": "rollout"})
    here = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert Path(here["module"]).resolve().is_relative_to(ROOT / "packages")
    for key in ("rewards", "ends", "invalid", "grid_sum"):
        assert installed[key] == here[key], key
