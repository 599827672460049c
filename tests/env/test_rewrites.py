"""The env's speed rewrites equal the code they replaced, bit for bit, on random states.

The replaced functions are frozen as test oracles in ``frozen_enemies.py`` and
``frozen_pathfinding.py`` (commit 2df481f) and ``frozen_game.py`` (commit b2cefe1). Each hypothesis example draws a
seed and compares a whole batch of random well-formed states (compact pools,
zeroed dead slots, stacked enemies, enemies on blocks and on the player's
cell, DELAY-style countdowns, full pools for overflow), so a few examples
cover thousands of states. Both sides are jitted once at module scope.
"""

from __future__ import annotations

import frozen_enemies as ref_enemies
import frozen_game as ref_game
import frozen_pathfinding as ref_pf
import jax
import jax.numpy as jnp
import numpy as np
from hackmatrix_env import enemies, game, pathfinding
from hackmatrix_env.constants import (
    ENEMY_MAX_HP,
    GRID_SIZE,
    MAX_ENEMIES,
    MAX_TRANSMISSIONS,
    NUM_PROGRAMS,
    Content,
)
from hackmatrix_env.rng import rng_seed
from hackmatrix_env.types import blank_state
from hypothesis import given, settings
from hypothesis import strategies as st

BATCH = 256


def random_state(key, max_enemies, max_trans):
    """A random well-formed state; pool sizes uniform in 0..max (inclusive)."""
    ks = jax.random.split(key, 20)
    s = blank_state()
    n_e = jax.random.randint(ks[0], (), 0, max_enemies + 1)
    n_t = jax.random.randint(ks[1], (), 0, max_trans + 1)
    alive_e = jnp.arange(MAX_ENEMIES) < n_e
    alive_t = jnp.arange(MAX_TRANSMISSIONS) < n_t
    kind = jax.random.randint(ks[2], (MAX_ENEMIES,), 0, 4)
    hp = jax.random.randint(ks[3], (MAX_ENEMIES,), 1, 4)
    hp = jnp.minimum(hp, jnp.asarray(ENEMY_MAX_HP)[kind])
    # Few distinct cells (a 3x3 corner half the time): stacks and crowds are common.
    span = jnp.where(jax.random.bernoulli(ks[4]), 3, GRID_SIZE)
    epos = jax.random.randint(ks[5], (MAX_ENEMIES, 2), 0, 6) % span
    tpos = jax.random.randint(ks[6], (MAX_TRANSMISSIONS, 2), 0, 6) % span
    last = jax.random.randint(ks[7], (MAX_ENEMIES, 2), 0, GRID_SIZE)

    def z(x, m):
        return jnp.where(m.reshape(m.shape + (1,) * (x.ndim - 1)), x, 0)

    e = s.enemies.replace(
        kind=z(kind, alive_e).astype(jnp.int8),
        pos=z(epos, alive_e).astype(jnp.int8),
        hp=z(hp, alive_e).astype(jnp.int8),
        disabled=z(jax.random.randint(ks[8], (MAX_ENEMIES,), 0, 3) % 2, alive_e).astype(jnp.int8),
        stunned=jax.random.bernoulli(ks[9], 0.2, (MAX_ENEMIES,)) & alive_e,
        last_known=z(last, alive_e).astype(jnp.int8),
        from_task=jax.random.bernoulli(ks[10], 0.3, (MAX_ENEMIES,)) & alive_e,
        from_siphon=jax.random.bernoulli(ks[11], 0.3, (MAX_ENEMIES,)) & alive_e,
        alive=alive_e,
    )
    countdown = jnp.where(jax.random.bernoulli(ks[12], 0.7, (MAX_TRANSMISSIONS,)), 1, 4)
    t = s.transmissions.replace(
        pos=z(tpos, alive_t).astype(jnp.int8),
        countdown=z(countdown, alive_t).astype(jnp.int8),
        kind=z(jax.random.randint(ks[13], (MAX_TRANSMISSIONS,), 0, 4), alive_t).astype(jnp.int8),
        from_task=jax.random.bernoulli(ks[14], 0.3, (MAX_TRANSMISSIONS,)) & alive_t,
        from_siphon=jax.random.bernoulli(ks[15], 0.3, (MAX_TRANSMISSIONS,)) & alive_t,
        alive=alive_t,
    )
    blocks = jax.random.bernoulli(ks[16], 0.25, (GRID_SIZE, GRID_SIZE))
    g = s.grid.replace(content=jnp.where(blocks, Content.BLOCK, Content.EMPTY).astype(jnp.int8))
    ppos = jax.random.randint(ks[17], (2,), 0, GRID_SIZE).astype(jnp.int8)
    flags = jax.random.bernoulli(ks[18], 0.2, (3,))
    turn = jax.random.randint(ks[19], (), 0, 30)
    return s.replace(
        player=s.player.replace(pos=ppos),
        enemies=e,
        transmissions=t,
        grid=g,
        turn=turn,
        next_task_turn=jnp.int32(13),
        task_interval=jnp.int32(12),
        pending_siphon_spawns=jnp.where(flags[0], 2, 0).astype(jnp.int32),
        calm_flag=flags[1],
        step_flag=flags[2],
    )


def _states(seed, max_enemies, max_trans):
    keys = jax.random.split(jax.random.key(seed), BATCH)
    return _random_states(keys, max_enemies, max_trans)


_random_states = jax.jit(jax.vmap(random_state, in_axes=(0, None, None)), static_argnums=(1, 2))


def _assert_trees_equal(a, b):
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb, strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


_hatch_new = jax.jit(jax.vmap(enemies.hatch_transmissions))
_hatch_ref = jax.jit(jax.vmap(ref_enemies.hatch_transmissions))


@settings(deadline=None, max_examples=12)
@given(seed=st.integers(0, 2**30), full=st.booleans())
def test_hatch_equals_frozen_code(seed, full):
    """Packed-word compaction = cumsum/gather version (incl. overflow of a full enemy pool)."""
    states = _states(seed, MAX_ENEMIES if full else 12, MAX_TRANSMISSIONS if full else 10)
    _assert_trees_equal(_hatch_new(states), _hatch_ref(states))


def _next_cell(mod, pos, player, glitch, blocks, occ):
    passable = mod.bits_from_map(glitch | ~blocks)
    occupied = mod.bits_from_map(occ)
    t2 = mod.lookup_direction(mod.tier2_direction_bits(passable, player), pos)
    return mod.enemy_next_cell(pos, player, passable, occupied, t2)


_next_new = jax.jit(jax.vmap(lambda *a: _next_cell(pathfinding, *a)))
_next_ref = jax.jit(jax.vmap(lambda *a: _next_cell(ref_pf, *a)))


@settings(deadline=None, max_examples=12)
@given(seed=st.integers(0, 2**30), p_block=st.sampled_from([0.0, 0.2, 0.4]))
def test_enemy_next_cell_equals_frozen_code(seed, p_block):
    """Early-exit tier-1 search (and its skip when Occ is only e's cell) = 34-layer scan."""
    k = jax.random.split(jax.random.key(seed), 6)
    n = 1024
    pos = jax.random.randint(k[0], (n, 2), 0, GRID_SIZE)
    player = jax.random.randint(k[1], (n, 2), 0, GRID_SIZE)
    glitch = jax.random.bernoulli(k[2], 0.3, (n,))
    blocks = jax.random.bernoulli(k[3], p_block, (n, GRID_SIZE, GRID_SIZE))
    p_occ = jax.random.choice(k[4], jnp.array([0.0, 0.05, 0.2, 0.5]), (n, 1, 1))
    occ = jax.random.bernoulli(k[5], p_occ, (n, GRID_SIZE, GRID_SIZE))
    own = (
        jax.nn.one_hot(pos[:, 0], 6, dtype=bool)[:, :, None]
        & jax.nn.one_hot(pos[:, 1], 6, dtype=bool)[:, None, :]
    )
    for occupied in (occ | own, occ):  # the game always includes e's own cell; be general
        new = _next_new(pos, player, glitch, blocks, occupied)
        ref = _next_ref(pos, player, glitch, blocks, occupied)
        np.testing.assert_array_equal(np.asarray(new), np.asarray(ref))


def _phase(mod):
    def run(key, state):
        out, ran = mod.run_enemy_phase(key, state)
        return out, ran

    return jax.jit(jax.vmap(run))


_phase_new = _phase(enemies)
_phase_ref = _phase(ref_enemies)


@settings(deadline=None, max_examples=10)
@given(seed=st.integers(0, 2**30), crowded=st.booleans())
def test_enemy_phase_equals_frozen_code(seed, crowded):
    """The whole enemy phase (order, moves, attacks, hatching, spawns) = the replaced code."""
    states = _states(seed, MAX_ENEMIES if crowded else 8, 12 if crowded else 4)
    keys = jax.random.split(jax.random.key(seed + 1), BATCH)
    _assert_trees_equal(_phase_new(keys, states), _phase_ref(keys, states))


def _searches(mod, blocks, start, goal, glitch):
    passable = mod.bits_from_map(glitch | ~blocks)
    return mod.bfs_distance(blocks, start, goal), mod.tier2_direction_bits(passable, goal)


_searches_new = jax.jit(jax.vmap(lambda *a: _searches(pathfinding, *a)))
_searches_ref = jax.jit(jax.vmap(lambda *a: _searches(ref_pf, *a)))


@settings(deadline=None, max_examples=12)
@given(seed=st.integers(0, 2**30), p_block=st.sampled_from([0.1, 0.3, 0.45, 0.6]))
def test_distance_and_tier2_maps_equal_frozen_code(seed, p_block):
    """Early-exit shaping BFS and tier-2 direction maps = the fixed 35-layer scans."""
    k = jax.random.split(jax.random.key(seed), 4)
    n = 1024
    blocks = jax.random.bernoulli(k[0], p_block, (n, GRID_SIZE, GRID_SIZE))
    start = jax.random.randint(k[1], (n, 2), 0, GRID_SIZE)
    goal = jax.random.randint(k[2], (n, 2), 0, GRID_SIZE)
    glitch = jax.random.bernoulli(k[3], 0.3, (n,))
    _assert_trees_equal(
        _searches_new(blocks, start, goal, glitch), _searches_ref(blocks, start, goal, glitch)
    )


_spawns_new = jax.jit(
    jax.vmap(lambda ka, kb, s: enemies.place_scheduled_and_owed(rng_seed(ka), rng_seed(kb), s))
)
_spawns_ref = jax.jit(
    jax.vmap(lambda ka, kb, s: enemies.place_owed_spawns(kb, enemies.run_scheduled_task(ka, s)))
)


@settings(deadline=None, max_examples=10)
@given(seed=st.integers(0, 2**30), n_trans=st.sampled_from([4, 20, MAX_TRANSMISSIONS]))
def test_scheduled_and_owed_equal_two_placements(seed, n_trans):
    """One placement loop for §7.8 + §7.9 = the scheduled task, then the owed spawns."""
    states = _states(seed, 12, n_trans)
    k = jax.random.split(jax.random.key(seed + 2), 3)
    # Owed counts 0..40 (more than the 32-long scan: the overflow rule), task due or not.
    owed = jax.random.randint(k[0], (BATCH,), 0, 41) * jax.random.bernoulli(k[1], 0.5, (BATCH,))
    states = states.replace(pending_siphon_spawns=owed.astype(jnp.int32))
    ka, kb = (jax.random.split(x, BATCH) for x in jax.random.split(k[2]))
    _assert_trees_equal(_spawns_new(ka, kb, states), _spawns_ref(ka, kb, states))


def _with_programs(key, state):
    """``state`` with random owned programs, resources, siphons and block contents."""
    ks = jax.random.split(key, 8)
    n_owned = jax.random.randint(ks[0], (), 0, 12)
    owned = jax.random.randint(ks[1], state.owned_list.shape, 0, NUM_PROGRAMS)
    owned = jnp.where(jnp.arange(state.owned_list.shape[0]) < n_owned, owned, -1)
    g = state.grid
    is_block = g.content == Content.BLOCK
    grid = g.replace(
        block_kind=jnp.where(is_block, jax.random.randint(ks[2], (6, 6), 0, 2), 0).astype(jnp.int8),
        block_points=jnp.where(is_block, jax.random.randint(ks[3], (6, 6), 1, 10), 0).astype(
            jnp.int8
        ),
        block_program=jnp.where(
            is_block, jax.random.randint(ks[4], (6, 6), 0, NUM_PROGRAMS), 0
        ).astype(jnp.int8),
        block_spawn=jnp.where(is_block, jax.random.randint(ks[5], (6, 6), 0, 4), 0).astype(
            jnp.int8
        ),
        resource_kind=jnp.where(~is_block, jax.random.randint(ks[6], (6, 6), 0, 3), 0).astype(
            jnp.int8
        ),
    )
    grid = grid.replace(resource_amount=jnp.where(grid.resource_kind > 0, 2, 0).astype(jnp.int8))
    money = jax.random.randint(ks[7], (3,), 0, 14)
    return state.replace(
        owned_list=owned.astype(jnp.int8),
        num_owned=n_owned.astype(jnp.int8),
        grid=grid,
        player=state.player.replace(credits=money[0], energy=money[1], siphons=money[2] % 3),
    )


_step_new = jax.jit(jax.vmap(game.step_game))
_step_ref = jax.jit(jax.vmap(ref_game.step_game))


@settings(deadline=None, max_examples=8)
@given(seed=st.integers(0, 2**30), crowded=st.booleans())
def test_step_game_equals_frozen_code(seed, crowded):
    """One sparse job for siphon and programs = two (any action 0..27, owned programs)."""
    states = _states(seed, MAX_ENEMIES if crowded else 6, 12 if crowded else 4)
    k = jax.random.split(jax.random.key(seed + 3), 3)
    states = jax.vmap(_with_programs)(jax.random.split(k[0], BATCH), states)
    actions = jax.random.randint(k[1], (BATCH,), 0, 28)
    keys = jax.random.split(k[2], BATCH)
    _assert_trees_equal(_step_new(keys, states, actions), _step_ref(keys, states, actions))
