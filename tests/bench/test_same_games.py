"""``bench.same_games``: hm-bench's check that the sharded rollout played the plain one's games."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from hackmatrix_bench.bench import same_games


def _rollout_out(reward_sum=-31506.27, episodes=5169, pos=(1, 2)):
    obs = {"grid": jnp.zeros((4, 6, 6, 42), jnp.float32), "mask": jnp.ones((4, 28), bool)}
    state = {"pos": jnp.asarray([pos] * 4, jnp.int8), "key": jax.random.split(jax.random.key(0), 4)}
    return obs, state, jnp.float32(reward_sum), jnp.int32(episodes)


def test_equal_outputs_are_the_same_games():
    assert same_games(_rollout_out(), _rollout_out())


def test_reward_sum_summed_in_another_order_still_matches():
    # The last bits of a float32 sum of 262,144 rewards depend on the summation order.
    a = np.float32(-31506.27)
    assert same_games(_rollout_out(reward_sum=a), _rollout_out(reward_sum=np.nextafter(a, 0)))


def test_any_game_difference_is_caught():
    assert not same_games(_rollout_out(), _rollout_out(pos=(1, 3)))  # a state leaf
    assert not same_games(_rollout_out(), _rollout_out(episodes=5170))  # an int scalar
    assert not same_games(_rollout_out(), _rollout_out(reward_sum=-31000.0))  # a real reward gap
    a, b = _rollout_out(), _rollout_out()
    b[1]["key"] = jax.random.split(jax.random.key(1), 4)  # typed PRNG keys compared by data
    assert not same_games(a, b)
    assert not same_games(a, (a[0], a[1], a[2]))  # another tree
