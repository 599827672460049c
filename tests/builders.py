"""Scenario builders shared by the test suite (style.md §4).

``scenario(...)`` returns a ``setState`` dict (interface §5.7) from compact
Python arguments; the same dicts can be written out as JSON fixtures for the
Swift suite. ``make_state(...)`` is ``state_from_json(scenario(...))``.

Import them directly (``tests/`` is on the pytest pythonpath)::

    from builders import make_state, scenario

This is a plain module rather than ``conftest.py`` on purpose: several test
directories have their own ``conftest.py``, and ``from builders import ...``
resolves to whichever of them was imported last.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

Pos = tuple[int, int]


def _pos(p: Sequence[int]) -> dict[str, int]:
    r, c = p
    return {"row": int(r), "col": int(c)}


def _program_action(p: int | str) -> int:
    """Action index (5..27) of an action index or a program wire name/alias."""
    if isinstance(p, str):
        from hackmatrix_env.scenario import parse_program_name

        idx = parse_program_name(p)
        if idx is None:
            raise ValueError(f"unknown program {p!r}")
        return idx + 5
    return int(p)


def scenario(
    player: Pos = (0, 0),
    *,
    hp: int | None = None,
    credits: int | None = None,
    energy: int | None = None,
    siphons: int | None = None,
    attack: int | None = None,
    score: int | None = None,
    enemies: Iterable[Any] = (),
    transmissions: Iterable[Any] = (),
    blocks: Iterable[Any] = (),
    resources: Iterable[Any] = (),
    owned: Iterable[int | str] = (),
    stage: int | None = None,
    turn: int | None = None,
    show: bool | None = None,
    calm: bool | None = None,
) -> dict:
    """A ``setState`` dict. Entities are dicts (passed through) or compact tuples.

    * enemies: ``("virus", (r, c))`` or ``("virus", (r, c), hp)``, hp defaulting
      to the type's max hp; extra keys via a trailing dict,
      e.g. ``("daemon", (1, 1), 2, {"stunned": True})``.
    * transmissions: ``("glitch", (r, c))`` (countdown 1) or ``("glitch", (r, c), turns)``.
    * blocks: ``("data", (r, c))`` (5 points), ``("data", (r, c), points)``,
      ``("program", (r, c), "wait")``; extra keys via a trailing dict,
      e.g. ``("data", (3, 2), 4, {"siphoned": True})``.
    * resources: ``("credits", (r, c), k)``, ``("energy", (r, c), k)``,
      ``("siphon", (r, c))`` (a data-siphon pickup).
    * owned: action indices or program names, in acquisition order.

    Only the arguments given become keys, so Swift's setState defaults apply
    to the rest (interface §7: omit unset optional keys).
    """
    from hackmatrix_env.constants import ENEMY_MAX_HP, ENEMY_NAMES

    p: dict[str, Any] = _pos(player)
    for key, value in (
        ("hp", hp),
        ("credits", credits),
        ("energy", energy),
        ("dataSiphons", siphons),
        ("attackDamage", attack),
        ("score", score),
    ):
        if value is not None:
            p[key] = value
    out: dict[str, Any] = {"player": p}

    def split_extra(item: tuple) -> tuple[tuple, dict]:
        if item and isinstance(item[-1], dict):
            return item[:-1], item[-1]
        return item, {}

    ens = []
    for e in enemies:
        if isinstance(e, dict):
            ens.append(e)
            continue
        e, extra = split_extra(tuple(e))
        kind, pos, *rest = e
        ehp = rest[0] if rest else int(ENEMY_MAX_HP[ENEMY_NAMES.index(kind.lower())])
        ens.append({"type": kind, **_pos(pos), "hp": ehp, **extra})
    trs = []
    for t in transmissions:
        if isinstance(t, dict):
            trs.append(t)
            continue
        kind, pos, *rest = t
        trs.append({**_pos(pos), "turnsRemaining": rest[0] if rest else 1, "enemyType": kind})
    bls = []
    for b in blocks:
        if isinstance(b, dict):
            bls.append(b)
            continue
        b, extra = split_extra(tuple(b))
        kind, pos, *rest = b
        d: dict[str, Any] = {**_pos(pos), "type": kind}
        if kind == "data" and rest:
            d["points"] = rest[0]
        if kind == "program":
            d["programType"] = rest[0]
        bls.append({**d, **extra})
    res = []
    for r in resources:
        if isinstance(r, dict):
            res.append(r)
            continue
        kind, pos, *rest = r
        if kind == "siphon":
            res.append({**_pos(pos), "dataSiphon": True})
        elif kind in ("credits", "energy"):
            res.append({**_pos(pos), kind: rest[0]})
        else:
            raise ValueError(f"unknown resource kind {kind!r}")
    for key, value in (
        ("enemies", ens),
        ("transmissions", trs),
        ("blocks", bls),
        ("resources", res),
        ("ownedPrograms", [_program_action(x) for x in owned]),
    ):
        if value:
            out[key] = value
    for key, value in (
        ("stage", stage),
        ("turn", turn),
        ("showActivated", show),
        ("scheduledTasksDisabled", calm),
    ):
        if value is not None:
            out[key] = value
    return out


def make_state(player: Pos = (0, 0), **kwargs):
    """``state_from_json(scenario(...))`` (strict parsing)."""
    from hackmatrix_env.scenario import state_from_json

    return state_from_json(scenario(player, **kwargs))


# --------------------------------------------------------------------------- named spec scenarios
# ``make_state(**NAME)`` / ``scenario(**NAME)``; tuples, so no test can mutate them.

# interface §4.8 E2: a sub-optimal siphon at (2,2) (data block p=4 at (3,2)); the dominating
# centre (4,2) would have given 1 more credit and 1 more energy.
E2_SUBOPTIMAL_SIPHON: dict[str, Any] = {
    "player": (2, 2),
    "siphons": 1,
    "blocks": (("data", (3, 2), 4),),
    "resources": (
        ("credits", (2, 1), 2),
        ("energy", (1, 2), 1),
        ("credits", (4, 1), 3),
        ("energy", (5, 2), 2),
    ),
}
