"""Host-side scenario I/O: ``setState`` parsing, observation JSON, state JSON (interface §5).

Never jitted. Imports only layers 0-1 (constants, types), plus numpy/jax for
array conversion.

* ``state_from_json(d, strict=True)`` builds an ``EnvState`` from the
  ``setState`` schema with the exact procedure of interface §5.7. With
  ``strict=True`` (default) every input that Swift would silently skip,
  ignore or later crash on raises a ``ValueError`` naming the field
  (``"enemies[2].type: unknown enemy type 'foo'"``); with ``strict=False`` it
  follows Swift's lenient behaviour exactly. Inputs that our fixed-shape
  storage cannot hold (an int8 overflow, more entities than a pool holds,
  off-board entity coordinates) raise in both modes (specs/choices.md).
* ``observation_json(state)`` is the observation object of interface §5.4.
* ``observation_from_json(obs)`` converts that JSON to the RL tensors exactly
  as interface §3.7 prescribes (float64 arithmetic, stored as float32).
* ``state_to_json(state)`` inverts ``state_from_json`` for states that the
  ``setState`` schema can express, and raises otherwise.
* ``full_state_json`` / ``state_from_full_json`` round-trip *every* field of
  the state (specs/full-state.md), for exact resync with a Swift twin.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hackmatrix_env.constants import (
    ENEMY_NAMES,
    FIRST_PROGRAM,
    GRID_CHANNELS,
    GRID_SIZE,
    HISTORY_DEPTH,
    MAX_ENEMIES,
    MAX_HP,
    MAX_OWNED_LIST,
    MAX_TRANSMISSIONS,
    NUM_ACTIONS,
    NUM_PROGRAMS,
    PLAYER_FEATURES,
    PROGRAM_ALIASES,
    PROGRAM_NAMES,
    SETSTATE_DATA_POINTS,
    SETSTATE_EXIT,
    SETSTATE_PROGRAM_SPAWN,
    BlockKind,
    Content,
    EnemyKind,
    Resource,
)
from hackmatrix_env.types import EnvState, GameState, blank_state, check_history_depth

_I8 = (-(2**7), 2**7 - 1)
_I32 = (-(2**31), 2**31 - 1)

_TOP_KEYS = {
    "player", "enemies", "transmissions", "blocks", "resources", "ownedPrograms",
    "stage", "turn", "showActivated", "scheduledTasksDisabled",
}  # fmt: skip
_PLAYER_KEYS = {"row", "col", "hp", "credits", "energy", "dataSiphons", "attackDamage", "score"}
_ENEMY_KEYS = {"type", "row", "col", "hp", "stunned", "spawnedFromSiphon", "isFromScheduledTask"}
_TRANSMISSION_KEYS = {"row", "col", "turnsRemaining", "enemyType"}
_BLOCK_KEYS = {
    "row", "col", "type", "points", "spawnCount", "siphoned", "programType", "programActionIndex",
}  # fmt: skip
_RESOURCE_KEYS = {"row", "col", "credits", "energy", "dataSiphon"}


# --------------------------------------------------------------------------- names


def parse_program_name(name: str) -> int | None:
    """Program index 0..22 of a wire name or alias, case-insensitive (interface §0.3)."""
    key = name.lower()
    key = PROGRAM_ALIASES.get(key, key)
    return PROGRAM_NAMES.index(key) if key in PROGRAM_NAMES else None


def parse_enemy_name(name: str) -> int | None:
    """EnemyKind of a wire name, case-insensitive (interface §0.4, §5.7 step 6)."""
    key = name.lower()
    return ENEMY_NAMES.index(key) if key in ENEMY_NAMES else None


# --------------------------------------------------------------------------- field readers

_MISSING = object()


def _field(d: dict, key: str, path: str, kind: type, *, required: bool = False) -> Any:
    """Read ``d[key]`` with its JSON type checked; ``None`` counts as absent (§5.3)."""
    value = d.get(key)
    if value is None:
        if required:
            raise ValueError(f"{path}.{key}: required field is missing")
        return _MISSING
    if kind is int:
        ok = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    elif kind is bool:
        ok = isinstance(value, (bool, np.bool_))
    else:
        ok = isinstance(value, kind)
    if not ok:
        raise ValueError(
            f"{path}.{key}: expected {kind.__name__}, got {type(value).__name__} {value!r}"
        )
    return int(value) if kind is int else bool(value) if kind is bool else value


def _fits(value: int, bounds: tuple[int, int], path: str, storage: str) -> int:
    lo, hi = bounds
    if not lo <= value <= hi:
        raise ValueError(f"{path}: {value} does not fit the {storage} storage ({lo}..{hi})")
    return value


def _check_keys(d: Any, allowed: set[str], path: str, strict: bool) -> None:
    if not isinstance(d, dict):
        raise ValueError(f"{path}: expected an object, got {type(d).__name__}")
    if strict:
        unknown = sorted(set(d) - allowed)
        if unknown:
            raise ValueError(f"{path}: unknown key(s) {unknown}")


def _list(d: dict, key: str, strict: bool) -> list:
    value = d.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{key}: expected a list, got {type(value).__name__}")
    return value


def _on_board(r: int, c: int) -> bool:
    return 0 <= r < GRID_SIZE and 0 <= c < GRID_SIZE


def _numpy_blank(history_depth: int = HISTORY_DEPTH) -> EnvState:
    """A mutable numpy copy of ``blank_state(history_depth)`` (every leaf an ndarray, 0-d too)."""
    blank = _BLANK if history_depth == HISTORY_DEPTH else jax.device_get(blank_state(history_depth))
    return jax.tree.map(lambda x: np.array(x), blank)


def _to_jax(state: EnvState) -> EnvState:
    return jax.tree.map(lambda x: jnp.asarray(x), state)


_BLANK = jax.device_get(blank_state())


# --------------------------------------------------------------------------- setState


def state_from_json(
    d: dict, *, strict: bool = True, history_depth: int = HISTORY_DEPTH
) -> EnvState:
    """Build the state ``setState`` would build (interface §5.7, rules §15).

    Args:
        d: the ``state`` object of a ``setState`` request.
        strict: raise ``ValueError`` (naming the field) on every input Swift
            would skip or ignore silently, or that would crash it later;
            ``False`` follows Swift's lenient behaviour exactly.
        history_depth: the UNDO ring's size; must equal the ``EnvParams.history_depth``
            the state is stepped with (the history starts empty either way).
    """
    _check_keys(d, _TOP_KEYS, "state", strict)
    env = _numpy_blank(check_history_depth(history_depth))  # steps 1-2: fresh game, empty ring
    s = env.game
    g = s.grid

    # Step 3: player.
    p = d.get("player")
    if p is None:
        raise ValueError("player: required field is missing")
    _check_keys(p, _PLAYER_KEYS, "player", strict)
    row = _field(p, "row", "player", int, required=True)
    col = _field(p, "col", "player", int, required=True)
    if not _on_board(row, col):
        raise ValueError(f"player.row/col: ({row}, {col}) is off the board")
    s.player.pos[...] = (row, col)
    hp = _field(p, "hp", "player", int)
    if hp is not _MISSING:
        if not 0 <= hp <= MAX_HP:
            if strict:
                raise ValueError(f"player.hp: {hp} is outside 0..{MAX_HP}")
            hp = MAX_HP  # Swift maps an out-of-range hp to 3
        s.player.hp[...] = hp
    for key, leaf, bounds, storage, minimum in (
        ("credits", s.player.credits, _I32, "int32", 0),
        ("energy", s.player.energy, _I32, "int32", 0),
        ("dataSiphons", s.player.siphons, _I32, "int32", 0),
        ("score", s.player.score, _I32, "int32", 0),
        ("attackDamage", s.player.attack, _I8, "int8", 1),
    ):
        v = _field(p, key, "player", int)
        if v is _MISSING:
            continue
        _fits(v, bounds, f"player.{key}", storage)
        if strict and v < minimum:
            raise ValueError(f"player.{key}: {v} is below {minimum}")
        leaf[...] = v

    # Step 4: stage, turn and flags, copied verbatim.
    stage = _field(d, "stage", "state", int)
    if stage is not _MISSING:
        _fits(stage, _I8, "stage", "int8")
        if strict and not 1 <= stage <= 8:
            raise ValueError(f"stage: {stage} is outside 1..8")
        s.stage[...] = stage
    turn = _field(d, "turn", "state", int)
    if turn is not _MISSING:
        _fits(turn, _I32, "turn", "int32")
        if strict and turn < 0:
            raise ValueError(f"turn: {turn} is negative")
        s.turn[...] = turn
    for key, leaf in (("showActivated", s.show_flag), ("scheduledTasksDisabled", s.calm_flag)):
        v = _field(d, key, "state", bool)
        if v is not _MISSING:
            leaf[...] = v

    # Step 5: owned programs, in order; duplicates kept, non-programs dropped.
    owned: list[int] = []
    for i, a in enumerate(_list(d, "ownedPrograms", strict)):
        path = f"ownedPrograms[{i}]"
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise ValueError(f"{path}: expected int, got {type(a).__name__} {a!r}")
        if not FIRST_PROGRAM <= a < NUM_ACTIONS:
            if strict:
                raise ValueError(f"{path}: {a} is not a program action index (5..27)")
            continue
        owned.append(int(a) - FIRST_PROGRAM)
    if len(owned) > MAX_OWNED_LIST:
        raise ValueError(f"ownedPrograms: {len(owned)} entries exceed capacity {MAX_OWNED_LIST}")
    s.owned_list[: len(owned)] = owned
    s.num_owned[...] = len(owned)

    # Step 6: enemies, in list order.
    n = 0
    for i, e in enumerate(_list(d, "enemies", strict)):
        path = f"enemies[{i}]"
        _check_keys(e, _ENEMY_KEYS, path, strict)
        name = _field(e, "type", path, str, required=True)
        r = _field(e, "row", path, int, required=True)
        c = _field(e, "col", path, int, required=True)
        ehp = _field(e, "hp", path, int, required=True)
        flags = [_field(e, k, path, bool) for k in ("stunned", "spawnedFromSiphon")]
        from_task = _field(e, "isFromScheduledTask", path, bool)
        kind = parse_enemy_name(name)
        if kind is None:
            if strict:
                raise ValueError(f"{path}.type: unknown enemy type {name!r}")
            continue  # Swift skips the entry silently
        if not _on_board(r, c):
            raise ValueError(f"{path}.row/col: ({r}, {c}) is off the board")
        _fits(ehp, _I8, f"{path}.hp", "int8")
        if strict and ehp <= 0:
            raise ValueError(f"{path}.hp: {ehp} must be positive")
        if n >= MAX_ENEMIES:
            raise ValueError(f"enemies: more than the pool capacity {MAX_ENEMIES}")
        en = s.enemies
        en.kind[n], en.pos[n], en.hp[n] = kind, (r, c), ehp
        en.last_known[n] = (r, c)
        en.stunned[n] = flags[0] is True
        en.from_siphon[n] = flags[1] is True
        en.from_task[n] = from_task is True
        en.alive[n] = True
        n += 1

    # Step 7: transmissions, in list order (flags always false).
    n = 0
    for i, t in enumerate(_list(d, "transmissions", strict)):
        path = f"transmissions[{i}]"
        _check_keys(t, _TRANSMISSION_KEYS, path, strict)
        r = _field(t, "row", path, int, required=True)
        c = _field(t, "col", path, int, required=True)
        turns = _field(t, "turnsRemaining", path, int, required=True)
        name = _field(t, "enemyType", path, str, required=True)
        kind = parse_enemy_name(name)
        if kind is None:
            if strict:
                raise ValueError(f"{path}.enemyType: unknown enemy type {name!r}")
            continue
        if not _on_board(r, c):
            raise ValueError(f"{path}.row/col: ({r}, {c}) is off the board")
        _fits(turns, _I8, f"{path}.turnsRemaining", "int8")
        if strict and turns < 1:
            raise ValueError(f"{path}.turnsRemaining: {turns} must be at least 1")
        if n >= MAX_TRANSMISSIONS:
            raise ValueError(f"transmissions: more than the pool capacity {MAX_TRANSMISSIONS}")
        tr = s.transmissions
        tr.pos[n], tr.countdown[n], tr.kind[n], tr.alive[n] = (r, c), turns, kind, True
        n += 1

    # Step 8: blocks, in list order.
    seen_blocks: dict[tuple[int, int], int] = {}
    for i, b in enumerate(_list(d, "blocks", strict)):
        path = f"blocks[{i}]"
        _check_keys(b, _BLOCK_KEYS, path, strict)
        r = _field(b, "row", path, int, required=True)
        c = _field(b, "col", path, int, required=True)
        btype = _field(b, "type", path, str, required=True)
        points = _field(b, "points", path, int)
        spawn = _field(b, "spawnCount", path, int)
        siphoned = _field(b, "siphoned", path, bool)
        prog_name = _field(b, "programType", path, str)
        prog_index = _field(b, "programActionIndex", path, int)
        if not _on_board(r, c):
            if strict:
                raise ValueError(f"{path}.row/col: ({r}, {c}) is off the board")
            continue  # Swift skips out-of-grid blocks
        if strict:
            if (r, c) in seen_blocks:
                raise ValueError(
                    f"{path}: cell ({r}, {c}) already holds blocks[{seen_blocks[(r, c)]}]"
                )
            if (r, c) == SETSTATE_EXIT:
                raise ValueError(f"{path}: cell {SETSTATE_EXIT} is the exit (setState forces it)")
        seen_blocks[(r, c)] = i
        if points is not _MISSING:
            _fits(points, _I8, f"{path}.points", "int8")
        if spawn is not _MISSING:
            _fits(spawn, _I8, f"{path}.spawnCount", "int8")
        if strict:
            for key, v in (("points", points), ("spawnCount", spawn)):
                if v is not _MISSING and v < 0:
                    raise ValueError(f"{path}.{key}: {v} is negative")
        if btype == "data":
            pts = SETSTATE_DATA_POINTS if points is _MISSING else points
            _put_block(g, r, c, BlockKind.DATA, pts, 0, pts if spawn is _MISSING else spawn)
        elif btype == "program":
            prog = None if prog_name is _MISSING else parse_program_name(prog_name)
            if prog is None:
                if strict:
                    what = "missing" if prog_name is _MISSING else f"unknown {prog_name!r}"
                    raise ValueError(f"{path}.programType: {what} program name")
            else:
                if strict and prog_index is not _MISSING and prog_index != prog + FIRST_PROGRAM:
                    raise ValueError(
                        f"{path}.programActionIndex: {prog_index} disagrees with programType "
                        f"{prog_name!r} ({prog + FIRST_PROGRAM}); Swift ignores the index"
                    )
                s_count = SETSTATE_PROGRAM_SPAWN if spawn is _MISSING else spawn
                _put_block(g, r, c, BlockKind.PROGRAM, 0, prog, s_count)
        elif strict:
            raise ValueError(
                f"{path}.type: {btype!r} is not 'data' or 'program' (Swift places nothing; "
                "question blocks need state_from_full_json)"
            )
        if siphoned is True:  # independently of the type
            g.siphoned[r, c] = True

    # Step 9: resources, in list order; first matching rule wins.
    seen_resource: dict[tuple[int, int], int] = {}
    seen_siphon: dict[tuple[int, int], int] = {}
    for i, res in enumerate(_list(d, "resources", strict)):
        path = f"resources[{i}]"
        _check_keys(res, _RESOURCE_KEYS, path, strict)
        r = _field(res, "row", path, int, required=True)
        c = _field(res, "col", path, int, required=True)
        credits = _field(res, "credits", path, int)
        energy = _field(res, "energy", path, int)
        pickup = _field(res, "dataSiphon", path, bool)
        if not _on_board(r, c):
            if strict:
                raise ValueError(f"{path}.row/col: ({r}, {c}) is off the board")
            continue
        for key, v in (("credits", credits), ("energy", energy)):
            if v is not _MISSING:
                _fits(v, _I8, f"{path}.{key}", "int8")
                if strict and v < 0:
                    raise ValueError(f"{path}.{key}: {v} is negative")
        has_c = credits is not _MISSING and credits > 0
        has_e = energy is not _MISSING and energy > 0
        if strict:
            if pickup is True and (has_c or has_e):
                raise ValueError(
                    f"{path}: dataSiphon with credits/energy (Swift keeps only the siphon; "
                    "use two entries)"
                )
            if has_c and has_e:
                raise ValueError(f"{path}: both credits and energy (Swift keeps only credits)")
            if pickup is True:
                if (r, c) in seen_blocks:
                    raise ValueError(
                        f"{path}.dataSiphon: would replace blocks[{seen_blocks[(r, c)]}]"
                    )
                if (r, c) == SETSTATE_EXIT:
                    raise ValueError(f"{path}.dataSiphon: cell {SETSTATE_EXIT} is the exit")
                if (r, c) in seen_siphon:
                    raise ValueError(
                        f"{path}.dataSiphon: duplicate of resources[{seen_siphon[(r, c)]}]"
                    )
                seen_siphon[(r, c)] = i
            elif has_c or has_e:
                if (r, c) in seen_resource:
                    raise ValueError(
                        f"{path}: cell ({r}, {c}) already has resources[{seen_resource[(r, c)]}]"
                    )
                seen_resource[(r, c)] = i
        if pickup is True:
            _clear_block(g, r, c)
            g.content[r, c] = Content.DATA_SIPHON
        elif has_c:
            g.resource_kind[r, c], g.resource_amount[r, c] = Resource.CREDITS, credits
        elif has_e:
            g.resource_kind[r, c], g.resource_amount[r, c] = Resource.ENERGY, energy

    # Step 10: the exit is always (5, 5); keeps resources and the siphoned flag.
    er, ec = SETSTATE_EXIT
    _clear_block(g, er, ec)
    g.content[er, ec] = Content.EXIT
    s.exit_pos[...] = SETSTATE_EXIT
    return _to_jax(env)


def _put_block(g, r: int, c: int, kind: int, points: int, program: int, spawn: int) -> None:
    g.content[r, c] = Content.BLOCK
    g.block_kind[r, c] = kind
    g.block_question[r, c] = False
    g.block_points[r, c] = points
    g.block_program[r, c] = program
    g.block_spawn[r, c] = spawn


def _clear_block(g, r: int, c: int) -> None:
    g.block_kind[r, c] = 0
    g.block_question[r, c] = False
    g.block_points[r, c] = 0
    g.block_program[r, c] = 0
    g.block_spawn[r, c] = 0


# --------------------------------------------------------------------------- observation JSON


def _host(state: EnvState) -> EnvState:
    s = jax.device_get(state)
    if np.ndim(s.game.stage) != 0:
        raise ValueError("expected a single (unbatched) state")
    return s


def _first_alive_at(pool, r: int, c: int, require_hp: bool = False) -> int | None:
    for k in range(len(pool.alive)):
        if not pool.alive[k]:
            continue
        if int(pool.pos[k, 0]) == r and int(pool.pos[k, 1]) == c:
            if require_hp and int(pool.hp[k]) <= 0:
                continue
            return k
    return None


def _owned_indices(s: GameState) -> list[int]:
    return [int(x) for x in s.owned_list[: int(s.num_owned)]]


def observation_json(state: EnvState) -> dict:
    """The observation object of interface §5.4 (visibility: interface §3.5)."""
    s = _host(state).game
    pr, pc = (int(x) for x in s.player.pos)
    show = bool(s.show_flag)
    g = s.grid
    cells = []
    hints: list[dict] = []
    for r in range(GRID_SIZE):
        row = []
        for c in range(GRID_SIZE):
            content = int(g.content[r, c])
            cell: dict[str, Any] = {
                "row": r,
                "col": c,
                "isDataSiphon": content == Content.DATA_SIPHON,
                "isExit": content == Content.EXIT,
                "siphonCenter": bool(g.center[r, c]),
            }
            k = _first_alive_at(s.enemies, r, c, require_hp=True)
            if k is not None:
                kind = int(s.enemies.kind[k])
                visible = kind != EnemyKind.CRYPTOG or r == pr or c == pc or show
                if visible:
                    cell["enemy"] = {
                        "type": ENEMY_NAMES[kind],
                        "hp": int(s.enemies.hp[k]),
                        "isStunned": bool(s.enemies.stunned[k]),
                        "spawnedFromSiphon": bool(s.enemies.from_siphon[k]),
                    }
                else:
                    lr, lc = (int(x) for x in s.enemies.last_known[k])
                    hints.append({"row": lr, "col": lc})
            if content == Content.BLOCK:
                siphoned = bool(g.siphoned[r, c])
                block: dict[str, Any]
                if bool(g.block_question[r, c]):
                    block = {"blockType": "question", "isSiphoned": siphoned}
                elif int(g.block_kind[r, c]) == BlockKind.DATA:
                    block = {
                        "blockType": "data",
                        "isSiphoned": siphoned,
                        "points": int(g.block_points[r, c]),
                        "transmissionSpawnCount": int(g.block_spawn[r, c]),
                    }
                else:
                    prog = int(g.block_program[r, c])
                    block = {
                        "blockType": "program",
                        "isSiphoned": siphoned,
                        "points": 0,
                        "programType": PROGRAM_NAMES[prog],
                        "programActionIndex": prog + FIRST_PROGRAM,
                        "transmissionSpawnCount": int(g.block_spawn[r, c]),
                    }
                cell["block"] = block
            t = _first_alive_at(s.transmissions, r, c)
            if t is not None:
                trans: dict[str, Any] = {"turnsUntilSpawn": int(s.transmissions.countdown[t])}
                if show:
                    trans["enemyType"] = ENEMY_NAMES[int(s.transmissions.kind[t])]
                cell["transmission"] = trans
            visible_res = content != Content.BLOCK or bool(g.siphoned[r, c])
            amount = int(g.resource_amount[r, c])
            kind_res = int(g.resource_kind[r, c])
            if visible_res and amount > 0 and kind_res == Resource.CREDITS:
                cell["credits"] = amount
            if visible_res and amount > 0 and kind_res == Resource.ENERGY:
                cell["energy"] = amount
            row.append(cell)
        cells.append(row)
    return {
        "playerRow": pr,
        "playerCol": pc,
        "playerHP": int(s.player.hp),
        "credits": int(s.player.credits),
        "energy": int(s.player.energy),
        "dataSiphons": int(s.player.siphons),
        "stage": int(s.stage),
        "turn": int(s.turn),
        "baseAttack": int(s.player.attack),
        "score": int(s.player.score),
        "showActivated": show,
        "scheduledTasksDisabled": bool(s.calm_flag),
        "ownedPrograms": [p + FIRST_PROGRAM for p in _owned_indices(s)],
        "cells": cells,
        "cryptogHints": hints,
    }


def observation_from_json(obs: dict) -> dict[str, np.ndarray]:
    """RL tensors from an observation JSON, exactly as interface §3.7 prescribes.

    Returns ``{"player": f32[10], "programs": f32[23], "grid": f32[6,6,42]}``;
    arithmetic in float64, stored as float32 (the original Python client).
    """
    player = np.zeros(PLAYER_FEATURES, np.float64)
    player[0] = obs["playerRow"] / 5
    player[1] = obs["playerCol"] / 5
    player[2] = obs["playerHP"] / 3
    player[3] = min(obs["credits"] / 50, 1)
    player[4] = min(obs["energy"] / 50, 1)
    player[5] = (obs["stage"] - 1) / 7
    player[6] = obs["dataSiphons"] / 10
    player[7] = (obs["baseAttack"] - 1) / 2
    player[8] = 1.0 if obs.get("showActivated", False) else 0.0
    player[9] = 1.0 if obs.get("scheduledTasksDisabled", False) else 0.0
    programs = np.zeros(NUM_PROGRAMS, np.float64)
    for a in obs["ownedPrograms"]:
        if FIRST_PROGRAM <= a < NUM_ACTIONS:
            programs[a - FIRST_PROGRAM] = 1
    grid = np.zeros((GRID_SIZE, GRID_SIZE, GRID_CHANNELS), np.float64)
    for r in range(GRID_SIZE):
        for c in range(GRID_SIZE):
            cell, f = obs["cells"][r][c], grid[r, c]
            if "enemy" in cell:
                e = cell["enemy"]
                f[ENEMY_NAMES.index(e["type"])] = 1
                f[4] = e["hp"] / 3
                f[5] = 1.0 if e["isStunned"] else 0.0
                f[6] = 1.0 if e.get("spawnedFromSiphon", False) else 0.0
            if "block" in cell:
                b = cell["block"]
                f[7 + ("data", "program", "question").index(b["blockType"])] = 1
                f[10] = b.get("points", 0) / 9
                f[11] = 1.0 if b["isSiphoned"] else 0.0
                a = b.get("programActionIndex")
                if a is not None and FIRST_PROGRAM <= a < NUM_ACTIONS:
                    f[12 + a - FIRST_PROGRAM] = 1
                f[35] = b.get("transmissionSpawnCount", 0) / 9
            if "transmission" in cell:
                f[36] = min(cell["transmission"]["turnsUntilSpawn"] / 4, 1)
            f[37] = cell.get("credits", 0) / 3
            f[38] = cell.get("energy", 0) / 3
            f[39] = 1.0 if cell["isDataSiphon"] else 0.0
            f[40] = 1.0 if cell["isExit"] else 0.0
            f[41] = 1.0 if cell["siphonCenter"] else 0.0
    return {
        "player": player.astype(np.float32),
        "programs": programs.astype(np.float32),
        "grid": grid.astype(np.float32),
    }


# --------------------------------------------------------------------------- state -> setState JSON


def state_to_json(state: EnvState) -> dict:
    """The ``setState`` object that rebuilds ``state`` (inverse of ``state_from_json``).

    Raises ``ValueError`` listing what the ``setState`` schema cannot express
    (question blocks, an exit other than (5,5), scheduling counters other than
    12/12, pending spawns, flags, histories, ...).
    """
    env = _host(state)
    problems = _inexpressible(env)
    s = env.game
    if problems:
        raise ValueError("state not expressible by setState: " + "; ".join(problems))
    pr, pc = (int(x) for x in s.player.pos)
    out: dict[str, Any] = {
        "player": {
            "row": pr,
            "col": pc,
            "hp": int(s.player.hp),
            "credits": int(s.player.credits),
            "energy": int(s.player.energy),
            "dataSiphons": int(s.player.siphons),
            "attackDamage": int(s.player.attack),
            "score": int(s.player.score),
        },
        "stage": int(s.stage),
        "turn": int(s.turn),
        "showActivated": bool(s.show_flag),
        "scheduledTasksDisabled": bool(s.calm_flag),
        "ownedPrograms": [p + FIRST_PROGRAM for p in _owned_indices(s)],
    }
    en = s.enemies
    out["enemies"] = [
        {
            "type": ENEMY_NAMES[int(en.kind[k])],
            "row": int(en.pos[k, 0]),
            "col": int(en.pos[k, 1]),
            "hp": int(en.hp[k]),
            "stunned": bool(en.stunned[k]),
            "spawnedFromSiphon": bool(en.from_siphon[k]),
            "isFromScheduledTask": bool(en.from_task[k]),
        }
        for k in range(int(en.alive.sum()))
    ]
    tr = s.transmissions
    out["transmissions"] = [
        {
            "row": int(tr.pos[k, 0]),
            "col": int(tr.pos[k, 1]),
            "turnsRemaining": int(tr.countdown[k]),
            "enemyType": ENEMY_NAMES[int(tr.kind[k])],
        }
        for k in range(int(tr.alive.sum()))
    ]
    g = s.grid
    blocks, resources = [], []
    for r in range(GRID_SIZE):
        for c in range(GRID_SIZE):
            content = int(g.content[r, c])
            if content == Content.BLOCK:
                b: dict[str, Any] = {"row": r, "col": c}
                if int(g.block_kind[r, c]) == BlockKind.DATA:
                    b |= {"type": "data", "points": int(g.block_points[r, c])}
                else:
                    b |= {
                        "type": "program",
                        "programType": PROGRAM_NAMES[int(g.block_program[r, c])],
                    }
                b["spawnCount"] = int(g.block_spawn[r, c])
                b["siphoned"] = bool(g.siphoned[r, c])
                blocks.append(b)
            if content == Content.DATA_SIPHON:
                resources.append({"row": r, "col": c, "dataSiphon": True})
            amount, kind = int(g.resource_amount[r, c]), int(g.resource_kind[r, c])
            if amount > 0 and kind == Resource.CREDITS:
                resources.append({"row": r, "col": c, "credits": amount})
            if amount > 0 and kind == Resource.ENERGY:
                resources.append({"row": r, "col": c, "energy": amount})
    out["blocks"] = blocks
    out["resources"] = resources
    return out


def _inexpressible(env: EnvState) -> list[str]:
    s = env.game
    g = s.grid
    problems = []
    if tuple(int(x) for x in s.exit_pos) != SETSTATE_EXIT:
        problems.append("exit_pos is not (5, 5)")
    exits = [(r, c) for r in range(6) for c in range(6) if g.content[r, c] == Content.EXIT]
    if exits != [SETSTATE_EXIT]:
        problems.append(f"exit cells {exits} are not exactly [(5, 5)]")
    if g.block_question.any():
        problems.append("question blocks")
    if g.center.any():
        problems.append("siphon-centre marks")
    if (g.siphoned & (g.content != Content.BLOCK)).any():
        problems.append("siphoned non-block cells")
    if ((g.resource_amount <= 0) & (g.resource_kind != Resource.NONE)).any():
        problems.append("empty resource stacks")
    if int(s.task_interval) != 12 or int(s.next_task_turn) != 12:
        problems.append("scheduled-task interval/next turn other than 12/12")
    if int(s.pending_siphon_spawns) != 0:
        problems.append("pending siphon spawns")
    if bool(s.step_flag):
        problems.append("STEP flag")
    if int(s.atk_uses) != 0:
        problems.append("ATK+ uses")
    if int(env.history.size) != 0:
        problems.append("UNDO history")
    en, tr = s.enemies, s.transmissions
    n_e, n_t = int(en.alive.sum()), int(tr.alive.sum())
    if not en.alive[:n_e].all() or not tr.alive[:n_t].all():
        problems.append("pools not compact")
    if (en.disabled[:n_e] != 0).any():
        problems.append("disabled enemies")
    if (en.last_known[:n_e] != en.pos[:n_e]).any():
        problems.append("cryptog hints away from the cryptog")
    if (tr.from_task[:n_t] | tr.from_siphon[:n_t]).any():
        problems.append("transmission provenance flags")
    if not 0 <= int(s.player.hp) <= MAX_HP:
        problems.append("player hp outside 0..3")
    return problems


# --------------------------------------------------------------------------- full state JSON

_CONTENT_NAMES = {Content.EMPTY: "empty", Content.BLOCK: "block", Content.DATA_SIPHON: "dataSiphon",
                  Content.EXIT: "exit"}  # fmt: skip
_RESOURCE_NAMES = {Resource.NONE: "none", Resource.CREDITS: "credits", Resource.ENERGY: "energy"}


def full_state_json(state: EnvState, *, include_history: bool = True) -> dict:
    """Every field of ``state`` in the Swift ``getFullState`` schema (specs/swift.md).

    The history is listed oldest first (Swift's array order). JAX-only fields
    (``time``, ``overflow``, the ring's ``lost``/``top``) travel under the key
    ``"jax"``, which the Swift decoder ignores. ``state_from_full_json``
    inverts it.
    """
    env = _host(state)
    s = env.game
    out = {
        "stage": int(s.stage),
        "turn": int(s.turn),
        "taskInterval": int(s.task_interval),
        "nextTaskTurn": int(s.next_task_turn),
        "pendingSiphonSpawns": int(s.pending_siphon_spawns),
        "stepFlag": bool(s.step_flag),
        "exitPos": {"row": int(s.exit_pos[0]), "col": int(s.exit_pos[1])},
        **_snapshot_json(s),
        "historyDepth": int(env.history.size),
        "jax": {
            "time": int(env.time),
            "overflow": bool(s.overflow),
            "historyLost": int(env.history.lost),
            "historyTop": int(env.history.top),
        },
    }
    if include_history:
        h = env.history
        size, top = int(h.size), int(h.top)
        slots = [(top - size + k) % h.depth for k in range(size)]
        out["history"] = [
            _snapshot_json(jax.tree.map(lambda x, i=i: x[i], h.snapshots)) for i in slots
        ]
    return out


def _snapshot_json(s) -> dict:
    """The fields shared by a state and a snapshot (Swift ``snapshotJSON``)."""
    p = s.player
    en, tr = s.enemies, s.transmissions
    return {
        "player": {
            "row": int(p.pos[0]),
            "col": int(p.pos[1]),
            "hp": int(p.hp),
            "credits": int(p.credits),
            "energy": int(p.energy),
            "dataSiphons": int(p.siphons),
            "score": int(p.score),
            "attackDamage": int(p.attack),
        },
        "turn": int(s.turn),
        "ownedPrograms": [int(x) + FIRST_PROGRAM for x in s.owned_list[: int(s.num_owned)]],
        "enemies": [
            {
                "type": ENEMY_NAMES[int(en.kind[k])],
                "row": int(en.pos[k, 0]),
                "col": int(en.pos[k, 1]),
                "hp": int(en.hp[k]),
                "disabled": int(_opt(en, "disabled", k, 0)),
                "stunned": bool(_opt(en, "stunned", k, False)),
                "lastKnownRow": int(en.last_known[k, 0]),
                "lastKnownCol": int(en.last_known[k, 1]),
                "fromTask": bool(_opt(en, "from_task", k, False)),
                "fromSiphon": bool(_opt(en, "from_siphon", k, False)),
            }
            for k in range(len(en.alive))
            if en.alive[k]
        ],
        "transmissions": [
            {
                "row": int(tr.pos[k, 0]),
                "col": int(tr.pos[k, 1]),
                "countdown": int(tr.countdown[k]),
                "enemyType": ENEMY_NAMES[int(tr.kind[k])],
                "fromTask": bool(_opt(tr, "from_task", k, False)),
                "fromSiphon": bool(_opt(tr, "from_siphon", k, False)),
            }
            for k in range(len(tr.alive))
            if tr.alive[k]
        ],
        "cells": [[_cell_json(s.grid, r, c) for c in range(GRID_SIZE)] for r in range(GRID_SIZE)],
        "showFlag": bool(s.show_flag),
        "calmFlag": bool(s.calm_flag),
        "atkUsesThisStage": int(s.atk_uses),
    }


def _opt(pool, name: str, k: int, default):
    """``pool.name[k]``, or ``default`` for fields a snapshot does not store (types.SnapEnemies)."""
    return getattr(pool, name)[k] if hasattr(pool, name) else default


def _cell_json(g, r: int, c: int) -> dict:
    content = int(g.content[r, c])
    out: dict[str, Any] = {"content": _CONTENT_NAMES[Content(content)]}
    if content == Content.BLOCK:
        is_program = int(g.block_kind[r, c]) == BlockKind.PROGRAM
        out["block"] = {
            "kind": "program" if is_program else "data",
            "points": int(g.block_points[r, c]),
            "program": int(g.block_program[r, c]) + FIRST_PROGRAM if is_program else None,
            "spawnCount": int(g.block_spawn[r, c]),
            "isQuestion": bool(g.block_question[r, c]),
        }
    kind = int(g.resource_kind[r, c])
    out["resource"] = _RESOURCE_NAMES[Resource(kind)]
    out["amount"] = int(g.resource_amount[r, c]) if kind != Resource.NONE else 0
    out["siphoned"] = bool(g.siphoned[r, c])
    out["center"] = bool(g.center[r, c])
    return out


class _Reader:
    """Typed, range-checked access to one JSON object; errors name the field path."""

    def __init__(self, d: Any, path: str):
        if not isinstance(d, dict):
            raise ValueError(f"{path}: expected an object")
        self.d, self.path = d, path

    def int(self, key: str, bounds=_I32, storage: str = "int32") -> int:
        v = _field(self.d, key, self.path, int, required=True)
        return _fits(v, bounds, f"{self.path}.{key}", storage)

    def bool(self, key: str) -> bool:
        return _field(self.d, key, self.path, bool, required=True)

    def str(self, key: str) -> str:
        return _field(self.d, key, self.path, str, required=True)

    def list(self, key: str) -> list:
        v = self.d.get(key)
        if not isinstance(v, list):
            raise ValueError(f"{self.path}.{key}: expected a list")
        return v

    def obj(self, key: str) -> _Reader:
        return _Reader(self.d.get(key), f"{self.path}.{key}")

    def pos(self, rk: str = "row", ck: str = "col") -> tuple[int, int]:
        r, c = self.int(rk), self.int(ck)
        if not _on_board(r, c):
            raise ValueError(f"{self.path}.{rk}/{ck}: ({r}, {c}) is off the board")
        return r, c


def state_from_full_json(d: dict, *, history_depth: int = HISTORY_DEPTH) -> EnvState:
    """Inverse of ``full_state_json`` (Swift ``setFullState`` schema, specs/swift.md).

    Every key is required except ``history`` (absent: empty) and ``jax``
    (absent: time 0, no overflow). A history longer than ``history_depth``
    keeps the newest snapshots and counts the rest in ``history.lost``.
    """
    depth = check_history_depth(history_depth)
    f = _Reader(d, "state")
    env = _numpy_blank(depth)
    s = env.game
    s.stage[...] = f.int("stage", _I8, "int8")
    if int(s.stage) < 1:
        raise ValueError("state.stage: must be >= 1")
    s.task_interval[...] = f.int("taskInterval")
    s.next_task_turn[...] = f.int("nextTaskTurn")
    s.pending_siphon_spawns[...] = f.int("pendingSiphonSpawns")
    s.step_flag[...] = f.bool("stepFlag")
    s.exit_pos[...] = f.obj("exitPos").pos()
    _read_snapshot(f, s)
    extras = d.get("jax")
    if extras is not None:
        x = _Reader(extras, "state.jax")
        env.time[...] = x.int("time")
        s.overflow[...] = x.bool("overflow")
        lost, top = x.int("historyLost"), x.int("historyTop", (0, depth - 1), "ring")
    else:
        lost, top = 0, None
    items = d.get("history") or []
    if not isinstance(items, list):
        raise ValueError("state.history: expected a list")
    keep = items[-depth:]
    lost += len(items) - len(keep)
    n = len(keep)
    top = n % depth if top is None else top
    snaps = env.history.snapshots
    blank_snap = jax.tree.map(lambda x: np.array(x[0]), snaps)  # before any slot is written
    for k, item in enumerate(keep):
        slot = (top - n + k) % depth
        snap = jax.tree.map(np.copy, blank_snap)
        snap.owned_list[...] = -1  # padding, as in a live state
        _read_snapshot(_Reader(item, f"state.history[{len(items) - n + k}]"), snap)
        jax.tree.map(lambda buf, x, slot=slot: buf.__setitem__(slot, x), snaps, snap)
    env.history.size[...] = n
    env.history.top[...] = top
    env.history.lost[...] = lost
    return _to_jax(env)


def _read_snapshot(f: _Reader, s) -> None:
    """Fill the snapshot fields (player, turn, programs, pools, grid, flags) of ``s``."""
    p = f.obj("player")
    s.player.pos[...] = p.pos()
    s.player.hp[...] = p.int("hp", _I8, "int8")
    s.player.credits[...] = p.int("credits")
    s.player.energy[...] = p.int("energy")
    s.player.siphons[...] = p.int("dataSiphons")
    s.player.score[...] = p.int("score")
    s.player.attack[...] = p.int("attackDamage", _I8, "int8")
    s.turn[...] = f.int("turn")
    s.show_flag[...] = f.bool("showFlag")
    s.calm_flag[...] = f.bool("calmFlag")
    s.atk_uses[...] = f.int("atkUsesThisStage", _I8, "int8")
    owned = f.list("ownedPrograms")
    if len(owned) > MAX_OWNED_LIST:
        raise ValueError(f"{f.path}.ownedPrograms: more than {MAX_OWNED_LIST} entries")
    for k, a in enumerate(owned):
        if isinstance(a, bool) or not isinstance(a, int) or not FIRST_PROGRAM <= a < NUM_ACTIONS:
            raise ValueError(f"{f.path}.ownedPrograms[{k}]: not a program action index (5..27)")
        s.owned_list[k] = a - FIRST_PROGRAM
    s.num_owned[...] = len(owned)
    enemies = f.list("enemies")
    if len(enemies) > MAX_ENEMIES:
        raise ValueError(f"{f.path}.enemies: more than the pool capacity {MAX_ENEMIES}")
    for k, item in enumerate(enemies):
        e, en = _Reader(item, f"{f.path}.enemies[{k}]"), s.enemies
        kind = parse_enemy_name(e.str("type"))
        if kind is None:
            raise ValueError(f"{e.path}.type: unknown enemy type {e.d['type']!r}")
        en.kind[k], en.pos[k] = kind, e.pos()
        en.hp[k] = e.int("hp", _I8, "int8")
        en.last_known[k] = e.pos("lastKnownRow", "lastKnownCol")
        en.alive[k] = True
        values = dict(
            disabled=e.int("disabled", _I8, "int8"),
            stunned=e.bool("stunned"),
            from_task=e.bool("fromTask"),
            from_siphon=e.bool("fromSiphon"),
        )
        for name, v in values.items():  # a snapshot keeps none of these (types.SnapEnemies)
            if hasattr(en, name):
                getattr(en, name)[k] = v
    trans = f.list("transmissions")
    if len(trans) > MAX_TRANSMISSIONS:
        raise ValueError(f"{f.path}.transmissions: more than the pool capacity {MAX_TRANSMISSIONS}")
    for k, item in enumerate(trans):
        t, tr = _Reader(item, f"{f.path}.transmissions[{k}]"), s.transmissions
        kind = parse_enemy_name(t.str("enemyType"))
        if kind is None:
            raise ValueError(f"{t.path}.enemyType: unknown enemy type {t.d['enemyType']!r}")
        tr.pos[k], tr.kind[k] = t.pos(), kind
        tr.countdown[k] = t.int("countdown", _I8, "int8")
        tr.alive[k] = True
        for name, v in (("from_task", t.bool("fromTask")), ("from_siphon", t.bool("fromSiphon"))):
            if hasattr(tr, name):
                getattr(tr, name)[k] = v
    rows = f.list("cells")
    g = s.grid
    if len(rows) != GRID_SIZE or any(not isinstance(r, list) or len(r) != GRID_SIZE for r in rows):
        raise ValueError(f"{f.path}.cells: expected 6 rows of 6 cells")
    for r in range(GRID_SIZE):
        for c in range(GRID_SIZE):
            cell = _Reader(rows[r][c], f"{f.path}.cells[{r}][{c}]")
            names = {v: k for k, v in _CONTENT_NAMES.items()}
            content = names.get(cell.str("content"))
            if content is None:
                raise ValueError(f"{cell.path}.content: expected empty, block, dataSiphon or exit")
            g.content[r, c] = content
            if content == Content.BLOCK:
                b = cell.obj("block")
                kind = b.str("kind")
                if kind not in ("data", "program"):
                    raise ValueError(f"{b.path}.kind: expected data or program")
                g.block_kind[r, c] = BlockKind.DATA if kind == "data" else BlockKind.PROGRAM
                g.block_points[r, c] = b.int("points", _I8, "int8")
                g.block_spawn[r, c] = b.int("spawnCount", _I8, "int8")
                g.block_question[r, c] = b.bool("isQuestion")
                if kind == "program":
                    a = b.int("program")
                    if not FIRST_PROGRAM <= a < NUM_ACTIONS:
                        raise ValueError(f"{b.path}.program: not a program action index (5..27)")
                    g.block_program[r, c] = a - FIRST_PROGRAM
            rnames = {v: k for k, v in _RESOURCE_NAMES.items()}
            res = rnames.get(cell.str("resource"))
            if res is None:
                raise ValueError(f"{cell.path}.resource: expected none, credits or energy")
            g.resource_kind[r, c] = res
            g.resource_amount[r, c] = 0 if res == Resource.NONE else cell.int("amount", _I8, "int8")
            g.siphoned[r, c] = cell.bool("siphoned")
            g.center[r, c] = cell.bool("center")


__all__ = [
    "full_state_json",
    "observation_from_json",
    "observation_json",
    "parse_enemy_name",
    "parse_program_name",
    "state_from_full_json",
    "state_from_json",
    "state_to_json",
]
