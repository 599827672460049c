"""hm-play --hint: the search's suggestion for the state on screen, in a terminal and as data.

The search is the one ``test_watch_search.py`` compiles (one row, 4 simulations, honest, step
limit 12, the same tiny network), so the two files share one compiled program.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest
from builders import scenario
from hackmatrix_env.viewer import ACTION_NAMES
from hackmatrix_train import play, terminal
from hackmatrix_train.cli import play as play_cli
from train.test_play import FIRST_SCREEN_TIMEOUT, Terminal
from train.tiny_policy import write_tiny_policy

MAX_STEPS, SIMS = 12, 4
HINT_ROW = re.compile(r"^  \[(\S+)\] (\w+)\s+(\d+)\s+(\S+)\s+([\d.]+)%( <)?$")


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    return write_tiny_policy(tmp_path_factory.mktemp("policy") / "run", MAX_STEPS)


@pytest.fixture
def board(tmp_path):
    """A board with moves, a siphon and two programs to choose from, a virus two rows up."""
    state = scenario((2, 2), stage=3, owned=["crash", "wait"], credits=5, energy=5, siphons=1,
                     enemies=[("virus", (4, 2))], blocks=[("data", (2, 4), 3)])  # fmt: skip
    path = tmp_path / "board.json"
    path.write_text(json.dumps(state))
    return path


def hint_rows(screen: str) -> list[tuple[str, str, int, str, bool]]:
    """``(key, action name, visits, Q text, chosen)`` of each row of the hint on a screen."""
    rows = []
    for line in screen.split("! hint:", 1)[1].splitlines():
        m = HINT_ROW.match(line)
        if m:
            rows.append((m[1], m[2], int(m[3]), m[4], m[6] is not None))
    return rows


def legal_names(screen: str) -> set[str]:
    line = next(x for x in screen.splitlines() if x.startswith("legal: "))
    return set(re.findall(r"\] (\w+)", line))


def test_a_hint_lists_the_legal_actions_with_visits_and_q(policy, board):
    game = play.JaxGame(0, scenario=json.loads(board.read_text()), max_steps=MAX_STEPS)
    hinter = play.Hinter(policy, SIMS, MAX_STEPS)
    mask = game.mask().copy()
    hint = hinter.suggest(game)
    assert hinter.suggest(game) == hint  # the step's key: the same hint every time
    assert game.actions == [] and (game.mask() == mask).all()  # the game is untouched
    rows = {a: (n, q) for a, n, q, _ in hint["actions"]}
    assert set(rows) == set(np.flatnonzero(mask)) and mask[hint["action"]]
    assert sum(n for n, _ in rows.values()) == SIMS
    assert all((q is not None) == (n > 0) for n, q in rows.values())
    text = terminal.hint_text(hint, game.scene()["hud"]["owned"])
    assert text.startswith(f"hint: {ACTION_NAMES[hint['action']]} [")
    assert (f"the greedy network would play {ACTION_NAMES[hint['greedy']]}" in text) == hint[
        "differs"
    ]


def test_the_hint_key_in_a_terminal(policy, board, monkeypatch):
    term = Terminal(["--scenario", str(board), "--hint", "--hint-policy", str(policy),
                     "--search-simulations", str(SIMS), "--max-steps", str(MAX_STEPS),
                     "--no-compile-cache"], monkeypatch)  # fmt: skip
    screen = term.read_until("legal:", FIRST_SCREEN_TIMEOUT)
    legal = legal_names(screen)
    term.text = ""
    os.write(term.fd, b"h")
    screen = term.read_until("! hint:", FIRST_SCREEN_TIMEOUT)
    rows = hint_rows(screen)
    assert {name for _, name, _, _, _ in rows} == legal  # legal actions only, each once
    assert len(rows) == len(legal) and sum(n for _, _, n, _, _ in rows) == SIMS
    assert all((q == "—") == (n == 0) for _, _, n, q, _ in rows)
    (chosen,) = [name for _, name, _, _, c in rows if c]
    assert f"hint: {chosen} [" in screen
    assert hint_rows(term.send("h", "! hint:")) == rows  # asked again: the same hint
    key = next(k for k, _, _, _, c in rows if c).split("/")[-1]  # "↑/w" -> "w"
    screen = term.send(key, f"last: {chosen}")  # play it: the hint is gone
    assert "! hint:" not in screen
    assert "bye" in term.finish(b"q")
    assert term.status == 0


def test_without_hint_the_key_says_how_to_get_one(board, monkeypatch):
    term = Terminal(["--scenario", str(board), "--no-compile-cache"], monkeypatch)
    term.read_until("legal:", FIRST_SCREEN_TIMEOUT)
    assert "start hm-play with --hint" in term.send("h", "no hints")
    term.finish(b"q")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--hint", "--swift"], "cannot be used with --swift"),
        (
            ["--hint", "--hint-policy", "/nonexistent/run"],
            "no such file or directory: /nonexistent/run",
        ),
    ],
)
def test_bad_hint_arguments_get_a_message(argv, message, capsys):
    assert play_cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_hint_sims_below_one_gets_a_message(policy, capsys):
    assert play_cli.main(["--hint", "--hint-policy", str(policy), "--search-simulations", "0"]) == 2
    assert "--search-simulations must be >= 1" in capsys.readouterr().err
