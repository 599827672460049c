"""The CLIs' persistent compilation cache: where it lives, the flags, and that it really caches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import pytest
from hackmatrix_train import compile_cache
from hackmatrix_train.cli.evaluate import build_parser as build_eval_parser
from hackmatrix_train.cli.train import build_parser, config_from_args


def test_default_dir_follows_the_variable_then_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv(compile_cache.ENV_VAR, str(tmp_path / "mine"))
    assert compile_cache.default_cache_dir() == tmp_path / "mine"
    for off in ("off", "0", "", "None"):
        monkeypatch.setenv(compile_cache.ENV_VAR, off)
        assert compile_cache.default_cache_dir() is None
    monkeypatch.delenv(compile_cache.ENV_VAR)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert compile_cache.default_cache_dir() == tmp_path / "xdg" / "hackmatrix" / "jax"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert compile_cache.default_cache_dir() == tmp_path / "home" / ".cache" / "hackmatrix" / "jax"


def test_unusable_directory_warns_and_changes_nothing(tmp_path, capsys):
    before = jax.config.jax_compilation_cache_dir
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    assert compile_cache.enable(blocker / "cache") is None
    assert "compilation cache disabled" in capsys.readouterr().err
    assert compile_cache.enable(None) is None
    assert jax.config.jax_compilation_cache_dir == before


@pytest.mark.parametrize("flags", [[], ["--no-compile-cache"], ["--compile-cache", "/tmp/x"]])
def test_flags_are_not_part_of_the_training_config(flags):
    cfg, explicit = config_from_args(build_parser().parse_args(["--num-envs", "8", *flags]))
    assert cfg.num_envs == 8
    assert explicit == {"num_envs"}
    args = build_eval_parser().parse_args(["ckpt", *flags])
    assert args.no_compile_cache == ("--no-compile-cache" in flags)


def test_the_two_flags_exclude_each_other(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--compile-cache", "/tmp/x", "--no-compile-cache"])
    assert "not allowed with" in capsys.readouterr().err


def test_flags_choose_the_directory(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(compile_cache, "enable", lambda path: calls.append(path) or path)
    monkeypatch.setenv(compile_cache.ENV_VAR, str(tmp_path / "env"))
    parse = build_parser().parse_args
    compile_cache.enable_from_args(parse([]))
    compile_cache.enable_from_args(parse(["--compile-cache", str(tmp_path / "flag")]))
    assert compile_cache.enable_from_args(parse(["--no-compile-cache"])) is None
    assert calls == [tmp_path / "env", str(tmp_path / "flag")]


# A fresh process per launch: JAX opens its cache once per process. The module is loaded from its
# file so that the launch does not pay for importing the trainer (gymnax imports take seconds).
_LAUNCH = textwrap.dedent(
    """
    import importlib.util, json, sys
    import jax, jax.numpy as jnp
    spec = importlib.util.spec_from_file_location("compile_cache", sys.argv[2])
    compile_cache = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compile_cache)
    assert compile_cache.enable(sys.argv[1], min_compile_seconds=0.0) is not None
    f = jax.jit(lambda x: jnp.cumsum(jnp.sin(x) * 3.0) @ jnp.cos(x))
    print(json.dumps(float(f(jnp.arange(64.0)))))
    """
)


def test_a_second_launch_loads_instead_of_writing(tmp_path):
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k != compile_cache.ENV_VAR}

    def launch():
        out = subprocess.run(
            [sys.executable, "-c", _LAUNCH, str(cache), compile_cache.__file__],
            capture_output=True, text=True, env=env, timeout=300, check=True,
        )  # fmt: skip
        entries = sorted(p.name for p in Path(cache).iterdir())
        return json.loads(out.stdout.strip().splitlines()[-1]), entries

    first, written = launch()
    assert written, "the first launch wrote no cache entry"
    second, after = launch()
    assert after == written  # a hit: nothing new compiled or written
    assert second == first


def test_entries_without_an_access_time_are_repaired(tmp_path):
    """JAX's LRU eviction reads every ``-atime`` file; an orphan entry made every write warn."""
    (tmp_path / "a-cache").write_bytes(b"x" * 10)
    (tmp_path / "a-atime").write_bytes((123).to_bytes(8, "little"))
    (tmp_path / "b-cache").write_bytes(b"y" * 10)
    os.utime(tmp_path / "b-cache", ns=(5_000_000_000, 7_000_000_000))
    assert compile_cache.repair_lru_entries(tmp_path) == 1
    assert int.from_bytes((tmp_path / "b-atime").read_bytes(), "little") == 7_000_000_000
    assert int.from_bytes((tmp_path / "a-atime").read_bytes(), "little") == 123  # untouched
    assert compile_cache.repair_lru_entries(tmp_path) == 0
