"""``hm-bench``: every benchmark of the repository is reachable from it, and documented.

Host-side checks only (no benchmark is run beyond its ``-h``): the registry, the
``benchmarks/`` folder and its README must name the same benchmarks, and a subcommand
passes its arguments through to the module or script it names.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from hackmatrix_bench import bench

ROOT = Path(__file__).resolve().parents[2]
BENCH_DIR = ROOT / "benchmarks"


def test_every_script_in_benchmarks_is_registered():
    scripts = {b.script for b in bench.BENCHMARKS.values() if b.script}
    on_disk = {p.name for p in BENCH_DIR.glob("*.py")}
    assert on_disk == scripts, (on_disk - scripts, scripts - on_disk)


def test_every_module_benchmark_resolves():
    for name, b in bench.BENCHMARKS.items():
        if b.module is not None:
            assert importlib.util.find_spec(b.module) is not None, (name, b.module)


def test_each_benchmark_has_exactly_one_home():
    for name, b in bench.BENCHMARKS.items():
        homes = (b.module is not None) + (b.script is not None)
        assert homes == (0 if name == "env" else 1), name


def test_readme_documents_every_benchmark():
    readme = (BENCH_DIR / "README.md").read_text()
    for name in bench.BENCHMARKS:
        assert f"`hm-bench {name}" in readme, name


def test_benchmarks_dir_is_the_repositorys():
    assert bench.benchmarks_dir() == BENCH_DIR


def test_hm_bench_is_the_one_entry_point_and_no_published_package_holds_it():
    """``uv run hm-bench`` comes from the development member ``benchmarks/``; the env and train
    packages declare no benchmark script (``hm-train-bench``, ``hm-train-learn`` are gone)."""
    import tomllib

    member = tomllib.loads((BENCH_DIR / "pyproject.toml").read_text())
    assert member["project"]["scripts"] == {"hm-bench": "hackmatrix_bench.bench:main"}
    for package in ("hackmatrix-env", "hackmatrix-train", "hackmatrix-parity"):
        meta = tomllib.loads((ROOT / "packages" / package / "pyproject.toml").read_text())
        scripts = meta["project"].get("scripts", {})
        assert not [s for s in scripts if "bench" in s or "learn" in s], (package, scripts)


def test_listing_and_unknown_name(capsys):
    assert bench.main([]) == 0
    listing = capsys.readouterr().out
    assert all(f"  {name} " in listing for name in bench.BENCHMARKS)
    assert bench.main(["no-such-benchmark"]) == 2
    assert "unknown benchmark 'no-such-benchmark'" in capsys.readouterr().err


@pytest.mark.parametrize(("name", "flag"), [("digest", "--envs"), ("train", "--num-envs")])
def test_arguments_reach_the_script_or_module(name, flag, capsys):
    assert bench.run_benchmark(name, ["-h"]) == 0
    assert flag in capsys.readouterr().out


def test_bad_arguments_give_a_nonzero_status(capsys):
    assert bench.run_benchmark("digest", ["--no-such-flag"]) == 2
    assert "--no-such-flag" in capsys.readouterr().err


def test_eval_start_refuses_a_bad_count_and_compares_games_not_clocks(capsys):
    from hackmatrix_bench.eval_start import child_code, main, strip_timing
    from hackmatrix_env.eager import FEW_GAMES

    assert main(["--pairs", "0"]) == 2
    assert "--pairs" in capsys.readouterr().err
    assert main(["--search", "-1"]) == 2
    assert "--search" in capsys.readouterr().err
    # a -defaults layout turns the few-games quick compile off; --search 0: the greedy row alone
    plain, quick = child_code("shared-defaults", 8, 0), child_code("shared", 8, 8)
    assert "FEW_GAMES = 0" in plain and 'layout="shared"' in plain and "search=[]" in plain
    assert f"FEW_GAMES = {FEW_GAMES}" in quick and "'num_simulations': 8" in quick
    a = {"ret": 1.0, "search": [{"win_rate": 0.5, "seconds": 3.0, "compile_seconds": 9.0}]}
    b = {"ret": 1.0, "search": [{"win_rate": 0.5, "seconds": 4.0, "compile_seconds": 7.0}]}
    assert strip_timing(a) == strip_timing(b)
    assert strip_timing(a) != strip_timing({**b, "ret": 2.0})


def test_import_start_refuses_a_bad_count_and_runs_the_readme_snippet(tmp_path, capsys):
    from hackmatrix_bench.import_start import main, readme_snippet

    assert main(["--pairs", "0"]) == 2
    assert "--pairs" in capsys.readouterr().err
    snippet = readme_snippet()  # the README's first Python block, the gymnax quickstart
    assert "HackMatrix()" in snippet and "env.step" in snippet
    other = tmp_path / "README.md"
    other.write_text("# no snippet\n\n```python\nprint(1)\n```\n")
    with pytest.raises(ValueError, match="no gymnax snippet"):
        readme_snippet(other)
