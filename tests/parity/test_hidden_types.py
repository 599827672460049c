"""Canonical mode's bookkeeping of guessed transmission types and orders (no JAX, no Swift)."""

from __future__ import annotations

from hackmatrix_parity.hidden import (
    ENEMY_TYPES,
    HiddenTypes,
    carry_marks,
    first_appended,
    with_placement_cells,
)

VIRUS, DAEMON, GLITCH, CRYPTOG = range(4)


def entry(row, col, countdown=1, kind=VIRUS, task=False, siphon=False):
    return (row, col, countdown, kind, task, siphon)


def no_show_obs():
    return {"showActivated": False, "cells": [[{} for _ in range(6)] for _ in range(6)]}


def enemy(row, col, kind):
    return {"row": row, "col": col, "type": ENEMY_TYPES[kind], "hp": 2}


def lane_with_spawns(*spawned):
    """A lane loaded with one known transmission, then a step that placed ``spawned``."""
    known = entry(0, 5, countdown=3, kind=DAEMON)
    h = HiddenTypes([known], history=(0, 0, 0), depth=4)
    ticked = entry(0, 5, countdown=2, kind=DAEMON)
    h.advance([ticked, *spawned], history=(1, 1, 0), show=False)
    return h


def test_survivors_keep_marks_and_appended_entries_are_guesses_grouped_by_provenance():
    pre = [entry(1, 1, 3), entry(2, 2, 1, GLITCH), entry(3, 3, 2)]
    post = [
        entry(1, 1, 2),  # ticked
        entry(3, 3, 4),  # DELAY (+3) and ticked
        entry(4, 4, 1, CRYPTOG, task=True),  # scheduled spawn
        entry(5, 5, 1, VIRUS, siphon=True),  # two siphon spawns: one placement
        entry(5, 0, 1, DAEMON, siphon=True),
    ]
    guess, group = carry_marks(pre, [False, False, True], [None, None, 7], post)
    assert guess == [False, True, True, True, True]
    assert group[:2] == [None, 7]
    assert group[2] is not None and group[3] is not None and group[2] != group[3]
    assert group[3] == group[4]


def test_a_known_entry_erased_and_respawned_on_its_cell_counts_as_a_guess():
    pre = [entry(2, 2, 2, GLITCH, task=True)]
    post = [entry(2, 2, 1, GLITCH, task=True)]  # ticked, or shot and a fresh spawn there
    guess, _ = carry_marks(pre, [False], [None], post)
    assert guess == [True]


def test_hatch_reveals_a_guessed_type_and_never_rewrites_a_known_one():
    h = lane_with_spawns(entry(4, 4, 1, VIRUS, task=True))
    internal = {"enemies": [enemy(0, 5, GLITCH), enemy(4, 4, CRYPTOG)]}
    entries, order = h.reveal(no_show_obs(), internal)
    assert entries == [entry(0, 5, 2, DAEMON), entry(4, 4, 1, CRYPTOG, task=True)]
    assert order == [0, 1]
    h.rewrite(entries, order)
    assert h.reveal(no_show_obs(), internal) is None  # nothing left to learn


def test_show_reveals_guessed_types_and_then_nothing_is_a_guess():
    h = lane_with_spawns(entry(4, 4, 1, VIRUS, task=True))
    obs = no_show_obs()
    obs["showActivated"] = True
    obs["cells"][4][4] = {"transmission": {"turnsUntilSpawn": 1, "enemyType": "Daemon"}}
    entries, _ = h.reveal(obs, {"enemies": []})
    assert entries[1][3] == DAEMON
    h.rewrite(entries, [0, 1])
    h.advance(entries, history=(2, 2, 0), show=True)
    assert h.guess == [False, False]


def test_hatch_reveals_the_order_of_one_placement():
    h = lane_with_spawns(entry(5, 5, 1, VIRUS, siphon=True), entry(5, 0, 1, GLITCH, siphon=True))
    # Swift hatched (5, 0) before (5, 5): its list held them the other way round.
    internal = {"enemies": [enemy(5, 0, GLITCH), enemy(5, 5, VIRUS)]}
    entries, order = h.reveal(no_show_obs(), internal)
    assert order == [0, 2, 1]
    assert [e[:2] for e in entries] == [(0, 5), (5, 0), (5, 5)]


def test_hatch_reveals_the_order_when_the_player_erased_one_of_the_placement():
    h = lane_with_spawns(
        entry(5, 5, 1, VIRUS, siphon=True),
        entry(3, 3, 1, DAEMON, siphon=True),  # shot this step: no enemy there afterwards
        entry(5, 0, 1, GLITCH, siphon=True),
    )
    internal = {"enemies": [enemy(5, 0, GLITCH), enemy(5, 5, VIRUS)]}
    entries, order = h.reveal(no_show_obs(), internal)
    assert order == [0, 3, 2, 1]
    assert [e[:2] for e in entries] == [(0, 5), (5, 0), (3, 3), (5, 5)]


def test_order_of_known_entries_is_never_changed():
    h = HiddenTypes([entry(5, 5, 1, VIRUS), entry(5, 0, 1, GLITCH)], (0, 0, 0), depth=4)
    internal = {"enemies": [enemy(5, 0, GLITCH), enemy(5, 5, VIRUS)]}
    assert h.reveal(no_show_obs(), internal) is None


def test_undo_restores_the_marks_pushed_with_each_snapshot():
    spawned = entry(4, 4, 1, VIRUS, task=True)
    h = lane_with_spawns(spawned)  # that step pushed snapshot 1, holding the guess
    h.advance([entry(0, 5, 1, DAEMON), spawned], history=(2, 2, 0), show=True)  # snapshot 2
    assert h.guess == [False, False]  # SHOW: every type seen
    # UNDO pops snapshot 2 (SHOW restored on), then snapshot 1; provenance flags cleared
    h.advance([entry(0, 5, 1, DAEMON), entry(4, 4, 1)], history=(1, 1, 0), show=True)
    assert h.guess == [False, False]
    h.advance([entry(0, 5, 2, DAEMON), entry(4, 4, 1)], history=(0, 0, 0), show=False)
    assert h.guess == [False, True]


def test_undo_to_a_list_other_than_the_recorded_one_makes_every_entry_a_guess():
    h = HiddenTypes([entry(1, 1, 3)], history=(0, 0, 0), depth=4)
    h.advance([entry(1, 1, 2)], history=(1, 1, 0), show=False)
    h.advance([entry(2, 2, 1), entry(1, 1, 2)], history=(0, 0, 0), show=False)
    assert h.guess == [True, True]
    assert h.group[0] is not None and h.group[0] == h.group[1]


def test_a_placement_is_moved_to_swifts_cells_only_when_one_provenance_and_count_match():
    pre = [entry(1, 1, 2)]
    post = [entry(1, 1, 1), entry(4, 4, siphon=True), entry(5, 5, kind=GLITCH, siphon=True)]
    assert first_appended(pre, post) == 1
    moved = with_placement_cells(pre, post, [(0, 3), (2, 5)])
    assert moved == [
        entry(1, 1, 1),
        entry(0, 3, siphon=True),
        entry(2, 5, kind=GLITCH, siphon=True),
    ]
    assert with_placement_cells(pre, post, [(0, 3)]) is None  # Swift placed one fewer
    mixed = [entry(1, 1, 1), entry(4, 4, task=True), entry(5, 5, siphon=True)]
    assert with_placement_cells(pre, mixed, [(0, 3), (2, 5)]) is None
    assert with_placement_cells(pre, [entry(1, 1, 1)], []) is None  # nothing placed
