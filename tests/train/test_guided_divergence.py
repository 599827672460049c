"""The guided learner's two pulls (``hm-train --guide-divergence``): the reverse KL
``guided.reverse_kl`` is a divergence (zero at the target, masked actions and rows of weight 0
ignored) whose gradient moves the policy toward the target; a policy shared by several states
fits the normalised geometric mean of their targets under it, their arithmetic mean under the
forward KL; and ``guided_loss`` adds the one the flag names while logging both."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_train import guided, ppo
from hackmatrix_train.guided import reverse_kl, search_kl

A = 28


def _batch(seed: int, rows: int = 6):
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(seed), 3)
    mask = jax.random.bernoulli(k1, 0.4, (rows, A)).at[:, 0].set(True)
    logits = 2.0 * jax.random.normal(k2, (rows, A))
    target = jax.nn.softmax(jnp.where(mask, 2.0 * jax.random.normal(k3, (rows, A)), -1e9))
    return logits, mask, target, jnp.ones(rows)


@pytest.mark.parametrize("seed", range(5))
def test_a_divergence_on_the_legal_actions(seed):
    logits, mask, target, weight = _batch(seed)
    kl = reverse_kl(logits, mask, target, weight)
    assert float(kl) > 1e-3
    at_target = jnp.where(mask, jnp.log(jnp.maximum(target, 1e-30)), 0.0)
    assert abs(float(reverse_kl(at_target, mask, target, weight))) < 1e-5
    # a masked action's logit changes nothing
    moved = jnp.where(mask, logits, logits + 7.0)
    np.testing.assert_allclose(reverse_kl(moved, mask, target, weight), kl, rtol=1e-6)
    # a row of weight 0 is left out of the mean
    half = weight.at[::2].set(0.0)
    rows_only = reverse_kl(logits[1::2], mask[1::2], target[1::2], weight[1::2])
    np.testing.assert_allclose(reverse_kl(logits, mask, target, half), rows_only, rtol=1e-5)


@pytest.mark.parametrize("seed", range(3))
def test_its_gradient_moves_the_policy_to_the_target(seed):
    logits, mask, target, weight = _batch(seed)
    loss = jax.jit(lambda x: reverse_kl(x, mask, target, weight))
    step = jax.jit(lambda x: x - 2.0 * jax.grad(loss)(x))
    losses, forward = [float(loss(logits))], float(search_kl(logits, mask, target, weight)[0])
    for _ in range(10):
        for _ in range(100):
            logits = step(logits)
        losses.append(float(loss(logits)))
    assert all(b < a for a, b in itertools.pairwise(losses))
    assert losses[-1] < 0.05 * losses[0]
    assert float(search_kl(logits, mask, target, weight)[0]) < 0.2 * forward


def test_a_shared_policy_fits_the_geometric_mean_of_the_targets():
    """One set of logits for two states whose targets disagree (a network that cannot tell
    them apart): the reverse KL's fit is softmax(mean log target), the forward KL's the mean
    target. With each target sure of its own action the geometric mean is the flatter: the
    reverse KL does not pick one target's mode."""
    mask = jnp.ones((2, A), bool)
    target = jnp.full((2, A), 1e-4).at[0, 3].set(1.0).at[1, 7].set(1.0)
    target = target / target.sum(-1, keepdims=True)
    weight = jnp.ones(2)

    def fit(divergence):
        loss = lambda x: divergence(jnp.broadcast_to(x, (2, A)), mask, target, weight)  # noqa: E731
        run = jax.jit(lambda x: jax.lax.fori_loop(0, 2000, lambda _, y: y - jax.grad(loss)(y), x))
        return jax.nn.softmax(run(jnp.zeros(A).at[3].set(0.5)))  # a lean to one target's mode

    geometric = jax.nn.softmax(jnp.log(target).mean(0))
    np.testing.assert_allclose(fit(reverse_kl), geometric, atol=2e-3)
    np.testing.assert_allclose(fit(lambda *a: search_kl(*a)[0]), target.mean(0), atol=2e-3)
    assert _entropy(geometric) > _entropy(target.mean(0))


def _entropy(p):
    return float(-(p * jnp.log(p)).sum())


@pytest.mark.parametrize("divergence", ["forward", "reverse"])
def test_the_loss_adds_the_divergence_the_flag_names_and_logs_both(monkeypatch, divergence):
    logits, mask, target, weight = _batch(7)
    monkeypatch.setattr(ppo, "ppo_loss", lambda *a: (jnp.float32(1.5), {"entropy": 0.0}))
    batch = SimpleNamespace(obs=SimpleNamespace(action_mask=mask))
    total, aux = guided.guided_loss(
        None, lambda _, obs: (logits, None), batch, None, None,
        extra=(target, weight), kl_coef=2.0, divergence=divergence,
    )  # fmt: skip
    forward, reverse = (
        search_kl(logits, mask, target, weight)[0],
        reverse_kl(logits, mask, target, weight),
    )
    np.testing.assert_allclose(aux["search_kl"], forward, rtol=1e-6)
    np.testing.assert_allclose(aux["reverse_kl"], reverse, rtol=1e-6)
    pull = reverse if divergence == "reverse" else forward
    np.testing.assert_allclose(total, 1.5 + 2.0 * pull, rtol=1e-6)
    assert abs(float(forward) - float(reverse)) > 1e-3  # the two terms tell the flag apart
