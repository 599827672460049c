"""The refill evaluator (``search_evaluate.make_refill_evaluate``) plays ``make_evaluate``'s episodes.

Differential: with the greedy network as the actor, every per-episode figure equals the
scan evaluator's, whatever the number of slots (episodes are refilled into slots as others
end, so each episode runs at other iterations than in the scan).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_env import EnvParams, HackMatrix
from hackmatrix_train.evaluate import make_evaluate
from hackmatrix_train.network import MLP, masked_categorical
from hackmatrix_train.search_evaluate import make_refill_evaluate

EPISODES, MAX_STEPS = 6, 40


@pytest.fixture(scope="module")
def policy():
    env = HackMatrix()
    params_env = EnvParams(max_steps_in_episode=MAX_STEPS)
    net = MLP(28, hidden_dim=16, num_layers=1)
    obs, _ = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(jax.random.key(0), 1), params_env
    )
    params = net.init(jax.random.key(1), obs)
    return env, params_env, net, params


def _greedy(net):
    def act(params, state, obs, key):
        del state, key
        logits, _ = net.apply(params, obs)
        return jnp.argmax(masked_categorical(logits, obs.action_mask).logits, axis=-1).astype(
            jnp.int32
        )

    return act


@pytest.mark.parametrize("slots", [2])
def test_refill_plays_the_scan_evaluators_episodes(policy, slots):
    env, params_env, net, params = policy
    scan = make_evaluate(env, params_env, net.apply, EPISODES, MAX_STEPS, greedy=True)
    refill = make_refill_evaluate(env, params_env, _greedy(net), EPISODES, MAX_STEPS, slots)
    want = jax.device_get(scan(params, jax.random.key(7)))
    got = jax.device_get(refill(params, jax.random.key(7)))
    assert set(want) == set(got)
    for name in want:
        np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(want[name]), err_msg=name)
    assert not np.asarray(got["alive"]).any()  # every episode ended
    assert np.asarray(got["length"]).sum() > EPISODES  # the episodes were played, not skipped


def test_actor_memory_follows_each_episode(policy):
    """An actor with memory (``memory=(start, update)``) sees its own episode's history.

    The memory counts the steps since its episode started; the actor plays greedily only when
    the count equals the state's step counter and its least likely legal move otherwise. A
    memory that carried over into a refilled slot, or missed a step, would change the moves.
    """
    env, params_env, net, params = policy
    greedy = _greedy(net)

    def act(params, state, obs, key, steps):
        logits, _ = net.apply(params, obs)
        worst = jnp.argmin(jnp.where(obs.action_mask, logits, jnp.inf), axis=-1)
        ok = steps == state.time
        return jnp.where(ok, greedy(params, state, obs, key), worst).astype(jnp.int32)

    memory = (lambda s: jnp.zeros_like(s.time), lambda m, s, a, s2: m + 1)
    with_memory = make_refill_evaluate(env, params_env, act, EPISODES, MAX_STEPS, 2, memory)
    without = make_refill_evaluate(env, params_env, greedy, EPISODES, MAX_STEPS, 2)
    got = jax.device_get(with_memory(params, jax.random.key(7)))
    want = jax.device_get(without(params, jax.random.key(7)))
    for name in want:
        np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(want[name]), err_msg=name)
    # the check has teeth: a memory that miscounts plays other moves
    miscount = (lambda s: jnp.zeros_like(s.time), lambda m, s, a, s2: m + 2)
    broken = make_refill_evaluate(env, params_env, act, EPISODES, MAX_STEPS, 2, miscount)
    bad = jax.device_get(broken(params, jax.random.key(7)))
    assert not np.array_equal(np.asarray(bad["actions"]), np.asarray(want["actions"]))


def test_split_refill_plays_make_refill_evaluates_episodes_on_one_shared_step(policy):
    """``RefillGames``: each actor's moves compiled apart, the game's step compiled once and
    shared; played move by move from the host, every per-episode array is the one-program
    refill's, for an actor with memory and one without."""
    from hackmatrix_train.search_evaluate import RefillGames

    env, params_env, net, params = policy
    greedy = _greedy(net)

    def act(params, state, obs, key, steps):  # greedy only while its memory counts right
        logits, _ = net.apply(params, obs)
        worst = jnp.argmin(jnp.where(obs.action_mask, logits, jnp.inf), axis=-1)
        return jnp.where(steps == state.time, greedy(params, state, obs, key), worst)

    memory = (lambda s: jnp.zeros_like(s.time), lambda m, s, a, s2: m + 1)
    games = RefillGames(env, params_env, EPISODES, MAX_STEPS, 2, jax.random.key(7))
    assert not games.has_step(memory)
    with_memory = games.split(act, memory, params)
    assert games.has_step(memory) and with_memory.seconds > 0
    plain = games.split(lambda p, s, o, k, m: greedy(p, s, o, k), memory, params)
    assert plain.step is with_memory.step  # one compiled step for both actors
    want = jax.device_get(
        make_refill_evaluate(env, params_env, greedy, EPISODES, MAX_STEPS, 2)(
            params, jax.random.key(7)
        )
    )
    for split in (with_memory, plain):
        got = jax.device_get(split.play(params, EPISODES, MAX_STEPS, iterations=3))
        assert set(got) == set(want)
        for name in want:
            np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(want[name]), name)
    # the memory actor plays its least likely move whenever its memory miscounts (the teeth:
    # test_actor_memory_follows_each_episode), so equal arrays say the memory was followed
