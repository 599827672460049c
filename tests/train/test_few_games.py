"""The commands' programs of the game alone compile quick for a few games, and play the same games.

``hackmatrix_env.eager.few_games_options`` gives a program of the env alone that plays at most
``FEW_GAMES`` games the eager calls' options on the CPU: ``hm-watch``'s and ``hm-play``'s env
step and reset (``episodes._advance``, ``_reset``) and the game step ``hm-eval``'s rows share
(``RefillGames``), where a greedy row alone now plays too. Differential: the same random moves
through the quick programs and through the same programs compiled with the product's options
(the suite's own flags are the quick ones, so the product's graph is asked for by
``PRODUCT_COMPILER_OPTIONS``) give every output bit for bit.
"""

from __future__ import annotations

import io

import hackmatrix_env.eager as eager
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_env import EnvParams, HackMatrix
from hackmatrix_env.eager import EAGER_CPU_COMPILER_OPTIONS, few_games_options
from hackmatrix_train import episodes, progress
from hackmatrix_train.search_evaluate import RefillGames
from xla_flags import PRODUCT_COMPILER_OPTIONS

MAX_STEPS = 30  # the games end (or hit the limit) within the moves played


def _equal(a, b) -> bool:
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb) and all(
        np.asarray(x).dtype == np.asarray(y).dtype and np.array_equal(x, y)
        for x, y in zip(la, lb, strict=True)
    )


def _legal_moves(mask, rng) -> jax.Array:
    """int32[N]: a uniformly drawn legal action per row (numpy, outside any program)."""
    mask = np.asarray(mask)
    return jnp.asarray([rng.choice(np.flatnonzero(row)) for row in mask], jnp.int32)


def test_few_games_options_only_for_a_few_games_on_the_cpu(monkeypatch):
    assert few_games_options(1) == EAGER_CPU_COMPILER_OPTIONS
    assert few_games_options(eager.FEW_GAMES) == EAGER_CPU_COMPILER_OPTIONS
    assert few_games_options(eager.FEW_GAMES + 1) is None
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert few_games_options(1) is None  # other backends: XLA's defaults


def test_few_games_jit_picks_by_the_games_of_each_call(monkeypatch):
    seen = []
    fun = eager.few_games_jit(lambda x: x + 1, lambda x: x.shape[0])
    for way in ("plain", "quick"):
        jitted = getattr(fun, way)
        monkeypatch.setattr(fun, way, lambda x, _j=jitted, _w=way: seen.append(_w) or _j(x))
    monkeypatch.setattr(eager, "FEW_GAMES", 2)
    assert np.array_equal(fun(jnp.arange(2)), [1, 2])
    assert np.array_equal(fun(jnp.arange(3)), [1, 2, 3])
    assert seen == ["quick", "plain"]


def test_recording_steps_are_the_product_programs_bit_for_bit():
    """``hm-watch``/``hm-play``'s reset and env step for 3 games, quick against the product's."""
    params = EnvParams(max_steps_in_episode=MAX_STEPS)
    keys = jax.random.split(jax.random.key(5), 3)
    assert few_games_options(3) is not None  # the commands' calls take the quick programs
    product_reset = jax.jit(episodes._reset_games).lower(keys, params)
    quick_obs, quick_state = episodes._reset.quick(keys, params)
    obs, state = product_reset.compile(PRODUCT_COMPILER_OPTIONS)(keys, params)
    assert _equal((quick_obs, quick_state), (obs, state))
    action = jnp.zeros(3, jnp.int32)
    product_step = (
        jax.jit(episodes._advance_games)
        .lower(params, state, action, keys)
        .compile(PRODUCT_COMPILER_OPTIONS)
    )
    rng, ended = np.random.default_rng(0), 0
    for t in range(MAX_STEPS):
        action = _legal_moves(obs.action_mask, rng)
        step_keys = jax.random.split(jax.random.key(t), 3)
        quick = episodes._advance.quick(params, quick_state, action, step_keys)
        product = product_step(params, state, action, step_keys)
        assert _equal(quick, product), t
        (obs, state, _, out), quick_state = product, quick[1]
        ended = np.maximum(ended, np.asarray(out[1] | out[2]))
    assert ended.all()  # every game ended (or hit the limit) within the moves


def test_the_shared_step_is_the_product_program_bit_for_bit():
    """``hm-eval``'s shared game step for 4 episodes in 2 slots (refills included), quick
    against the product's, on the same random moves."""
    env, params = HackMatrix(), EnvParams(max_steps_in_episode=MAX_STEPS)
    games = RefillGames(env, params, 4, MAX_STEPS, 2, jax.random.key(7))
    start, quick_step, _ = games.compiled_step(None)
    start_fn, step_fn, _ = games.game(None)
    loop, fixed = start(games.key)
    action = jax.ShapeDtypeStruct(loop[2].shape, jnp.int32)
    product_step = (
        jax.jit(step_fn).lower(*jax.eval_shape(start_fn, games.key), action)
        .compile(PRODUCT_COMPILER_OPTIONS)
    )  # fmt: skip
    rng, product = np.random.default_rng(1), loop
    for t in range(4 * MAX_STEPS):
        if not np.asarray(loop[6]["alive"]).any():
            break
        action = _legal_moves(loop[4].action_mask, rng)
        product = product_step(product, fixed, action)
        loop = quick_step(loop, fixed, action)  # donates its loop: a fresh one each move
        assert _equal(loop, product), t
    assert not np.asarray(loop[6]["alive"]).any() and int(loop[1]) == 4  # every episode played


def test_a_greedy_row_alone_plays_on_the_quick_step_and_gives_the_whole_programs_row(
    tmp_path, monkeypatch
):
    """``hm-eval --episodes 8`` (a greedy row, a few games) plays on the shared step, compiled
    quick, and its summary is the whole program's (``FEW_GAMES`` 0: the path before)."""
    from hackmatrix_train.policy import evaluate_checkpoint
    from train.tiny_policy import write_tiny_policy

    path = write_tiny_policy(tmp_path / "run", MAX_STEPS)
    summaries, texts = [], []
    for few in (eager.FEW_GAMES, 0):
        monkeypatch.setattr(eager, "FEW_GAMES", few)
        out = io.StringIO()
        summaries.append(evaluate_checkpoint(path, 5, seed=2, report=progress.Reporter(out)))
        texts.append(out.getvalue())
    assert summaries[0] == summaries[1]
    quick = progress.COLD_COMPILE_S["evaluation sharing its quick step"]
    assert f"about {quick} s" in texts[0]
    assert f"about {progress.COLD_COMPILE_S['evaluation']} s" in texts[1]


@pytest.mark.parametrize("rows", [2, eager.FEW_GAMES + 1])
def test_recording_announces_the_compile_it_waits_for(rows):
    """The recorder's compile estimate follows the programs its first step compiles (the step
    itself stubbed: only the announcement is under test)."""
    out = io.StringIO()
    stepper = episodes.Stepper(EnvParams(), report=progress.Reporter(out))
    stepper._step = lambda *args: None
    stepper.step(None, None, None, None, rows, np.arange(rows))
    key = "recording a few games" if rows <= eager.FEW_GAMES else "recording"
    assert f"compiling the policy and the env step: about {progress.COLD_COMPILE_S[key]} s" in (
        out.getvalue()
    )
