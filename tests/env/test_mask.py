"""mask.py: the action mask (interface §2) agrees with what the step accepts.

The mask and the step read the UNDO ring the same way the env shell gives it to them:
``history.has_snapshot`` / ``history.undo_top`` of the state's ring.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from builders import make_state
from hackmatrix_env import game, mask, programs
from hackmatrix_env.constants import NUM_ACTIONS
from hackmatrix_env.history import has_snapshot, undo_top
from hypothesis import given, settings
from hypothesis import strategies as st
from programs_testlib import push


@jax.jit
def _mask(state):
    return mask.action_mask(state.game, has_snapshot(state.history))


@jax.jit
def _invalid_per_action(state):
    keys = jax.random.split(jax.random.key(0), NUM_ACTIONS)
    undo = undo_top(state.history)
    _, ev = jax.vmap(lambda k, a: game.step_game(k, state.game, a, undo))(
        keys, jnp.arange(NUM_ACTIONS)
    )
    return ev.invalid


def test_layout():
    s = make_state(
        (0, 0),
        siphons=1,
        energy=1,
        owned=["wait"],
        blocks=[("data", (1, 0), 3)],
        enemies=[("virus", (0, 1))],
    )
    m = np.asarray(_mask(s))
    assert m.shape == (28,) and m.dtype == np.bool_
    np.testing.assert_array_equal(m[:5], [False, False, False, True, True])
    np.testing.assert_array_equal(m[5:], np.asarray(programs.program_mask(s.game, False)))
    assert not np.asarray(_mask(make_state((0, 0))))[4]  # no siphons
    undo = make_state((0, 0), credits=1, owned=["undo"])
    assert not np.asarray(_mask(undo))[14] and np.asarray(_mask(push(undo)))[14]  # the ring


cell = st.tuples(st.integers(0, 5), st.integers(0, 5))


@settings(deadline=None, max_examples=15)
@given(
    cell,
    st.sets(cell, max_size=8),
    st.lists(
        st.tuples(st.sampled_from(["virus", "daemon", "glitch", "cryptog"]), cell), max_size=4
    ),
    st.sets(cell, max_size=3),
    st.integers(0, 2),
    st.integers(0, 6),
    st.lists(st.integers(5, 27), max_size=6),
    st.booleans(),
)
def test_mask_matches_step_validity(player, blocks, ens, trans, siphons, money, owned, history):
    blocks = {b for b in blocks if b not in (player, (5, 5))}
    trans = {t for t in trans if t not in blocks and t != player}  # not on blocks (§2.2 edge)
    s = make_state(
        player,
        siphons=siphons,
        credits=money,
        energy=money,
        blocks=[("data", b, 2) for b in blocks],
        enemies=[(k, c) for k, c in ens if c != player],
        transmissions=[("virus", t) for t in trans],
        owned=sorted(set(owned)),
    )
    if history:  # a snapshot on the ring: UNDO (action 14) may be valid
        s = push(s)
    np.testing.assert_array_equal(np.asarray(_mask(s)), ~np.asarray(_invalid_per_action(s)))
