"""``hm-eval``'s tables: a search row's header names every setting that differs from the
protocol's one tree and ``SearchConfig``'s considered actions, so two rows that played with
different searches never read alike (a run's own search settings are a command's defaults)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hackmatrix_train.evaluate import standard_error, summarize
from hackmatrix_train.search import describe
from hackmatrix_train.search_config import SearchConfig
from hackmatrix_train.tables import column_name, format_summaries, format_table


@pytest.mark.parametrize(
    ("options", "header"),
    [
        (dict(num_simulations=8), "search 8 honest"),
        (dict(num_simulations=8, mode="oracle"), "search 8 oracle"),
        (dict(num_simulations=32), "search 32 honest 4x8"),  # one tree per 8 by default
        (dict(num_simulations=32, determinizations=1), "search 32 honest"),
        (
            dict(num_simulations=8, determinizations=2, max_num_considered_actions=28),
            "search 8 honest 2x4, 28 considered",
        ),
        (dict(num_simulations=8, program_bonus=5.0), "search 8 honest, tree bonus 5"),
    ],
)
def test_a_search_rows_header_names_its_trees_and_considered_actions(options, header):
    cfg = dataclasses.replace(SearchConfig(), **options)
    assert column_name({"search": describe(cfg)}) == header


def test_rows_with_different_searches_have_different_headers():
    plain = {"search": describe(SearchConfig())}
    wide = {"search": describe(SearchConfig(max_num_considered_actions=28))}
    greedy = {"policy": "greedy"}
    summaries = [
        {**row, "episodes": 4, "stage_distribution": {"1": 4}} for row in (greedy, plain, wide)
    ]
    header = format_summaries(summaries).splitlines()[2]
    assert header.split() == ["greedy", "search", "8", "honest", "search", "8", "honest,", "28",
                              "considered"]  # fmt: skip


@pytest.mark.parametrize("seed", range(4))
def test_rows_carry_their_standard_errors(seed):
    """Each rate and per-episode mean the protocol compares carries one standard error: the
    sample's standard deviation over √n, computed here by the textbook formula for a rate."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(16, 300))
    won = rng.random(n) < rng.uniform(0.02, 0.5)
    acquired = rng.integers(0, 4, n)
    result = {
        "alive": np.zeros(n, bool), "ret": rng.normal(size=n).astype(np.float32),
        "length": np.full(n, 10), "stage": rng.integers(1, 9, n), "won": won,
        "actions": np.zeros((n, 28), np.int32), "block_siphons": acquired + rng.integers(0, 2, n),
        "data_blocks": np.zeros(n, np.int32), "program_blocks": acquired,
        "programs_acquired": acquired,
    }  # fmt: skip
    s = summarize(result)
    p = won.mean()
    assert s["win_rate_se"] == pytest.approx(np.sqrt(p * (1 - p) / (n - 1)))
    assert s["stage_se"] == pytest.approx(np.std(result["stage"], ddof=1) / np.sqrt(n))
    assert s["programs_acquired_se"] == pytest.approx(np.std(acquired, ddof=1) / np.sqrt(n))
    lines = {line[:30].strip(): line[30:].split() for line in format_table(s).splitlines()[3:]}
    assert lines["wins ± s.e."] == [
        f"{100 * p:.1f}",
        "%",
        "±",
        f"{100 * s['win_rate_se']:.1f}",
        "%",
    ]
    assert lines["stage, mean ± s.e."][1:] == ["±", f"{s['stage_se']:.2f}"]


def test_one_episode_has_no_spread_and_old_summaries_show_without_one():
    assert standard_error([1.0]) == 0.0
    old = {"policy": "greedy", "episodes": 4, "win_rate": 0.25, "stage_mean": 3.0,
           "stage_distribution": {"3": 4}}  # fmt: skip
    lines = {line[:19].strip(): line[19:].split() for line in format_table(old).splitlines()[3:]}
    assert lines["wins ± s.e."] == ["25.0", "%"] and lines["stage, mean ± s.e."] == ["3.00"]


def test_a_search_rows_header_names_the_away_penalty_its_tree_charges():
    cfg = dataclasses.replace(SearchConfig(), num_simulations=8, away_penalty=1.0)
    assert column_name({"search": describe(cfg)}) == "search 8 honest, away penalty 1"
