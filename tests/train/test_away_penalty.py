"""The trainer's charge for walking away from the exit (``--away-penalty``,
``stats.exit_distance_gained``).

The game's distance shaping pays 0.05 per unit of BFS distance to the exit closed and nothing
for distance gained, so a walk away and back pays. With the charge at 1 the two together are a
potential's difference on every ordinary step: checked on random play of real games, on a loop
built by hand, in the rollout (where an episode ends, nothing) and in the search's tree.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from builders import make_state
from hackmatrix_env import EnvParams, HackMatrix
from hackmatrix_env.constants import DISTANCE_COEF, NUM_ACTIONS, REWARD_COMPONENTS, Action
from hackmatrix_env.reward import shaping_distance
from hackmatrix_train.cli.train import build_parser, config_from_args
from hackmatrix_train.config import validate
from hackmatrix_train.search import Node, SearchConfig, make_recurrent_fn, search_config_from_train
from hackmatrix_train.stats import away_penalty, exit_distance_gained, make_shaping
from hackmatrix_train.trainer import make_train
from train.recipes import plain_ppo
from train.train_probes import ProbeParams, ProbeSuite

ENV = HackMatrix()
PARAMS = EnvParams()
DISTANCE = REWARD_COMPONENTS.index("distance_shaping")
DIRECTIONS = (Action.UP, Action.DOWN, Action.LEFT, Action.RIGHT)
OPPOSITE = {Action.UP: Action.DOWN, Action.DOWN: Action.UP,
            Action.LEFT: Action.RIGHT, Action.RIGHT: Action.LEFT}  # fmt: skip


def stack(*states):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


@jax.jit
def random_play(key):
    """64 games, 96 uniformly random legal moves each (auto-reset): per step the state before,
    the state after, the breakdown and ``done``."""
    keys = jax.random.split(key, 64)
    _, state = jax.vmap(ENV.reset, in_axes=(0, None))(keys, PARAMS)

    def body(state, k):
        k_act, k_env = jax.random.split(k)
        mask = jax.vmap(lambda s: ENV.get_obs(s, PARAMS).action_mask)(state)
        logits = jnp.where(mask, 0.0, -jnp.inf)
        action = jax.random.categorical(k_act, logits).astype(jnp.int32)
        _, nxt, _, term, trunc, info = jax.vmap(ENV.step, in_axes=(0, 0, 0, None))(
            jax.random.split(k_env, 64), state, action, PARAMS
        )
        dist = jax.vmap(shaping_distance)
        out = (info["reward_breakdown"][:, DISTANCE], term | trunc, state.game.stage,
               nxt.game.stage, nxt.game.player.hp, dist(state.game), dist(nxt.game),
               exit_distance_gained(state, nxt))  # fmt: skip
        return nxt, out

    return jax.lax.scan(body, state, jax.random.split(key, 96))[1]


def test_with_the_charge_the_games_distance_shaping_is_a_potentials_difference():
    paid, done, stage0, stage1, hp1, d0, d1, gained = map(
        np.asarray, random_play(jax.random.key(3))
    )
    ordinary = ~done & (stage0 == stage1) & (hp1 > 0)
    both = paid - DISTANCE_COEF * gained
    np.testing.assert_allclose(both[ordinary], DISTANCE_COEF * (d0 - d1)[ordinary], atol=1e-6)
    assert (
        gained[~done & ~ordinary] == 0
    ).all()  # a stage completed: the rollout's done zeroes the rest
    # the walks go both ways, and the game pays only one of them
    assert (gained[ordinary] > 0).sum() > 300 and (paid[ordinary] > 0).sum() > 300
    assert (paid[gained > 0] == 0).all()


def away_and_back(player=(2, 2)):
    """A quiet board and the first direction that takes the player away from the exit: the
    states after the move away and after the move back, and the direction."""
    state = make_state(player)
    step = jax.jit(lambda s, a: ENV.step(jax.random.key(0), s, jnp.int32(a), PARAMS))
    for away in DIRECTIONS:
        _, there, _, _, _, info_there = step(state, away)
        if int(shaping_distance(there.game)) > int(shaping_distance(state.game)):
            _, back, _, _, _, info_back = step(there, OPPOSITE[away])
            return state, (there, info_there), (back, info_back)
    raise AssertionError("no move away from the exit")


def test_a_walk_away_and_back_pays_the_game_and_nets_zero_with_the_charge():
    start, (there, info_there), (back, info_back) = away_and_back()
    assert tuple(np.asarray(back.game.player.pos)) == tuple(np.asarray(start.game.player.pos))
    paid = [float(info["reward_breakdown"][DISTANCE]) for info in (info_there, info_back)]
    assert paid == pytest.approx([0.0, DISTANCE_COEF])  # the loop pays the game's 0.05
    charge = away_penalty(1.0)
    charged = [float(charge(stack(a), stack(b))[0]) for a, b in ((start, there), (there, back))]
    assert charged == pytest.approx([-DISTANCE_COEF, 0.0])
    assert sum(paid) + sum(charged) == pytest.approx(0.0)
    assert float(away_penalty(2.5)(stack(start), stack(there))[0]) == pytest.approx(-0.125)
    assert away_penalty(0.0) is None


def shaping_of(coef: float, done: bool):
    start, (there, _), _ = away_and_back()
    cfg = plain_ppo(away_penalty=coef)
    shaping = make_shaping(cfg)(jnp.float32(0.0))
    obs = jax.vmap(lambda s: ENV.get_obs(s, PARAMS))(stack(start))
    nxt = jax.vmap(lambda s: ENV.get_obs(s, PARAMS))(stack(there))
    flag = jnp.asarray([done])
    return float(shaping(obs, nxt, flag, stack(start), stack(there), flag)[0])


def test_the_rollouts_shaping_charges_a_step_away_unless_the_episode_ended():
    assert shaping_of(1.0, done=False) == pytest.approx(-DISTANCE_COEF)
    assert shaping_of(1.0, done=True) == 0.0  # the stepped state is the next episode's start
    assert shaping_of(0.0, done=False) == 0.0


def test_the_search_tree_charges_what_the_value_learned():
    start, _, _ = away_and_back()
    away = next(
        a for a in DIRECTIONS
        if int(shaping_distance(ENV.step(jax.random.key(0), start, jnp.int32(a), PARAMS)[1].game))
        > int(shaping_distance(start.game))
    )  # fmt: skip

    def prior(params, obs):
        lead = obs.action_mask.shape[:-1]
        return jnp.zeros((*lead, NUM_ACTIONS)), jnp.zeros(lead)

    def reward(coef):
        cfg = SearchConfig(num_simulations=8, away_penalty=coef)
        out, _ = make_recurrent_fn(prior, cfg)(
            None, jax.random.key(0), jnp.asarray([away], jnp.int32),
            Node(stack(start), jnp.zeros(1, bool)),
        )  # fmt: skip
        return float(out.reward[0])

    assert reward(1.0) - reward(0.0) == pytest.approx(-DISTANCE_COEF)
    with pytest.raises(ValueError, match="away_penalty"):
        SearchConfig(away_penalty=-1.0)


def test_the_flag_is_checked_and_reaches_the_trainer_and_the_runs_searches():
    cfg, explicit = config_from_args(build_parser().parse_args(["--away-penalty", "1"]))
    assert cfg.away_penalty == 1.0 and "away_penalty" in explicit
    assert config_from_args(build_parser().parse_args([]))[0].away_penalty == 0.0
    assert search_config_from_train(cfg).away_penalty == 1.0  # hm-eval's, the teacher's
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="--away-penalty must be >= 0"):
            validate(plain_ppo(away_penalty=bad))
    probe = plain_ppo(num_envs=4, num_steps=4, total_timesteps=16, away_penalty=1.0)
    with pytest.raises(ValueError, match="--away-penalty needs HackMatrix"):
        make_train(probe, ProbeSuite(), ProbeParams())
    assert dataclasses.replace(plain_ppo(), away_penalty=0.0) == plain_ppo()
