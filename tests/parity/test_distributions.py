"""Chi-square checks of every random choice (rules §12), Swift vs spec and Swift vs JAX."""

from __future__ import annotations

from collections import Counter

import pytest
from hackmatrix_parity import distributions as D
from hackmatrix_parity.client import SwiftGame

P_MIN = 1e-4  # a fixed threshold: with ~10 tests, a false alarm rate of ~1e-3 per run
N = 512


def test_chi_square_helpers():
    a = Counter({"x": 500, "y": 500})
    assert D.homogeneity(a, Counter({"x": 490, "y": 510})) > 0.1
    assert D.homogeneity(a, Counter({"x": 900, "y": 100})) < 1e-6
    assert D.goodness_of_fit(a, {"x": 0.5, "y": 0.5}) > 0.1
    assert D.goodness_of_fit(Counter({"x": 10, "z": 1}), {"x": 1.0}) == 0.0  # mass outside


@pytest.fixture(scope="module")
def game(swift_bin):
    with SwiftGame(swift_bin) as g:
        yield g


def test_swift_stage_generation_matches_spec(game):
    tally = D._tally(D.swift_reset_samples(game, N, seed=1))
    for name, expected in D.EXPECTED.items():
        p = D.goodness_of_fit(tally.get(name, Counter()), expected)
        assert p > P_MIN, (name, p, tally.get(name))


def test_swift_warp_is_uniform_over_entities(game):
    c = Counter(
        x for s in D.swift_step_samples(game, D.WARP_SCENARIO, 8, N, 7, D.warp_outcome) for x in s
    )
    assert D.goodness_of_fit(c, {"3,3": 0.5, "1,4": 0.25, "4,1": 0.25}) > P_MIN, c


def test_swift_poly_new_types_uniform_with_damage_carry_over(game):
    c = Counter(
        x for s in D.swift_step_samples(game, D.POLY_SCENARIO, 9, N, 3, D.poly_outcome) for x in s
    )
    expected = {f"33:{t}/2": 1 / 6 for t in ("virus", "glitch", "cryptog")}
    expected |= {"44:daemon/2": 1 / 6, "44:glitch/1": 1 / 6, "44:cryptog/1": 1 / 6}
    assert D.goodness_of_fit(c, expected) > P_MIN, c


def test_swift_vs_jax_distributions(game):
    results = D.run_distribution_checks(game, n=N, seed=5)
    print(D.format_results(results))
    bad = [r.name for r in results if r.p_homogeneity < P_MIN]
    assert not bad, D.format_results(results)


def test_swift_vs_jax_stage_generation(game):
    """Stage generation at reset: Swift and JAX tallies are homogeneous, and JAX fits the spec."""
    sw = D._tally(D.swift_reset_samples(game, N, seed=11))
    jx = D._tally(D.jax_reset_samples(N, seed=11))
    for name, expected in D.EXPECTED.items():
        a, b = sw.get(name, Counter()), jx.get(name, Counter())
        assert D.homogeneity(a, b) > P_MIN, (name, a, b)
        assert D.goodness_of_fit(b, expected) > P_MIN, (name, b)
