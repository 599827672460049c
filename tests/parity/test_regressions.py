"""Replay the regression corpus tests/parity/regressions/*.json (format: regressions/README.md).

Each case is a ``setState`` scenario plus a scripted action list. It must replay
with zero mismatches and no Swift errors, every listed action must be compared
(nothing cut short), and the case's ``expect`` bounds on the run report must hold,
so a case keeps exercising the rule it is named after.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hackmatrix_parity.engine import Config, Engine, Report, random_scenarios

CASES = sorted(Path(__file__).with_name("regressions").glob("*.json"))
# Report counters an ``expect`` bound may name, as "<counter>.<key>".
COUNTERS = ("steps", "areas", "actions_valid", "actions_invalid", "mismatch_categories")
EXPECT_KEYS = {"compared", "min", "max"}
CASE_KEYS = {"scenario", "actions", "note", "expect", "found", "step"}


def load_case(path: Path) -> dict[str, Any]:
    """A case dict, checked for shape; a ``ValueError`` names the bad field."""
    case = json.loads(path.read_text())
    if not isinstance(case, dict) or not {"scenario", "actions"} <= set(case):
        raise ValueError(f"{path.name}: needs 'scenario' and 'actions'")
    if extra := set(case) - CASE_KEYS:
        raise ValueError(f"{path.name}: unknown keys {sorted(extra)}")
    acts = case["actions"]
    if not isinstance(acts, list) or not all(isinstance(a, int) and 0 <= a <= 27 for a in acts):
        raise ValueError(f"{path.name}: 'actions' must be a list of ints in 0..27")
    expect = case.get("expect", "match")
    if expect == "match":  # the shrinker's marker: zero mismatches, nothing more
        expect = {}
    if not isinstance(expect, dict) or (extra := set(expect) - EXPECT_KEYS):
        raise ValueError(f"{path.name}: 'expect' must be a dict with keys {sorted(EXPECT_KEYS)}")
    for bound in ("min", "max"):
        for name, n in expect.get(bound, {}).items():
            counter, _, key = name.partition(".")
            if counter not in COUNTERS or not key or not isinstance(n, int):
                raise ValueError(f"{path.name}: bad expect.{bound} entry {name!r}: {n!r}")
    case["expect"] = expect
    return case


def counter_value(report: Report, name: str) -> int:
    counter, _, key = name.partition(".")
    return getattr(report, counter)[key]


def expect_violations(case: dict[str, Any], report: Report) -> list[str]:
    """Every ``expect`` bound the report breaks, plus a short or long run."""
    expect = case["expect"]
    out = []
    want = expect.get("compared", len(case["actions"]))
    if report.compared != want:
        out.append(f"compared {report.compared} steps, expected {want}")
    for name, n in expect.get("min", {}).items():
        if (got := counter_value(report, name)) < n:
            out.append(f"{name} = {got} < {n}")
    for name, n in expect.get("max", {}).items():
        if (got := counter_value(report, name)) > n:
            out.append(f"{name} = {got} > {n}")
    return out


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case_format(path):
    """Runs without Swift: the file parses and names only known report counters."""
    load_case(path)  # raises ValueError naming the bad field


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"actions": [0, 28]}, "actions"),
        ({"expect": {"min": {"area.victory": 1}}}, "expect.min"),
        ({"expect": {"max": {"areas": 1}}}, "expect.max"),
        ({"expect": {"minimum": {}}}, "expect"),
        ({"expect": "mismatch"}, "expect"),
        ({"notes": "typo"}, "unknown keys"),
    ],
)
def test_load_case_rejects_bad_fields(tmp_path, patch, field):
    case = {"scenario": {"player": {"row": 0, "col": 0}}, "actions": [0], **patch}
    path = tmp_path / "case.json"
    path.write_text(json.dumps(case))
    with pytest.raises(ValueError, match=field):
        load_case(path)


@pytest.fixture(scope="module")
def engine(swift_bin):
    with Engine(Config(batch=8, num_keys=16, seed=0), swift_bin) as eng:
        yield eng


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_regression(engine, path):
    case = load_case(path)
    rep = engine.run([case["scenario"]], [case["actions"]])
    assert rep.swift_errors == 0, [f.as_json() for f in rep.failures]
    assert rep.mismatches == 0 and not rep.failures, [f.as_json() for f in rep.failures]
    if rep.scenarios_stopped_hidden and not engine.full:
        pytest.skip("a random step needs the full-state resync (canonical binary)")
    assert not expect_violations(case, rep), (expect_violations(case, rep), rep.areas)


def test_a_run_repeats_exactly(swift_bin):
    """Same config and scenarios, two engines: the same report, step for step.

    The engine reseeds our binary per scenario (``scenario_seed``): its generator
    otherwise starts from a system seed and survives setState, so Swift's random
    outcomes, and with them the later states and actions, differed between runs.
    """
    scenarios = random_scenarios(12, 77)
    reports = []
    for _ in range(2):
        with Engine(Config(batch=8, num_keys=16, seed=5, steps=8), swift_bin) as eng:
            reports.append(eng.run(scenarios))
    a, b = reports
    assert a.compared > 0 and a.swift_errors == 0
    for name in ("steps", "actions_valid", "actions_invalid", "areas", "deep_searches"):
        assert getattr(a, name) == getattr(b, name), name
