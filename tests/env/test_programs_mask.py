"""Program mask (programs.md §2, interface.md §2.4): every condition at its boundary."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from builders import make_state
from hackmatrix_env.constants import PROGRAM_COST, PROGRAM_NAMES, PROGRAM_SPAWN
from programs_testlib import mask, push, replace_game, valid

# The catalogue of programs.md §2, typed in from the spec: name, C, E, block spawn.
SPEC_TABLE = [
    ("push", 0, 2, 4), ("pull", 0, 2, 4), ("crash", 3, 2, 6), ("warp", 2, 2, 5),
    ("poly", 1, 1, 3), ("wait", 0, 1, 1), ("debug", 3, 0, 4), ("row", 3, 1, 2),
    ("col", 3, 1, 2), ("undo", 1, 0, 3), ("step", 0, 3, 4), ("siph+", 5, 0, 7),
    ("exch", 4, 0, 3), ("show", 2, 0, 2), ("reset", 0, 4, 2), ("calm", 2, 4, 6),
    ("d_bom", 3, 0, 4), ("delay", 1, 2, 4), ("anti-v", 3, 0, 4), ("score", 0, 5, 5),
    ("reduc", 2, 1, 3), ("atk+", 4, 4, 8), ("hack", 2, 2, 4),
]  # fmt: skip


def test_tables_match_spec_catalogue():
    assert [row[0] for row in SPEC_TABLE] == list(PROGRAM_NAMES)
    np.testing.assert_array_equal(PROGRAM_COST, [[c, e] for _, c, e, _ in SPEC_TABLE])
    np.testing.assert_array_equal(PROGRAM_SPAWN, [s for *_, s in SPEC_TABLE])


COST = {name: (c, e) for name, c, e, _ in SPEC_TABLE}


def _with_history(state):
    return push(state)


def _siphoned(state, cells):
    sip = np.zeros((6, 6), bool)
    for r, c in cells:
        sip[r, c] = True
    return replace_game(state, grid=state.game.grid.replace(siphoned=jnp.asarray(sip)))


def _state(name, *, credits=None, energy=None, owned=True, post=None, **kw):
    c, e = COST[name]
    s = make_state(
        kw.pop("player", (2, 2)),
        credits=c if credits is None else credits,
        energy=e if energy is None else energy,
        owned=[name] if owned else [],
        **kw,
    )
    return post(s) if post else s


# name -> (applicable scenario kwargs, [non-applicable scenario kwargs, ...])
CASES = {
    "push": (
        dict(enemies=[("cryptog", (5, 0), 2, {"stunned": True})]),  # hidden + stunned counts
        [dict(transmissions=[("virus", (3, 3))])],
    ),
    "pull": (dict(enemies=[("virus", (3, 3))]), [dict()]),
    "poly": (dict(enemies=[("daemon", (0, 5))]), [dict(transmissions=[("daemon", (0, 5))])]),
    "crash": (
        dict(blocks=[("data", (1, 1), 3, {"siphoned": True})]),  # diagonal, siphoned block
        [
            dict(blocks=[("data", (4, 2))], enemies=[("virus", (2, 4))]),  # distance 2
            dict(player=(0, 0), blocks=[("data", (2, 2))], transmissions=[("virus", (0, 2))]),
        ],
    ),
    "warp": (dict(transmissions=[("virus", (4, 4))]), [dict()]),
    "wait": (dict(), []),
    "debug": (
        dict(enemies=[("virus", (3, 3))], blocks=[("data", (3, 3))]),
        [dict(enemies=[("glitch", (3, 4))], blocks=[("data", (3, 3))])],
    ),
    "row": (
        dict(player=(2, 0), enemies=[("cryptog", (2, 5))], blocks=[("data", (2, 2))]),
        [dict(player=(2, 0), enemies=[("virus", (3, 5))])],
    ),
    "col": (
        dict(player=(0, 3), enemies=[("virus", (5, 3))], blocks=[("data", (2, 3))]),
        [dict(player=(0, 3), enemies=[("virus", (5, 2))])],
    ),
    "step": (dict(), []),
    "siph+": (dict(), []),
    "exch": (dict(), []),
    "show": (dict(), [dict(show=True)]),
    "reset": (dict(hp=2), [dict(hp=3)]),
    "calm": (dict(), [dict(calm=True)]),
    "d_bom": (dict(enemies=[("daemon", (5, 5))]), [dict(enemies=[("virus", (1, 1))])]),
    "delay": (dict(transmissions=[("virus", (1, 1))]), [dict(enemies=[("virus", (1, 1))])]),
    "anti-v": (dict(enemies=[("virus", (1, 1))]), [dict(enemies=[("glitch", (1, 1))])]),
    "score": (dict(stage=7), [dict(stage=8)]),
    "reduc": (
        dict(blocks=[("data", (1, 1), 1)]),
        [
            dict(blocks=[("data", (1, 1), 1, {"spawnCount": 0})]),
            dict(blocks=[("data", (1, 1), 3, {"siphoned": True})]),  # siphoned: skipped
        ],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_applicability_boundary(name):
    ok_kw, bad_kws = CASES[name]
    assert valid(_state(name, **ok_kw), name)
    for bad in bad_kws:
        assert not valid(_state(name, **bad), name), bad


@pytest.mark.parametrize("name", list(CASES))
def test_ownership_and_each_cost_component(name):
    ok_kw = CASES[name][0]
    c, e = COST[name]
    assert not valid(_state(name, owned=False, **ok_kw), name)
    if c > 0:
        assert not valid(_state(name, credits=c - 1, **ok_kw), name)
    if e > 0:
        assert not valid(_state(name, energy=e - 1, **ok_kw), name)
    # More than enough of both is still valid.
    assert valid(_state(name, credits=c + 7, energy=e + 7, **ok_kw), name)


def test_ownership_comes_from_owned_list_prefix():
    s = make_state((2, 2), credits=10, energy=10, owned=["wait", "siph+"])
    m = mask(s)
    assert m["wait"] and m["siph+"] and not m["step"]
    # An entry past num_owned does not count.
    s2 = replace_game(s, owned_list=s.game.owned_list.at[2].set(10))  # STEP's index, not listed
    assert not mask(s2)["step"]
    assert mask(replace_game(s2, num_owned=jnp.int8(3)))["step"]


def test_undo_needs_history():
    s = _state("undo")
    assert not valid(s, "undo")
    s = _with_history(s)
    assert valid(s, "undo")
    broke = replace_game(s, player=s.game.player.replace(credits=jnp.int32(0)))
    assert not valid(broke, "undo")
    assert not valid(_with_history(_state("undo", owned=False)), "undo")


def test_atk_plus_uses_not_attack():
    s = _state("atk+", attack=17)
    assert valid(s, "atk+")  # no cap on A
    assert valid(replace_game(s, atk_uses=jnp.int8(1)), "atk+")
    assert not valid(replace_game(s, atk_uses=jnp.int8(2)), "atk+")
    assert not valid(_state("atk+", credits=3), "atk+")
    assert not valid(_state("atk+", energy=3), "atk+")


def test_hack_any_siphoned_cell():
    s = _state("hack")
    assert not valid(s, "hack")
    assert valid(_siphoned(s, [(0, 4)]), "hack")  # empty cell, no enemy on it
    assert not valid(_siphoned(_state("hack", owned=False), [(0, 4)]), "hack")
    assert not valid(_siphoned(_state("hack", energy=1), [(0, 4)]), "hack")


def test_exch_is_credits_at_least_four():
    assert valid(_state("exch", credits=4, energy=0), "exch")
    assert not valid(_state("exch", credits=3, energy=50), "exch")


def test_crash_neighbourhood_variants():
    base = dict(player=(2, 2))
    for extra in (
        dict(enemies=[("virus", (3, 3))]),
        dict(transmissions=[("virus", (1, 2))]),
        dict(blocks=[("program", (3, 1), "wait")]),
    ):
        assert valid(_state("crash", **base, **extra), "crash"), extra
    # The player's own cell does not count, nor things at Chebyshev distance 2.
    assert not valid(_state("crash", **base, enemies=[("virus", (4, 4))]), "crash")


def test_debug_enemy_on_siphoned_block_counts():
    s = _state(
        "debug", enemies=[("daemon", (0, 1))], blocks=[("data", (0, 1), 2, {"siphoned": True})]
    )
    assert valid(s, "debug")
