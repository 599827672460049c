"""``stats/history_overflow_frac``: episodes whose UNDO ring ran dry while Swift's would not.

A uniform policy that owns UNDO from the start of every game overflows a 1-deep ring within a
few turns (two enemy phases, then one UNDO empties a ring that dropped a snapshot). A ring as
deep as the step limit can never overflow, however often UNDO is pressed: at most one snapshot
is pushed per env step, so nothing is ever dropped (specs/programs.md §5).
"""

from __future__ import annotations

import jax
import pytest
from hackmatrix_env import EnvParams
from hackmatrix_env.constants import NUM_REWARD_COMPONENTS
from hackmatrix_train.ppo import sample_actor
from hackmatrix_train.rollout import collect_rollout
from hackmatrix_train.stats import init_episode_acc, track_episodes
from undo_testlib import UNDO_ACTION, OwnsUndo, uniform

NUM_ENVS, NUM_STEPS, MAX_STEPS = 16, 96, 40
ENV = OwnsUndo()


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
            sample_actor(None, uniform), lambda p, o: uniform(p, o)[1], k_roll, None, ENV,
            env_params, state, obs, acc, NUM_STEPS, track=track_episodes,
        )  # fmt: skip
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
