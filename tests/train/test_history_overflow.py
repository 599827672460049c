"""``stats/history_overflow_frac``: episodes whose UNDO ring ran dry while Swift's would not.

A uniform policy that owns UNDO from the start of every game overflows a 1-deep ring within a
few turns (two enemy phases, then one UNDO empties a ring that dropped a snapshot). A ring as
deep as the step limit can never overflow, however often UNDO is pressed: at most one snapshot
is pushed per env step, so nothing is ever dropped (specs/programs.md §5).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from hackmatrix_env import EnvParams, HackMatrix
from hackmatrix_env.constants import FIRST_PROGRAM, NUM_REWARD_COMPONENTS, PROGRAM_NAMES
from hackmatrix_train.rollout import collect_rollout, init_episode_acc

NUM_ENVS, NUM_STEPS, MAX_STEPS = 16, 96, 40
UNDO_IDX = PROGRAM_NAMES.index("undo")
UNDO_ACTION = FIRST_PROGRAM + UNDO_IDX


def _owning_undo(state):
    """A fresh game whose player owns UNDO and 50 more credits to run it."""
    game = state.game
    player = game.player.replace(credits=game.player.credits + 50)
    owned = game.owned_list.at[0].set(UNDO_IDX)
    game = game.replace(player=player, owned_list=owned, num_owned=jnp.ones_like(game.num_owned))
    return state.replace(game=game)


def _where(pred, on_true, on_false):
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


class OwnsUndo:
    """HackMatrix whose every fresh game (reset and step's auto-reset) starts ``_owning_undo``."""

    def __init__(self):
        self.env = HackMatrix()

    def reset(self, key, params):
        _, state = self.env.reset(key, params)
        state = _owning_undo(state)
        return self.env.get_obs(state, params), state

    def step(self, key, state, action, params):
        obs, state, reward, terminated, truncated, info = self.env.step(key, state, action, params)
        done = terminated | truncated
        state = _where(done, _owning_undo(state), state)
        obs = _where(done, self.env.get_obs(state, params), obs)
        return obs, state, reward, terminated, truncated, info


ENV = OwnsUndo()


def _uniform(params, obs):
    return jnp.zeros(obs.action_mask.shape, jnp.float32), jnp.zeros(obs.action_mask.shape[:-1])


def _rollout_stats(depth: int) -> dict:
    env_params = EnvParams(max_steps_in_episode=MAX_STEPS, history_depth=depth)

    @jax.jit
    def run(key):
        k_reset, k_roll = jax.random.split(key)
        obs, state = jax.vmap(ENV.reset, in_axes=(0, None))(
            jax.random.split(k_reset, NUM_ENVS), env_params
        )
        acc = init_episode_acc(NUM_ENVS, NUM_REWARD_COMPONENTS)
        *_, stats = collect_rollout(
            k_roll, _uniform, None, ENV, env_params, state, obs, acc, NUM_STEPS
        )
        return stats

    return jax.device_get(run(jax.random.key(3)))


@pytest.mark.parametrize("depth", [1, MAX_STEPS])
def test_overflow_episodes_are_counted_only_when_the_ring_can_run_dry(depth):
    stats = _rollout_stats(depth)
    assert stats["ep_count"] >= NUM_ENVS  # every env finished at least one episode
    assert stats["action_counts"][UNDO_ACTION] > 50  # UNDO was pressed a lot either way
    if depth == 1:
        assert 0 < stats["ep_overflow"] <= stats["ep_count"]
    else:
        assert stats["ep_overflow"] == 0
