"""Every state leaf keeps its declared dtype and shape after reset and after steps (style.md §3)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from builders import make_state
from hackmatrix_env import HackMatrix
from hackmatrix_env.types import blank_state

ENV = HackMatrix()  # equal to every other instance: shares the jitted step


def _signature(tree):
    return jax.tree.map(lambda x: (np.shape(x), jnp.asarray(x).dtype), tree)


DECLARED = _signature(blank_state())


def test_declared_dtypes_are_compact():
    dtypes = {d for _, d in jax.tree.leaves(DECLARED, is_leaf=lambda x: isinstance(x, tuple))}
    assert dtypes <= {jnp.dtype(t) for t in ("int8", "int32", "bool")}
    assert jnp.dtype("float64") not in dtypes and jnp.dtype("int64") not in dtypes


def test_reset_and_step_keep_declared_dtypes():
    params = ENV.default_params
    obs, state = ENV.reset(jax.random.key(0), params)
    assert _signature(state) == DECLARED
    cases = [
        (state, 0),
        (make_state((2, 2), siphons=1, blocks=[("data", (3, 2), 4)]), 4),  # siphon
        (make_state((0, 0)), 1),  # invalid: auto-reset
        (make_state((0, 0), enemies=[("virus", (3, 0), 1)]), 0),  # kill
    ]
    for k, (s, action) in enumerate(cases):
        obs, nxt, reward, term, trunc, info = ENV.step(jax.random.key(k), s, action, params)
        assert _signature(nxt) == DECLARED
        assert reward.dtype == jnp.float32 and reward.shape == ()
        assert term.dtype == jnp.bool_ and trunc.dtype == jnp.bool_
        assert info["reward_breakdown"].dtype == jnp.float32
        assert info["action_kind"].dtype == jnp.int8 and info["invalid_action"].dtype == jnp.bool_
        assert obs.player.dtype == obs.programs.dtype == obs.grid.dtype == jnp.float32
        assert obs.action_mask.dtype == jnp.bool_
