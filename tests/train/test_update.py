"""The learners' shared update (``hackmatrix_train.update``): epochs of minibatches, cross-device
means, metric reductions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hackmatrix_train.update import (
    add_metrics,
    explained_variance,
    gradient_step,
    pmean,
    psum,
    reduce_steps,
    run_epochs,
)

ROWS, EPOCHS, MINIBATCHES = 24, 3, 4


def test_the_minibatch_scan_visits_every_row_once_per_epoch():
    """Each epoch's minibatches partition the batch; the epochs shuffle it differently."""
    batch = {"row": jnp.arange(ROWS), "twice": 2 * jnp.arange(ROWS)}

    def step(params, opt_state, mb):
        assert mb["row"].shape == (ROWS // MINIBATCHES,)
        return params + 1, opt_state, {"rows": mb["row"], "twice": mb["twice"]}

    params, opt_state, aux = jax.jit(
        lambda k: run_epochs(k, jnp.int32(0), jnp.int32(7), batch, step, EPOCHS, MINIBATCHES)
    )(jax.random.key(0))
    rows = np.asarray(aux["rows"])  # [epochs, minibatches, rows per minibatch]
    assert rows.shape == (EPOCHS, MINIBATCHES, ROWS // MINIBATCHES)
    for epoch in rows:
        assert sorted(epoch.ravel().tolist()) == list(range(ROWS))
    assert len({tuple(epoch.ravel()) for epoch in rows}) == EPOCHS  # a fresh permutation each
    np.testing.assert_array_equal(aux["twice"], 2 * rows)  # every leaf gathers the same rows
    assert int(params) == EPOCHS * MINIBATCHES and int(opt_state) == 7


def test_pmean_and_psum_are_the_identity_without_an_axis_and_reduce_over_one():
    x = {"a": jnp.arange(4.0), "b": jnp.float32(3.0)}
    assert pmean(x) is x and psum(x) is x
    v = jnp.array([1.0, 2.0, 3.0, 6.0])
    np.testing.assert_allclose(jax.vmap(lambda y: pmean(y, "i"), axis_name="i")(v), [3.0] * 4)
    np.testing.assert_allclose(jax.vmap(lambda y: psum(y, "i"), axis_name="i")(v), [12.0] * 4)


def test_a_max_metric_is_reduced_by_max_and_the_others_by_sum():
    per_step = {"ep_count": jnp.array([1.0, 2.0, 0.0]), "ep_stage_max": jnp.array([2.0, 5.0, 1.0])}
    assert {k: float(v) for k, v in reduce_steps(per_step).items()} == {
        "ep_count": 3.0,
        "ep_stage_max": 5.0,
    }
    chunk = add_metrics(
        {"ep_count": 3.0, "ep_stage_max": 5.0}, {"ep_count": 1.0, "ep_stage_max": 4.0}
    )
    assert {k: float(v) for k, v in chunk.items()} == {"ep_count": 4.0, "ep_stage_max": 5.0}


def test_a_gradient_step_is_the_optimizer_step_on_the_loss_gradient():
    params = {"w": jnp.array([1.0, -2.0, 3.0])}
    target = jnp.array([0.5, 0.5, 0.5])

    def loss_fn(p, mb):
        return jnp.sum(mb * (p["w"] - target) ** 2), {"first": p["w"][0]}

    tx = optax.sgd(0.1)
    mb = jnp.array([1.0, 2.0, 3.0])
    new, _, aux = gradient_step(loss_fn, params, tx.init(params), mb, tx)
    grad = 2 * mb * (params["w"] - target)
    np.testing.assert_allclose(new["w"], params["w"] - 0.1 * grad, rtol=1e-6)
    assert float(aux["grad_norm"]) == pytest.approx(float(jnp.linalg.norm(grad)), rel=1e-6)
    assert float(aux["first"]) == 1.0


def test_explained_variance_is_one_for_exact_values_and_zero_for_constant_targets():
    targets = jnp.array([1.0, 2.0, 4.0, 8.0])
    assert float(explained_variance(targets, targets)) == 1.0
    assert float(explained_variance(jnp.zeros(4), targets)) == 0.0
    assert float(explained_variance(targets, jnp.ones(4))) == 0.0  # no variance to explain
