"""``hm-eval``'s tables: a search row's header names every setting that differs from the
protocol's one tree and ``SearchConfig``'s considered actions, so two rows that played with
different searches never read alike (a run's own search settings are a command's defaults)."""

from __future__ import annotations

import dataclasses

import pytest
from hackmatrix_train.search import describe
from hackmatrix_train.search_config import SearchConfig
from hackmatrix_train.tables import column_name, format_summaries


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
