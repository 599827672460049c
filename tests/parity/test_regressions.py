"""Replay the shrunk repros in tests/parity/regressions/*.json: each must now match."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

for _mod in ("game", "observation", "mask", "reward"):
    pytest.importorskip(f"hackmatrix_env.{_mod}")

from hackmatrix_parity.engine import Config, Engine  # noqa: E402

CASES = sorted(Path(__file__).with_name("regressions").glob("*.json"))


@pytest.fixture(scope="module")
def engine(swift_bin):
    with Engine(Config(batch=8, num_keys=16, seed=0), swift_bin) as eng:
        yield eng


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_regression(engine, path):
    case = json.loads(path.read_text())
    rep = engine.run([case["scenario"]], [case["actions"]])
    assert rep.mismatches == 0 and not rep.failures, [f.as_json() for f in rep.failures]
