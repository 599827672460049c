"""``hm-bench winnable``: the study planner plays whole games, the same games for the same key,
and never an illegal move (a tiny network, a tiny budget: the pieces, not the figures)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_bench.winnable import format_rows, make_planner, make_play, planner_config
from hackmatrix_train.evaluate import summarize
from hackmatrix_train.policy import load_policy
from hackmatrix_train.trainer import make_env
from train.tiny_policy import write_tiny_policy

MAX_STEPS = 24  # games end by death or at the step limit: a few dozen moves each
GAMES = 3


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    path = write_tiny_policy(tmp_path_factory.mktemp("policy") / "run", MAX_STEPS)
    return load_policy(path, max_steps=MAX_STEPS)


@pytest.fixture(scope="module")
def games(policy):
    """The oracle planner's games from keys 0, 0 again and 1 (one compile)."""
    cfg = planner_config(policy, simulations=4, mode="oracle")
    play = make_play(make_env(policy.cfg), policy.env_params, policy.apply_fn, cfg, GAMES, GAMES)
    return cfg, [jax.device_get(play(policy.params, jax.random.key(k))) for k in (0, 0, 1)]


def test_planner_considers_every_legal_action(policy):
    assert planner_config(policy, 8, "oracle").max_num_considered_actions == 28
    honest = planner_config(policy, 8, "honest", determinizations=2)
    assert (honest.mode, honest.num_simulations, honest.determinizations) == ("honest", 8, 2)


def test_planner_plays_whole_games(games):
    cfg, (first, _, _) = games
    assert not first["alive"].any()  # every game ended
    assert (first["length"] >= 1).all() and (first["length"] <= MAX_STEPS).all()
    assert first["actions"].sum() == first["length"].sum()
    row = summarize(first)
    for key in ("win_rate", "stage_mean", "programs_acquired_per_episode",
                "block_siphons_per_episode"):  # fmt: skip
        assert key in row
    row.update(search={"mode": cfg.mode, "num_simulations": 4, "determinizations": 1},
               compile_seconds=1.0, seconds=2.0, ms_per_decision=3.0)  # fmt: skip
    assert format_rows([row]).splitlines()[2].startswith("| oracle | 4 | 1 | 3 |")


def test_same_key_same_games_other_key_other_games(games):
    _, (a, b, c) = games
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert any(not np.array_equal(a[k], c[k]) for k in ("actions", "length", "ret"))


@pytest.mark.parametrize("mode", ["oracle", "honest"])
def test_planner_never_takes_an_illegal_action(policy, mode):
    env, env_params = make_env(policy.cfg), policy.env_params
    cfg = planner_config(policy, 4, mode, determinizations=2)
    plan = make_planner(policy.apply_fn, cfg)
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    keys = jax.random.split(jax.random.key(7), 2 + MAX_STEPS)
    obs, state = reset(jax.random.split(keys[0], GAMES), env_params)
    alive = np.ones(GAMES, bool)
    checked = 0
    for t in range(MAX_STEPS):
        k_plan, k_env = jax.random.split(keys[1 + t])
        action = plan(policy.params, k_plan, state)
        legal = np.asarray(jnp.take_along_axis(obs.action_mask, action[:, None], 1))[:, 0]
        assert legal[alive].all(), (t, np.asarray(action))
        checked += int(alive.sum())
        obs, state, _, term, trunc, info = step(
            jax.random.split(k_env, GAMES), state, action, env_params
        )
        assert not np.asarray(info["invalid_action"])[alive].any()
        alive &= ~np.asarray(term | trunc)
        if not alive.any():
            break
    assert checked >= GAMES
