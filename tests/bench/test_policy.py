"""The benchmark's random masked policies: only valid actions, uniform over them."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from hackmatrix_bench.bench import gumbel_masked_actions, uniform_masked_actions
from hypothesis import given, settings
from hypothesis import strategies as st

_uniform = jax.jit(uniform_masked_actions)
_gumbel = jax.jit(gumbel_masked_actions)


@settings(max_examples=30, deadline=None)
@given(
    rows=st.lists(st.lists(st.booleans(), min_size=28, max_size=28), min_size=1, max_size=8),
    seed=st.integers(0, 2**31 - 1),
)
def test_only_valid_actions(rows, seed):
    mask = jnp.asarray(rows)
    for policy in (_uniform, _gumbel):
        actions = np.asarray(policy(jax.random.key(seed), mask))
        for row, a in zip(rows, actions, strict=True):
            if any(row):
                assert row[a], (row, a)
            elif policy is _uniform:
                assert a == 0


def test_uniform_over_the_valid_actions():
    """Chi-square of 60,000 draws on a 7-valid-action row against the uniform law."""
    row = np.zeros(28, bool)
    valid = [0, 3, 4, 9, 17, 26, 27]
    row[valid] = True
    n = 60_000
    mask = jnp.broadcast_to(jnp.asarray(row), (n, 28))
    counts = np.bincount(np.asarray(_uniform(jax.random.key(7), mask)), minlength=28)
    assert counts[~row].sum() == 0
    expected = n / len(valid)
    chi2 = float(np.sum((counts[valid] - expected) ** 2 / expected))
    assert chi2 < 22.46, counts[valid]  # 6 degrees of freedom, p = 0.001


def test_every_row_draws_independently():
    """Rows with different masks in one batch: each stays uniform over its own valid set."""
    masks = np.zeros((2, 28), bool)
    masks[0, [1, 2]] = True
    masks[1, 5:28] = True
    batch = jnp.asarray(np.repeat(masks, 20_000, axis=0))
    actions = np.asarray(_uniform(jax.random.key(3), batch))
    first, second = actions[:20_000], actions[20_000:]
    assert set(first) == {1, 2} and abs(np.mean(first == 1) - 0.5) < 0.02
    assert set(second) == set(range(5, 28))
    assert abs(np.mean(second) - 16.0) < 0.2  # uniform on 5..27: mean 16, sd of mean 0.05
