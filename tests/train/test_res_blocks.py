"""``--res-blocks N``: residual 3x3 blocks in a grid network, added to a trained network with
its function kept (a warm start from fewer blocks)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_env import HackMatrix
from hackmatrix_train import guided
from hackmatrix_train.config import validate
from hackmatrix_train.network import GridEncoder, adapt_params, make_network
from hackmatrix_train.policy import load_policy
from hackmatrix_train.run import default_run_name, warm_start
from hackmatrix_train.trainer import make_train
from hypothesis import given, settings
from hypothesis import strategies as st
from train.recipes import plain_ppo
from train.test_network import fake_obs, moved_params
from train.tiny_policy import write_tiny_policy
from train.trees import assert_trees_equal

A = 28


@settings(deadline=None, max_examples=8)
@given(seed=st.integers(0, 2**20), old=st.integers(0, 2), more=st.integers(1, 2),
       histogram=st.booleans())  # fmt: skip
def test_blocks_added_to_a_network_keep_its_function(seed, old, more, histogram):
    """Grown from ``old`` blocks to ``old + more`` (a trained network: no leaf at its init), the
    logits and value are the start's bit for bit, in the grown network's params layout; the new
    blocks' first layers are the template's."""
    name = "grid-hl" if histogram else "grid"
    small, big = (make_network(name, A, 32, 2, b) for b in (old, old + more))
    start = moved_params(small, seed)
    template = big.init(jax.random.key(seed + 7), fake_obs(1))
    grown = adapt_params(start, name, name, old, old + more, template)
    obs = fake_obs(16, seed)
    for a, b in zip(small.apply(start, obs), big.apply(grown, obs), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert jax.tree.structure(grown) == jax.tree.structure(template)
    first_new = f"Dense_{2 + 2 * old}"
    np.testing.assert_array_equal(grown["params"][first_new]["kernel"],
                                  template["params"][first_new]["kernel"])  # fmt: skip


def test_a_new_block_learns_from_its_first_step():
    """The block's last kernel starts at zero, so the block adds nothing, but its gradient is
    not zero: the first step moves it and the block's output with it."""
    net = make_network("grid", A, 32, 2, 1)
    params = net.init(jax.random.key(0), fake_obs(1))
    last = params["params"]["Dense_3"]["kernel"]
    assert float(jnp.abs(last).max()) == 0.0
    grad = jax.grad(lambda p: net.apply(p, fake_obs(8))[0].sum())(params)
    assert float(jnp.abs(grad["params"]["Dense_3"]["kernel"]).max()) > 0.0
    plain = moved_params(GridEncoder(A, 32, 2), 1)
    assert jax.tree.structure(plain) == jax.tree.structure(
        make_network("grid", A, 32, 2, 0).init(jax.random.key(0), fake_obs(1))
    )


@pytest.mark.parametrize(
    ("source", "target", "blocks", "match"),
    [
        ("grid", "grid", (2, 1), "blocks are added, never removed"),
        ("grid", "grid-twin", (0, 1), "added only to a grid or grid-hl network of the same kind"),
        ("grid-twin", "grid-twin", (0, 1), "added only to a grid or grid-hl network"),
        ("grid", "grid-hl", (0, 1), "added only to a grid or grid-hl network of the same kind"),
    ],
)
def test_blocks_are_added_only_within_one_kind(source, target, blocks, match):
    template = make_network("grid", A, 32, 2, 2).init(jax.random.key(0), fake_obs(1))
    with pytest.raises(ValueError, match=match):
        adapt_params({"params": {}}, source, target, *blocks, template)


def test_bad_res_blocks_are_refused():
    with pytest.raises(ValueError, match="--res-blocks must be >= 0"):
        validate(plain_ppo(network="grid", res_blocks=-1))
    with pytest.raises(ValueError, match="--res-blocks needs a grid network"):
        validate(plain_ppo(network="mlp", res_blocks=1))
    with pytest.raises(ValueError, match="--res-blocks needs a grid network"):
        make_network("mlp", A, 32, 2, 1)
    validate(plain_ppo(network="grid-twin", res_blocks=2))


@pytest.fixture(scope="module")
def grid_start(tmp_path_factory):
    """A tiny ``grid`` params export without blocks: the start of a run with one."""
    return write_tiny_policy(tmp_path_factory.mktemp("grid") / "run", 50, network="grid").parent


def _res_cfg(start, **kw):
    fields = {
        "network": "grid",
        "res_blocks": 1,
        "hidden_dim": 16,
        "num_layers": 1,
        "num_envs": 4,
        "num_steps": 4,
        "total_timesteps": 16,
        "init_params": str(start),
    }
    return plain_ppo(**{**fields, **kw})


def test_a_checkpoint_without_blocks_warm_starts_a_run_with_one(grid_start, tmp_path):
    """``--init-params`` of a ``grid`` run into a ``--res-blocks 1`` run: the start's layers,
    the new block from the run's init, so the run begins as its start's policy and value; a
    checkpoint with the blocks loads as it is; the run's name says its blocks."""
    env = HackMatrix()
    cfg = _res_cfg(grid_start)
    trainer = make_train(cfg, env, env.default_params, devices=jax.devices()[:1])
    fresh = trainer.init()
    runner = warm_start(trainer, fresh, str(grid_start))
    start = load_policy(grid_start)
    obs = fake_obs(8, 4)
    for a, b in zip(start.apply_fn(start.params, obs),
                    trainer.network.apply(jax.device_get(runner.params), obs), strict=True):  # fmt: skip
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(runner.params["params"]["Dense_2"]["kernel"],
                                  fresh.params["params"]["Dense_2"]["kernel"])  # fmt: skip
    assert "-grid-res1-" in default_run_name(cfg)
    assert "-grid-4x" in default_run_name(cfg.replace(res_blocks=0))

    with_block = write_tiny_policy(tmp_path / "res", 50, network="grid", res_blocks=1).parent
    loaded = load_policy(with_block)
    again = warm_start(trainer, fresh, str(with_block))
    assert_trees_equal(jax.device_get(again.params), jax.device_get(loaded.params))


def test_the_teacher_of_a_run_with_blocks_is_its_start_without(grid_start):
    """A guided run with a block from a start without: the teacher searches with the start's
    own network (its apply reproduces the start's outputs); a start of the run's own shape
    searches with the run's apply (None)."""
    env = HackMatrix()
    teacher_apply = guided.start_apply(_res_cfg(grid_start), env, env.default_params)
    start = load_policy(grid_start)
    obs = fake_obs(4, 2)
    for a, b in zip(teacher_apply(start.params, obs), start.apply_fn(start.params, obs),
                    strict=True):  # fmt: skip
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    same = _res_cfg(grid_start, res_blocks=0)
    assert guided.start_apply(same, env, env.default_params) is None
