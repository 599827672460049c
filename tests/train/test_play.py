"""hm-play driven through a pseudo-terminal: keys in, screens out, to the end of a game.

``main`` runs in a thread with the pty's slave side as its stdin and stdout (so the keys
are read in cbreak mode from a real terminal), and the test types on the master side. In
process, the one-row env step compiled for the replay tests is reused.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import sys
import threading
import time

import pytest
from builders import scenario
from hackmatrix_train.cli import play as play_cli

FIRST_SCREEN_TIMEOUT = 240  # seconds: the env step may compile first


class Terminal:
    """``hm-play ARGV`` on the slave side of a pty; the master side types and reads."""

    def __init__(self, argv: list[str], monkeypatch):
        self.fd, slave = pty.openpty()
        self.slave_in = os.fdopen(slave, "r", closefd=False)
        self.slave_out = os.fdopen(os.dup(slave), "w", encoding="utf-8")
        monkeypatch.setattr(sys, "stdin", self.slave_in)
        monkeypatch.setattr(sys, "stdout", self.slave_out)
        monkeypatch.setenv("NO_COLOR", "1")
        self.slave, self.text, self.status = slave, "", None
        self.thread = threading.Thread(target=self._main, args=(argv,), daemon=True)
        self.thread.start()

    def _main(self, argv):
        self.status = play_cli.main(argv)
        with contextlib.suppress(OSError):  # the master may have hung up
            self.slave_out.flush()

    def _pump(self, left: float) -> None:
        if select.select([self.fd], [], [], max(left, 0))[0]:
            with contextlib.suppress(OSError):
                self.text += (
                    os.read(self.fd, 65536).decode("utf-8", "replace").replace("\r\n", "\n")
                )

    def read_until(self, needle: str, timeout: float = 60) -> str:
        """The last screen, once it shows ``needle`` and the prompt."""
        deadline = time.monotonic() + timeout
        while True:
            tail = self.text.rsplit("HackMatrix  seed", 1)[-1]
            if needle in tail and tail.endswith("> "):
                return tail
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise AssertionError(f"no {needle!r}; screen:\n{self.text[-3000:]}")
            self._pump(deadline - time.monotonic())

    def send(self, keys: str, expect: str) -> str:
        self.text = ""
        os.write(self.fd, keys.encode())
        return self.read_until(expect)

    def finish(self, keys: bytes | None) -> str:
        """Type ``keys`` (None: hang up the terminal) and wait for hm-play to return."""
        self.text = ""
        if keys is None:
            os.close(self.fd)
        else:
            os.write(self.fd, keys)
        deadline = time.monotonic() + 30
        while self.thread.is_alive() and time.monotonic() < deadline:
            if keys is None:
                time.sleep(0.05)
            else:
                self._pump(0.05)
        assert not self.thread.is_alive(), "hm-play did not stop"
        if keys is not None:
            self._pump(0.2)
            os.close(self.fd)
        os.close(self.slave)
        return self.text


def cell(screen: str, row: int, col: int) -> str:
    """The occupant drawn at (row, col): board rows are ' r  ' then 9-character cells."""
    line = next(x for x in screen.splitlines() if x.startswith(f" {row}  "))
    return line[4 + 9 * col : 4 + 9 * (col + 1)].strip()


@pytest.fixture
def stage8_scenario(tmp_path):
    """Stage 8, two steps below the exit: reaching it wins the game (rules §10)."""
    state = scenario((3, 5), stage=8, owned=["crash"], credits=0, energy=0,
                     blocks=[("data", (3, 3), 4)])  # fmt: skip
    path = tmp_path / "s.json"
    path.write_text(json.dumps(state))
    return path


def test_play_a_game_to_its_end_in_a_terminal(stage8_scenario, tmp_path, monkeypatch):
    log = tmp_path / "log.json"
    term = Terminal(["--scenario", str(stage8_scenario), "--save-actions", str(log),
                     "--no-compile-cache"], monkeypatch)  # fmt: skip
    screen = term.read_until("legal:", FIRST_SCREEN_TIMEOUT)
    assert cell(screen, 3, 5) == "@3" and cell(screen, 5, 5) == "EXIT"
    assert cell(screen, 3, 3) == "#4" and "stage 8/8" in screen
    assert "not now: [1] crash" in screen  # owned, but no credits
    screen = term.send("z", "'z' is not a key")
    assert cell(screen, 3, 5) == "@3"
    screen = term.send("1", "crash is not legal now")
    assert cell(screen, 3, 5) == "@3"
    screen = term.send("s", "last: down")
    assert cell(screen, 2, 5) == "@3" and cell(screen, 3, 5) == "·"
    assert "step penalty -0.010" in screen  # the step's reward components
    screen = term.send("u", "took the last step back")
    assert cell(screen, 3, 5) == "@3" and "step 0" in screen
    screen = term.send("\x1b[A", "last: up")  # the up arrow
    assert cell(screen, 4, 5) == "@3"
    screen = term.send("w", "GAME OVER: victory")
    assert "victory +" in screen and cell(screen, 5, 5) == "@3"
    term.send("d", "the game is over")
    assert "bye" in term.finish(b"q")
    assert term.status == 0
    assert json.loads(log.read_text())["episodes"][0]["actions"] == [0, 0]


def test_end_of_input_quits_cleanly(stage8_scenario, monkeypatch):
    term = Terminal(["--scenario", str(stage8_scenario), "--no-compile-cache"], monkeypatch)
    term.read_until("legal:", FIRST_SCREEN_TIMEOUT)
    term.finish(None)  # the terminal hangs up
    assert term.status == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--stage", "9"], "--stage must be in 1..8"),
        (["--scenario", "/nonexistent.json"], "no such file or directory: /nonexistent.json"),
        (["--scenario", "{garbled}"], "cannot read scenario"),
        (["--swift", "--save-actions", "x.json"], "JAX games only"),
    ],
)
def test_bad_arguments_get_a_message(argv, message, tmp_path, capsys):
    garbled = tmp_path / "garbled.json"
    garbled.write_text("{not json")
    try:  # argparse's own refusals (a missing path) exit; the tool's own return the status
        status = play_cli.main([a.format(garbled=garbled) for a in argv])
    except SystemExit as e:
        status = e.code
    err = capsys.readouterr().err
    assert status == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert message in err, err


def swift_binary_or_skip() -> str:
    """The Swift headless binary ($HACKMATRIX_SWIFT_BIN, else ours, built if stale)."""
    import shutil

    if os.environ.get("HACKMATRIX_SWIFT_BIN"):
        return os.environ["HACKMATRIX_SWIFT_BIN"]
    if shutil.which("swift") is None:
        pytest.skip("no Swift toolchain and no HACKMATRIX_SWIFT_BIN")
    from hackmatrix_parity.build import ensure_swift_binary

    return str(ensure_swift_binary())


def screens(argv: list[str], keys: list[str], monkeypatch) -> list[str]:
    """Every screen hm-play shows for ``keys``, the first one included."""
    term = Terminal([*argv, "--no-compile-cache"], monkeypatch)
    shown = [term.read_until("legal:", FIRST_SCREEN_TIMEOUT)]
    for key in keys:
        shown.append(term.send(key, ""))
    term.finish(b"q")
    return shown


def test_swift_shows_the_same_game_as_jax(stage8_scenario, monkeypatch):
    """Differential: the same keys on --swift draw the same screens (board, HUD, rewards)."""
    binary = swift_binary_or_skip()
    keys = ["z", "1", "s", "a", "u", "u", "\x1b[A", "w", "d"]
    jax_screens = screens(["--scenario", str(stage8_scenario)], keys, monkeypatch)
    swift_screens = screens(
        ["--swift", "--swift-bin", binary, "--scenario", str(stage8_scenario)], keys, monkeypatch
    )
    assert "GAME OVER: victory" in jax_screens[-2]
    assert swift_screens == jax_screens
