"""Our Swift binary's ``getFullState`` schema <-> JAX ``EnvState`` (specs/swift.md).

``to_jax`` rebuilds an exact ``EnvState`` (for resync after a random step);
``from_jax`` writes a JAX state in the Swift schema (for the hidden-state
comparison). Lists (enemies, transmissions, history) are list-ordered in
Swift and compact pools / a ring buffer in JAX; both directions convert.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from hackmatrix_env.constants import (
    ENEMY_NAMES,
    FIRST_PROGRAM,
    GRID_SIZE,
    HISTORY_DEPTH,
    BlockKind,
    Content,
    Resource,
)
from hackmatrix_env.types import EnvState, blank_state

_CONTENT = {"empty": Content.EMPTY, "block": Content.BLOCK, "dataSiphon": Content.DATA_SIPHON,
            "exit": Content.EXIT}  # fmt: skip
_CONTENT_NAME = {int(v): k for k, v in _CONTENT.items()}
_RES = {"none": Resource.NONE, "credits": Resource.CREDITS, "energy": Resource.ENERGY}
_RES_NAME = {int(v): k for k, v in _RES.items()}


def _host(x: Any) -> Any:
    return jax.tree.map(lambda a: np.array(a), jax.device_get(x))


# ----------------------------------------------------------------------------- swift -> jax


def _player(p, d):
    return p.replace(
        pos=np.array([d["row"], d["col"]], np.int8),
        hp=np.int8(d["hp"]),
        credits=np.int32(d["credits"]),
        energy=np.int32(d["energy"]),
        siphons=np.int32(d["dataSiphons"]),
        score=np.int32(d["score"]),
        attack=np.int8(d["attackDamage"]),
    )


def _enemies(pool, items, snapshot: bool):
    f = {k: np.array(getattr(pool, k)) for k in pool.__dataclass_fields__}
    for k in f:
        f[k][...] = 0
    if len(items) > len(f["alive"]):
        raise ValueError(f"{len(items)} enemies exceed the pool ({len(f['alive'])})")
    for i, e in enumerate(items):
        f["kind"][i] = ENEMY_NAMES.index(e["type"])
        f["pos"][i] = (e["row"], e["col"])
        f["hp"][i] = e["hp"]
        f["last_known"][i] = (e["lastKnownRow"], e["lastKnownCol"])
        f["alive"][i] = True
        if not snapshot:
            f["disabled"][i] = e["disabled"]
            f["stunned"][i] = e["stunned"]
            f["from_task"][i] = e["fromTask"]
            f["from_siphon"][i] = e["fromSiphon"]
    return type(pool)(**f)


def _transmissions(pool, items, snapshot: bool):
    f = {k: np.array(getattr(pool, k)) for k in pool.__dataclass_fields__}
    for k in f:
        f[k][...] = 0
    if len(items) > len(f["alive"]):
        raise ValueError(f"{len(items)} transmissions exceed the pool ({len(f['alive'])})")
    for i, t in enumerate(items):
        f["pos"][i] = (t["row"], t["col"])
        f["countdown"][i] = t["countdown"]
        f["kind"][i] = ENEMY_NAMES.index(t["enemyType"])
        f["alive"][i] = True
        if not snapshot:
            f["from_task"][i] = t["fromTask"]
            f["from_siphon"][i] = t["fromSiphon"]
    return type(pool)(**f)


def _grid(g, cells):
    f = {k: np.zeros_like(np.array(getattr(g, k))) for k in g.__dataclass_fields__}
    for r in range(GRID_SIZE):
        for c in range(GRID_SIZE):
            cell = cells[r][c]
            f["content"][r, c] = _CONTENT[cell["content"]]
            b = cell.get("block")
            if cell["content"] == "block" and b is not None:
                f["block_kind"][r, c] = BlockKind.DATA if b["kind"] == "data" else BlockKind.PROGRAM
                f["block_question"][r, c] = b["isQuestion"]
                f["block_points"][r, c] = b["points"]
                if b["kind"] == "program":
                    f["block_program"][r, c] = b["program"] - FIRST_PROGRAM
                f["block_spawn"][r, c] = b["spawnCount"]
            f["resource_kind"][r, c] = _RES[cell["resource"]]
            f["resource_amount"][r, c] = cell["amount"] if cell["resource"] != "none" else 0
            f["siphoned"][r, c] = cell["siphoned"]
            f["center"][r, c] = cell["center"]
    return type(g)(**f)


def _owned(template, items):
    arr = np.full_like(np.array(template), -1)
    if len(items) > len(arr):
        raise ValueError(f"{len(items)} owned programs exceed the list ({len(arr)})")
    for i, a in enumerate(items):
        arr[i] = a - FIRST_PROGRAM
    return arr, np.int8(len(items))


def _snapshot(tpl, d):
    owned, num = _owned(tpl.owned_list, d["ownedPrograms"])
    return tpl.replace(
        player=_player(tpl.player, d["player"]),
        turn=np.int32(d["turn"]),
        owned_list=owned,
        num_owned=num,
        enemies=_enemies(tpl.enemies, d["enemies"], snapshot=True),
        transmissions=_transmissions(tpl.transmissions, d["transmissions"], snapshot=True),
        grid=_grid(tpl.grid, d["cells"]),
        show_flag=np.bool_(d["showFlag"]),
        calm_flag=np.bool_(d["calmFlag"]),
        atk_uses=np.int8(d["atkUsesThisStage"]),
    )


_BLANK = None


def _blank() -> EnvState:
    global _BLANK
    if _BLANK is None:
        _BLANK = _host(blank_state())
    return _BLANK


def to_jax(d: dict[str, Any], time: int = 0) -> EnvState:
    """EnvState from a Swift ``getFullState`` reply (history included if present)."""
    s = _blank()
    owned, num = _owned(s.owned_list, d["ownedPrograms"])
    hist = s.history
    items = d.get("history") or []
    if items:
        keep = items[-HISTORY_DEPTH:]
        tpl = jax.tree.map(lambda x: x[0], hist.snapshots)
        snaps = [_snapshot(tpl, h) for h in keep]
        buf = jax.tree.map(lambda b, *xs: np.stack(list(xs) + [b[0]] * (HISTORY_DEPTH - len(xs))),
                           hist.snapshots, *snaps)  # fmt: skip
        n = len(keep)
        hist = hist.replace(
            snapshots=buf,
            top=np.int32(n % HISTORY_DEPTH),
            size=np.int32(n),
            lost=np.int32(len(items) - n),
        )
    elif d.get("historyDepth", 0):
        raise ValueError("full state has historyDepth > 0 but no history (use includeHistory)")
    state = s.replace(
        time=np.int32(time),
        player=_player(s.player, d["player"]),
        grid=_grid(s.grid, d["cells"]),
        enemies=_enemies(s.enemies, d["enemies"], snapshot=False),
        transmissions=_transmissions(s.transmissions, d["transmissions"], snapshot=False),
        owned_list=owned,
        num_owned=num,
        stage=np.int8(d["stage"]),
        turn=np.int32(d["turn"]),
        task_interval=np.int32(d["taskInterval"]),
        next_task_turn=np.int32(d["nextTaskTurn"]),
        pending_siphon_spawns=np.int32(d["pendingSiphonSpawns"]),
        show_flag=np.bool_(d["showFlag"]),
        calm_flag=np.bool_(d["calmFlag"]),
        step_flag=np.bool_(d["stepFlag"]),
        atk_uses=np.int8(d["atkUsesThisStage"]),
        exit_pos=np.array([d["exitPos"]["row"], d["exitPos"]["col"]], np.int8),
        history=hist,
    )
    return jax.tree.map(jax.numpy.asarray, state)


# ----------------------------------------------------------------------------- jax -> swift


def _player_json(p) -> dict[str, Any]:
    return {
        "row": int(p.pos[0]), "col": int(p.pos[1]), "hp": int(p.hp), "credits": int(p.credits),
        "energy": int(p.energy), "dataSiphons": int(p.siphons), "score": int(p.score),
        "attackDamage": int(p.attack),
    }  # fmt: skip


def _enemies_json(e, snapshot: bool) -> list[dict[str, Any]]:
    out = []
    for i in range(len(e.alive)):
        if not bool(e.alive[i]):
            continue
        x = {
            "type": ENEMY_NAMES[int(e.kind[i])], "row": int(e.pos[i, 0]), "col": int(e.pos[i, 1]),
            "hp": int(e.hp[i]), "lastKnownRow": int(e.last_known[i, 0]),
            "lastKnownCol": int(e.last_known[i, 1]),
        }  # fmt: skip
        if snapshot:
            x.update(disabled=0, stunned=False, fromTask=False, fromSiphon=False)
        else:
            x.update(
                disabled=int(e.disabled[i]), stunned=bool(e.stunned[i]),
                fromTask=bool(e.from_task[i]), fromSiphon=bool(e.from_siphon[i]),
            )  # fmt: skip
        out.append(x)
    return out


def _transmissions_json(t, snapshot: bool) -> list[dict[str, Any]]:
    out = []
    for i in range(len(t.alive)):
        if not bool(t.alive[i]):
            continue
        x = {
            "row": int(t.pos[i, 0]), "col": int(t.pos[i, 1]), "countdown": int(t.countdown[i]),
            "enemyType": ENEMY_NAMES[int(t.kind[i])],
        }  # fmt: skip
        if snapshot:
            x.update(fromTask=False, fromSiphon=False)
        else:
            x.update(fromTask=bool(t.from_task[i]), fromSiphon=bool(t.from_siphon[i]))
        out.append(x)
    return out


def _cells_json(g) -> list[list[dict[str, Any]]]:
    rows = []
    for r in range(GRID_SIZE):
        row = []
        for c in range(GRID_SIZE):
            content = int(g.content[r, c])
            cell: dict[str, Any] = {"content": _CONTENT_NAME[content]}
            if content == Content.BLOCK:
                prog = int(g.block_kind[r, c]) == BlockKind.PROGRAM
                cell["block"] = {
                    "kind": "program" if prog else "data",
                    "points": int(g.block_points[r, c]),
                    "program": int(g.block_program[r, c]) + FIRST_PROGRAM if prog else None,
                    "spawnCount": int(g.block_spawn[r, c]),
                    "isQuestion": bool(g.block_question[r, c]),
                }
            kind = int(g.resource_kind[r, c])
            cell["resource"] = _RES_NAME[kind]
            cell["amount"] = int(g.resource_amount[r, c]) if kind != Resource.NONE else 0
            cell["siphoned"] = bool(g.siphoned[r, c])
            cell["center"] = bool(g.center[r, c])
            row.append(cell)
        rows.append(row)
    return rows


def _owned_json(owned, num) -> list[int]:
    return [int(x) + FIRST_PROGRAM for x in np.asarray(owned)[: int(num)]]


def from_jax(state: EnvState, include_history: bool = False) -> dict[str, Any]:
    """A JAX state in the Swift ``getFullState`` schema."""
    s = _host(state)
    h = s.history
    d: dict[str, Any] = {
        "stage": int(s.stage), "turn": int(s.turn), "taskInterval": int(s.task_interval),
        "nextTaskTurn": int(s.next_task_turn), "pendingSiphonSpawns": int(s.pending_siphon_spawns),
        "showFlag": bool(s.show_flag), "calmFlag": bool(s.calm_flag), "stepFlag": bool(s.step_flag),
        "atkUsesThisStage": int(s.atk_uses),
        "exitPos": {"row": int(s.exit_pos[0]), "col": int(s.exit_pos[1])},
        "ownedPrograms": _owned_json(s.owned_list, s.num_owned),
        "player": _player_json(s.player),
        "enemies": _enemies_json(s.enemies, snapshot=False),
        "transmissions": _transmissions_json(s.transmissions, snapshot=False),
        "cells": _cells_json(s.grid),
        "historyDepth": int(h.size) + int(h.lost),
    }  # fmt: skip
    if include_history:
        snaps = []
        size, top = int(h.size), int(h.top)
        for i in range(size):
            slot = (top - size + i) % HISTORY_DEPTH
            sn = jax.tree.map(lambda x, slot=slot: x[slot], h.snapshots)
            snaps.append(
                {
                    "player": _player_json(sn.player),
                    "turn": int(sn.turn),
                    "ownedPrograms": _owned_json(sn.owned_list, sn.num_owned),
                    "enemies": _enemies_json(sn.enemies, snapshot=True),
                    "transmissions": _transmissions_json(sn.transmissions, snapshot=True),
                    "cells": _cells_json(sn.grid),
                    "showFlag": bool(sn.show_flag),
                    "calmFlag": bool(sn.calm_flag),
                    "atkUsesThisStage": int(sn.atk_uses),
                }
            )
        d["history"] = snaps
    return d
