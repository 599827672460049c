"""``--value-target-tau``: a target network, a Polyak average of the params, whose value GAE
reads in place of the rollout's."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hackmatrix_train import checkpoint as ckpt
from hackmatrix_train import ppo
from hackmatrix_train.cli.train import build_parser, config_from_args
from hackmatrix_train.config import TrainConfig, validate
from hackmatrix_train.schedules import learning_rate, make_optimizer
from hackmatrix_train.trainer import make_train
from hackmatrix_train.value_target import PolyakState, polyak_params, target_params
from hypothesis import example, given, settings
from hypothesis import strategies as st
from train.recipes import plain_ppo
from train.train_probes import ProbeParams, ProbeSuite
from train.trees import assert_trees_equal

ENV, PARAMS = ProbeSuite(), ProbeParams()
CFG = plain_ppo(
    num_envs=8, num_steps=8, total_timesteps=8 * 8 * 6, num_minibatches=2, update_epochs=2,
    hidden_dim=16, num_layers=1, log_interval=3, no_wandb=True, seed=3, final_eval_episodes=0,
)  # fmt: skip


@settings(max_examples=25, deadline=None)
@example(tau=1.0, steps=3, seed=0)
@given(
    tau=st.floats(0.001, 1.0),
    steps=st.integers(1, 6),
    seed=st.integers(0, 2**16),
)
def test_the_target_is_the_polyak_average_of_the_params_after_each_step(tau, steps, seed):
    """After each step ``target <- (1 - tau) target + tau params``, from the initial params;
    the updates pass through unchanged."""
    rng = np.random.default_rng(seed)
    params = {"w": jnp.asarray(rng.normal(size=(3, 2)), jnp.float32), "b": jnp.zeros(2)}
    tx = optax.chain(optax.sgd(0.1), polyak_params(tau))
    plain = optax.sgd(0.1)
    state, plain_state = tx.init(params), plain.init(params)
    expected = params
    for _ in range(steps):
        grads = jax.tree.map(lambda p: jnp.asarray(rng.normal(size=p.shape), p.dtype), params)
        updates, state = tx.update(grads, state, params)
        plain_updates, plain_state = plain.update(grads, plain_state, params)
        jax.tree.map(np.testing.assert_array_equal, updates, plain_updates)
        params = optax.apply_updates(params, updates)
        expected = jax.tree.map(lambda e, p: (1 - tau) * e + tau * p, expected, params)
        jax.tree.map(
            lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
            target_params(state), expected,
        )  # fmt: skip
    if tau == 1.0:  # the average is the params: plain PPO
        jax.tree.map(np.testing.assert_array_equal, target_params(state), params)


def test_tau_zero_leaves_the_optimizer_as_it_was_and_keeps_no_target():
    params = {"w": jnp.ones((2, 2))}
    cfg = TrainConfig()
    off = make_optimizer(cfg, 10).init(params)
    adam = optax.adam(learning_rate(cfg, 10), eps=1e-5)
    plain = optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), adam).init(params)
    assert jax.tree.structure(off) == jax.tree.structure(plain)
    with pytest.raises(ValueError, match="no target network"):
        target_params(off)
    on = make_optimizer(TrainConfig(value_target_tau=0.01), 10).init(params)
    assert isinstance(on[-1], PolyakState)
    jax.tree.map(np.testing.assert_array_equal, target_params(on), params)


@pytest.mark.parametrize("tau", [-0.1, 1.5, math.nan, math.inf])
def test_bad_taus_are_refused(tau):
    with pytest.raises(ValueError, match="--value-target-tau"):
        validate(TrainConfig(value_target_tau=tau, no_wandb=True))
    with pytest.raises(ValueError, match="Polyak"):
        polyak_params(tau)


def test_the_flag_sets_the_field():
    cfg, explicit = config_from_args(build_parser().parse_args(["--value-target-tau", "0.01"]))
    assert cfg.value_target_tau == 0.01 and "value_target_tau" in explicit
    assert config_from_args(build_parser().parse_args([]))[0].value_target_tau == 0.0


def _runner(cfg, target_seed):
    """A one-device runner state of ``cfg`` on the probe suite whose target network is another
    initialisation's params (``target_seed``)."""
    trainer = make_train(cfg, ENV, PARAMS, devices=jax.devices()[:1])
    runner = trainer.init()
    other = trainer.init(target_seed).params
    runner = runner.replace(
        key=runner.key[0], opt_state=(*runner.opt_state[:-1], PolyakState(other))
    )
    return trainer, runner


def test_gae_reads_the_target_networks_value(monkeypatch):
    """With a target network unlike the params, GAE's values and bootstrap are the target's
    on the rollout's states, and ``target_value_gap`` is their distance from the rollout's."""
    cfg = CFG.replace(value_target_tau=0.05)
    trainer, runner = _runner(cfg, target_seed=11)
    apply = trainer.network.apply
    seen = {}
    real_gae = ppo.compute_gae

    def recording_gae(traj, last_value, *args):
        seen.update(traj=traj, last_value=last_value)
        return real_gae(traj, last_value, *args)

    monkeypatch.setattr(ppo, "compute_gae", recording_gae)
    update = ppo.make_update(cfg, apply, ENV, PARAMS)
    with jax.disable_jit():
        new_runner, (_, metrics) = update(runner, trainer.schedule_arrays())
    target = target_params(runner.opt_state)
    traj = seen["traj"]
    want = jax.vmap(lambda o: apply(target, o)[1])(traj.obs)
    online = jax.vmap(lambda o: apply(runner.params, o)[1])(traj.obs)
    np.testing.assert_allclose(traj.value, want, rtol=1e-5, atol=1e-5)
    assert float(jnp.abs(want - online).mean()) > 1e-3  # the two critics differ here
    np.testing.assert_allclose(
        seen["last_value"], apply(target, new_runner.obs)[1], rtol=1e-5, atol=1e-5
    )
    np.testing.assert_allclose(
        metrics["target_value_gap"], jnp.abs(want - online).mean(), rtol=1e-4, atol=1e-6
    )
    # the target moved toward the params the update trained, 4 gradient steps of tau
    moved = target_params(new_runner.opt_state)
    before = optax.global_norm(jax.tree.map(jnp.subtract, target, new_runner.params))
    after = optax.global_norm(jax.tree.map(jnp.subtract, moved, new_runner.params))
    assert float(after) < float(before)


def test_tau_one_trains_as_plain_ppo_and_a_slow_target_does_not():
    """``tau`` 1: the target is the params after every step, so GAE reads the rollout's own
    value and the run is plain PPO's, bit for bit; a slow target trains otherwise."""

    def train(tau):
        trainer = make_train(CFG.replace(value_target_tau=tau), ENV, PARAMS)
        runner, _ = trainer.run_chunk(trainer.init(), 6)
        return jax.device_get(runner.params)

    plain, one, slow = train(0.0), train(1.0), train(0.02)
    jax.tree.map(np.testing.assert_array_equal, one, plain)
    assert float(optax.global_norm(jax.tree.map(jnp.subtract, slow, plain))) > 1e-5


def test_a_run_with_a_target_network_resumes_exactly(tmp_path):
    """The target network is in the checkpoint (the optimizer's state): half a run saved,
    loaded and continued ends where the run straight through ends."""
    cfg = CFG.replace(value_target_tau=0.05)
    trainer = make_train(cfg, ENV, PARAMS)
    final, _ = trainer.run_chunk(trainer.init(), 4)
    half, _ = trainer.run_chunk(trainer.init(), 2)
    path = ckpt.save_checkpoint(tmp_path, half, cfg.to_dict(), {"run_name": "t"})
    loaded, _ = ckpt.load_checkpoint(path, trainer.abstract_runner())
    assert isinstance(loaded.opt_state[-1], PolyakState)
    resumed, _ = trainer.run_chunk(trainer.place(loaded), 2)
    assert_trees_equal(jax.device_get(resumed), jax.device_get(final))
