"""``--network grid-hl``: the critic's value as a histogram over returns (HL-Gauss)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hackmatrix_env import HackMatrix
from hackmatrix_train.config import TrainConfig, validate
from hackmatrix_train.network import (
    GridEncoder,
    adapt_params,
    hl_params,
    make_network,
    value_histogram_of,
)
from hackmatrix_train.policy import load_policy
from hackmatrix_train.ppo import ppo_loss
from hackmatrix_train.rollout import Transition
from hackmatrix_train.run import warm_start
from hackmatrix_train.trainer import make_train
from hackmatrix_train.value_head import (
    RETURN_HISTOGRAM,
    ValueHistogram,
    histogram_loss,
    histogram_mean,
    histogram_target,
    lift_scalar_head,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from train.recipes import plain_ppo
from train.test_network import fake_obs
from train.test_twin_network import _grid_params
from train.tiny_policy import write_tiny_policy
from train.trees import assert_trees_equal

A = 28
HIST = RETURN_HISTOGRAM
INSIDE = st.floats(HIST.low + 4 * HIST.sigma, HIST.high - 4 * HIST.sigma)


def _mean_of_probs(probs) -> float:
    return float(np.asarray(probs, np.float64) @ HIST.centers().astype(np.float64))


@settings(deadline=None, max_examples=40)
@given(value=INSIDE)
def test_a_targets_histogram_is_a_distribution_whose_mean_is_the_target(value):
    probs = np.asarray(histogram_target(HIST, jnp.float32(value)), np.float64)
    assert probs.shape == (HIST.bins,) and (probs >= 0).all()
    assert abs(probs.sum() - 1.0) < 1e-5
    assert abs(_mean_of_probs(probs) - value) < 1e-2
    # its mass is where the Normal's is: within 4 sigma of the target
    far = np.abs(HIST.centers() - value) > 4 * HIST.sigma + HIST.width
    assert probs[far].sum() < 1e-4


def test_a_target_outside_the_support_is_clipped_to_its_edge():
    np.testing.assert_array_equal(histogram_target(HIST, jnp.float32(-1e6)),
                                  histogram_target(HIST, jnp.float32(HIST.low)))  # fmt: skip
    np.testing.assert_array_equal(histogram_target(HIST, jnp.float32(1e6)),
                                  histogram_target(HIST, jnp.float32(HIST.high)))  # fmt: skip


@settings(deadline=None, max_examples=30)
@given(value=INSIDE, seed=st.integers(0, 2**20))
def test_a_lifted_scalar_head_has_the_scalars_value(value, seed):
    """The lift of ``u = h @ kernel + bias`` is Normal(u, sigma) on the bins: the histogram's
    mean is ``u`` (float32 logits of up to ~3.6e4 leave about 1e-3 of rounding)."""
    rng = np.random.default_rng(seed)
    h = rng.normal(size=(1, 32)).astype(np.float32)
    kernel = rng.normal(size=(32, 1)).astype(np.float32)
    bias = np.array([value - float((h @ kernel)[0, 0])], np.float32)
    u = float((h @ kernel + bias)[0, 0])
    lifted_kernel, lifted_bias = lift_scalar_head(HIST, kernel, bias)
    assert lifted_kernel.shape == (32, HIST.bins) and lifted_bias.shape == (HIST.bins,)
    assert abs(float(histogram_mean(HIST, h @ lifted_kernel + lifted_bias)[0]) - u) < 0.02


def test_a_lift_refuses_what_is_not_a_scalar_head():
    with pytest.raises(ValueError, match=r"kernel \[H, 1\] and bias \[1\]"):
        lift_scalar_head(HIST, np.zeros((4, 2)), np.zeros(2))
    with pytest.raises(ValueError, match="bins >= 2"):
        ValueHistogram(low=1.0, high=0.0, bins=5)


@settings(deadline=None, max_examples=6)
@given(seed=st.integers(0, 2**20))
def test_a_grid_network_lifted_into_grid_hl_computes_its_function(seed):
    """``hl_params``: the policy's logits bit for bit, the value to float rounding, and the
    params in ``grid-hl``'s layout."""
    params = _grid_params(seed)
    obs = fake_obs(16, seed)
    logits, value = GridEncoder(A, 32, 2).apply(params, obs)
    hl = GridEncoder(A, 32, 2, value_histogram=HIST)
    hl_logits, hl_value, v_logits = hl.apply(hl_params(params), obs, value_logits=True)
    np.testing.assert_array_equal(np.asarray(hl_logits), np.asarray(logits))
    np.testing.assert_allclose(np.asarray(hl_value), np.asarray(value), atol=0.02)
    assert v_logits.shape == (16, HIST.bins)
    template = jax.eval_shape(hl.init, jax.random.key(0), fake_obs(1))
    assert jax.tree.structure(template) == jax.tree.structure(hl_params(params))
    assert adapt_params(params, "grid", "grid-hl")["params"]["Dense_6"]["kernel"].shape == (
        32, HIST.bins,
    )  # fmt: skip


def test_only_a_grid_network_lifts_into_grid_hl_and_a_scalar_head_has_no_logits():
    for source, target in [("grid-hl", "grid"), ("mlp", "grid-hl"), ("grid-twin", "grid-hl")]:
        with pytest.raises(ValueError, match=f"a '{source}' network's params cannot start"):
            adapt_params({"params": {}}, source, target)
    with pytest.raises(ValueError, match="no value logits"):
        GridEncoder(A, 16, 1).init(jax.random.key(0), fake_obs(1), value_logits=True)
    assert value_histogram_of("grid-hl") is HIST
    assert [value_histogram_of(n) for n in ("mlp", "grid", "grid-twin")] == [None] * 3


def test_the_cross_entropy_fits_a_histogram_value_to_returns():
    """Adam on ``histogram_loss`` alone fits 64 states' returns spread over [-50, 500]: the
    histogram's mean ends within a tenth of its first error (a few hundred points)."""
    obs = fake_obs(64, 7)
    targets = jnp.asarray(np.random.default_rng(7).uniform(-50, 500, 64), jnp.float32)
    net = make_network("grid-hl", A, 64, 2)
    params = net.init(jax.random.key(0), obs)
    tx = optax.adam(3e-3)

    def loss(p):
        return histogram_loss(HIST, net.apply(p, obs, value_logits=True)[2], targets)

    @jax.jit
    def step(p, s):
        grads = jax.grad(loss)(p)
        updates, s = tx.update(grads, s, p)
        return optax.apply_updates(p, updates), s

    def error(p):
        return float(jnp.abs(net.apply(p, obs)[1] - targets).mean())

    before, state = error(params), tx.init(params)
    for _ in range(400):
        params, state = step(params, state)
    assert before > 100.0 and error(params) < 0.1 * before


def test_ppo_loss_fits_a_histogram_value_by_its_cross_entropy():
    """With ``value_histogram`` the value term is ``histogram_loss`` of the network's value
    logits against the targets (no clip), and its gradient reaches the head; the scalar path
    is unchanged without it."""
    obs = fake_obs(8, 1)
    net = make_network("grid-hl", A, 16, 1)
    params = net.init(jax.random.key(0), obs)
    _, value, v_logits = net.apply(params, obs, value_logits=True)
    batch = Transition(
        obs=obs, action=jnp.argmax(obs.action_mask, -1).astype(jnp.int32),
        log_prob=jnp.zeros(8), value=value, reward=jnp.zeros(8), terminated=jnp.zeros(8, bool),
        truncated=jnp.zeros(8, bool), final_value=jnp.zeros(8), shaping=jnp.zeros(8),
    )  # fmt: skip
    adv = jnp.linspace(-1.0, 1.0, 8)
    targets = value + jnp.linspace(-300.0, 300.0, 8)

    def total(p):
        return ppo_loss(p, net.apply, batch, adv, targets, 0.2, 1.0, 0.0, None, 0.0, None, None,
                        HIST)  # fmt: skip

    loss, aux = total(params)
    np.testing.assert_allclose(float(aux["vf_loss"]),
                               float(histogram_loss(HIST, v_logits, targets)), rtol=1e-6)  # fmt: skip
    grads = jax.grad(lambda p: total(p)[0])(params)
    head = grads["params"]["Dense_4"]["kernel"]  # num_layers 1: the value head is the 5th
    assert head.shape == (16, HIST.bins) and float(jnp.abs(head).max()) > 0.0
    assert np.isfinite(float(loss))


def test_grid_hl_refuses_a_value_clip_and_a_reward_scale():
    cfg = TrainConfig(network="grid-hl", no_wandb=True)
    validate(cfg, 1)
    with pytest.raises(ValueError, match="--vf-clip-eps clips a scalar value"):
        validate(cfg.replace(vf_clip_eps=0.2), 1)
    with pytest.raises(ValueError, match="--reward-scale 1 only"):
        validate(cfg.replace(reward_scale=0.1), 1)


@pytest.fixture(scope="module")
def grid_start(tmp_path_factory):
    """A tiny ``grid`` params export: the start of a ``grid-hl`` run."""
    return write_tiny_policy(tmp_path_factory.mktemp("grid") / "run", 50, network="grid").parent


def test_a_grid_checkpoint_warm_starts_a_grid_hl_run_and_its_export_loads(grid_start, tmp_path):
    """``--init-params`` of a ``grid`` run into a ``grid-hl`` run starts from the lifted
    params; a ``grid-hl`` export loads as a policy whose value is the histogram's mean."""
    env = HackMatrix()
    cfg = plain_ppo(network="grid-hl", hidden_dim=16, num_layers=1, num_envs=4, num_steps=4,
                    total_timesteps=16, init_params=str(grid_start))  # fmt: skip
    trainer = make_train(cfg, env, env.default_params, devices=jax.devices()[:1])
    runner = warm_start(trainer, trainer.init(), str(grid_start))
    assert_trees_equal(jax.device_get(runner.params),
                       jax.device_get(hl_params(load_policy(grid_start).params)))  # fmt: skip

    policy = load_policy(write_tiny_policy(tmp_path / "hl", 50, network="grid-hl").parent)
    obs, _ = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.key(0), 3),
                                                    policy.env_params)  # fmt: skip
    logits, value = policy.apply_fn(policy.params, obs)
    _, _, v_logits = policy.apply_fn(policy.params, obs, value_logits=True)
    assert logits.shape == (3, A)
    np.testing.assert_allclose(np.asarray(value), np.asarray(histogram_mean(HIST, v_logits)))
