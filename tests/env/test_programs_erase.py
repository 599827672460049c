"""CRASH and WARP (programs.md §4.3-4.4, §1.4 erase primitives, interface.md §4.7)."""

from __future__ import annotations

from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from builders import make_state
from hackmatrix_env.constants import Content, Resource
from programs_testlib import (
    assert_pools_canonical,
    enemies,
    player,
    prog,
    replace_game,
    run,
    run_many_keys,
    transmissions,
)
from scipy.stats import chisquare

N_KEYS = 4000
KEYS = jax.random.split(jax.random.key(123), N_KEYS)


def _many(state, name):
    return run_many_keys(KEYS, state, jnp.int32(prog(name)))


# --- CRASH --------------------------------------------------------------------------------------


def _crash_state():
    return make_state(
        (2, 2),
        credits=3,
        energy=2,
        owned=["crash"],
        enemies=[
            ("virus", (3, 3), 2, {"isFromScheduledTask": True}),  # first on (3,3): scheduled
            ("daemon", (3, 3)),
            ("glitch", (1, 2)),
            ("cryptog", (2, 2)),  # on the player's cell: untouched
            ("virus", (0, 0)),  # outside the 3x3
        ],
        transmissions=[("virus", (2, 1)), ("daemon", (2, 1)), ("glitch", (4, 2))],
        blocks=[
            ("data", (1, 1), 3, {"siphoned": True}),
            ("program", (3, 2), "wait"),
            ("data", (4, 4)),
        ],
        resources=[("credits", (3, 2), 2), ("siphon", (1, 3))],
    )


def test_crash_erases_and_counts_once_per_cell():
    out, kills, exit_reached = run(_crash_state(), "crash")
    # (3,3): first is scheduled -> 0; (1,2): 1; transmissions on (2,1): 1 (stacked, once).
    assert kills == 2 and not exit_reached
    assert enemies(out) == [("cryptog", (2, 2), 2), ("virus", (0, 0), 2)]
    assert transmissions(out) == [("glitch", (4, 2), 1)]
    g = jax.device_get(out.game.grid)
    assert g.content[1, 1] == Content.EMPTY and g.siphoned[1, 1]  # siphoned block destroyed
    assert g.content[3, 2] == Content.EMPTY
    assert g.resource_kind[3, 2] == Resource.CREDITS and g.resource_amount[3, 2] == 2
    assert g.content[4, 4] == Content.BLOCK  # outside the area
    assert g.content[1, 3] == Content.DATA_SIPHON  # pickups stay
    assert g.content[5, 5] == Content.EXIT
    assert player(out)["credits"] == 0 and player(out)["energy"] == 0
    assert player(out)["score"] == 0  # destroying a block gives nothing
    assert int(out.game.pending_siphon_spawns) == 0
    assert_pools_canonical(out)


def test_crash_stack_decided_by_first_in_list():
    s = make_state(
        (2, 2),
        credits=3,
        energy=2,
        owned=["crash"],
        enemies=[("daemon", (3, 3)), ("virus", (3, 3), 2, {"isFromScheduledTask": True})],
    )
    _, kills, _ = run(s, "crash")
    assert kills == 1  # first (daemon) is not scheduled; the stack counts once
    # Scheduled-origin transmission first on its cell: that cell counts 0.
    s = make_state(
        (2, 2), credits=3, energy=2, owned=["crash"], transmissions=[("virus", (1, 1))] * 2
    )
    t = s.game.transmissions
    s = replace_game(s, transmissions=t.replace(from_task=t.from_task.at[0].set(True)))
    out, kills, _ = run(s, "crash")
    assert kills == 0 and transmissions(out) == []


# --- WARP ---------------------------------------------------------------------------------------


def _warp_state(**kw):
    return make_state(kw.pop("player", (0, 0)), credits=2, energy=2, owned=["warp"], **kw)


def test_warp_uniform_over_entries_in_list_order():
    s = _warp_state(
        enemies=[("virus", (1, 1)), ("daemon", (1, 1)), ("glitch", (3, 3))],
        transmissions=[("virus", (4, 4)), ("virus", (0, 3))],
    )
    out, kills, exit_reached = _many(s, "warp")
    dest = [tuple(x) for x in np.asarray(out.player.pos).tolist()]
    counts = Counter(dest)
    assert set(counts) == {(1, 1), (3, 3), (4, 4), (0, 3)}
    observed = [counts[c] for c in [(1, 1), (3, 3), (4, 4), (0, 3)]]
    expected = np.array([2, 1, 1, 1]) / 5 * N_KEYS  # a stack of two is twice as likely
    assert chisquare(observed, expected).pvalue > 1e-3
    assert np.all(np.asarray(kills) == 1)
    assert not np.any(np.asarray(exit_reached))
    # Landing on (1,1) removes both stacked enemies; landing on (4,4) only that transmission.
    n_e = np.asarray(out.enemies.alive).sum(1)
    n_t = np.asarray(out.transmissions.alive).sum(1)
    for d, ne, nt in zip(dest, n_e, n_t, strict=True):
        assert (ne, nt) == {(1, 1): (1, 2), (3, 3): (2, 2), (4, 4): (3, 1), (0, 3): (3, 1)}[d]


def test_warp_erases_only_the_picked_kind():
    s = _warp_state(enemies=[("virus", (2, 3))], transmissions=[("daemon", (2, 3))])
    out, kills, _ = _many(s, "warp")
    n_e = np.asarray(out.enemies.alive).sum(1)
    n_t = np.asarray(out.transmissions.alive).sum(1)
    assert set(zip(n_e.tolist(), n_t.tolist(), strict=True)) == {(0, 1), (1, 0)}
    assert np.all(np.asarray(out.player.pos) == [2, 3])
    assert np.all(np.asarray(kills) == 1)
    frac_enemy = np.mean(n_e == 0)
    assert 0.45 < frac_enemy < 0.55


def test_warp_to_exit_and_no_pickup():
    # Spec example: enemies [V (1,1)], transmissions [T on the exit (5,5)] -> 50/50.
    s = _warp_state(
        player=(0, 5),
        enemies=[("virus", (1, 1))],
        transmissions=[("glitch", (5, 5))],
        resources=[("siphon", (1, 1))],
    )
    out, kills, exit_reached = _many(s, "warp")
    pos = np.asarray(out.player.pos)
    on_exit = np.all(pos == [5, 5], axis=1)
    np.testing.assert_array_equal(np.asarray(exit_reached), on_exit)
    assert 0.45 < on_exit.mean() < 0.55
    assert np.all(np.asarray(kills) == 1)
    # No pickup: the data siphon at (1,1) stays and siphons stay 0.
    assert np.all(np.asarray(out.grid.content)[:, 1, 1] == Content.DATA_SIPHON)
    assert np.all(np.asarray(out.player.siphons) == 0)
    assert np.all(np.asarray(out.player.credits) == 0)
    assert np.all(np.asarray(out.player.energy) == 0)


def test_warp_exit_by_coordinate_not_content():
    s = _warp_state(enemies=[("virus", (5, 5))])
    _, _, exit_reached = run(s, "warp")
    assert exit_reached
    # Move the exit coordinate away (cross-stage UNDO quirk): content no longer matters.
    _, _, exit_reached = run(replace_game(s, exit_pos=jnp.asarray([0, 5], jnp.int8)), "warp")
    assert not exit_reached


def test_warp_stack_count_decided_by_first_of_kind():
    s = _warp_state(
        enemies=[("virus", (3, 3), 2, {"isFromScheduledTask": True}), ("daemon", (3, 3))]
    )
    out, kills, _ = _many(s, "warp")
    assert np.all(np.asarray(kills) == 0)  # whichever is picked, the first decides
    assert not np.asarray(out.enemies.alive).any()
    s = _warp_state(
        enemies=[("daemon", (3, 3)), ("virus", (3, 3), 2, {"isFromScheduledTask": True})]
    )
    _, kills, _ = _many(s, "warp")
    assert np.all(np.asarray(kills) == 1)


def test_warp_onto_block():
    s = _warp_state(enemies=[("glitch", (2, 2))], blocks=[("data", (2, 2))])
    out, kills, _ = run(s, "warp")
    assert player(out)["pos"] == (2, 2) and kills == 1
    assert int(out.game.grid.content[2, 2]) == Content.BLOCK
