"""Hypothesis properties over the whole env (style.md §4): random scenarios, random masked actions.

Everything goes through ``HackMatrix.step`` (jitted once; every instance is
equal, so the compile is shared with test_env.py in one process).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from builders import scenario
from hackmatrix_env import HackMatrix
from hackmatrix_env.observation import observe
from hackmatrix_env.scenario import state_from_json
from hackmatrix_env.types import blank_state
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ENV = HackMatrix()
PARAMS = ENV.default_params
_observe = jax.jit(observe)
KINDS = ["virus", "daemon", "glitch", "cryptog"]
PROGRAMS = list(range(5, 28))


def _signature(tree):
    return jax.tree.map(lambda x: (np.shape(x), jnp.asarray(x).dtype), tree)


DECLARED = _signature(blank_state())


@st.composite
def scenarios(draw):
    """Valid setState dicts: distinct cells for every entity, nothing on (5, 5)."""
    cells = [(r, c) for r in range(6) for c in range(6) if (r, c) != (5, 5)]
    order = draw(st.permutations(cells))
    it = iter(order)
    player = next(it)
    n_en = draw(st.integers(0, 5))
    enemies = [
        (
            draw(st.sampled_from(KINDS)),
            next(it),
            draw(st.integers(1, 3)),
            {"stunned": draw(st.booleans())},
        )
        for _ in range(n_en)
    ]
    transmissions = [
        (draw(st.sampled_from(KINDS)), next(it), draw(st.integers(1, 4)))
        for _ in range(draw(st.integers(0, 3)))
    ]
    blocks = []
    for _ in range(draw(st.integers(0, 8))):
        extra = {"siphoned": draw(st.booleans())}
        if draw(st.booleans()):
            blocks.append(("data", next(it), draw(st.integers(1, 9)), extra))
        else:
            blocks.append(
                (
                    "program",
                    next(it),
                    draw(st.sampled_from(["push", "crash", "warp", "hack"])),
                    extra,
                )
            )
    resources = [
        (draw(st.sampled_from(["credits", "energy"])), next(it), draw(st.integers(1, 3)))
        for _ in range(draw(st.integers(0, 6)))
    ]
    if draw(st.booleans()):
        resources.append(("siphon", next(it)))
    return scenario(
        player,
        hp=draw(st.integers(1, 3)),
        credits=draw(st.integers(0, 30)),
        energy=draw(st.integers(0, 30)),
        siphons=draw(st.integers(0, 3)),
        enemies=enemies,
        transmissions=transmissions,
        blocks=blocks,
        resources=resources,
        owned=draw(st.lists(st.sampled_from(PROGRAMS), max_size=6, unique=True)),
        stage=draw(st.integers(1, 8)),
        turn=draw(st.integers(0, 12)),
        calm=draw(st.booleans()),
    )


def _check_state_invariants(state):
    assert _signature(state) == DECLARED
    s = state.game
    assert 0 <= int(s.player.hp) <= 3
    assert 1 <= int(s.stage) <= 8
    for pool in (s.enemies, s.transmissions):
        alive = np.asarray(pool.alive)
        n = int(alive.sum())
        assert alive[:n].all() and not alive[n:].any()  # compact, list order
        pos = np.asarray(pool.pos)[:n]
        assert ((pos >= 0) & (pos < 6)).all()
    n_e = int(np.asarray(s.enemies.alive).sum())
    assert (np.asarray(s.enemies.hp)[:n_e] >= 1).all()
    for v in (s.player.credits, s.player.energy, s.player.siphons, s.player.score):
        assert 0 <= int(v) < 2**31


def _finite(tree) -> bool:
    return all(
        np.isfinite(np.asarray(x)).all()
        for x in jax.tree.leaves(tree)
        if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating)
    )


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    d=scenarios(),
    picks=st.lists(st.integers(0, 10**6), min_size=4, max_size=4),
    masked=st.integers(0, 9),
)
def test_random_masked_rollouts(d, picks, masked):
    state = state_from_json(d)
    for t, pick in enumerate(picks):
        obs = _observe(state)
        mask = np.asarray(obs.action_mask)
        use_masked = t == masked % 4 and masked >= 5 and not mask.all()
        pool = np.flatnonzero(~mask if use_masked else mask)
        if pool.size == 0:  # no valid action: the step must still terminate
            pool = np.arange(28)
            use_masked = True
        action = int(pool[pick % pool.size])
        out = ENV.step(jax.random.key(pick), state, action, PARAMS)
        nobs, nxt, reward, term, trunc, info = out
        assert _finite(out)
        bd = np.asarray(info["reward_breakdown"])
        acc = np.float32(0)
        for v in bd:
            acc = np.float32(acc + v)
        assert np.float32(reward) == acc  # the reward is the breakdown's sum in table order
        if use_masked:
            assert bool(info["invalid_action"]) and bool(term) and float(reward) == 0.0
            assert not bd.any()
            assert all(
                np.array_equal(a, b) for a, b in zip(info["final_observation"], obs, strict=True)
            )
        else:
            assert not bool(info["invalid_action"])
        _check_state_invariants(nxt)
        assert all(np.array_equal(a, b) for a, b in zip(nobs, _observe(nxt), strict=True))
        if bool(term | trunc):
            assert int(nxt.time) == 0
            break
        state = nxt


def test_same_key_same_trajectory_and_keys_matter():
    state = state_from_json(
        scenario((2, 2), siphons=1, blocks=[("data", (3, 2), 4)], enemies=[("virus", (0, 0))])
    )
    a = ENV.step(jax.random.key(1), state, 4, PARAMS)  # siphon: 4 owed transmissions placed
    b = ENV.step(jax.random.key(1), state, 4, PARAMS)
    c = ENV.step(jax.random.key(2), state, 4, PARAMS)

    def same(x, y):
        return all(
            np.array_equal(u, v)
            for u, v in zip(jax.tree.leaves(x), jax.tree.leaves(y), strict=True)
        )

    assert same(a, b)
    assert not np.array_equal(a[1].game.transmissions.pos, c[1].game.transmissions.pos)


@pytest.mark.slow
def test_vmap_equals_loop():
    """Rows of vmap(step) equal single steps, including auto-reset rows (sparse path)."""
    ds = [
        scenario((0, 0)),
        scenario((2, 2), siphons=1, blocks=[("data", (3, 2), 4)]),
        scenario((5, 4), stage=8),
        scenario((1, 1), enemies=[("daemon", (1, 3))]),
    ]
    states = [state_from_json(d) for d in ds]
    actions = jnp.array([1, 4, 3, 3], jnp.int32)  # invalid, siphon, victory, shot
    keys = jax.random.split(jax.random.key(9), 4)
    batch = jax.tree.map(lambda *x: jnp.stack(x), *states)
    out = jax.jit(jax.vmap(ENV.step, in_axes=(0, 0, 0, None)))(keys, batch, actions, PARAMS)
    for i in range(4):
        single = ENV.step(keys[i], states[i], actions[i], PARAMS)
        row = jax.tree.map(lambda x, i=i: x[i], out)
        for a, b in zip(jax.tree.leaves(row), jax.tree.leaves(single), strict=True):
            np.testing.assert_array_equal(a, b)


def test_jit_equals_no_jit():
    """Reset (generation + placement) and the observation agree jitted and op by op.

    (The eager step is exercised by the game's own tests; run op by op it takes minutes.)
    """
    from hackmatrix_env.transition import reset_state

    key = jax.random.key(4)
    params = ENV.default_params
    jitted = jax.jit(reset_state)(key, params)
    with jax.disable_jit():
        eager = reset_state(key, params)
        eager_obs = observe(eager)
    for a, b in zip(jax.tree.leaves(jitted), jax.tree.leaves(eager), strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(_observe(jitted), eager_obs, strict=True):
        np.testing.assert_array_equal(a, b)
