"""The CI parity run: JAX vs the freshly built Swift binary, zero mismatches allowed.

Scale: PARITY_SCENARIOS x PARITY_STEPS (env overrides; defaults sized for the CI
budget), run in PARITY_WORKERS engine processes side by side (default 2, the CI
box's cores). Each failure is shrunk and printed as a regression JSON.
"""

from __future__ import annotations

import os

import pytest
from hackmatrix_parity.engine import (
    ACTION_NAMES,
    Config,
    Engine,
    random_scenarios,
    run_sharded,
)
from xla_flags import optimized_xla

SCENARIOS = int(os.environ.get("PARITY_SCENARIOS", "2000"))
STEPS = int(os.environ.get("PARITY_STEPS", "20"))
WORKERS = int(os.environ.get("PARITY_WORKERS", "2"))


@pytest.fixture(scope="module")
def report(swift_bin):
    cfg = Config(scenarios=SCENARIOS, steps=STEPS, seed=2024, num_keys=16, batch=8)
    with optimized_xla():  # its engines run the env step ~10^5 times: optimized code pays
        rep = run_sharded(cfg, random_scenarios(cfg.scenarios, cfg.seed), swift_bin, WORKERS)
    if rep.failures:
        with Engine(cfg, swift_bin) as eng:
            from hackmatrix_parity.shrink import Shrinker, repro_json

            for f in rep.failures[:3]:
                print(repro_json(Shrinker(eng, budget=60).shrink(f)))
    return rep


def test_zero_mismatches(report):
    assert report.swift_errors == 0
    assert report.mismatches == 0, dict(report.mismatch_categories)
    assert not report.stagegen_violations, dict(report.stagegen_violations)


def test_every_action_and_rule_area_exercised(report):
    assert report.compared >= SCENARIOS * STEPS // 3
    rare = [a for a in ACTION_NAMES if report.actions_valid[a] < 3]
    assert not rare, rare
    assert sum(report.actions_invalid.values()) > 0
    for area in ("move", "attack", "enemy_phase", "hatch", "stage_complete", "death",
                 "reward.kills", "reward.siphon_quality", "reward.data_siphon",
                 "reward.damage_penalty", "siphon_spawns_placed", "scheduled_spawn",
                 "stacked_enemies", "hidden_cryptog"):  # fmt: skip
        assert report.areas[area] > 0, area
