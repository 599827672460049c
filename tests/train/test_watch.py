"""hm-watch / hm-eval --replay: recorded episodes, action logs, and the HTML replay in Chromium.

Every recording here steps one row at a time (episodes of at most 40 steps), like hm-play
and action-log replays, so the env step compiles once per test process; the browser tests
share one headless Chromium.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import jax
import numpy as np
import pytest
from flax import serialization
from hackmatrix_env import EnvParams, HackMatrix
from hackmatrix_env.constants import ENEMY_NAMES, REWARD_COMPONENTS, BlockKind, Content, Resource
from hackmatrix_env.viewer import ACTION_NAMES
from hackmatrix_train import checkpoint as ckpt
from hackmatrix_train import episodes as E
from hackmatrix_train.cli.evaluate import main as eval_main
from hackmatrix_train.cli.watch import main as watch_main
from hackmatrix_train.config import TrainConfig
from hackmatrix_train.network import make_network
from hackmatrix_train.replay_html import write_html
from train.browser import chromium_or_skip, console_errors
from train.recipes import plain_ppo

SEED, BATCH, MAX_STEPS = 5, 3, 40
PARAMS = EnvParams(max_steps_in_episode=MAX_STEPS)


@pytest.fixture(scope="module")
def recorded():
    """Three random-policy episodes (indices 0, 1, 2 of a batch of 3), with their states."""
    stepper = E.Stepper(PARAMS)
    return [E.play(stepper, None, SEED, BATCH, [i], keep_states=True)[0] for i in range(BATCH)]


def test_frames_follow_the_recorded_states(recorded):
    for ep in recorded:
        assert len(ep.frames) == len(ep.states) == len(ep.actions) + 1
        assert ep.end in ("died", "time limit", "victory", "invalid action")
        assert ep.ret == pytest.approx(sum(f["reward"] for f in ep.frames[1:]), abs=1e-3)
        for f, a in zip(ep.frames[1:], ep.actions, strict=True):
            assert f["action"] == a and f["mask"][a] == "1"  # the random policy picks legal moves
            assert sum(f["breakdown"]) == pytest.approx(f["reward"], abs=1e-4)
            assert [p for _, p in f["probs"]] == sorted((p for _, p in f["probs"]), reverse=True)
        last = ep.states[-1]
        assert (ep.end == "died") == (int(last.game.player.hp) == 0)
        assert (ep.end == "time limit") == (int(last.time) == MAX_STEPS)


def test_action_log_replays_the_same_episodes(recorded, tmp_path):
    log = E.action_log(recorded, SEED, BATCH, PARAMS)
    path = tmp_path / "actions.json"
    path.write_text(json.dumps(log))
    again = E.replay_log(E.read_action_log(path))
    assert [ep.summary() for ep in again] == [ep.summary() for ep in recorded]
    for a, b in zip(again, recorded, strict=True):
        assert a.frames == b.frames


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"format": "x"}, "not a hackmatrix-actions/1"),
        ({"seed": "0"}, "'seed' must be an integer"),
        ({"episodes": []}, "non-empty list"),
        ({"episodes": [{"index": 3, "actions": []}]}, r"index must be in 0\.\.2"),
        ({"episodes": [{"index": 0, "actions": [28]}]}, "action indices"),
        (
            {"episodes": [{"index": 0, "actions": []}, {"index": 0, "actions": []}]},
            "share an index",
        ),
        ({"start_stage": 9}, "start_stage"),
    ],
)
def test_bad_action_logs_get_a_clear_error(recorded, tmp_path, edit, message):
    log = {**E.action_log(recorded, SEED, BATCH, PARAMS), **edit}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(log))
    with pytest.raises(ValueError, match=message):
        E.read_action_log(path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not JSON"):
        E.read_action_log(path)


def write_params_export(path, cfg: TrainConfig, saved_config: dict | None = None):
    """A params export as ``save_checkpoint`` writes it, of a freshly initialised network.

    ``saved_config`` replaces ``cfg.to_dict()`` as the config recorded in the export.
    """
    obs, _ = jax.eval_shape(HackMatrix().reset, jax.random.key(0), PARAMS)
    net = make_network(cfg.network, 28, cfg.hidden_dim, cfg.num_layers)
    one = jax.tree.map(lambda s: np.zeros((1, *s.shape), s.dtype), obs)
    params = net.init(jax.random.key(1), one)
    blob = serialization.msgpack_serialize(ckpt.flatten_state(params))
    path.mkdir(parents=True, exist_ok=True)
    (path / "params.msgpack").write_bytes(blob)
    config = cfg.to_dict() if saved_config is None else saved_config
    meta = {"format": ckpt.PARAMS_FORMAT, "update": 3, "config": config}
    meta["sha256"] = hashlib.sha256(blob).hexdigest()
    (path / "params.json").write_text(json.dumps(meta))
    return path / "params.msgpack"


def replay_json(html_path) -> dict:
    text = html_path.read_text()
    start = text.index('<script type="application/json" id="replay-data">') + 49
    return json.loads(text[start : text.index("</script>", start)].replace("<\\/", "</"))


def test_eval_replay_shows_the_episodes_hm_eval_scores(tmp_path):
    """Differential: hm-eval's summary and its --replay come from the same episodes.

    The export was saved with a start-kit curriculum the trainer no longer has: it loads
    with a warning, and ``--start-stage 3`` starts the evaluation there.
    """
    cfg = plain_ppo(hidden_dim=16, num_layers=1, max_steps_in_episode=MAX_STEPS, no_wandb=True)
    old = {**cfg.to_dict(), "start_stage": 1, "kit_siphons": 3, "kit_prob": 0.5}
    params = write_params_export(tmp_path / "run", cfg, old)
    out, summary = tmp_path / "eval.html", tmp_path / "eval.json"
    argv = [str(params), "--episodes", "1", "--seed", str(SEED), "--greedy", "--start-stage", "3",
            "--json", str(summary), "--replay", str(out), "--no-compile-cache"]  # fmt: skip
    with pytest.warns(UserWarning, match="kit_siphons=3, kit_prob=0.5"):
        assert eval_main(argv) == 0
    s = json.loads(summary.read_text())
    assert s["start_stage"] == 3 and min(int(k) for k in s["stage_distribution"]) >= 3
    eps = [e["summary"] for e in replay_json(out)["episodes"]]
    assert len(eps) == 1
    returns = np.array([e["return"] for e in eps])
    assert returns.mean() == pytest.approx(s["return_mean"], abs=1e-3)
    assert returns.min() == pytest.approx(s["return_min"], abs=1e-3)
    assert np.mean([e["length"] for e in eps]) == pytest.approx(s["length_mean"])
    assert Counter(str(e["stage"]) for e in eps) == Counter(
        {k: v for k, v in s["stage_distribution"].items()}
    )
    frames = replay_json(out)["episodes"][0]["frames"]
    assert all(f["value"] is not None for f in frames[1:])  # a network has a value head
    # hm-watch with the same checkpoint, seed and count plays the same episode
    watched = tmp_path / "watch.html"
    argv = [str(params), "--episodes", "1", "--seed", str(SEED), "--start-stage", "3",
            "--out", str(watched), "--no-compile-cache"]  # fmt: skip
    with pytest.warns(UserWarning, match="ignoring removed training-curriculum"):
        assert watch_main(argv) == 0
    assert replay_json(watched)["episodes"] == replay_json(out)["episodes"]


def test_hm_watch_replays_an_action_log_with_a_gif(recorded, tmp_path):
    from PIL import Image

    log, out, gif = tmp_path / "a.json", tmp_path / "r.html", tmp_path / "r.gif"
    log.write_text(json.dumps(E.action_log(recorded, SEED, BATCH, PARAMS)))
    shortest = int(np.argmin([len(ep.frames) for ep in recorded]))
    argv = ["--actions", str(log), "--out", str(out), "--gif", str(gif),
            "--gif-episode", str(shortest), "--no-compile-cache"]  # fmt: skip
    assert watch_main(argv) == 0
    shown = replay_json(out)["episodes"]
    assert [e["summary"] for e in shown] == [ep.summary() for ep in recorded]
    assert [e["frames"] for e in shown] == [ep.frames for ep in recorded]
    with Image.open(gif) as im:
        assert im.n_frames == len(recorded[shortest].frames)


def test_hm_watch_random_policy_and_its_log(tmp_path):
    out, log = tmp_path / "r.html", tmp_path / "a.json"
    argv = ["--random", "--episodes", "1", "--seed", "9", "--max-steps-in-episode",
            str(MAX_STEPS), "--out", str(out), "--save-actions", str(log), "--no-compile-cache"]  # fmt: skip
    assert watch_main(argv) == 0
    (shown,) = replay_json(out)["episodes"]
    (logged,) = E.read_action_log(log)["episodes"]
    assert [f["action"] for f in shown["frames"][1:]] == logged["actions"]
    assert shown["summary"]["length"] == len(logged["actions"]) >= 1


def test_hm_watch_and_hm_eval_bad_arguments_get_a_message(tmp_path, capsys):
    out = str(tmp_path / "r.html")
    assert watch_main(["--search-mode", "oracle", "--out", out]) == 2  # a search flag alone
    assert watch_main(["--random", "--episodes", "0", "--out", out]) == 2
    assert watch_main(["--random", "--start-stage", "9", "--out", out]) == 2
    assert watch_main(["--actions", str(tmp_path / "missing.json"), "--out", out]) == 2
    assert watch_main([str(tmp_path / "no-such-run"), "--out", out]) == 2
    assert eval_main([str(tmp_path / "no-such-run"), "--start-stage", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 6 and "Traceback" not in err
    assert err.count("--start-stage must be in 1..8") == 1  # hm-eval: the path is checked first
    assert "hm-eval: error: no such file or directory" in err


# --------------------------------------------------------------------------- the browser


@pytest.fixture(scope="module")
def page(recorded, tmp_path_factory):
    path = tmp_path_factory.mktemp("replay") / "replay.html"
    write_html(path, recorded, subtitle="test")
    driver = chromium_or_skip()
    driver.get(path.as_uri())
    yield driver
    driver.quit()


def drawn_cells(driver) -> list[dict]:
    return driver.execute_script(
        """return [...document.querySelectorAll('#board g.cell')].flatMap(c =>
             [...c.querySelectorAll('g.item')].map(i => ({row: +c.dataset.row,
               col: +c.dataset.col, ...i.dataset})));"""
    )


def test_the_page_loads_without_console_errors(page):
    assert page.execute_script("return document.querySelectorAll('#board g.cell').length") == 36
    assert page.execute_script("return document.querySelectorAll('#episodes li').length") == BATCH
    assert console_errors(page) == []


@pytest.mark.parametrize(("episode", "step"), [(0, 0), (1, 7), (2, -1)])
def test_the_board_drawn_at_a_step_is_the_state(page, recorded, episode, step):
    ep = recorded[episode]
    step = step % len(ep.frames)
    page.execute_script("pick(arguments[0]); go(arguments[1]);", episode, step)
    s = ep.states[step].game
    items = drawn_cells(page)
    by = lambda kind: [i for i in items if i["kind"] == kind]  # noqa: E731
    (player,) = by("player")
    assert (player["row"], player["col"], int(player["hp"])) == (
        *map(int, s.player.pos),
        int(s.player.hp),
    )
    e = s.enemies
    expect = Counter(
        (int(e.pos[k, 0]), int(e.pos[k, 1]), ENEMY_NAMES[int(e.kind[k])], int(e.hp[k]))
        for k in range(len(e.alive)) if e.alive[k] and e.hp[k] > 0
    )  # fmt: skip
    assert Counter((i["row"], i["col"], i["type"], int(i["hp"])) for i in by("enemy")) == expect
    t = s.transmissions
    expect = Counter((int(t.pos[k, 0]), int(t.pos[k, 1]), int(t.countdown[k])) for k in range(len(t.alive)) if t.alive[k])  # fmt: skip
    assert Counter((i["row"], i["col"], int(i["countdown"])) for i in by("transmission")) == expect
    g = s.grid
    blocks = {(i["row"], i["col"]): i["block"] for i in by("block")}
    expect = {}
    for r, c in zip(*np.nonzero(np.asarray(g.content) == Content.BLOCK), strict=True):
        kind = "data" if g.block_kind[r, c] == BlockKind.DATA else "program"
        expect[(int(r), int(c))] = "question" if g.block_question[r, c] else kind
    assert blocks == expect
    assert [(i["row"], i["col"]) for i in by("exit")] == [tuple(map(int, s.exit_pos))]
    pickups = {(int(r), int(c)) for r, c in zip(*np.nonzero(np.asarray(g.content) == Content.DATA_SIPHON), strict=True)}  # fmt: skip
    assert {(i["row"], i["col"]) for i in by("data_siphon")} == pickups
    shown = (np.asarray(g.content) != Content.BLOCK) | np.asarray(g.siphoned)
    credits = (
        shown
        & (np.asarray(g.resource_kind) == Resource.CREDITS)
        & (np.asarray(g.resource_amount) > 0)
    )
    assert {(i["row"], i["col"]) for i in by("resource") if i["resource"] == "credits"} == {
        (int(r), int(c)) for r, c in zip(*np.nonzero(credits), strict=True)
    }
    hud = page.find_element("id", "hud").text
    assert f"TURN\n{int(s.turn)}" in hud and f"CREDITS\n{int(s.player.credits)}" in hud


def test_controls_step_the_replay_and_show_the_reward(page, recorded):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    ep = recorded[1]
    last = len(ep.frames) - 1
    page.find_elements(By.CSS_SELECTOR, "#episodes li")[1].click()
    counter = lambda: page.find_element(By.ID, "step-counter").text  # noqa: E731
    reward = lambda: float(page.find_element(By.ID, "step-reward").get_attribute("data-value"))  # noqa: E731
    assert counter() == f"step 0 / {last}"
    page.find_element(By.ID, "next").click()
    page.find_element(By.ID, "next").click()
    assert counter() == f"step 2 / {last}"
    assert reward() == pytest.approx(ep.frames[2]["reward"])
    body = page.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.ARROW_RIGHT)
    assert counter() == f"step 3 / {last}"
    assert reward() == pytest.approx(ep.frames[3]["reward"])
    assert page.find_element(By.ID, "action-name").text == ACTION_NAMES[ep.actions[2]]
    body.send_keys(Keys.ARROW_LEFT)
    assert counter() == f"step 2 / {last}"
    shown = page.execute_script(
        "return [...document.querySelectorAll('#rewards td.v')].map(td => td.textContent)"
    )
    assert len(shown) == len(REWARD_COMPONENTS)
    for text, value in zip(shown, ep.frames[2]["breakdown"], strict=True):
        assert float(text) == pytest.approx(value, abs=1e-4)
    legal = page.execute_script(
        "return [...document.querySelectorAll('#mask div.legal')].map(d => +d.dataset.action)"
    )
    assert legal == [a for a, m in enumerate(ep.frames[2]["mask"]) if m == "1"]
    page.find_element(By.ID, "last").click()
    assert counter() == f"step {last} / {last}"
    assert ep.end in page.find_element(By.ID, "end-note").text
    body.send_keys(Keys.HOME)
    page.find_element(By.ID, "play").click()  # plays from the start at 250 ms a step
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(page, 10).until(lambda d: counter() != f"step 0 / {last}")
    page.find_element(By.ID, "play").click()  # pause
    assert console_errors(page) == []
