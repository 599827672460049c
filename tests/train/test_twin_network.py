"""``--network grid-twin``: the critic's own tower, grown exactly from a ``grid`` start."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_env import HackMatrix
from hackmatrix_train import guided
from hackmatrix_train.network import GridEncoder, TwinGrid, adapt_params, twin_params
from hackmatrix_train.policy import load_policy
from hackmatrix_train.run import warm_start
from hackmatrix_train.trainer import make_train
from hypothesis import given, settings
from hypothesis import strategies as st
from train.recipes import plain_ppo
from train.test_network import fake_obs, moved_params
from train.tiny_policy import write_tiny_policy
from train.trees import assert_trees_equal

A = 28


def _grid_params(seed: int, hidden: int = 32):
    """A ``GridEncoder``'s params, every leaf moved off its initial value (biases included)."""
    return moved_params(GridEncoder(A, hidden, 2), seed)


@settings(deadline=None, max_examples=8)
@given(seed=st.integers(0, 2**20))
def test_the_twin_grown_from_a_grid_network_computes_its_function(seed):
    """Both towers copied from the shared network: the same logits and value, bit for bit."""
    params = _grid_params(seed)
    obs = fake_obs(16, seed)
    logits, value = GridEncoder(A, 32, 2).apply(params, obs)
    twin_logits, twin_value = TwinGrid(A, 32, 2).apply(twin_params(params), obs)
    np.testing.assert_array_equal(np.asarray(twin_logits), np.asarray(logits))
    np.testing.assert_array_equal(np.asarray(twin_value), np.asarray(value))
    template = jax.eval_shape(TwinGrid(A, 32, 2).init, jax.random.key(0), fake_obs(1))
    assert jax.tree.structure(template) == jax.tree.structure(twin_params(params))


def test_the_twins_value_moves_no_weight_of_the_policy():
    """The reason for the twin: in ``GridEncoder`` the value's gradient reaches the layers the
    policy reads (the cell embedding, convolution and trunk); in ``TwinGrid`` it reaches the
    critic's tower only, and the logits' gradient the actor's only."""
    params = twin_params(_grid_params(3))
    obs = fake_obs(8, 3)
    net = TwinGrid(A, 32, 2)

    def norms(tree):  # each tower's gradient norm
        return {k: float(_norm(v)) for k, v in tree["params"].items()}

    g_value = jax.grad(lambda p: net.apply(p, obs)[1].sum())(params)
    g_logits = jax.grad(lambda p: net.apply(p, obs)[0].sum())(params)
    assert norms(g_value)["actor"] == 0.0 and norms(g_value)["critic"] > 0.0
    assert norms(g_logits)["critic"] == 0.0 and norms(g_logits)["actor"] > 0.0
    shared = _grid_params(3)
    g_shared = jax.grad(lambda p: GridEncoder(A, 32, 2).apply(p, obs)[1].sum())(shared)
    trunk = g_shared["params"]["Dense_2"]["kernel"]  # the layer both heads read
    assert float(jnp.abs(trunk).max()) > 0.0


def _norm(tree):
    """The global L2 norm of a tree's leaves."""
    return jnp.sqrt(sum(jnp.sum(x * x) for x in jax.tree.leaves(tree)))


@pytest.mark.parametrize(("source", "target"), [("grid-twin", "grid"), ("mlp", "grid-twin"),
                                                 ("grid", "mlp")])  # fmt: skip
def test_no_other_network_grows_into_another(source, target):
    with pytest.raises(ValueError, match=f"a '{source}' network's params cannot start"):
        adapt_params({"params": {}}, source, target)
    assert adapt_params("same", target, target) == "same"


@pytest.fixture(scope="module")
def grid_start(tmp_path_factory):
    """A tiny ``grid`` params export: the start of a ``grid-twin`` run."""
    return write_tiny_policy(tmp_path_factory.mktemp("grid") / "run", 50, network="grid").parent


def _twin_cfg(start, **kw):
    return plain_ppo(network="grid-twin", hidden_dim=16, num_layers=1, num_envs=4, num_steps=4,
                     total_timesteps=16, init_params=str(start), **kw)  # fmt: skip


def test_a_grid_checkpoint_warm_starts_a_twin_run_in_both_towers(grid_start, tmp_path):
    """``--init-params`` of a ``grid`` run into a ``grid-twin`` run: the start's params in both
    towers, so the run begins as its start's policy and value; the other way is refused."""
    env = HackMatrix()
    trainer = make_train(_twin_cfg(grid_start), env, env.default_params,
                         devices=jax.devices()[:1])  # fmt: skip
    runner = warm_start(trainer, trainer.init(), str(grid_start))
    start = load_policy(grid_start)
    assert_trees_equal(jax.device_get(runner.params), twin_params(start.params))

    twin_dir = tmp_path / "twin"
    write_tiny_policy(twin_dir, 50, network="grid-twin")
    grid_cfg = plain_ppo(network="grid", hidden_dim=16, num_layers=1, num_envs=4, num_steps=4,
                         total_timesteps=16)  # fmt: skip
    grid_trainer = make_train(grid_cfg, env, env.default_params, devices=jax.devices()[:1])
    with pytest.raises(ValueError, match=r"cannot load --init-params.*'grid-twin' network"):
        warm_start(grid_trainer, grid_trainer.init(), str(twin_dir))


def test_the_teacher_searches_with_its_own_network(grid_start, monkeypatch):
    """A guided ``grid-twin`` run from a ``grid`` start: the teacher's search gets the start's
    params and the start's own network (not the student's twin), and a start of the run's own
    network searches with the run's apply."""
    env = HackMatrix()
    twin = _twin_cfg(grid_start)
    teacher_apply = guided.start_apply(twin, env, env.default_params)
    start = load_policy(grid_start)
    obs, _ = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.key(0), 3),
                                                    start.env_params)  # fmt: skip
    for a, b in zip(teacher_apply(start.params, obs), start.apply_fn(start.params, obs),
                    strict=True):  # fmt: skip
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    same = plain_ppo(network="grid", hidden_dim=16, num_layers=1, init_params=str(grid_start))
    assert guided.start_apply(same, env, env.default_params) is None

    seen = []

    def recording_search(apply_fn, search_cfg, params, key, part):
        seen.append(apply_fn)
        mask = jnp.ones((part.game.stage.shape[0], A), bool)
        return type("Out", (), {"policy_target": mask / A})

    def sample_actor(cfg, apply_fn):  # PPO's move: not what this test is about
        return lambda params, obs, state, key: (jnp.zeros(3, jnp.int32),) + (jnp.zeros(3),) * 3

    monkeypatch.setattr(guided.ppo, "sample_actor", sample_actor)
    _, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.key(0), 3),
                                                      start.env_params)  # fmt: skip
    student = object()
    act = guided.guided_actor(twin, student, 2, search=recording_search,
                              teacher_params=start.params, teacher_apply=teacher_apply)  # fmt: skip
    act({}, obs, state, jax.random.key(1))
    online = guided.guided_actor(twin, student, 2, search=recording_search)
    online({}, obs, state, jax.random.key(1))
    assert seen == [teacher_apply, student]
