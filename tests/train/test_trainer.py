"""``trainer.make_train``'s injection points: the learner, its actor and loss, the env factory."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_env import HackMatrix
from hackmatrix_train import ppo
from hackmatrix_train.trainer import make_train
from hackmatrix_train.update import Learner
from train.recipes import plain_ppo
from train.train_probes import ProbeParams, ProbeSuite

UPDATES = 3
CFG = plain_ppo(
    num_envs=8, num_steps=4, total_timesteps=8 * 4 * UPDATES, num_minibatches=2, update_epochs=1,
    hidden_dim=8, num_layers=1, network="mlp",
)  # fmt: skip


def always_second(cfg, apply_fn):
    """An actor that plays the probes' action 1 where it is valid, else action 0."""
    del cfg

    def act(params, obs, env_state, key):
        del env_state, key
        _, value = apply_fn(params, obs)
        action = jnp.where(obs.action_mask[:, 1], 1, 0).astype(jnp.int32)
        return action, jnp.zeros(action.shape), value, None

    return act


def test_an_actor_passed_in_plays_the_rollout():
    trainer = make_train(CFG, ProbeSuite(), ProbeParams(), actor=always_second)
    _, m = jax.device_get(trainer.run_chunk(trainer.init(), UPDATES))
    assert m["actions/a2_frac"] == 0.0 and m["actions/a1_frac"] > 0.1  # never its 2
    default = make_train(CFG, ProbeSuite(), ProbeParams())
    _, d = jax.device_get(default.run_chunk(default.init(), UPDATES))
    assert d["actions/a2_frac"] > 0.0  # the sampling actor does play 2


def test_a_loss_passed_in_is_the_one_minimised():
    """A loss with no gradient leaves the params as they were; its aux becomes ``train/…``."""

    def no_loss(params, apply_fn, batch, adv, targets, *args):
        logits, _ = apply_fn(params, batch.obs)
        zero = 0.0 * logits.sum()
        return jax.lax.stop_gradient(zero), {"probe_term": jnp.float32(2.5)}

    trainer = make_train(CFG, ProbeSuite(), ProbeParams(), loss=no_loss)
    start = trainer.init()
    runner, m = jax.device_get(trainer.run_chunk(start, UPDATES))
    for a, b in zip(
        jax.tree.leaves(runner.params), jax.tree.leaves(jax.device_get(start.params)), strict=True
    ):
        np.testing.assert_array_equal(a, b)
    assert m["train/probe_term"] == 2.5 and "train/pg_loss" not in m
    assert m["train/update"] == UPDATES


def test_a_learner_passed_in_builds_the_update():
    """A learner of its own: its metrics averaged over the chunk, the runner it returns kept."""
    built = []

    def make_update(cfg, apply_fn, env, env_params, axis_name=None, *, actor=None, loss=None):
        built.append((env, actor, loss))

        def update(runner, sched):
            metrics = {"count": runner.update.astype(jnp.float32)}
            return runner.replace(update=runner.update + 1), ({}, metrics)

        return update

    env = ProbeSuite()
    trainer = make_train(CFG, env, ProbeParams(), learner=Learner("count", make_update), loss=len)
    runner, m = jax.device_get(trainer.run_chunk(trainer.init(), UPDATES))
    assert int(runner.update) == UPDATES
    assert m["train/count"] == pytest.approx((0 + 1 + 2) / UPDATES)
    # built at construction (where a learner refuses a config) and in the chunk's trace
    assert built == [(env, None, len)] * 2


def test_an_env_factory_passed_in_makes_the_trained_env():
    made = []

    def make_env(cfg):
        made.append(cfg)
        return HackMatrix()

    cfg = CFG.replace(network="grid")
    trainer = make_train(cfg, make_env=make_env)
    assert made == [cfg] and isinstance(trainer.env, HackMatrix)
    assert trainer.program_names and trainer.num_actions == 28


def test_the_learner_is_ppo_unless_one_is_given():
    assert make_train(CFG, ProbeSuite(), ProbeParams()).learner is ppo.LEARNER
    mine = ppo.LEARNER._replace(name="mine")
    assert make_train(CFG, ProbeSuite(), ProbeParams(), learner=mine).learner is mine
