"""Canonical mode: which transmission fields are hidden guesses, and when Swift reveals them.

Against a binary without the full-state extension the engine continues from the JAX
candidate that matched everything Swift shows. A transmission placed during play draws
its enemy type when it is placed (rules §12 #11), and the observation hides that type
unless SHOW is on, so the candidate's type is the JAX key's own draw, not Swift's. The
list order of transmissions placed by one procedure call (the owed siphon spawns of one
phase) is hidden too: the observation is a grid, so it shows their cells, not the order
in which they were drawn. Both become visible later: when the transmissions hatch (the
enemies' types, their order in the enemy list, hp, the grid channels, the D.BOM/ANTI-V
mask bits, cryptog hints) or, for the types, when SHOW is on.

``HiddenTypes`` follows one lane's transmission list step by step and marks each entry
whose type is a guess, with the *placement group* whose internal order is a guess. Before
the JAX side steps, ``reveal`` reads from Swift's reply what the step shows about guessed
entries; the engine writes it into the lane's pre-step state (the hidden fields are
resynced), and the step is compared as usual. Only guessed entries are ever rewritten: a
transmission whose type the engine has seen (from ``setState`` or under SHOW) keeps it,
so a hatch that changes a known type is still a mismatch, and so is any difference in
what follows from the type (hp, movement, mask, rewards).

Entries are tuples ``(row, col, countdown, kind, from_task, from_siphon)`` in list order
(``jax_side.transmission_entries``). The list changes in three ways, all handled here:

* an ordinary step keeps a subsequence of the entries (shots, erasures and hatches remove
  some; countdowns tick, DELAY adds 3) and appends the transmissions it places at the end:
  those are new draws, hence guesses, one group per provenance (scheduled, siphon, other);
* an enemy phase pushes a snapshot (UNDO history): the list and its marks are pushed onto
  a mirror of the ring buffer;
* UNDO pops a snapshot: the restored list takes the marks recorded with it (when the
  restored list is not the recorded one, every entry counts as a guess in one group,
  which can only widen what is resolved, never report a false mismatch).

With SHOW on after a step every type is in the observation, which the engine compares,
so no type is a guess then (the order within a group still is).
"""

from __future__ import annotations

from collections import deque
from itertools import count
from typing import Any

Entry = tuple[int, int, int, int, bool, bool]  # row, col, countdown, kind, from_task, from_siphon
ENEMY_TYPES = ("virus", "daemon", "glitch", "cryptog")  # EnemyKind order (hackmatrix_env)
_GROUP_IDS = count(1)


def _survives_as(pre: Entry, post: Entry) -> bool:
    """``post`` can be ``pre`` one step later: same cell, type and provenance; countdown
    unchanged, ticked, delayed (+3) or delayed and ticked (+2)."""
    return pre[:2] == post[:2] and pre[3:] == post[3:] and post[2] - pre[2] in (0, -1, 2, 3)


def first_appended(pre: list[Entry], post: list[Entry]) -> int:
    """How many leading entries of ``post`` survive from ``pre``; the rest were appended
    by the step (a placement), as in ``carry_marks``."""
    i = 0
    for n, e in enumerate(post):
        j = next((j for j in range(i, len(pre)) if _survives_as(pre[j], e)), None)
        if j is None:
            return n
        i = j + 1
    return len(post)


def with_placement_cells(
    pre: list[Entry], post: list[Entry], cells: list[tuple[int, int]]
) -> list[Entry] | None:
    """``post`` with the entries the step appended moved to ``cells`` (Swift's), or None.

    The observation shows where one placement put its transmissions but neither their
    order nor their types, which stay guesses. Only a placement of one provenance is
    rebuilt (with two, which cell is the scheduled spawn would be a guess too), and only
    when the number of cells matches.
    """
    n = first_appended(pre, post)
    new = post[n:]
    if not new or len({e[4:] for e in new}) != 1 or len(cells) != len(new):
        return None
    return post[:n] + [(r, c, *e[2:]) for (r, c), e in zip(cells, new, strict=True)]


def carry_marks(
    pre: list[Entry], guess: list[bool], group: list[int | None], post: list[Entry]
) -> tuple[list[bool], list[int | None]]:
    """Type-guess marks and placement groups of ``post`` after an ordinary (non-UNDO) step.

    Survivors are matched in list order and keep their marks; the first entry that matches
    no remaining ``pre`` entry starts the appended ones, which are guesses, grouped by
    provenance. A survivor that a fresh spawn on the same cell would be indistinguishable
    from (countdown 1, a provenance flag) counts as a type guess too.
    """
    out_guess: list[bool] = []
    out_group: list[int | None] = []
    new_groups: dict[tuple[bool, bool], int] = {}
    i = 0
    for e in post:
        j = next((j for j in range(i, len(pre)) if _survives_as(pre[j], e)), None)
        if j is None:
            i = len(pre)
            out_guess.append(True)
            out_group.append(new_groups.setdefault((e[4], e[5]), next(_GROUP_IDS)))
            continue
        fresh_lookalike = e[2] == 1 and pre[j][2] <= 2 and (e[4] or e[5])
        out_guess.append(guess[j] or fresh_lookalike)
        out_group.append(group[j])
        i = j + 1
    return out_guess, out_group


def _type_name(name: Any) -> str | None:
    key = str(name).lower()
    return key if key in ENEMY_TYPES else None


class HiddenTypes:
    """One lane's guessed transmission types and orders (module docstring)."""

    def __init__(self, entries: list[Entry], history: tuple[int, int, int], depth: int):
        self.entries = list(entries)
        self.guess = [False] * len(entries)  # setState gives every type and the order
        self.group: list[int | None] = [None] * len(entries)
        self.history = history
        # Snapshots already on the ring at load time have unknown contents: None.
        self.snapshots: deque[tuple[list[Entry], list[bool], list[int | None]] | None] = deque(
            [None] * history[1], maxlen=depth
        )

    def reveal(
        self, obs: dict[str, Any], internal: dict[str, Any] | None
    ) -> tuple[list[Entry], list[int]] | None:
        """What Swift's post-step reply shows about guesses: ``(entries, order)`` or None.

        ``entries`` is the list with the revealed types and order, ``order[i]`` the index
        in the current list of its entry ``i``.

        Hatching entries (countdown <= 1) become enemies appended in list order on their
        own cells, where they stay for the phase (rules §2.7, §7.3): the last enemy Swift
        lists on an entry's cell gives its type, and the order of those enemies gives the
        order of the entries of one group. With SHOW on, the observation's
        ``transmission.enemyType`` at an entry's cell gives its type.
        """
        if not any(self.guess) and all(g is None for g in self.group):
            return None
        enemies = (internal or {}).get("enemies", [])
        last_at: dict[tuple[int, int], int] = {}
        for j, x in enumerate(enemies):
            last_at[(x.get("row"), x.get("col"))] = j
        order = list(range(len(self.entries)))
        for g in {g for g in self.group if g is not None}:
            # Entries of the group due to hatch that have an enemy on their cell in Swift's
            # list; one the player erased this step has none and keeps its slot (it is gone).
            slots = [
                i
                for i, gi in enumerate(self.group)
                if gi == g and self.entries[i][2] <= 1 and self.entries[i][:2] in last_at
            ]
            by_swift = sorted(slots, key=lambda i: last_at[self.entries[i][:2]])
            for slot, i in zip(slots, by_swift, strict=True):
                order[slot] = i
        entries = [self.entries[i] for i in order]
        show = bool(obs.get("showActivated"))
        for i, e in enumerate(entries):
            if not self.guess[order[i]]:
                continue
            name = None
            trans = obs["cells"][e[0]][e[1]].get("transmission") if show else None
            if trans is not None and "enemyType" in trans:
                name = _type_name(trans["enemyType"])
            elif e[2] <= 1 and e[:2] in last_at:
                name = _type_name(enemies[last_at[e[:2]]].get("type"))
            if name is not None:
                entries[i] = (*e[:3], ENEMY_TYPES.index(name), *e[4:])
        return (entries, order) if entries != self.entries else None

    def rewrite(self, entries: list[Entry], order: list[int]) -> None:
        """Record that the lane's state now holds ``entries`` (``reveal``'s result)."""
        self.entries = list(entries)
        self.guess = [self.guess[i] for i in order]
        self.group = [self.group[i] for i in order]

    def advance(self, post: list[Entry], history: tuple[int, int, int], show: bool) -> None:
        """Follow the lane to its post-step state (its entries, UNDO ring counters, SHOW)."""
        (_, size0, lost0), (_, size1, lost1) = self.history, history
        if size1 == size0 - 1 and lost1 == lost0:  # UNDO popped a snapshot
            rec = self.snapshots.pop() if self.snapshots else None
            if rec is not None and [e[:4] for e in rec[0]] == [e[:4] for e in post]:
                guess, group = list(rec[1]), list(rec[2])
            else:
                guess, group = [True] * len(post), [next(_GROUP_IDS)] * len(post)
        else:
            guess, group = carry_marks(self.entries, self.guess, self.group, post)
        if show:
            guess = [False] * len(post)
        if size1 + lost1 == size0 + lost0 + 1:  # an enemy phase pushed a snapshot
            self.snapshots.append((list(post), list(guess), list(group)))
        self.entries, self.guess, self.group, self.history = list(post), guess, group, history
