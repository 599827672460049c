"""Helpers shared by tests/env/test_programs_*.py and test_history.py (jitted once here)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from hackmatrix_env.constants import ENEMY_NAMES, FIRST_PROGRAM, PROGRAM_NAMES
from hackmatrix_env.programs import program_mask, run_program

_run = jax.jit(run_program)
_mask = jax.jit(program_mask)
# WARP/POLY over many keys for one state: vmap over the key only.
run_many_keys = jax.jit(jax.vmap(run_program, in_axes=(0, None, None)))


def prog(name: str) -> int:
    """Program index (0..22) of a wire name."""
    return PROGRAM_NAMES.index(name)


def run(state, name: str, seed: int = 0):
    """Run program ``name``; returns (state, kills int, exit_reached bool)."""
    out, kills, exit_reached = _run(jax.random.key(seed), state, jnp.int32(prog(name)))
    return out, int(kills), bool(exit_reached)


def mask(state) -> dict[str, bool]:
    m = np.asarray(_mask(state))
    return {name: bool(m[i]) for i, name in enumerate(PROGRAM_NAMES)}


def valid(state, name: str) -> bool:
    return mask(state)[name]


def enemies(state) -> list[tuple]:
    """Alive enemies in list order as (kind name, (row, col), hp)."""
    e = jax.device_get(state.enemies)
    return [
        (ENEMY_NAMES[int(e.kind[i])], (int(e.pos[i, 0]), int(e.pos[i, 1])), int(e.hp[i]))
        for i in range(len(e.alive))
        if e.alive[i]
    ]


def enemy_field(state, field: str) -> list:
    e = jax.device_get(state.enemies)
    vals = getattr(e, field)
    return [np.asarray(vals[i]).tolist() for i in range(len(e.alive)) if e.alive[i]]


def transmissions(state) -> list[tuple]:
    """Alive transmissions in list order as (kind name, (row, col), countdown)."""
    t = jax.device_get(state.transmissions)
    return [
        (ENEMY_NAMES[int(t.kind[i])], (int(t.pos[i, 0]), int(t.pos[i, 1])), int(t.countdown[i]))
        for i in range(len(t.alive))
        if t.alive[i]
    ]


def player(state) -> dict:
    p = jax.device_get(state.player)
    return dict(
        pos=(int(p.pos[0]), int(p.pos[1])),
        hp=int(p.hp),
        credits=int(p.credits),
        energy=int(p.energy),
        siphons=int(p.siphons),
        score=int(p.score),
        attack=int(p.attack),
    )


def assert_pools_canonical(state) -> None:
    """Alive entries first (compact), freed slots all zero (board.py convention)."""
    for pool in (state.enemies, state.transmissions):
        pool = jax.device_get(pool)
        alive = np.asarray(pool.alive)
        n = int(alive.sum())
        assert alive[:n].all() and not alive[n:].any()
        for leaf in jax.tree.leaves(pool):
            assert not np.asarray(leaf)[n:].any()


def trees_equal(a, b) -> bool:
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb) and all(
        x.dtype == y.dtype and np.array_equal(np.asarray(x), np.asarray(y))
        for x, y in zip(la, lb, strict=True)
    )


ACTION = {name: FIRST_PROGRAM + i for i, name in enumerate(PROGRAM_NAMES)}
