"""replay_html.py: one self-contained page holding every recorded frame and action.

The episodes here are built from scenario states (``episodes.frame``), so nothing compiles;
the browser tests of the page's behaviour are in ``test_watch.py``.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest
from builders import make_state
from hackmatrix_env.constants import NUM_ACTIONS, REWARD_COMPONENTS, Action
from hackmatrix_env.viewer import ACTION_NAMES
from hackmatrix_train import episodes as E
from hackmatrix_train.replay_html import render_html, replay_data, write_html


def episode(index: int, actions: list[int], end: str = "died") -> E.Episode:
    """An episode whose player walks up column 0, one frame per action after the start."""
    mask = np.ones(NUM_ACTIONS, bool)
    probs = np.full(NUM_ACTIONS, 1 / NUM_ACTIONS)
    ep = E.Episode(index, end=end)
    ep.frames.append(E.frame(make_state((0, 0))))
    for t, action in enumerate(actions):
        breakdown = np.zeros(len(REWARD_COMPONENTS), np.float32)
        breakdown[0] = -0.01 * (t + 1)
        state = make_state((min(t + 1, 5), 0))
        ep.frames.append(E.frame(state, action, mask, probs, 0.5, breakdown.sum(), breakdown))
        ep.actions.append(action)
        ep.ret += float(breakdown.sum())
    return ep


EPISODES = [episode(0, [Action.UP, Action.UP, Action.SIPHON]), episode(1, [Action.DOWN])]


def page_data(page: str) -> dict:
    found = re.search(
        r'<script type="application/json" id="replay-data">(.*?)</script>', page, re.S
    )
    assert found, "no replay data in the page"
    return json.loads(found.group(1))


def test_the_page_holds_one_frame_per_step_and_the_actions_taken():
    data = page_data(render_html(EPISODES, subtitle="two episodes"))
    assert len(data["episodes"]) == len(EPISODES)
    for shown, ep in zip(data["episodes"], EPISODES, strict=True):
        assert shown["summary"] == ep.summary()
        assert len(shown["frames"]) == len(ep.actions) + 1  # the start, then one per step
        assert [f["action"] for f in shown["frames"][1:]] == [int(a) for a in ep.actions]
        assert "action" not in shown["frames"][0]
        assert shown["frames"] == json.loads(json.dumps(ep.frames))
    assert data["actions"] == list(ACTION_NAMES) and data["components"] == list(REWARD_COMPONENTS)
    assert data["subtitle"] == "two episodes"


def test_the_page_is_self_contained():
    page = render_html(EPISODES)
    # every reference is inline (a data: URI, e.g. the empty favicon) or within the page
    refs = re.findall(r"""\b(?:href|src)\s*=\s*["']([^"']*)""", page, re.I)
    assert all(ref.startswith(("data:", "#")) for ref in refs), refs
    assert not re.search(r"<(img|iframe|object|embed)\b", page, re.I)
    assert not re.search(r"@import|url\(\s*['\"]?(https?:)?//", page, re.I)
    assert "fetch(" not in page and "XMLHttpRequest" not in page
    # the only absolute URL is the SVG namespace, which names elements and loads nothing
    assert set(re.findall(r"https?://[^\s\"'`)]+", page)) <= {"http://www.w3.org/2000/svg"}


def test_text_from_the_episodes_cannot_close_the_page_early():
    ep = episode(0, [Action.UP])
    ep.scenario = {"note": "</script><script>alert(1)</script>"}
    ep.frames[1]["scene"]["hud"]["note"] = "</script><b>"
    page = render_html([ep], title="<i>t</i>", subtitle="</title>")
    assert page.count("</script>") == 2  # the data block's and the code block's own
    assert "<i>t</i>" not in page and "&lt;i&gt;t&lt;/i&gt;" in page
    assert page_data(page)["episodes"][0]["frames"][1]["scene"]["hud"]["note"] == "</script><b>"


def test_search_frames_reach_the_page():
    found = SimpleNamespace(
        mask=np.array([1, 1, 0, 0] + [0] * (NUM_ACTIONS - 4), bool),
        visit_counts=np.array([3, 5] + [0] * (NUM_ACTIONS - 2)),
        prior=np.array([0.7, 0.3] + [0.0] * (NUM_ACTIONS - 2)),
        q_values=np.array([0.1, 0.4] + [0.0] * (NUM_ACTIONS - 2)),
        search_value=np.float32(0.3),
        action=np.int32(1),
        prior_action=np.int32(0),
    )
    ep = episode(0, [Action.DOWN])
    ep.frames[1]["search"] = E.search_frame(found)
    shown = page_data(render_html([ep]))["episodes"][0]["frames"][1]["search"]
    assert shown["differs"] is True and shown["simulations"] == 8
    assert [row[:2] for row in shown["actions"]] == [[1, 5], [0, 3]]  # most visited first
    assert E.search_differs(ep) == 1


def test_write_html_creates_the_folders(tmp_path):
    path = write_html(tmp_path / "a" / "b" / "replay.html", EPISODES)
    assert path.exists()
    assert page_data(path.read_text(encoding="utf-8"))["episodes"][1]["summary"]["index"] == 1


def test_a_replay_needs_an_episode():
    with pytest.raises(ValueError, match="at least one episode"):
        replay_data([], "t", "s")
