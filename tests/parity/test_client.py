"""SwiftGame robustness against a fake binary that dies, hangs or speaks garbage."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from hackmatrix_parity.client import (
    SwiftCommandError,
    SwiftError,
    SwiftGame,
    SwiftProcessError,
    SwiftProtocolError,
    SwiftTimeoutError,
    resolve_swift_binary,
)

FAKE = Path(__file__).with_name("fake_swift.py")


def fake(mode: str = "ok", timeout: float = 5.0) -> SwiftGame:
    return SwiftGame(command=[sys.executable, str(FAKE), f"--mode={mode}"], timeout=timeout)


def test_normal_session_round_trip():
    with fake() as g:
        assert g.extensions  # answered `version`
        obs = g.set_state({"player": {"row": 0, "col": 0}})
        assert (obs["playerRow"], obs["playerCol"]) == (0, 0)
        assert g.valid_actions() == [0, 3]
        assert g.action_mask()[:5] == [True, False, False, True, False]
        r = g.step(0)
        assert r["observation"]["playerRow"] == 1
        assert r["reward"] == -0.01 and r["done"] is False
        r = g.step(1)
        r = g.step(1)  # off the board: invalid, done, state unchanged
        assert r["done"] is True and r["info"]["invalid_action"] is True
        assert g.internal_state()["enemies"] == []


def test_canonical_binary_detected_and_seed_not_sent():
    with fake("canonical") as g:
        assert not g.extensions
        assert not g.supports_full_state
        g.reset(seed=5)  # must not break: the seed is simply not sent
        with pytest.raises(SwiftError, match="getFullState"):
            g.full_state()


def test_error_reply_keeps_process_usable():
    with fake() as g:
        with pytest.raises(SwiftCommandError, match="Unknown command: bogus"):
            g.request({"action": "bogus"})
        with pytest.raises(SwiftCommandError, match="Missing state"):
            g.request({"action": "setState"})
        assert g.alive
        g.set_state({"player": {"row": 2, "col": 2}})
        assert len(g.valid_actions()) == 4


def test_out_of_range_action_and_step_before_reset_refused_client_side():
    with fake() as g:
        with pytest.raises(SwiftError, match="before reset"):
            g.step(0)
        g.set_state({"player": {"row": 0, "col": 0}})
        for bad in (-1, 28, True):
            with pytest.raises(ValueError):
                g.step(bad)
        assert g.alive  # nothing was sent, the binary did not abort


def test_dead_binary_reports_stderr_and_restarts():
    g = fake("die")
    try:
        g.set_state({"player": {"row": 0, "col": 0}})
        with pytest.raises(SwiftProcessError, match="simulated crash") as ei:
            g.step(0)
        assert "exit code 134" in str(ei.value)
        assert not g.alive
        with pytest.raises(SwiftProcessError, match="not running"):
            g.valid_actions()
        g.restart()
        assert g.alive and not g.has_game
        g.set_state({"player": {"row": 0, "col": 0}})
        assert g.valid_actions() == [0, 3]
    finally:
        g.close()


def test_crash_at_start_is_reported():
    with pytest.raises(SwiftProcessError, match="cannot initialise"):
        fake("crash-start")


def test_hanging_binary_times_out_and_is_killed():
    g = fake("hang", timeout=0.5)
    try:
        g.set_state({"player": {"row": 0, "col": 0}})
        t0 = time.monotonic()
        with pytest.raises(SwiftTimeoutError, match="did not answer"):
            g.step(0)
        assert time.monotonic() - t0 < 5
        assert not g.alive
    finally:
        g.close()


@pytest.mark.parametrize(
    "mode,match", [("garbage", "not JSON"), ("array", "not an object"), ("badshape", "reward")]
)
def test_garbage_replies_raise_protocol_error(mode, match):
    with fake(mode) as g:
        g.set_state({"player": {"row": 0, "col": 0}})
        with pytest.raises(SwiftProtocolError, match=match):
            g.step(0)


def test_close_is_idempotent_and_ends_process():
    g = fake()
    proc = g._proc
    g.close()
    g.close()
    assert proc is not None and proc.poll() is not None


def test_missing_binary_path_is_a_clear_error(tmp_path, monkeypatch):
    with pytest.raises(SwiftProcessError, match="not found"):
        resolve_swift_binary(tmp_path / "nope")
    f = tmp_path / "notexec"
    f.write_text("x")
    with pytest.raises(SwiftProcessError, match="not executable"):
        resolve_swift_binary(f)
    monkeypatch.setenv("HACKMATRIX_SWIFT_BIN", str(tmp_path / "nope2"))
    with pytest.raises(SwiftProcessError, match="nope2"):
        resolve_swift_binary(None)
