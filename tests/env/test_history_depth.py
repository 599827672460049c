"""The UNDO ring's depth as a static knob (``EnvParams.history_depth``, specs/programs.md §5).

Differential: a ring of depth H against the reference's unbounded stack (a Python list)
under random push/pop sequences. The ring must return the same snapshot at every pop
until it is emptied while the reference still holds snapshots; exactly then
``overflow`` is set, and never otherwise.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_env import HackMatrix
from hackmatrix_env.history import has_snapshot
from hackmatrix_env.jumanji import HackMatrixJumanji
from hackmatrix_env.scenario import full_state_json, state_from_full_json, state_from_json
from hackmatrix_env.types import EnvParams
from hypothesis import given, settings
from hypothesis import strategies as st
from programs_testlib import pop, push, replace_game

_PLAYER = {"player": {"row": 0, "col": 0}}


def _buffer_depths(state) -> set[int]:
    return {x.shape[0] for x in jax.tree.leaves(state.history.snapshots)}


@settings(max_examples=25, deadline=None)
@given(
    depth=st.sampled_from([1, 2, 3, 5]),
    ops=st.lists(st.booleans(), min_size=1, max_size=24),  # True = push, False = pop
)
def test_ring_matches_unbounded_stack_until_flagged(depth, ops):
    s = state_from_json(_PLAYER, history_depth=depth)
    reference: list[int] = []
    turn = 0
    flagged = False
    for is_push in ops:
        if is_push:
            turn += 1
            s = push(replace_game(s, turn=jnp.int32(turn)))
            reference.append(turn)
        elif reference:
            ring_has = bool(has_snapshot(s.history))
            if not ring_has:
                # The reference still offers UNDO, we do not: the state must say so.
                assert bool(s.game.overflow)
                flagged = True
                reference.pop()
                continue
            s, snap = pop(s)
            assert int(snap.turn) == reference.pop()
        assert int(s.history.size) <= depth
        now_diverged = reference and not bool(has_snapshot(s.history))
        assert bool(s.game.overflow) == (flagged or bool(now_diverged))
        flagged = flagged or bool(now_diverged)
    assert int(s.history.size) + int(s.history.lost) >= len(reference)


_RESET = jax.jit(HackMatrix().reset)


def test_env_params_set_the_buffer_shape():
    # Stepping at other depths runs in tests/train/test_history_overflow.py (depths 1 and 40).
    _, s = _RESET(jax.random.key(0), EnvParams(history_depth=3))
    assert _buffer_depths(s) == {3} and s.history.depth == 3
    assert _buffer_depths(_RESET(jax.random.key(0), EnvParams())[1]) == {16}


def test_same_key_same_game_whatever_the_depth():
    _, a = _RESET(jax.random.key(7), EnvParams(history_depth=3))
    _, b = _RESET(jax.random.key(7), EnvParams())
    strip = lambda s: s.replace(history=s.history.replace(snapshots=None, depth=0))  # noqa: E731
    for x, y in zip(jax.tree.leaves(strip(a)), jax.tree.leaves(strip(b)), strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("bad", [0, -3, 2.5, "16", True, None])
def test_bad_depth_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="history_depth"):
        HackMatrix().reset(jax.random.key(0), EnvParams(history_depth=bad))
    with pytest.raises(ValueError, match="history_depth"):
        state_from_json(_PLAYER, history_depth=bad)
    with pytest.raises(ValueError, match="history_depth"):
        HackMatrixJumanji(history_depth=bad)


def test_state_and_params_of_different_depths_are_refused():
    env = HackMatrix()
    _, s = env.reset(jax.random.key(0), EnvParams(history_depth=4))
    with pytest.raises(ValueError, match=r"depth 4 but params\.history_depth is 16"):
        env.step(jax.random.key(1), s, 0, env.default_params)


def test_full_state_round_trip_keeps_or_drops_the_oldest():
    s = state_from_json(_PLAYER, history_depth=6)
    for t in range(1, 6):
        s = push(replace_game(s, turn=jnp.int32(t)))
    d = full_state_json(s)
    d.pop("jax")  # as Swift would send it: the plain stack, oldest first
    assert [h["turn"] for h in d["history"]] == [1, 2, 3, 4, 5]
    small = state_from_full_json(d, history_depth=3)
    assert int(small.history.size) == 3 and int(small.history.lost) == 2
    turns = []
    while bool(has_snapshot(small.history)):
        small, snap = pop(small)
        turns.append(int(snap.turn))
    assert turns == [5, 4, 3] and bool(small.game.overflow)
    big = state_from_full_json(d, history_depth=8)
    assert _buffer_depths(big) == {8} and int(big.history.size) == 5 and int(big.history.lost) == 0
    assert [h["turn"] for h in full_state_json(big)["history"]] == [1, 2, 3, 4, 5]


def test_jumanji_adapter_takes_the_depth():
    env = HackMatrixJumanji(history_depth=5)
    state, _ = jax.jit(env.reset)(jax.random.key(0))
    assert _buffer_depths(state.env_state) == {5}
    assert "history_depth=5" in repr(env)


@pytest.mark.parametrize("depth", [2, 16])
def test_full_state_history_round_trip_with_shrinking_pools(depth):
    """Each snapshot read from JSON starts blank: a newer snapshot with fewer enemies or
    transmissions than an older one must not inherit the older one's entries."""
    crowded = state_from_json(
        {
            **_PLAYER,
            "enemies": [{"type": "virus", "row": 3, "col": 3, "hp": 2}],
            "transmissions": [{"row": 1, "col": 5, "turnsRemaining": 2, "enemyType": "daemon"}],
        },
        history_depth=depth,
    )
    s = push(replace_game(crowded, turn=jnp.int32(1)))
    empty = state_from_json(_PLAYER, history_depth=depth).game
    s = push(
        replace_game(s, turn=jnp.int32(2), enemies=empty.enemies, transmissions=empty.transmissions)
    )
    d = full_state_json(s)
    assert [len(h["enemies"]) for h in d["history"]] == [1, 0]
    back = state_from_full_json(d, history_depth=depth)
    assert full_state_json(back) == d
    _, newest = pop(back)
    assert not bool(newest.enemies.alive.any()) and not bool(newest.transmissions.alive.any())
