"""hm-watch --search: episodes played by a Gumbel search, the search's columns, logs and page.

One tiny network, one episode of at most 12 steps, 4 simulations per move, honest search: the
search compiles once for one row (``test_play_hint.py`` uses the very same program), and the
persistent compilation cache keeps it between runs.
"""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest
from hackmatrix_env import HackMatrix
from hackmatrix_env.constants import Action
from hackmatrix_train import episodes as E
from hackmatrix_train.cli.watch import main as watch_main
from hackmatrix_train.replay_html import write_html
from train.browser import chromium_or_skip, console_errors
from train.tiny_policy import write_tiny_policy

SEED, MAX_STEPS, SIMS = 3, 12, 4


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    return write_tiny_policy(tmp_path_factory.mktemp("policy") / "run", MAX_STEPS)


def replay_json(html_path) -> dict:
    text = html_path.read_text()
    start = text.index('<script type="application/json" id="replay-data">') + 49
    return json.loads(text[start : text.index("</script>", start)].replace("<\\/", "</"))


def watch(policy, out, seed: int, *extra: str) -> dict:
    """``hm-watch POLICY --search 4`` of one episode; the page's data."""
    argv = [str(policy), "--search", str(SIMS), "--episodes", "1", "--seed", str(seed),
            "--max-steps-in-episode", str(MAX_STEPS), "--out", str(out), "--no-compile-cache",
            *extra]  # fmt: skip
    assert watch_main(argv) == 0
    return replay_json(out)


@pytest.fixture(scope="module")
def searched(policy, tmp_path_factory):
    """``(page data, action log, page)`` of one searched episode."""
    d = tmp_path_factory.mktemp("searched")
    data = watch(policy, d / "search.html", SEED, "--save-actions", str(d / "search.json"))
    return data, d / "search.json", d / "search.html"


def test_the_search_columns_are_consistent(searched):
    data, _, _ = searched
    assert "search 4 sims, honest" in data["subtitle"]
    (episode,) = data["episodes"]
    frames = episode["frames"]
    assert "search" not in frames[0] and len(frames) == episode["summary"]["length"] + 1 >= 2
    for f in frames[1:]:
        s = f["search"]
        legal = {a for a, m in enumerate(f["mask"]) if m == "1"}
        searched_actions = legal - {int(Action.UNDO)} or legal  # the run kept UNDO out
        rows = {a: (n, q, p) for a, n, q, p in s["actions"]}
        assert set(rows) == searched_actions and len(rows) == len(s["actions"])
        assert s["action"] == f["action"] and f["action"] in legal
        visits = [n for _, n, _, _ in s["actions"]]
        assert sum(visits) == s["simulations"] == SIMS  # every simulation passes the root
        assert visits == sorted(visits, reverse=True)
        assert rows[s["action"]][0] == max(visits)  # Gumbel plays a most-visited action
        for n, q, _ in rows.values():
            assert (q is not None) == (n > 0)
            assert q is None or np.isfinite(q)
        assert sum(p for _, _, p in rows.values()) == pytest.approx(1.0, abs=1e-3)
        # greedy = the prior's argmax = the network's most likely legal action
        assert rows[s["greedy"]][2] == max(p for _, _, p in rows.values())
        assert s["greedy"] == f["probs"][0][0]
        assert s["differs"] == (s["action"] != s["greedy"])


def test_the_console_counts_the_moves_the_search_overrules(policy, tmp_path, capsys):
    data = watch(policy, tmp_path / "again.html", SEED)
    (episode,) = data["episodes"]
    differs = sum(f["search"]["differs"] for f in episode["frames"][1:])
    length = episode["summary"]["length"]
    assert f"search ≠ greedy on {differs} of {length} moves" in capsys.readouterr().out


def test_the_same_seed_plays_the_same_searched_episodes(policy, searched, tmp_path):
    data, _, _ = searched
    assert watch(policy, tmp_path / "same.html", SEED)["episodes"] == data["episodes"]
    other = watch(policy, tmp_path / "other.html", SEED + 1)["episodes"][0]
    assert other["frames"][0]["scene"] != data["episodes"][0]["frames"][0]["scene"]


def test_the_action_log_replays_the_searched_trajectory(searched, tmp_path):
    """The env keys do not depend on the policy: the logged actions replay with no search."""
    data, log_path, _ = searched
    log = E.read_action_log(log_path)
    (episode,) = data["episodes"]
    assert log["episodes"][0]["actions"] == [f["action"] for f in episode["frames"][1:]]
    (again,) = E.replay_log(log)
    assert again.summary() == episode["summary"]
    keep = ("scene", "action", "reward", "breakdown", "mask")
    shown = [{k: f[k] for k in keep if k in f} for f in episode["frames"]]
    assert [{k: f[k] for k in keep if k in f} for f in again.frames] == shown
    # and hm-watch --actions shows it the same way
    out = tmp_path / "replayed.html"
    assert watch_main(["--actions", str(log_path), "--out", str(out), "--no-compile-cache"]) == 0
    (replayed,) = replay_json(out)["episodes"]
    assert replayed["summary"] == episode["summary"]


def test_hm_watch_search_plays_what_search_evaluation_scores(policy, searched):
    """Differential: ``make_search_evaluate`` (hm-eval's search) plays the same episode."""
    from hackmatrix_train.policy import load_policy, search_config
    from hackmatrix_train.search_evaluate import make_search_evaluate

    data, _, _ = searched
    (episode,) = data["episodes"]
    loaded = load_policy(policy, max_steps=MAX_STEPS)
    apply_fn, params, env_params, _ = loaded
    cfg = search_config(loaded, num_simulations=SIMS, mode="honest")
    run = make_search_evaluate(HackMatrix(), env_params, apply_fn, cfg, 1, MAX_STEPS)
    acc = jax.device_get(run(params, jax.random.key(SEED)))
    assert int(acc["length"][0]) == episode["summary"]["length"]
    assert float(acc["ret"][0]) == pytest.approx(episode["summary"]["return"], abs=1e-3)
    counts = np.bincount([f["action"] for f in episode["frames"][1:]], minlength=28)
    assert acc["actions"][0].tolist() == counts.tolist()


def test_hm_eval_replay_shows_the_search_rows_episodes(policy, searched, tmp_path):
    """``hm-eval --search 4 --replay``: the page shows the search row's episode (the one the
    summary scores), which is hm-watch --search's with the same seed."""
    from hackmatrix_train.cli.evaluate import main as eval_main

    data, _, _ = searched
    out, summary = tmp_path / "eval.html", tmp_path / "eval.json"
    argv = [str(policy), "--episodes", "1", "--seed", str(SEED), "--search", str(SIMS),
            "--max-steps-in-episode", str(MAX_STEPS), "--json", str(summary), "--replay",
            str(out), "--no-compile-cache"]  # fmt: skip
    assert eval_main(argv) == 0
    shown = replay_json(out)
    assert f"search {SIMS} sims, honest" in shown["subtitle"]
    assert shown["episodes"] == data["episodes"]
    (row,) = json.loads(summary.read_text())["search"]
    (episode,) = shown["episodes"]
    assert row["return_mean"] == pytest.approx(episode["summary"]["return"], abs=1e-3)
    assert row["length_mean"] == episode["summary"]["length"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--search", "0"], "--search must be >= 1"),
        (["--random", "--search", "4"], "a checkpoint's network"),
        (["--search", "4", "--sampled"], "drop --sampled"),
        (["--search", "4", "--actions", "LOG"], "cannot replay --actions"),
    ],
)
def test_hm_watch_search_bad_arguments_get_a_message(policy, tmp_path, capsys, extra, message):
    log = tmp_path / "log.json"
    log.write_text("{}")
    extra = [str(log) if x == "LOG" else x for x in extra]
    argv = [str(policy), *extra, "--out", str(tmp_path / "r.html"), "--no-compile-cache"]
    assert watch_main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


# --------------------------------------------------------------------------- the browser


def test_the_page_shows_visits_q_and_the_overruled_moves(searched, tmp_path):
    data, log_path, page = searched
    (episode,) = data["episodes"]
    plain = E.replay_log(E.read_action_log(log_path))
    write_html(tmp_path / "plain.html", plain, subtitle="no search")
    driver = chromium_or_skip()
    try:
        from selenium.webdriver.common.by import By

        driver.get((tmp_path / "plain.html").as_uri())
        assert not driver.find_element(By.ID, "search-panel").is_displayed()
        driver.get(page.as_uri())
        assert console_errors(driver) == []
        assert driver.find_element(By.ID, "search-panel").is_displayed()
        frames = episode["frames"]
        ticks = driver.find_elements(By.CSS_SELECTOR, "#spark line.differs")
        assert len(ticks) == sum(f["search"]["differs"] for f in frames[1:])
        nxt = driver.find_element(By.ID, "next")
        for f in frames[1:]:
            nxt.click()
            s = f["search"]
            rows = driver.find_elements(By.CSS_SELECTOR, "#search div.srow[data-action]")
            shown = [
                [int(r.get_attribute("data-action")), int(r.get_attribute("data-visits")),
                 r.get_attribute("data-q")]
                for r in rows
            ]  # fmt: skip
            assert [[a, n] for a, n, _ in shown] == [[a, n] for a, n, _, _ in s["actions"]]
            for (_, _, q_shown), (_, _, q, _) in zip(shown, s["actions"], strict=True):
                assert (q_shown == "") if q is None else (float(q_shown) == pytest.approx(q))
            note = driver.find_element(By.ID, "search-note")
            assert note.get_attribute("data-differs") == ("true" if s["differs"] else "false")
            badge = driver.find_element(By.ID, "differs-badge").text
            assert (badge == "≠ greedy") == s["differs"]
        assert console_errors(driver) == []
    finally:
        driver.quit()
