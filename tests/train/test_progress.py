"""Progress output: a redrawn bar on a terminal, plain lines when piped, compile notices."""

import fcntl
import io
import os
import struct
import subprocess
import sys
import termios

from hackmatrix_train import progress

# A child process that runs a 20-item bar on its stderr; the parent decides what stderr is.
CHILD = """
from hackmatrix_train import progress
progress.say("starting")
with progress.bar(20, "episodes") as b:
    for _ in range(20):
        b.update()
progress.say("done")
"""


def run_child(stderr) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", CHILD], stderr=stderr, stdout=subprocess.PIPE, timeout=60, check=True
    )


def read_all(fd: int) -> str:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO on Linux once the child side is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode()


def open_terminal(rows: int = 24, cols: int = 100) -> tuple[int, int]:
    """A pseudo-terminal pair with a window size, as a real terminal has."""
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    return leader, follower


def test_bar_on_a_pseudo_terminal_is_a_redrawn_tqdm_bar():
    leader, follower = open_terminal()
    try:
        run_child(follower)
    finally:
        os.close(follower)
    text = read_all(leader)
    os.close(leader)
    assert "starting" in text and "done" in text
    assert "\r" in text  # redrawn in place
    assert "20/20" in text and "100%" in text  # tqdm's own counter and percentage
    assert "episodes: 20/20 episodes (" not in text  # not the plain form


def test_bar_when_piped_is_plain_lines():
    text = run_child(subprocess.PIPE).stderr.decode()
    lines = text.splitlines()
    assert "\r" not in text and "%|" not in text
    assert lines[0] == "starting" and lines[-1] == "done"
    counts = [line.split(": ")[1].split(" ")[0] for line in lines[1:-1]]
    assert counts == [f"{n}/20" for n in range(2, 21, 2)]  # one line per tenth, the last at 20


def test_plain_bar_every_sets_the_spacing_and_close_prints_once():
    out = io.StringIO()
    b = progress.bar(7, "games", unit="game", out=out, every=3)
    for _ in range(7):
        b.update()
    b.close()
    b.close()
    lines = out.getvalue().splitlines()
    assert [line.split(" (")[0] for line in lines] == [
        "games: 3/7 games",
        "games: 6/7 games",
        "games: 7/7 games",
    ]


def test_compiling_says_what_before_and_how_long_after():
    out = io.StringIO()
    with progress.compiling("the search", estimate_s=40, out=out):
        assert (
            out.getvalue() == "compiling the search: about 40 s the first time, cached after...\n"
        )
    _, second = out.getvalue().splitlines()
    assert second.startswith("compiled the search in ") and second.endswith(" s")


def test_is_terminal_follows_the_stream():
    assert not progress.is_terminal(io.StringIO())
    leader, follower = os.openpty()
    with os.fdopen(follower, "w") as tty:
        assert progress.is_terminal(tty)
    os.close(leader)
