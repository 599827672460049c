"""``render_text``: a readable board, row 5 on top (rules §1.1)."""

from __future__ import annotations

import jax
import pytest
from builders import make_state
from hackmatrix_env.render import render_text


def _board_lines(text: str) -> dict[int, str]:
    rows = {}
    for line in text.splitlines():
        parts = line.split(maxsplit=1)
        is_header = len(parts) == 2 and parts[1].replace(" ", "").isdigit()  # "0  1 ... 5"
        if len(parts) == 2 and parts[0].isdigit() and not is_header and line.startswith("  "):
            rows[int(parts[0])] = line
    return rows


def test_rows_top_to_bottom_and_markers():
    s = make_state(
        (2, 2),
        hp=2,
        credits=7,
        enemies=[("virus", (3, 3), 1, {"stunned": True}), ("daemon", (0, 1))],
        transmissions=[("glitch", (5, 0), 2)],
        blocks=[("data", (1, 1), 7), ("program", (4, 4), "wait", {"siphoned": True})],
        resources=[("credits", (0, 4), 2), ("siphon", (0, 5))],
        owned=["push"],
    )
    text = render_text(s)
    lines = text.splitlines()
    rows = _board_lines(text)
    assert list(rows) == [5, 4, 3, 2, 1, 0]  # row 5 printed first
    cell = lambda r, c: rows[r][5 + 3 * c : 8 + 3 * c]  # noqa: E731
    assert cell(2, 2) == " @ "
    assert cell(3, 3).startswith("v1")  # stunned virus, lower case
    assert cell(0, 1).startswith("D3")
    assert cell(5, 0).startswith("t2")
    assert cell(1, 1) == "#7 "
    assert cell(4, 4) == "P *"
    assert cell(0, 4).startswith("+2") and cell(0, 5) == "[s]" and cell(5, 5).startswith("EX")
    assert "hp 2" in lines[0] and "credits 7" in lines[0]
    assert "owned: push" in text and "(4,4)=wait[10]" in text


def test_rejects_batches():
    s = make_state((0, 0))
    batch = jax.tree.map(lambda x: x[None], s)
    with pytest.raises(ValueError, match="single state"):
        render_text(batch)
