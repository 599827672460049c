"""PPO core: GAE under gymnax 1.0, importance ratio at the rollout params, masking, probe envs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hackmatrix_train.network import masked_categorical
from hackmatrix_train.ppo import compute_gae, ppo_loss, sample_actor, value_loss
from hackmatrix_train.rollout import Transition, collect_rollout
from hackmatrix_train.stats import track_episodes
from hackmatrix_train.trainer import make_train
from train.recipes import plain_ppo
from train.train_probes import (
    ACTION_DEPENDENT,
    CONSTANT,
    ENDLESS,
    MASKED_BEST,
    OBS_DEPENDENT,
    TWO_STEP,
    ProbeParams,
    ProbeSuite,
    probe_obs,
)


def _traj(reward, value, terminated, truncated, final_value):
    col = lambda x, dt=jnp.float32: jnp.asarray(x, dt)[:, None]  # noqa: E731  [T, N=1]
    return Transition(
        obs=None,
        action=col(np.zeros(len(reward)), jnp.int32),
        log_prob=col(np.zeros(len(reward))),
        value=col(value),
        reward=col(reward),
        terminated=col(terminated, bool),
        truncated=col(truncated, bool),
        final_value=col(final_value),
        shaping=col(np.zeros(len(reward))),
    )


def test_gae_handles_termination_and_truncation():
    g = 0.5
    # t0 -> t1 (truncated, V(final obs)=8) | t2 (reset obs) -> t3 (terminated) | t4 -> bootstrap
    t = _traj(
        reward=[1.0, 2.0, 3.0, 4.0, 5.0],
        value=[10.0, 20.0, 30.0, 40.0, 50.0],
        terminated=[0, 0, 0, 1, 0],
        truncated=[0, 1, 0, 0, 0],
        final_value=[0.0, 8.0, 0.0, 0.0, 0.0],
    )
    adv, targets = compute_gae(t, jnp.array([100.0]), gamma=g, lam=1.0)
    # lam = 1: targets are discounted returns within each episode piece, bootstrapped at the cut.
    expected_targets = [
        1 + g * (2 + g * 8),  # truncation bootstraps from V(final obs) = 8, not V(t2) = 30
        2 + g * 8,
        3 + g * 4,  # terminal at t3: no bootstrap
        4.0,
        5 + g * 100,  # rollout end bootstraps from last_value
    ]
    np.testing.assert_allclose(np.asarray(targets)[:, 0], expected_targets, rtol=1e-6)
    np.testing.assert_allclose(
        np.asarray(adv)[:, 0], np.array(expected_targets) - [10, 20, 30, 40, 50], rtol=1e-6
    )


def test_gae_lambda_zero_is_one_step_td():
    g = 0.9
    t = _traj([1.0, 1.0, 1.0], [2.0, 3.0, 4.0], [0, 1, 0], [0, 0, 1], [0.0, 0.0, 7.0])
    adv, _ = compute_gae(t, jnp.array([5.0]), gamma=g, lam=0.0)
    np.testing.assert_allclose(
        np.asarray(adv)[:, 0], [1 + g * 3 - 2, 1 - 3, 1 + g * 7 - 4], rtol=1e-6
    )


def test_terminated_and_truncated_together_do_not_bootstrap():
    t = _traj([1.0], [0.0], [1], [1], [50.0])
    adv, _ = compute_gae(t, jnp.array([9.0]), gamma=0.9, lam=0.95)
    assert float(adv[0, 0]) == 1.0


GAMMA = 0.5


@pytest.fixture(scope="module")
def suite_trained():
    """PPO (tiny MLP) trained on all six probes at once."""
    updates = 120
    cfg = plain_ppo(
        num_envs=32, num_steps=8, total_timesteps=32 * 8 * updates, num_minibatches=2,
        update_epochs=4, lr=3e-3, hidden_dim=32, num_layers=1, ent_coef=0.0, gamma=GAMMA,
    )  # fmt: skip
    trainer = make_train(cfg, ProbeSuite(), ProbeParams(max_steps_in_episode=4))
    runner, metrics = trainer.run_chunk(trainer.init(), updates)
    return trainer, runner, jax.device_get(metrics)


@pytest.fixture(scope="module")
def untrained_rollout(suite_trained):
    """A rollout of the *untrained* policy, and the PPO loss evaluated at those same params."""
    trainer = suite_trained[0]
    env, env_params, apply = trainer.env, trainer.env_params, trainer.network.apply
    runner = trainer.init()

    @jax.jit
    def go(runner):
        _, _, _, traj, _, stats = collect_rollout(
            sample_actor(None, apply), lambda p, o: apply(p, o)[1], jax.random.key(3),
            runner.params, env, env_params, runner.env_state, runner.obs, runner.acc, 32,
            track=track_episodes,
        )  # fmt: skip
        flat = jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), traj)
        adv = jnp.ones(flat.reward.shape)
        full = ppo_loss(runner.params, apply, flat, adv, adv, 0.2, 0.5, 0.01)[1]
        half = jax.tree.map(lambda x: x[::2], flat)
        part = ppo_loss(runner.params, apply, half, adv[::2], adv[::2], 0.2, 0.5, 0.01)[1]
        return traj, stats, full, part

    return go(runner)


def test_masked_actions_are_never_sampled(untrained_rollout):
    traj, stats, _, _ = untrained_rollout
    actions = np.asarray(traj.action)
    mask = np.asarray(traj.obs.action_mask)  # the mask stored with each transition
    assert actions.size == 32 * 32
    assert np.take_along_axis(mask, actions[..., None], -1).all()
    assert float(stats["invalid"]) == 0.0
    kinds = np.asarray(traj.obs.kind).argmax(-1)
    masked = kinds == MASKED_BEST
    assert masked.sum() > 20
    assert (actions[masked] != 0).all() and set(np.unique(actions[masked])) == {1, 2}


def test_grad_norm_metric_is_the_norm_before_clipping(suite_trained, untrained_rollout):
    """``grad_norm`` is the loss gradient's global norm before ``--max-grad-norm`` clips it."""
    from hackmatrix_train.ppo import minibatch_step
    from hackmatrix_train.schedules import make_optimizer

    trainer, traj = suite_trained[0], untrained_rollout[0]
    cfg = trainer.cfg.replace(max_grad_norm=1e-5)  # far below the norm: the step is clipped
    params = trainer.init().params
    flat = jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), traj)
    adv = jnp.linspace(-1.0, 1.0, flat.reward.shape[0])
    tx = make_optimizer(cfg, 10)
    _, _, aux = minibatch_step(
        params, tx.init(params), (flat, adv, adv), apply_fn=trainer.network.apply, tx=tx,
        cfg=cfg, ent_coef=0.01, floor=None, floor_weight=None,
    )  # fmt: skip
    grads = jax.grad(lambda p: ppo_loss(p, trainer.network.apply, flat, adv, adv, cfg.clip_eps,
                                        cfg.vf_coef, 0.01)[0])(params)  # fmt: skip
    expected = float(optax.global_norm(grads))
    assert expected > 100 * cfg.max_grad_norm
    assert float(aux["grad_norm"]) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("seed", range(5))
def test_value_loss_clip_bounds_each_step_and_zero_turns_it_off(seed):
    """Random values: the clipped loss is never below the plain one, equals it for a range no
    value reaches, and its gradient vanishes exactly where the value left the range on the far
    side from its target; ``vf_clip_eps == 0`` is the plain squared error."""
    rng = np.random.default_rng(seed)
    old, value, target = (jnp.asarray(rng.normal(0, 5, 64), jnp.float32) for _ in range(3))
    plain = 0.5 * ((value - target) ** 2).mean()
    assert float(value_loss(value, old, target, 0.0)) == pytest.approx(float(plain), rel=1e-6)
    assert float(value_loss(value, old, target, 1e6)) == pytest.approx(float(plain), rel=1e-6)
    eps = 0.2
    assert float(value_loss(value, old, target, eps)) >= float(plain) - 1e-6
    grad = jax.grad(lambda v: value_loss(v, old, target, eps))(value)
    clipped = jnp.clip(value, old - eps, old + eps)
    frozen = (jnp.abs(value - old) > eps) & ((clipped - target) ** 2 > (value - target) ** 2)
    assert frozen.any() and (~frozen).any()
    assert np.all(np.asarray(grad)[np.asarray(frozen)] == 0.0)
    free = np.asarray(~frozen)
    np.testing.assert_allclose(
        np.asarray(grad)[free], np.asarray((value - target) / value.shape[0])[free], rtol=1e-5
    )
    grad_off = jax.grad(lambda v: value_loss(v, old, target, 0.0))(value)
    np.testing.assert_allclose(grad_off, (value - target) / value.shape[0], rtol=1e-5)


def test_ppo_loss_value_clip_defaults_to_the_policy_clip(suite_trained, untrained_rollout):
    """``vf_clip_eps=None`` is the policy's ``clip_eps`` (the default's behaviour unchanged);
    0 drops the value clip: with rollout values 1 below the current ones and targets 10 above,
    the clipped value term is frozen (no gradient) and the unclipped one is not."""
    trainer, traj = suite_trained[0], untrained_rollout[0]
    params = trainer.init().params
    flat = jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), traj)
    _, current = trainer.network.apply(params, flat.obs)
    flat = flat._replace(value=current - 1.0)
    adv = jnp.linspace(-1.0, 1.0, flat.reward.shape[0])
    targets = current + 10.0

    def value_term(p, **kw):
        loss = ppo_loss(p, trainer.network.apply, flat, adv, targets, 0.2, 1.0, 0.0, **kw)
        return loss[1]["vf_loss"]

    default, explicit, off = (
        value_term(params),
        value_term(params, vf_clip_eps=0.2),
        value_term(params, vf_clip_eps=0.0),
    )
    assert float(default) == float(explicit)
    assert float(default) == pytest.approx(0.5 * 10.8**2, rel=1e-4)  # held at old + 0.2
    assert float(off) == pytest.approx(0.5 * 10.0**2, rel=1e-4)
    frozen = jax.grad(lambda p: value_term(p))(params)
    free = jax.grad(lambda p: value_term(p, vf_clip_eps=0.0))(params)
    assert float(optax.global_norm(frozen)) == 0.0 and float(optax.global_norm(free)) > 0.0


def test_importance_ratio_is_exactly_one_at_rollout_params(untrained_rollout):
    _, _, full, part = untrained_rollout
    assert float(full["ratio_max_dev"]) == 0.0
    assert float(part["ratio_max_dev"]) == 0.0
    assert float(full["approx_kl"]) == 0.0 and float(full["clip_frac"]) == 0.0


def _policy_value(trainer, runner, obs):
    logits, v = jax.jit(trainer.network.apply)(runner.params, obs)
    probs = jax.nn.softmax(masked_categorical(logits, obs.action_mask).logits)
    return np.asarray(probs)[0], float(v[0])


@pytest.mark.parametrize(
    ("kind", "x", "phase", "value"),
    [
        (CONSTANT, 0.0, 0, 1.0),
        (OBS_DEPENDENT, 1.0, 0, 1.0),
        (OBS_DEPENDENT, -1.0, 0, -1.0),
        (TWO_STEP, 0.0, 0, GAMMA),
        (TWO_STEP, 0.0, 1, 1.0),
        (ACTION_DEPENDENT, 0.0, 0, 1.0),
        (MASKED_BEST, 0.0, 0, 1.0),
        # truncation bootstraps: 1/(1-gamma) = 2 at every phase. Cutting the return at
        # truncation would give 1.875 at phase 0 and 1.0 at phase 3 (the step before the cut).
        (ENDLESS, 0.0, 0, 1.0 / (1.0 - GAMMA)),
        (ENDLESS, 0.0, 3, 1.0 / (1.0 - GAMMA)),
    ],
)
def test_probe_values(suite_trained, kind, x, phase, value):
    trainer, runner, _ = suite_trained
    _, v = _policy_value(trainer, runner, probe_obs(kind, x, phase))
    tol = 0.25 if (kind, phase) == (ENDLESS, 3) else 0.1  # phase 3 is 1/4 of ENDLESS data
    assert abs(v - value) < tol, (kind, v, value)


@pytest.mark.parametrize("kind", [ACTION_DEPENDENT, MASKED_BEST])
def test_probe_policy_picks_best_valid_action(suite_trained, kind):
    trainer, runner, metrics = suite_trained
    probs, _ = _policy_value(trainer, runner, probe_obs(kind))
    assert probs[1] > 0.95
    if kind == MASKED_BEST:
        assert probs[0] == 0.0
    assert metrics["train/invalid_actions"] == 0.0
