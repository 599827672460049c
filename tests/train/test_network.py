"""Masked categorical policy and the two networks."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_env.types import Observation
from hackmatrix_train.network import (
    MLP,
    GridEncoder,
    flat_features,
    greedy_action,
    masked_categorical,
)
from hypothesis import given, settings
from hypothesis import strategies as st

A = 28


def fake_obs(batch: int, seed: int = 0) -> Observation:
    rng = np.random.default_rng(seed)
    return Observation(
        player=jnp.asarray(rng.random((batch, 10)), jnp.float32),
        programs=jnp.asarray(rng.integers(0, 2, (batch, 23)), jnp.float32),
        grid=jnp.asarray(rng.random((batch, 6, 6, 42)), jnp.float32),
        action_mask=jnp.asarray(rng.random((batch, A)) < 0.5),
    )


def moved_params(net, seed: int):
    """``net``'s params, every leaf moved off its initial value (biases and zero kernels
    included), so that a test of a params mapping sees no leaf that happens to be zero."""
    params = net.init(jax.random.key(seed), fake_obs(1))
    leaves, tree = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.key(seed + 1), len(leaves))
    noisy = [x + 0.1 * jax.random.normal(k, x.shape) for x, k in zip(leaves, keys, strict=True)]
    return jax.tree.unflatten(tree, noisy)


@jax.jit
def _sample_many(logits, mask, key):
    pi = masked_categorical(logits, mask)
    return pi.sample(seed=key, sample_shape=(2000,)), pi.log_prob(jnp.arange(A)), pi.entropy()


@settings(deadline=None, max_examples=25)
@given(
    mask_bits=st.lists(st.booleans(), min_size=A, max_size=A).filter(any),
    scale=st.sampled_from([0.0, 1.0, 30.0, 1e4]),
    seed=st.integers(0, 2**30),
)
def test_masked_categorical_never_samples_invalid(mask_bits, scale, seed):
    mask = jnp.asarray(mask_bits)
    logits = scale * jax.random.normal(jax.random.key(seed), (A,))
    # make an invalid action by far the most attractive one
    logits = jnp.where(mask, logits, 1e6)
    samples, log_probs, entropy = _sample_many(logits, mask, jax.random.key(seed + 1))
    samples = np.asarray(samples)
    assert np.asarray(mask)[samples].all()
    lp = np.asarray(log_probs)
    assert np.isfinite(lp).all() or np.all(np.isneginf(lp[~np.asarray(mask)]))
    # probabilities of masked actions are exactly 0, valid ones sum to 1
    p = np.exp(lp.astype(np.float64))
    assert (p[~np.asarray(mask)] == 0).all()
    assert abs(p[np.asarray(mask)].sum() - 1) < 1e-5
    # entropy over valid actions only: that of the renormalised softmax of the valid logits
    valid = np.asarray(logits, np.float64)[np.asarray(mask)]
    q = np.exp(valid - valid.max())
    q /= q.sum()
    expected = -(q * np.log(np.where(q > 0, q, 1))).sum()
    assert abs(float(entropy) - expected) < 1e-3 * max(1.0, expected)


@settings(deadline=None, max_examples=25)
@given(
    mask_bits=st.lists(st.booleans(), min_size=A, max_size=A),
    scale=st.sampled_from([0.0, 1e-7, 1.0, 1e4]),
    seed=st.integers(0, 2**30),
)
def test_greedy_action_is_the_masked_categorical_argmax(mask_bits, scale, seed):
    """The greedy evaluation's action without distrax: the same action as the argmax of
    ``masked_categorical``'s logits, ties and an all-False mask included, jitted or not."""
    mask = jnp.asarray(mask_bits)
    logits = jnp.round(scale * jax.random.normal(jax.random.key(seed), (4, A)), 1)  # ties
    logits = jnp.where(mask, logits, 1e6)  # an invalid action by far the most attractive
    expected = jnp.argmax(masked_categorical(logits, mask).logits, axis=-1).astype(jnp.int32)
    assert (greedy_action(logits, mask) == expected).all()
    assert (jax.jit(greedy_action)(logits, mask) == expected).all()
    assert greedy_action(logits, mask).dtype == jnp.int32


def test_all_false_mask_is_finite_and_uniform():
    logits = jnp.linspace(-3, 3, A)
    s, lp, _ = _sample_many(logits, jnp.zeros(A, bool), jax.random.key(0))
    assert np.isfinite(np.asarray(lp)).all()
    assert np.ptp(np.asarray(lp)) == 0  # every action equally likely
    s = np.asarray(s)
    assert len(np.unique(s)) == A


def test_masked_logits_use_dtype_min_not_inf():
    logits = jnp.zeros(A, jnp.float32)
    mask = jnp.arange(A) < 3
    pi = masked_categorical(logits, mask)
    assert np.asarray(pi.logits)[5] == np.finfo(np.float32).min
    assert not np.isinf(np.asarray(pi.logits)).any()


def test_flat_features_follow_interface_layout():
    obs = fake_obs(2)
    flat = np.asarray(flat_features(obs))
    assert flat.shape == (2, 1545)
    o = jax.tree.map(np.asarray, obs)
    # interface §3.1: [0:10] player, [10:33] programs, 33 + (row*6 + col)*42 + channel
    np.testing.assert_array_equal(flat[:, :10], o.player)
    np.testing.assert_array_equal(flat[:, 10:33], o.programs)
    for r, c, ch in [(0, 0, 0), (2, 3, 17), (5, 5, 41), (4, 1, 36)]:
        np.testing.assert_array_equal(flat[:, 33 + (r * 6 + c) * 42 + ch], o.grid[:, r, c, ch])


@pytest.mark.parametrize("net", [MLP(A, 32, 2), GridEncoder(A, 32, 2)])
def test_networks_output_shapes_and_batch_dims(net):
    obs = fake_obs(3)
    params = jax.jit(net.init)(jax.random.key(0), obs)
    apply = jax.jit(net.apply)
    logits, value = apply(params, obs)
    assert logits.shape == (3, A) and value.shape == (3,)
    assert logits.dtype == jnp.float32 and value.dtype == jnp.float32


def test_grid_encoder_sees_player_position():
    net = GridEncoder(A, 16, 1)
    obs = fake_obs(2)
    params = jax.jit(net.init)(jax.random.key(1), obs)
    apply = jax.jit(net.apply)
    moved = obs._replace(player=obs.player.at[:, 0].set(jnp.array([0.0, 1.0])))
    same = moved._replace(player=moved.player)
    a, _ = apply(params, moved)
    b, _ = apply(params, same)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    c, _ = apply(params, moved._replace(player=moved.player.at[:, 1].set(0.4)))
    assert not np.allclose(np.asarray(a), np.asarray(c))


def test_grid_encoder_rejects_wrong_grid_shape():
    obs = fake_obs(2)
    bad = obs._replace(grid=jnp.zeros((2, 5, 7, 42)))
    with pytest.raises(ValueError, match="6, 6"):
        jax.eval_shape(GridEncoder(A, 8, 1).init, jax.random.key(0), bad)
