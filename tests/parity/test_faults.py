"""Fault injection: a Swift binary that is killed mid-run, stops (SIGSTOP) or answers garbage.

The client must notice each fault within its read timeout and leave no process behind; the
engine must report the scenario it hit (``swift_error``, never a match), restart the binary
and go on with the next scenarios. ``fake_swift.py`` fails on demand for the client;
``fault_proxy.py`` makes our real binary fail once, at a chosen step, for the engine.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest
from hackmatrix_parity.client import SwiftGame, SwiftProcessError, SwiftTimeoutError
from hackmatrix_parity.engine import Config, Engine, random_scenarios

FAKE = Path(__file__).with_name("fake_swift.py")
PROXY = Path(__file__).with_name("fault_proxy.py")


def test_stopped_binary_times_out_is_killed_and_restarts():
    g = SwiftGame(command=[sys.executable, str(FAKE), "--mode=stop"], timeout=0.5)
    try:
        g.set_state({"player": {"row": 0, "col": 0}})
        proc = g._proc
        t0 = time.monotonic()
        with pytest.raises(SwiftTimeoutError, match=r"did not answer within 0\.5s"):
            g.step(0)
        assert time.monotonic() - t0 < 5
        assert proc is not None and proc.returncode == -signal.SIGKILL  # reaped, not left stopped
        assert not g.alive
        g.restart()
        g.set_state({"player": {"row": 0, "col": 0}})
        assert g.valid_actions() == [0, 3]
    finally:
        g.close()


def test_binary_killed_between_requests_is_reported_and_restarts():
    g = SwiftGame(command=[sys.executable, str(FAKE), "--mode=ok"], timeout=5.0)
    try:
        g.set_state({"player": {"row": 0, "col": 0}})
        assert g._proc is not None
        os.kill(g._proc.pid, signal.SIGKILL)
        g._proc.wait()
        with pytest.raises(SwiftProcessError, match="exit code -9"):
            g.valid_actions()
        assert not g.alive
        g.restart()
        g.set_state({"player": {"row": 5, "col": 5}})
        assert g.valid_actions() == [1, 2]
    finally:
        g.close()


# fault -> what the report's note must say
FAULTS = {
    "kill": "binary killed mid-run",
    "stop": "did not answer within",
    "garbage": "not JSON",
    "mangle": "unreadable reply",
    "badfull": "lacks 'player'",
}
AT = 2  # the fault hits the first lane's second step


@pytest.mark.parametrize("fault", list(FAULTS))
def test_engine_reports_the_scenario_restarts_and_goes_on(fault, swift_bin, tmp_path):
    marker = tmp_path / "fired"
    command = [sys.executable, str(PROXY), fault, str(AT), str(marker), swift_bin]
    cfg = Config(scenarios=12, steps=6, seed=3, batch=8, num_keys=16, deep_keys=256, timeout=5.0)
    scenarios = random_scenarios(cfg.scenarios, cfg.seed)
    with Engine(cfg, command=command) as eng:
        first = eng.lanes[0].game._proc
        rep = eng.run(scenarios)
        lane = eng.lanes[0]
        assert marker.exists()  # the fault fired
        # reported: one scenario, at the step the fault hit, as a Swift error and nothing else
        assert rep.swift_errors == 1 and rep.scenarios_failed == 1
        assert rep.mismatches == 1 and dict(rep.mismatch_categories) == {"swift_error": 1}
        (failure,) = rep.failures
        assert failure.note.startswith("swift error:") and FAULTS[fault] in failure.note
        assert failure.step == len(failure.actions) == AT
        assert failure.scenario == scenarios[0] and not failure.diffs
        # never a match for the faulty step: every other step compared matched
        assert rep.matches == rep.compared - 1
        # restarted and gone on: lane 0 runs a fresh process, which played a later scenario
        assert first is not None and first.poll() is not None
        assert lane.game.alive and lane.game._proc is not first
        assert rep.scenarios_run == len(scenarios)
        assert lane.scenario is not failure.scenario and lane.actions
