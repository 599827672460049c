"""PUSH / PULL (programs.md §4.1-4.2): spec examples + a differential test vs the literal rule."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
from builders import make_state
from hackmatrix_env.constants import MAX_ENEMIES
from hackmatrix_env.history import peek_snapshot
from hackmatrix_env.programs import run_program
from hypothesis import given, settings
from hypothesis import strategies as st
from programs_testlib import assert_pools_canonical, enemies, enemy_field, player, prog, run


def _positions(state):
    return [pos for _, pos, _ in enemies(state)]


def _state(p, ens):
    return make_state(p, energy=2, owned=["push", "pull"], enemies=[("virus", e) for e in ens])


def test_push_stacking_example():
    s = _state((2, 2), [(2, 4), (2, 5), (4, 4), (5, 5)])
    out, kills, exit_reached = run(s, "push")
    assert _positions(out) == [(2, 5), (2, 5), (5, 5), (5, 5)]
    assert kills == 0 and not exit_reached
    assert player(out)["energy"] == 0 and player(out)["credits"] == 0
    assert_pools_canonical(out)


def test_push_collision_first_in_list_wins():
    out, _, _ = run(_state((0, 0), [(4, 5), (5, 4)]), "push")
    assert _positions(out) == [(5, 5), (5, 4)]
    out, _, _ = run(_state((0, 0), [(5, 4), (4, 5)]), "push")
    assert _positions(out) == [(5, 5), (4, 5)]


def test_push_splits_a_stack_and_ignores_blocks():
    s = make_state(
        (0, 0),
        energy=2,
        owned=["push"],
        enemies=[("virus", (2, 2)), ("daemon", (2, 2))],
        blocks=[("data", (3, 3))],
    )
    out, _, _ = run(s, "push")
    assert enemies(out) == [("virus", (3, 3), 2), ("daemon", (2, 2), 3)]


def test_push_keeps_last_known_and_order():
    s = make_state(
        (0, 0), energy=2, owned=["push"], enemies=[("cryptog", (1, 3)), ("virus", (0, 4))]
    )
    out, _, _ = run(s, "push")
    assert enemies(out) == [("cryptog", (2, 4), 2), ("virus", (0, 5), 2)]
    assert enemy_field(out, "last_known")[0] == [1, 3]


def test_pull_stacking_example():
    out, kills, _ = run(_state((0, 0), [(1, 0), (2, 0), (1, 1), (3, 3)]), "pull")
    assert _positions(out) == [(1, 0), (1, 0), (0, 1), (2, 2)]
    assert kills == 0


def test_pull_collision_example():
    out, _, _ = run(_state((0, 0), [(0, 2), (1, 2)]), "pull")
    assert _positions(out) == [(0, 1), (1, 2)]


# --- differential: the literal two-pass rule of the spec, in plain Python -----------------------


def _sgn(x):
    return (x > 0) - (x < 0)


def literal_target(pp, e, pull):
    """Pass 1 exactly as written in programs.md §4.1 (PUSH) / §4.2 (PULL)."""
    (pr, pc), (r, c) = pp, e
    dr, dc = (_sgn(pr - r), _sgn(pc - c)) if pull else (_sgn(r - pr), _sgn(c - pc))
    cands = [(r + dr, c + dc)]
    if dr != 0:
        cands.append((r + dr, c))
    if dc != 0:
        cands.append((r, c + dc))
    cands = [x for x in cands if 0 <= x[0] <= 5 and 0 <= x[1] <= 5]
    if pull:
        cands = [x for x in cands if x != (pr, pc)]
    if not cands:
        return None
    dist = [abs(x[0] - pr) + abs(x[1] - pc) for x in cands]
    best = min(dist) if pull else max(dist)
    return cands[dist.index(best)]  # earliest on a tie


def literal_resolve(pp, ens, pull):
    """Pass 2: first claimer wins in list order; non-movers claim nothing."""
    claimed, out = set(), []
    for e in ens:
        t = literal_target(pp, e, pull)
        if t is None or t in claimed:
            out.append(e)
        else:
            claimed.add(t)
            out.append(t)
    return out


_BASE_STATE = make_state((0, 0), energy=2, owned=["push", "pull"])
_BASE = _BASE_STATE.game
_NO_UNDO = peek_snapshot(_BASE_STATE.history)  # read by UNDO only


@jax.jit
def _run_positions(pp, epos, alive, prog_idx):
    e = _BASE.enemies.replace(
        pos=epos.astype(jnp.int8), alive=alive, hp=jnp.where(alive, 2, 0).astype(jnp.int8)
    )
    s = _BASE.replace(player=_BASE.player.replace(pos=pp.astype(jnp.int8)), enemies=e)
    out, _, _ = run_program(jax.random.key(0), s, prog_idx, _NO_UNDO)
    return out.enemies.pos


def test_closed_form_matches_literal_rule_for_every_pair():
    cells = list(itertools.product(range(6), range(6)))
    pairs = list(itertools.product(cells, cells))
    pp = jnp.asarray([a for a, _ in pairs], jnp.int32)
    epos = np.zeros((len(pairs), MAX_ENEMIES, 2), np.int32)
    epos[:, 0] = [b for _, b in pairs]
    alive = np.zeros((len(pairs), MAX_ENEMIES), bool)
    alive[:, 0] = True
    for name in ("push", "pull"):
        got = jax.vmap(_run_positions, in_axes=(0, 0, 0, None))(
            pp, jnp.asarray(epos), jnp.asarray(alive), jnp.int32(prog(name))
        )
        got = np.asarray(got)[:, 0]
        for k, (a, b) in enumerate(pairs):
            t = literal_target(a, b, name == "pull")
            assert tuple(got[k]) == (b if t is None else t), (name, a, b)


cell = st.tuples(st.integers(0, 5), st.integers(0, 5))


@settings(deadline=None, max_examples=150)
@given(pp=cell, ens=st.lists(cell, min_size=1, max_size=10), pull=st.booleans())
def test_two_pass_resolution_matches_literal_rule(pp, ens, pull):
    epos = np.zeros((MAX_ENEMIES, 2), np.int32)
    epos[: len(ens)] = ens
    alive = np.arange(MAX_ENEMIES) < len(ens)
    got = _run_positions(
        jnp.asarray(pp),
        jnp.asarray(epos),
        jnp.asarray(alive),
        jnp.int32(prog("pull" if pull else "push")),
    )
    got = [tuple(x) for x in np.asarray(got)[: len(ens)].tolist()]
    assert got == literal_resolve(pp, ens, pull)
