"""``devices``: one JAX device per CPU core and ``sharded_vmap`` (the same games as ``vmap``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_env.devices import sharded_vmap, use_cpu_cores


def test_one_device_is_plain_vmap():
    fn = lambda x, y: jnp.where(x > 0, x * y, -x)  # noqa: E731
    x = jnp.arange(-3.0, 5.0)
    got = sharded_vmap(fn, (0, None), devices=jax.local_devices()[:1])(x, 2.0)
    np.testing.assert_array_equal(got, jax.vmap(fn, (0, None))(x, 2.0))


@pytest.mark.parametrize(
    ("in_axes", "args", "match"),
    [
        (1, (jnp.ones((4, 2)),), "in_axes must be 0 or None"),
        ((0,), (jnp.ones(4), jnp.ones(4)), "in_axes must be 0 or None"),
        (0, (jnp.ones(4), jnp.ones(6)), "disagree on the batch size"),
        (0, ({"a": jnp.ones(4), "b": jnp.float32(1)},), "scalar leaf"),
        (0, (jnp.ones(5),), "does not split evenly over 2 devices"),
    ],
)
def test_bad_batches_are_named(in_axes, args, match):
    two = [jax.local_devices()[0]] * 2  # only counted: the check comes before the mesh
    with pytest.raises(ValueError, match=match):
        sharded_vmap(lambda *a: a, in_axes, devices=two)(*args)


def test_cpu_cores_after_start_only_when_the_count_matches():
    have = len(jax.devices("cpu"))
    assert use_cpu_cores(have) == have
    with pytest.raises(RuntimeError, match="before JAX executes anything"):
        use_cpu_cores(have + 1)
    with pytest.raises(ValueError, match=">= 1"):
        use_cpu_cores(0)


# Two CPU devices need a fresh process: the count is fixed once JAX has started.
SCRIPT = textwrap.dedent(
    """
    import json
    from hackmatrix_env.devices import batch_sharding, sharded_vmap, use_cpu_cores
    use_cpu_cores(2)  # before anything starts JAX: the package import must not
    import jax, jax.numpy as jnp, numpy as np
    from hackmatrix_env import HackMatrix
    from hackmatrix_bench.bench import uniform_masked_actions

    env, n = HackMatrix(), 6
    params = env.default_params.replace(max_steps_in_episode=5)  # auto-resets in the run
    plain = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    sharded = jax.jit(sharded_vmap(env.step, in_axes=(0, 0, 0, None)))
    reset_keys = jax.random.split(jax.random.key(11), n)
    obs, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(reset_keys, params)
    obs2, state2 = jax.jit(sharded_vmap(env.reset, in_axes=(0, None)))(reset_keys, params)

    def host(tree):
        return [np.asarray(jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key)
                           else x) for x in jax.tree.leaves(tree)]

    def equal(a, b):
        return all(np.array_equal(x, y) for x, y in zip(host(a), host(b), strict=True))

    policy = jax.jit(uniform_masked_actions)
    same = [equal((obs, state), (obs2, state2))]
    dones = 0
    for t in range(12):
        k_act, k_env = jax.random.split(jax.random.key(100 + t))
        actions = policy(k_act, obs.action_mask)
        keys = jax.random.split(k_env, n)
        a = plain(keys, state, actions, params)
        b = sharded(keys, state2, actions, params)
        same.append(equal(a, b))
        dones += int(np.sum(np.asarray(a[3]) | np.asarray(a[4])))
        obs, state = a[0], a[1]
        obs2, state2 = b[0], b[1]
    shards = sorted(s.data.shape[0] for s in state2.time.addressable_shards)
    placed = jax.device_put(state, batch_sharding())  # inputs placed as the step wants them
    same.append(equal(sharded(keys, placed, actions, params), plain(keys, state, actions, params)))
    shards.append(sorted(s.data.shape[0] for s in placed.time.addressable_shards))
    print(json.dumps({"devices": jax.device_count(), "same": same, "dones": dones,
                      "shards": shards}))
    """
)


def test_sharded_step_plays_the_same_games_on_two_cpu_devices():
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["devices"] == 2
    assert got["shards"] == [3, 3, [3, 3]]
    assert got["dones"] > 0  # the run crosses auto-resets
    assert all(got["same"]), got["same"]


def test_usable_cores_is_within_the_machine():
    from hackmatrix_env.devices import usable_cores

    assert 1 <= usable_cores() <= (os.cpu_count() or 1)
