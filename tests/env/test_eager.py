"""The env's eager calls compile quick (``hackmatrix_env.eager``), and play the same games.

``HackMatrix.step`` and ``reset`` called on concrete arrays compile with
``EAGER_CPU_COMPILER_OPTIONS``; under any transformation they are the plain ``jit`` of the
caller's program. Differential: random games stepped eagerly equal, bit for bit, the same
games stepped by a program compiled with the product's options (the suite's own flags are the
quick ones, so the product's graph is asked for by ``PRODUCT_COMPILER_OPTIONS``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_env import EnvParams, HackMatrix
from hackmatrix_env.eager import is_traced
from xla_flags import PRODUCT_COMPILER_OPTIONS

ENV = HackMatrix()
# a short step limit: the games truncate and auto-reset within the steps played
PARAMS = EnvParams(max_steps_in_episode=25)
GAMES, STEPS = 3, 40


def _equal(a, b) -> bool:
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb) and all(
        np.asarray(x).dtype == np.asarray(y).dtype and np.array_equal(x, y)
        for x, y in zip(la, lb, strict=True)
    )


@pytest.fixture
def calls(monkeypatch):
    """Which of the two jits each call of ``step`` and ``reset`` went to."""
    seen = []
    for name in ("step", "reset"):
        method = getattr(HackMatrix, name)
        for way in ("plain", "quick"):

            def record(*args, _fn=getattr(method, way), _tag=(name, way), **kwargs):
                seen.append(_tag)
                return _fn(*args, **kwargs)

            monkeypatch.setattr(method, way, record)
    return seen


def test_eager_calls_compile_quick_and_transformed_calls_stay_plain(calls):
    key = jax.random.key(0)
    _, state = ENV.reset(key, PARAMS)
    ENV.step(key, state, jnp.int32(0), PARAMS)
    assert calls == [("reset", "quick"), ("step", "quick")]
    calls.clear()
    jax.jit(lambda k, s: ENV.step(k, s, 0, PARAMS))(key, state)
    keys = jax.random.split(key, 2)
    states = jax.vmap(lambda k: ENV.reset(k, PARAMS)[1])(keys)
    jax.vmap(lambda k, s: ENV.step(k, s, 0, PARAMS))(keys, states)  # eager vmap: still traced
    assert calls == [("step", "plain"), ("reset", "plain"), ("step", "plain")]


def test_is_traced_sees_tracers_in_any_argument():
    state = ENV.reset(jax.random.key(0), PARAMS)[1]
    assert not is_traced(jax.random.key(0), state, 3, params=PARAMS)
    assert jax.jit(lambda s: jnp.bool_(is_traced(1, s)))(state)
    assert jax.vmap(lambda x: jnp.bool_(is_traced(x=x)))(jnp.arange(2)).all()


# the product's programs of one game: compiled once for every game below
product_reset = jax.jit(lambda k: ENV.reset(k, PARAMS), compiler_options=PRODUCT_COMPILER_OPTIONS)
product_step = jax.jit(
    lambda k, s, a: ENV.step(k, s, a, PARAMS), compiler_options=PRODUCT_COMPILER_OPTIONS
)


@pytest.mark.parametrize("game", range(GAMES))
def test_eager_play_is_the_product_programs_play_bit_for_bit(game):
    key = jax.random.key(1000 + game)
    eager, product = ENV.reset(key, PARAMS), product_reset(key)
    assert _equal(eager, product)
    (obs, state), (_, product_state) = eager, product
    ends = 0
    for t in range(STEPS):
        k_act, k_step = jax.random.split(jax.random.fold_in(key, t))
        action = jax.random.categorical(k_act, jnp.where(obs.action_mask, 0.0, -jnp.inf))
        eager = ENV.step(k_step, state, action, PARAMS)
        product = product_step(k_step, product_state, action)
        assert _equal(eager, product), (game, t)
        obs, state, product_state = eager[0], eager[1], product[1]
        ends += bool(eager[3] | eager[4])
    assert ends >= 1  # the game ended and auto-reset within the steps


def test_the_gymnasium_single_env_keeps_xla_defaults(calls):
    """A library drives the single env for as long as it trains: its calls are its own jitted
    programs (``vector.step_one``), never the quick eager compile."""
    from hackmatrix_env.gymnasium import HackMatrixEnv

    env = HackMatrixEnv(max_episode_steps=5)
    env.reset(seed=0)
    for _ in range(6):  # past the step limit: the restarted game too
        env.step(int(env.action_masks().argmax()))
    assert not [c for c in calls if c[1] == "quick"], calls
