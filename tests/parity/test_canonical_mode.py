"""The engine against a binary without extensions (our binary behind a canonical-looking proxy)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

for _mod in ("game", "observation", "mask", "reward"):
    pytest.importorskip(f"hackmatrix_env.{_mod}")

from hackmatrix_parity.engine import Config, Engine, random_scenarios  # noqa: E402

PROXY = Path(__file__).with_name("canonical_proxy.py")


def test_engine_in_canonical_mode(swift_bin):
    cfg = Config(scenarios=24, steps=8, seed=9, batch=8, num_keys=16)
    with Engine(cfg, command=[sys.executable, str(PROXY), swift_bin]) as eng:
        assert not eng.extensions and not eng.full
        rep = eng.run(random_scenarios(cfg.scenarios, cfg.seed))
    assert rep.mismatches == 0 and rep.swift_errors == 0, dict(rep.mismatch_categories)
    assert rep.compared > 60
    # without a full state a random step that no key reproduces ends the scenario
    assert rep.steps["resync"] == rep.scenarios_stopped_hidden
