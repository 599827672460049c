"""``experiments/value_fit.py``'s Monte Carlo returns: each step's discounted sum to its own
episode's end, and only where that end lies inside the rollout."""

from __future__ import annotations

import importlib.util

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from repo_files import ROOT

_spec = importlib.util.spec_from_file_location("value_fit", ROOT / "experiments" / "value_fit.py")
value_fit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(value_fit)


def _brute_force(reward, done, gamma):
    steps, envs = reward.shape
    out = np.zeros((steps, envs))
    ended = np.zeros((steps, envs), bool)
    for n in range(envs):
        for t in range(steps):
            g, k = 0.0, t
            while k < steps:
                g += gamma ** (k - t) * reward[k, n]
                if done[k, n]:
                    ended[t, n] = True
                    break
                k += 1
            out[t, n] = g
    return out, ended


@settings(deadline=None, max_examples=40)
@given(seed=st.integers(0, 2**20), gamma=st.sampled_from([0.0, 0.9, 0.997, 1.0]))
def test_returns_are_each_steps_sum_to_its_episodes_end(seed, gamma):
    rng = np.random.default_rng(seed)
    reward = rng.normal(size=(12, 3))
    done = rng.random((12, 3)) < 0.25
    returns, ended = value_fit.returns_of(reward, done, gamma)
    want, want_ended = _brute_force(reward, done, gamma)
    np.testing.assert_array_equal(ended, want_ended)
    np.testing.assert_allclose(returns[ended], want[ended], rtol=1e-5, atol=1e-5)


def test_a_value_equal_to_the_returns_explains_them_all():
    g = np.linspace(-10.0, 50.0, 40)
    stage = np.repeat([1, 4, 7, 8], 10)
    rows = value_fit.fit_rows(g, g, stage)
    assert [r["stages"] for r in rows] == ["1-8", "1-2", "3-5", "6-8"]
    assert [r["steps"] for r in rows] == [40, 10, 10, 20]
    assert all(abs(r["explained_variance"] - 1.0) < 1e-12 for r in rows)
    constant = value_fit.fit_rows(np.full(40, g.mean()), g, stage)[0]
    assert abs(constant["explained_variance"]) < 1e-12 and np.isnan(constant["correlation"])
