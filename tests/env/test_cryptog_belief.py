"""The player's cryptog belief (``hidden.track_cryptogs``) and the re-draws it narrows.

Claims, each checked over random masked play from many reset keys (every program, UNDO, POLY,
PUSH and PULL included):

* sound: every invisible cryptog stands on a cell its game's belief allows, at every step;
* informative: the belief rules out a real share of the dark cells;
* honest: the update reads no hidden field (states re-drawn by ``resample_hidden`` give the
  same belief);
* ``resample_hidden`` with a belief keeps the observation, puts the unseen cryptogs inside the
  belief, and with a belief that rules nothing out draws exactly what it draws without one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hackmatrix_env import HackMatrix
from hackmatrix_env.hidden import (
    initial_cryptog_belief,
    invisible_cryptogs,
    off_lines,
    resample_hidden,
    track_cryptogs,
)
from hackmatrix_env.observation import observe

ENV = HackMatrix()
PARAMS = ENV.default_params
GAMES, STEPS, EVERY = 96, 240, 24


def _unseen(game):
    return invisible_cryptogs(game.enemies, game.player.pos, game.show_flag)


@jax.jit
def _play(key):
    """Per step: misses, unseen cryptogs, belief and dark sizes; every EVERY steps the
    transition (belief, state, action, next state)."""
    k_reset, k_play = jax.random.split(key)
    obs, state = jax.vmap(ENV.reset, in_axes=(0, None))(jax.random.split(k_reset, GAMES), PARAMS)
    belief = jax.vmap(initial_cryptog_belief)(state)

    def one(carry, k):
        obs, state, belief = carry
        k_act, k_step = jax.random.split(k)
        action = jax.random.categorical(k_act, jnp.where(obs.action_mask, 0.0, -jnp.inf))
        obs2, state2, *_ = jax.vmap(ENV.step, in_axes=(0, 0, 0, None))(
            jax.random.split(k_step, GAMES), state, action, PARAMS
        )
        belief2 = jax.vmap(track_cryptogs)(belief, state, action, state2)
        unseen = jax.vmap(_unseen)(state2.game)
        pos = state2.game.enemies.pos.astype(jnp.int32)
        allowed = jax.vmap(lambda b, p: b[p[:, 0], p[:, 1]])(belief2, pos)
        any_unseen = unseen.any(axis=1)
        dark = jax.vmap(off_lines)(state2.game.player.pos)
        figures = dict(
            misses=jnp.sum(unseen & ~allowed),
            unseen=jnp.sum(unseen),
            belief=jnp.sum(jnp.where(any_unseen, belief2.sum((1, 2)), 0)),
            dark=jnp.sum(jnp.where(any_unseen, dark.sum((1, 2)), 0)),
        )
        return (obs2, state2, belief2), (figures, (belief, state, action, state2))

    def chunk(carry, k):
        carry, (figures, transitions) = jax.lax.scan(one, carry, jax.random.split(k, EVERY))
        return carry, (figures, jax.tree.map(lambda x: x[-1], transitions))

    _, (figures, transitions) = jax.lax.scan(
        chunk, (obs, state, belief), jax.random.split(k_play, STEPS // EVERY)
    )
    flat = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), transitions)
    return jax.tree.map(jnp.sum, figures), flat


@pytest.fixture(scope="module")
def played():
    figures, transitions = jax.device_get(_play(jax.random.key(31)))
    return figures, transitions


def test_belief_holds_every_unseen_cryptog(played):
    figures, _ = played
    assert figures["unseen"] > 1000  # not vacuous: many steps with unseen cryptogs
    assert figures["misses"] == 0


def test_belief_rules_out_dark_cells(played):
    figures, _ = played
    assert figures["belief"] < 0.8 * figures["dark"]


def test_belief_reads_no_hidden_field(played):
    _, (belief, state, action, next_state) = played
    n = action.shape[0]
    keys = jax.random.split(jax.random.key(5), 2 * n)
    redrawn = jax.vmap(resample_hidden)(keys[:n], state)
    redrawn_next = jax.vmap(resample_hidden)(keys[n:], next_state)
    want = jax.vmap(track_cryptogs)(belief, state, action, next_state)
    got = jax.vmap(track_cryptogs)(belief, redrawn, action, redrawn_next)
    assert np.asarray(want).any()  # some belief is not empty
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    # and the redraws did move unseen cryptogs, so the check has teeth
    moved = np.asarray(redrawn.game.enemies.pos != state.game.enemies.pos).any()
    assert moved


def test_resample_with_belief_keeps_observation_and_draws_inside(played):
    _, (_, _, _, state) = played
    n = state.time.shape[0]
    # the belief of the transitions' next states, tracked from their own previous states
    _, (b0, s0, a0, _) = played
    belief = jax.vmap(track_cryptogs)(b0, s0, a0, state)
    keys = jax.random.split(jax.random.key(9), n)
    drawn = jax.vmap(resample_hidden)(keys, state, belief)
    same = jax.tree.map(
        lambda x, y: np.array_equal(np.asarray(x), np.asarray(y)),
        jax.vmap(observe)(drawn),
        jax.vmap(observe)(state),
    )
    assert all(jax.tree.leaves(same))
    unseen = np.asarray(jax.vmap(_unseen)(drawn.game))
    pos = np.asarray(drawn.game.enemies.pos).astype(int)
    b = np.asarray(belief)
    inside = b[np.arange(n)[:, None], pos[..., 0], pos[..., 1]]
    # every unseen cryptog is drawn inside its belief, unless the belief's free cells were
    # too few for them (then the draw is over every free dark cell)
    narrow_enough = b.reshape(n, -1).sum(1) >= 3 * unseen.sum(1)
    rows = narrow_enough & unseen.any(1)
    assert rows.sum() > 10
    assert inside[rows][unseen[rows]].all()


def test_belief_that_rules_nothing_out_changes_nothing(played):
    _, (_, state, _, _) = played
    n = state.time.shape[0]
    keys = jax.random.split(jax.random.key(11), n)
    everything = jnp.ones((n, 6, 6), bool)
    got = jax.vmap(resample_hidden)(keys, state, everything)
    want = jax.vmap(resample_hidden)(keys, state)
    for x, y in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_empty_belief_falls_back_to_every_dark_cell(played):
    """A belief with fewer cells than unseen cryptogs (here none) is ignored."""
    _, (_, state, _, _) = played
    n = state.time.shape[0]
    keys = jax.random.split(jax.random.key(13), n)
    got = jax.vmap(resample_hidden)(keys, state, jnp.zeros((n, 6, 6), bool))
    want = jax.vmap(resample_hidden)(keys, state)
    for x, y in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_new_episode_and_undo_start_over(played):
    """After UNDO, or into a new episode, every dark cell is possible again (if a cryptog is
    unseen): the belief it had is dropped, here an empty one."""
    _, (_, state, _, next_state) = played
    n = state.time.shape[0]
    unseen = np.asarray(jax.vmap(_unseen)(next_state.game).any(1))
    assert unseen.sum() > 10
    dark = np.asarray(jax.vmap(off_lines)(next_state.game.player.pos)) & unseen[:, None, None]
    empty = jnp.zeros((n, 6, 6), bool)
    undo = jnp.full(n, 14, jnp.int32)
    got = jax.vmap(track_cryptogs)(empty, state, undo, next_state)
    np.testing.assert_array_equal(np.asarray(got), dark)
    fresh = next_state.replace(time=jnp.zeros_like(next_state.time))
    wait = jnp.full(n, 10, jnp.int32)
    got = jax.vmap(track_cryptogs)(empty, state, wait, fresh)
    np.testing.assert_array_equal(np.asarray(got), dark)
    # otherwise an empty belief stays narrow: only cells next to shown cryptogs or hatchings
    got = jax.vmap(track_cryptogs)(empty, state, wait, next_state)
    assert np.asarray(got).sum() < dark.sum()
