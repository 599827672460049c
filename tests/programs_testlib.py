"""Helpers shared by tests/env/test_programs_*.py and the history tests (jitted once here).

The scenario states are ``EnvState`` (``builders.make_state``). ``run`` runs a program the
way the env shell does: ``programs.run_program`` on the game, with the ring's newest
snapshot for UNDO, then the ring's update for the step (``history.record_step``: UNDO pops).
``push``/``pop`` are the ring updates of a step that ends in a real enemy phase / of an
UNDO. The readers (``player``, ``enemies``, ...) take an ``EnvState`` or a ``GameState``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from hackmatrix_env.constants import ENEMY_NAMES, FIRST_PROGRAM, PROGRAM_NAMES, Program
from hackmatrix_env.history import has_snapshot, peek_snapshot, record_step
from hackmatrix_env.programs import program_mask, run_program
from hackmatrix_env.types import EnvState, GameState


def game_of(state: EnvState | GameState) -> GameState:
    """The game of an env state; a game is its own."""
    return state.game if isinstance(state, EnvState) else state


def replace_game(state: EnvState, **changes) -> EnvState:
    """``state`` with its game's fields replaced (``GameState.replace``)."""
    return state.replace(game=state.game.replace(**changes))


def _run_in_shell(key, state: EnvState, prog_idx):
    """Program ``prog_idx`` on ``state.game`` and the ring update the shell makes after it."""
    game, kills, exit_reached = run_program(key, state.game, prog_idx, peek_snapshot(state.history))
    undone = jnp.asarray(prog_idx, jnp.int32) == Program.UNDO
    history, diverged = record_step(state.history, game, undone, jnp.bool_(False))
    game = game.replace(overflow=game.overflow | diverged)
    return state.replace(game=game, history=history), kills, exit_reached


def _run_game(key, state: EnvState, prog_idx):
    """Program ``prog_idx`` on ``state.game`` alone: (game, kills, exit_reached)."""
    return run_program(key, state.game, prog_idx, peek_snapshot(state.history))


def _push(state: EnvState) -> EnvState:
    """``state`` with its game pushed onto the ring (the end of a real enemy phase)."""
    history, _ = record_step(state.history, state.game, jnp.bool_(False), jnp.bool_(True))
    return state.replace(history=history)


def _pop(state: EnvState):
    """(``state`` with the ring popped as after an UNDO, the popped snapshot)."""
    snap = peek_snapshot(state.history)
    history, diverged = record_step(state.history, state.game, jnp.bool_(True), jnp.bool_(False))
    game = state.game.replace(overflow=state.game.overflow | diverged)
    return state.replace(game=game, history=history), snap


run_env = jax.jit(_run_in_shell)
_mask = jax.jit(lambda s: program_mask(s.game, has_snapshot(s.history)))
# WARP/POLY over many keys for one state: vmap over the key only; the games come back.
run_many_keys = jax.jit(jax.vmap(_run_game, in_axes=(0, None, None)))
push = jax.jit(_push)
pop = jax.jit(_pop)


def prog(name: str) -> int:
    """Program index (0..22) of a wire name."""
    return PROGRAM_NAMES.index(name)


def run(state: EnvState, name: str, seed: int = 0):
    """Run program ``name``; returns (env state, kills int, exit_reached bool)."""
    out, kills, exit_reached = run_env(jax.random.key(seed), state, jnp.int32(prog(name)))
    return out, int(kills), bool(exit_reached)


def mask(state: EnvState) -> dict[str, bool]:
    m = np.asarray(_mask(state))
    return {name: bool(m[i]) for i, name in enumerate(PROGRAM_NAMES)}


def valid(state: EnvState, name: str) -> bool:
    return mask(state)[name]


def enemies(state) -> list[tuple]:
    """Alive enemies in list order as (kind name, (row, col), hp)."""
    e = jax.device_get(game_of(state).enemies)
    return [
        (ENEMY_NAMES[int(e.kind[i])], (int(e.pos[i, 0]), int(e.pos[i, 1])), int(e.hp[i]))
        for i in range(len(e.alive))
        if e.alive[i]
    ]


def enemy_field(state, field: str) -> list:
    e = jax.device_get(game_of(state).enemies)
    vals = getattr(e, field)
    return [np.asarray(vals[i]).tolist() for i in range(len(e.alive)) if e.alive[i]]


def transmissions(state) -> list[tuple]:
    """Alive transmissions in list order as (kind name, (row, col), countdown)."""
    t = jax.device_get(game_of(state).transmissions)
    return [
        (ENEMY_NAMES[int(t.kind[i])], (int(t.pos[i, 0]), int(t.pos[i, 1])), int(t.countdown[i]))
        for i in range(len(t.alive))
        if t.alive[i]
    ]


def player(state) -> dict:
    p = jax.device_get(game_of(state).player)
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
    game = game_of(state)
    for pool in (game.enemies, game.transmissions):
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
