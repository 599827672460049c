"""Random ``setState`` scenarios covering the whole state space (interface §5.7).

Every scenario is a plain dict in the canonical ``setState`` schema. Unset
optional keys are *omitted*, not sent as zeros (interface §7), so the Swift
defaults (data points 5, spawn count = points, program spawn count 2) are
exercised too. Coordinates stay in 0..5 and ``stage`` in 1..8, because the
canonical binary traps otherwise (interface §5.6).

The generator mixes "themes" so that every rule area and program gets real
work: programs owned with enough credits/energy, enemies of every kind
(stunned, siphon-/task-origin, stacked on one cell, on blocks), transmissions
with countdowns > 1, blocks of every kind siphoned or not, resources, data
siphon pickups, stages 1..8, hp 1 next to an enemy, the player next to the
exit, SHOW/CALM, a turn about to trigger the scheduled task.
"""

from __future__ import annotations

from typing import Any

import numpy as np

ENEMY_TYPES = ("virus", "daemon", "glitch", "cryptog")
ENEMY_MAX_HP = {"virus": 2, "daemon": 3, "glitch": 2, "cryptog": 2}
PROGRAM_WIRE = (
    "push", "pull", "crash", "warp", "poly", "wait", "debug", "row", "col", "undo",
    "step", "siph+", "exch", "show", "reset", "calm", "d_bom", "delay", "anti-v",
    "score", "reduc", "atk+", "hack",
)  # fmt: skip
PROGRAM_ALIASES = {
    "siph+": ("siphplus", "siph_plus"), "d_bom": ("dbom", "d_bomb"),
    "anti-v": ("antiv", "anti_v"), "atk+": ("atkplus", "atk_plus"),
}  # fmt: skip
THEMES = (
    "mixed", "combat", "siphon", "programs", "near_exit", "near_death", "stacked",
    "crowded", "sparse", "late_stage",
)  # fmt: skip
EXIT = (5, 5)


def _cells(
    rng: np.random.Generator, n: int, exclude: set[tuple[int, int]]
) -> list[tuple[int, int]]:
    free = [(r, c) for r in range(6) for c in range(6) if (r, c) not in exclude]
    n = min(n, len(free))
    idx = rng.choice(len(free), size=n, replace=False) if n else []
    return [free[i] for i in idx]


def _maybe(rng: np.random.Generator, p: float) -> bool:
    return bool(rng.random() < p)


def generate_scenario(rng: np.random.Generator, theme: str | None = None) -> dict[str, Any]:
    """One random scenario dict (canonical ``setState`` schema)."""
    theme = theme or THEMES[int(rng.integers(len(THEMES)))]
    rich = theme in ("programs", "combat", "stacked", "crowded") or _maybe(rng, 0.5)

    # --- player ------------------------------------------------------------
    if theme == "near_exit":
        pos = [(4, 5), (5, 4), (3, 5), (5, 3)][int(rng.integers(4))]
    else:
        pos = (int(rng.integers(6)), int(rng.integers(6)))
        if pos == EXIT and _maybe(rng, 0.8):
            pos = (int(rng.integers(5)), int(rng.integers(5)))
    player: dict[str, Any] = {"row": pos[0], "col": pos[1]}
    if theme == "near_death" or _maybe(rng, 0.25):
        player["hp"] = int(rng.choice([1, 1, 2, 3]))
    elif _maybe(rng, 0.01):
        player["hp"] = 0
    if rich or _maybe(rng, 0.6):
        player["credits"] = int(rng.integers(0, 25 if rich else 10))
        player["energy"] = int(rng.integers(0, 25 if rich else 10))
    if theme == "siphon" or _maybe(rng, 0.5):
        player["dataSiphons"] = int(rng.integers(1, 4))
    if _maybe(rng, 0.2):
        player["attackDamage"] = int(rng.integers(1, 5))
    if _maybe(rng, 0.3):
        player["score"] = int(rng.integers(0, 60))

    occupied = {pos}
    sc: dict[str, Any] = {"player": player}

    # --- stage / turn / flags -------------------------------------------------
    if theme == "late_stage" or _maybe(rng, 0.5):
        sc["stage"] = int(rng.integers(1, 9))
    if _maybe(rng, 0.35):
        sc["turn"] = int(rng.choice([0, 3, 9, 10, 11, 12, 15]))
    if _maybe(rng, 0.2):
        sc["showActivated"] = True
    if _maybe(rng, 0.3):
        sc["scheduledTasksDisabled"] = True
    elif _maybe(rng, 0.1):
        sc["scheduledTasksDisabled"] = False

    # --- owned programs -------------------------------------------------------
    if theme == "programs":
        k = int(rng.integers(6, 24))
    elif rich:
        k = int(rng.integers(2, 10))
    else:
        k = int(rng.integers(0, 4))
    owned = [5 + int(i) for i in rng.choice(23, size=k, replace=False)]
    if owned and _maybe(rng, 0.05):
        owned.append(owned[0])  # duplicates are kept (interface §5.7 step 5)
    if _maybe(rng, 0.03):
        owned.append(int(rng.choice([0, 3, 30])))  # dropped silently
    if owned:
        sc["ownedPrograms"] = owned

    # --- blocks ------------------------------------------------------------------
    nb = {"sparse": 0, "crowded": 10, "siphon": 6}.get(theme, int(rng.integers(0, 8)))
    blocks = []
    block_cells = _cells(rng, nb, occupied | ({EXIT} if _maybe(rng, 0.9) else set()))
    for r, c in block_cells:
        b: dict[str, Any] = {"row": r, "col": c}
        u = rng.random()
        if u < 0.5:
            b["type"] = "data"
            if _maybe(rng, 0.8):
                b["points"] = int(rng.integers(1, 10))
            if _maybe(rng, 0.3):
                b["spawnCount"] = int(rng.integers(0, 6))
        elif u < 0.97:
            b["type"] = "program"
            name = PROGRAM_WIRE[int(rng.integers(23))]
            if name in PROGRAM_ALIASES and _maybe(rng, 0.3):
                name = PROGRAM_ALIASES[name][int(rng.integers(2))]
            if _maybe(rng, 0.1):
                name = name.upper()
            b["programType"] = name
            if _maybe(rng, 0.3):
                b["spawnCount"] = int(rng.integers(0, 6))
            if _maybe(rng, 0.2):
                b["programActionIndex"] = int(rng.integers(5, 28))  # ignored by setState
        else:
            b["type"] = "question"  # places nothing (interface §5.7 step 8)
        if _maybe(rng, 0.25):
            b["siphoned"] = True
        blocks.append(b)
    if blocks:
        sc["blocks"] = blocks
    block_set = {(b["row"], b["col"]) for b in blocks if b["type"] != "question"}

    # --- enemies -------------------------------------------------------------------
    ne = {
        "combat": int(rng.integers(2, 6)),
        "stacked": int(rng.integers(2, 6)),
        "crowded": int(rng.integers(4, 8)),
        "sparse": int(rng.integers(0, 2)),
        "near_death": int(rng.integers(1, 4)),
    }.get(theme, int(rng.integers(0, 4)))
    enemies = []
    free = [
        (r, c)
        for r in range(6)
        for c in range(6)
        if (r, c) != pos and ((r, c) not in block_set or _maybe(rng, 0.15))
    ]
    if theme == "near_death":
        adj = [
            (pos[0] + dr, pos[1] + dc)
            for dr, dc in ((1, 0), (-1, 0), (0, -1), (0, 1))
            if 0 <= pos[0] + dr < 6 and 0 <= pos[1] + dc < 6
        ]
        player["hp"] = 1
        first_cells = [adj[int(rng.integers(len(adj)))]]
    else:
        first_cells = []
    if theme in ("programs", "combat") or _maybe(rng, 0.3):
        # enemies in the player's row and column (ROW/COL/shots), one on a block (DEBUG)
        row_cells = [x for x in free if x[0] == pos[0]]
        col_cells = [x for x in free if x[1] == pos[1]]
        on_blocks = [x for x in block_set if x != pos]
        for cells in (row_cells, col_cells, on_blocks):
            if cells and _maybe(rng, 0.7):
                first_cells.append(cells[int(rng.integers(len(cells)))])
        ne = max(ne, len(first_cells))
    for i in range(ne):
        if i < len(first_cells):
            cell = first_cells[i]
        elif enemies and (theme == "stacked" or _maybe(rng, 0.1)):
            prev = enemies[int(rng.integers(len(enemies)))]
            cell = (prev["row"], prev["col"])  # stacked on one cell
        else:
            cell = free[int(rng.integers(len(free)))]
        t = ENEMY_TYPES[int(rng.integers(4))]
        if cell in block_set and _maybe(rng, 0.7):
            t = "glitch"
        e: dict[str, Any] = {"type": t, "row": cell[0], "col": cell[1]}
        e["hp"] = int(rng.integers(1, ENEMY_MAX_HP[t] + 1))
        if _maybe(rng, 0.2):
            e["stunned"] = True
        if _maybe(rng, 0.2):
            e["spawnedFromSiphon"] = True
        if _maybe(rng, 0.15):
            e["isFromScheduledTask"] = True
        if _maybe(rng, 0.03):
            e["type"] = t.upper()  # case-insensitive
        enemies.append(e)
    if enemies:
        sc["enemies"] = enemies
    enemy_set = {(e["row"], e["col"]) for e in enemies}

    # --- transmissions ------------------------------------------------------------------
    nt = {"crowded": int(rng.integers(2, 5)), "sparse": 0}.get(theme, int(rng.integers(0, 3)))
    trans = []
    tcells = _cells(rng, nt, occupied | block_set | (enemy_set if _maybe(rng, 0.8) else set()))
    for r, c in tcells:
        trans.append(
            {
                "row": r,
                "col": c,
                "turnsRemaining": int(rng.choice([1, 1, 1, 2, 3, 5])),
                "enemyType": ENEMY_TYPES[int(rng.integers(4))],
            }
        )
    if trans:
        sc["transmissions"] = trans

    # --- resources --------------------------------------------------------------------------
    nr = {"siphon": int(rng.integers(4, 12)), "sparse": 0}.get(theme, int(rng.integers(0, 8)))
    res = []
    for r, c in _cells(rng, nr, set()):
        x: dict[str, Any] = {"row": r, "col": c}
        u = rng.random()
        if u < 0.12:
            x["dataSiphon"] = True
        elif u < 0.55:
            x["credits"] = int(rng.integers(1, 4 if _maybe(rng, 0.9) else 7))
        elif u < 0.97:
            x["energy"] = int(rng.integers(1, 4 if _maybe(rng, 0.9) else 7))
        else:
            x["credits"] = 0  # no effect (credits > 0 is required)
        res.append(x)
    if res:
        sc["resources"] = res
    return sc


def scenario_stream(seed: int, n: int):
    """``n`` scenarios from one seed (reproducible; themes cycle)."""
    rng = np.random.default_rng(seed)
    for i in range(n):
        yield generate_scenario(rng, THEMES[i % len(THEMES)])
