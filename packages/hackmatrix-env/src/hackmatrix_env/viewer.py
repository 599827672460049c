"""Pictures of a state: what to draw (``scene``, plain data) and a matplotlib drawing of it.

Side module, host only, never jitted. It has two halves:

* ``scene(state, last_action=None) -> dict`` is a pure function from a state to plain
  data (lists, dicts, ints, strings): per cell the list of things the game shows there,
  bottom layer first, plus the HUD. The matplotlib viewer below and the HTML replay of
  ``hackmatrix_train.watch`` both draw from it, so a test can compare what is drawn
  with the state without looking at pixels.
* ``draw``, ``rgb_array`` and ``animate`` draw scenes with matplotlib, which is imported
  only when they are called: the environment itself never needs it.

Cell items (``scene(s)["cells"][row][col]``, row 0 at the bottom, rules §1.1), in
drawing order:

* ``{"kind": "siphoned", "center": bool}``: the cell was in a siphon cross (rules §5);
* ``{"kind": "exit"}``; ``{"kind": "data_siphon"}`` (a pickup, rules §2.3);
* ``{"kind": "resource", "resource": "credits"|"energy", "amount": n}``, only where the
  game shows it (no block, or a siphoned one);
* ``{"kind": "block", "block": "data"|"program"|"question", "points", "program",
  "spawn", "siphoned"}``; a question block keeps what it hides in ``"hides"``;
* ``{"kind": "cryptog_hint"}``: where the agent last saw a hidden cryptog (the JSON
  ``cryptogHints`` of interface §5.4: only a cryptog first on its cell leaves one);
* ``{"kind": "transmission", "type", "countdown"}``;
* ``{"kind": "enemy", "type", "hp", "max_hp", "stunned", "disabled", "hidden",
  "from_siphon"}``, one per enemy (alive, hp > 0) on the cell in list order; ``hidden`` is a cryptog the agent cannot see
  (not in the player's row or column and no SHOW; it is drawn faded);
* ``{"kind": "player", "hp", "attack"}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from hackmatrix_env.constants import (
    ENEMY_MAX_HP,
    ENEMY_NAMES,
    GRID_SIZE,
    MAX_HP,
    NUM_ACTIONS,
    PROGRAM_NAMES,
    BlockKind,
    Content,
    EnemyKind,
    Resource,
)
from hackmatrix_env.types import EnvState, GameState

ACTION_NAMES = ("up", "down", "left", "right", "siphon", *PROGRAM_NAMES)
ITEM_KINDS = (
    "siphoned", "exit", "data_siphon", "resource", "block", "cryptog_hint",
    "transmission", "enemy", "player",
)  # fmt: skip
# One palette for every drawing (matplotlib here, SVG in the HTML replay).
PALETTE = {
    "background": "#0b0f17",
    "cell": "#151b26",
    "cell_edge": "#273043",
    "siphoned": "#1d2536",
    "text": "#e6edf3",
    "muted": "#8b96a8",
    "player": "#38e1ff",
    "virus": "#ff4d6d",
    "daemon": "#ff9f1c",
    "glitch": "#c77dff",
    "cryptog": "#2ec4b6",
    "data": "#3a86ff",
    "program": "#9b5de5",
    "question": "#f4a261",
    "credits": "#ffd166",
    "energy": "#06d6a0",
    "data_siphon": "#ff5dd1",
    "exit": "#7bf1a8",
    "stunned": "#ffe66d",
}


def action_name(action: int | None) -> str | None:
    """The wire name of an action index 0..27 (interface §0.2), ``None`` for ``None``."""
    if action is None:
        return None
    a = int(action)
    if not 0 <= a < NUM_ACTIONS:
        raise ValueError(f"action must be in 0..{NUM_ACTIONS - 1}, got {action!r}")
    return ACTION_NAMES[a]


def _env_state(state: Any) -> EnvState:
    """The ``EnvState`` of an ``EnvState`` or a Jumanji ``State``, on the host, unbatched."""
    env_state = getattr(state, "env_state", state)
    if not isinstance(env_state, EnvState):
        raise TypeError(f"expected an EnvState or a Jumanji State, got {type(state).__name__}")
    env_state = jax.device_get(env_state)
    if np.ndim(env_state.game.stage) != 0:
        raise ValueError("the viewer draws a single state, not a batch (index it first)")
    return env_state


def _cryptog_visible(s: GameState, r: int, c: int) -> bool:
    """A cryptog on (r, c) is seen iff in the player's row or column, or SHOW (interface §3.5)."""
    pr, pc = int(s.player.pos[0]), int(s.player.pos[1])
    return r == pr or c == pc or bool(s.show_flag)


def _block_item(g, r: int, c: int) -> dict:
    kind = "data" if int(g.block_kind[r, c]) == BlockKind.DATA else "program"
    content = {
        "points": int(g.block_points[r, c]) if kind == "data" else 0,
        "program": PROGRAM_NAMES[int(g.block_program[r, c])] if kind == "program" else None,
    }
    item = {"kind": "block", "block": kind, **content, "spawn": int(g.block_spawn[r, c])}
    if bool(g.block_question[r, c]):
        item = {"kind": "block", "block": "question", "points": 0, "program": None, "spawn": 0}
        item["hides"] = {"block": kind, **content}
    item["siphoned"] = bool(g.siphoned[r, c])
    return item


def _terrain(s: GameState, r: int, c: int) -> list[dict]:
    """Siphon marks, exit, pickups, visible resources and blocks of a cell, bottom first."""
    g = s.grid
    items: list[dict] = []
    if bool(g.siphoned[r, c]):
        items.append({"kind": "siphoned", "center": bool(g.center[r, c])})
    content = int(g.content[r, c])
    if content == Content.EXIT:
        items.append({"kind": "exit"})
    if content == Content.DATA_SIPHON:
        items.append({"kind": "data_siphon"})
    is_block = content == Content.BLOCK
    amount, res = int(g.resource_amount[r, c]), int(g.resource_kind[r, c])
    if amount > 0 and res != Resource.NONE and (not is_block or bool(g.siphoned[r, c])):
        name = "credits" if res == Resource.CREDITS else "energy"
        items.append({"kind": "resource", "resource": name, "amount": amount})
    if is_block:
        items.append(_block_item(g, r, c))
    return items


def _shown_enemies(s: GameState) -> list[int]:
    """Slots of the enemies on the board (alive, hp > 0), in list order (rules §2.7)."""
    e = s.enemies
    return [k for k in range(len(e.alive)) if bool(e.alive[k]) and int(e.hp[k]) > 0]


def _hidden_cryptog_hints(s: GameState) -> set[tuple[int, int]]:
    """Last-known cells of hidden cryptogs that are first on their cell (interface §3.5, §5.4)."""
    e = s.enemies
    hints, seen = set(), set()
    for k in _shown_enemies(s):
        r, c = int(e.pos[k, 0]), int(e.pos[k, 1])
        first = (r, c) not in seen
        seen.add((r, c))
        if first and int(e.kind[k]) == EnemyKind.CRYPTOG and not _cryptog_visible(s, r, c):
            hints.add((int(e.last_known[k, 0]), int(e.last_known[k, 1])))
    return hints


def _enemy_items(s: GameState) -> dict[tuple[int, int], list[dict]]:
    e = s.enemies
    out: dict[tuple[int, int], list[dict]] = {}
    for k in _shown_enemies(s):
        r, c = int(e.pos[k, 0]), int(e.pos[k, 1])
        kind = int(e.kind[k])
        hidden = kind == EnemyKind.CRYPTOG and not _cryptog_visible(s, r, c)
        out.setdefault((r, c), []).append(
            {
                "kind": "enemy",
                "type": ENEMY_NAMES[kind],
                "hp": int(e.hp[k]),
                "max_hp": int(ENEMY_MAX_HP[kind]),
                "stunned": bool(e.stunned[k]),
                "disabled": int(e.disabled[k]) > 0,
                "hidden": hidden,
                "from_siphon": bool(e.from_siphon[k]),
            }
        )
    return out


def _transmission_items(s: GameState) -> dict[tuple[int, int], list[dict]]:
    t = s.transmissions
    out: dict[tuple[int, int], list[dict]] = {}
    for k in range(len(t.alive)):
        if bool(t.alive[k]):
            r, c = int(t.pos[k, 0]), int(t.pos[k, 1])
            item = {
                "kind": "transmission",
                "type": ENEMY_NAMES[int(t.kind[k])],
                "countdown": int(t.countdown[k]),
            }
            out.setdefault((r, c), []).append(item)
    return out


def hud(state: Any, last_action: int | None = None) -> dict:
    """The heads-up display of a state as plain data (rules §2.2, §7.8)."""
    env_state = _env_state(state)
    s = env_state.game
    p = s.player
    owned = [PROGRAM_NAMES[int(x)] for x in s.owned_list[: int(s.num_owned)]]
    flags = [n for n, on in (("show", s.show_flag), ("calm", s.calm_flag), ("step", s.step_flag))]
    return {
        "stage": int(s.stage),
        "turn": int(s.turn),
        "time": int(env_state.time),
        "hp": int(p.hp),
        "max_hp": MAX_HP,
        "credits": int(p.credits),
        "energy": int(p.energy),
        "score": int(p.score),
        "siphons": int(p.siphons),
        "attack": int(p.attack),
        "owned": owned,
        "flags": [n for n in flags if bool(getattr(s, f"{n}_flag"))],
        "next_task_in": int(s.next_task_turn) - int(s.turn),
        "last_action": action_name(last_action),
    }


def scene(state: Any, last_action: int | None = None) -> dict:
    """What to draw for ``state``: ``{"cells": [row][col] -> items, "hud": dict}`` (module doc).

    Accepts an ``EnvState`` or a Jumanji ``State``; ``last_action`` (0..27) goes to the HUD.
    """
    env_state = _env_state(state)
    s = env_state.game
    enemies, transmissions = _enemy_items(s), _transmission_items(s)
    hints = _hidden_cryptog_hints(s)
    player = (int(s.player.pos[0]), int(s.player.pos[1]))
    cells = []
    for r in range(GRID_SIZE):
        row = []
        for c in range(GRID_SIZE):
            items = _terrain(s, r, c)
            if (r, c) in hints:
                items.append({"kind": "cryptog_hint"})
            items += transmissions.get((r, c), [])
            items += enemies.get((r, c), [])
            if (r, c) == player:
                items.append(
                    {"kind": "player", "hp": int(s.player.hp), "attack": int(s.player.attack)}
                )
            row.append(items)
        cells.append(row)
    return {"cells": cells, "hud": hud(env_state, last_action)}


# --------------------------------------------------------------------------- matplotlib


def _matplotlib():
    """``(Figure, FigureCanvasAgg, patches)``, or an ImportError that says how to get them."""
    try:
        from matplotlib import patches
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:  # pragma: no cover - depends on the installed extras
        raise ImportError(
            "the HackMatrix viewer draws with matplotlib, which is not installed: "
            "pip install 'hackmatrix-env[viewer]' (or pip install matplotlib)"
        ) from e
    return Figure, FigureCanvasAgg, patches


ENEMY_LETTER = {"virus": "V", "daemon": "D", "glitch": "G", "cryptog": "C"}


def _label(item: dict) -> str:
    """The short text drawn for an item (also its identity in drawn-content tests)."""
    k = item["kind"]
    if k == "player":
        return f"@{item['hp']}"
    if k == "enemy":
        return f"{ENEMY_LETTER[item['type']]}{item['hp']}"
    if k == "transmission":
        return f"{ENEMY_LETTER[item['type']].lower()}{item['countdown']}"
    if k == "block":
        if item["block"] == "data":
            return f"#{item['points']}"
        if item["block"] == "program":
            return str(item["program"])
        return "?"
    if k == "resource":
        return f"{'+' if item['resource'] == 'credits' else '~'}{item['amount']}"
    return {"exit": "EXIT", "data_siphon": "DS", "cryptog_hint": "c?", "siphoned": ""}[k]


def _box(patches, x, y, inset, **kw):
    """A rounded square inset from the cell (x, y) edges."""
    size = 1.0 - 2 * inset
    style = "round,pad=0,rounding_size=0.07"
    return patches.FancyBboxPatch((x + inset, y + inset), size, size, boxstyle=style, **kw)


def _draw_siphoned(ax, patches, x, y, item, pal):
    artist = ax.add_patch(_box(patches, x, y, 0.04, facecolor=pal["siphoned"], edgecolor="none"))
    if item["center"]:
        ax.add_patch(
            patches.Circle((x + 0.5, y + 0.5), 0.07, facecolor=pal["data_siphon"], alpha=0.5)
        )
    return artist


def _draw_exit(ax, patches, x, y, item, pal):
    ax.text(x + 0.5, y + 0.2, "EXIT", color=pal["exit"], ha="center", va="center", fontsize=7)
    return ax.add_patch(
        _box(patches, x, y, 0.1, facecolor="none", edgecolor=pal["exit"], linewidth=2.5)
    )


def _draw_data_siphon(ax, patches, x, y, item, pal):
    diamond = patches.RegularPolygon(
        (x + 0.5, y + 0.5), 4, radius=0.24, facecolor=pal["data_siphon"], edgecolor="white"
    )
    ax.text(x + 0.5, y + 0.5, "DS", color="black", ha="center", va="center", fontsize=7)
    return ax.add_patch(diamond)


def _draw_resource(ax, patches, x, y, item, pal):
    color = pal[item["resource"]]
    text = ax.text(x + 0.9, y + 0.88, _label(item), color=color, ha="right", va="top", fontsize=9)
    text.set_weight("bold")
    return text


def _draw_block(ax, patches, x, y, item, pal):
    color = pal[item["block"]]
    edge = color if item["siphoned"] else "white"
    alpha = 0.35 if item["siphoned"] else 0.9
    box = _box(patches, x, y, 0.12, facecolor=color, alpha=alpha, edgecolor=edge, linewidth=0.8)
    size = 8 if item["block"] == "program" else 14
    ax.text(x + 0.5, y + 0.5, _label(item), color="white", ha="center", va="center", fontsize=size)
    return ax.add_patch(box)


def _draw_cryptog_hint(ax, patches, x, y, item, pal):
    ring = patches.Circle(
        (x + 0.5, y + 0.5), 0.3, facecolor="none", edgecolor=pal["cryptog"], linestyle=":"
    )
    return ax.add_patch(ring)


def _draw_transmission(ax, patches, x, y, item, pal):
    color = pal[item["type"]]
    ring = patches.Circle(
        (x + 0.22, y + 0.22), 0.15, facecolor="none", edgecolor=color, linestyle="--", linewidth=1.8
    )
    ax.text(x + 0.22, y + 0.22, str(item["countdown"]), color=color, ha="center", va="center")
    return ax.add_patch(ring)


def _draw_enemy(ax, patches, x, y, item, pal):
    x += item.get("_dx", 0.0)
    alpha = 0.35 if item["hidden"] else 1.0
    edge = pal["stunned"] if item["stunned"] else ("#666666" if item["disabled"] else "white")
    hexagon = patches.RegularPolygon(
        (x + 0.5, y + 0.5), 6, radius=0.3, facecolor=pal[item["type"]], alpha=alpha,
        edgecolor=edge, linewidth=2.0 if item["stunned"] else 0.8,
        linestyle="--" if item["hidden"] else "-",
    )  # fmt: skip
    ax.text(x + 0.5, y + 0.5, _label(item), color="black", ha="center", va="center", alpha=alpha)
    if item["stunned"]:
        ax.text(x + 0.8, y + 0.16, "z", color=pal["stunned"], ha="center", va="center")
    return ax.add_patch(hexagon)


def _draw_player(ax, patches, x, y, item, pal):
    disc = patches.Circle((x + 0.5, y + 0.5), 0.3, facecolor=pal["player"], edgecolor="white")
    ax.text(x + 0.5, y + 0.5, _label(item), color="black", ha="center", va="center")
    return ax.add_patch(disc)


_DRAWERS = {
    "siphoned": _draw_siphoned,
    "exit": _draw_exit,
    "data_siphon": _draw_data_siphon,
    "resource": _draw_resource,
    "block": _draw_block,
    "cryptog_hint": _draw_cryptog_hint,
    "transmission": _draw_transmission,
    "enemy": _draw_enemy,
    "player": _draw_player,
}


def _draw_cell(ax, patches, r: int, c: int, items: list[dict]) -> None:
    """Draw one cell's items, bottom first; each item's main artist gets gid ``kind:r:c:label``."""
    x, y = c, r  # column to the right, row 0 at the bottom
    ax.add_patch(
        _box(patches, c, r, 0.04, facecolor=PALETTE["cell"], edgecolor=PALETTE["cell_edge"])
    )
    enemies = [i for i in items if i["kind"] == "enemy"]
    for item in items:
        if item["kind"] == "enemy" and len(enemies) > 1:  # side by side
            item = {**item, "_dx": (enemies.index(item) - (len(enemies) - 1) / 2) * 0.3}
        artist = _DRAWERS[item["kind"]](ax, patches, x, y, item, PALETTE)
        artist.set_gid(f"{item['kind']}:{r}:{c}:{_label(item)}")


def _hud_text(h: dict) -> str:
    owned = ", ".join(h["owned"]) or "-"
    flags = " ".join(f.upper() for f in h["flags"])
    line1 = (
        f"stage {h['stage']}  turn {h['turn']}  HP {h['hp']}/{h['max_hp']}  "
        f"credits {h['credits']}  energy {h['energy']}  score {h['score']}  siphons {h['siphons']}"
    )
    last = h["last_action"] or "-"
    return f"{line1}\nprograms: {owned}   {flags}\nlast action: {last}"


def draw(state: Any, last_action: int | None = None, ax=None):
    """Draw ``state`` (board and HUD) on ``ax`` or a new figure; returns ``(fig, ax)``."""
    return draw_scene(scene(state, last_action), ax)


def draw_scene(sc: dict, ax=None):
    """Draw a ``scene`` dict on ``ax`` or a new figure; returns ``(fig, ax)``."""
    Figure, FigureCanvasAgg, patches = _matplotlib()
    if ax is None:
        fig = Figure(figsize=(5.2, 6.2), dpi=100, facecolor=PALETTE["background"])
        FigureCanvasAgg(fig)
        ax = fig.add_axes((0.05, 0.17, 0.9, 0.78))
    fig = ax.figure
    ax.clear()
    ax.set_facecolor(PALETTE["background"])
    ax.set_xlim(0, GRID_SIZE)
    ax.set_ylim(0, GRID_SIZE)
    ax.set_aspect("equal")
    ax.set_xticks([i + 0.5 for i in range(GRID_SIZE)], [str(i) for i in range(GRID_SIZE)])
    ax.set_yticks([i + 0.5 for i in range(GRID_SIZE)], [str(i) for i in range(GRID_SIZE)])
    ax.tick_params(colors=PALETTE["muted"], length=0, labelsize=8)
    for spine in ax.spines.values():
        spine.set_visible(False)
    for r in range(GRID_SIZE):
        for c in range(GRID_SIZE):
            _draw_cell(ax, patches, r, c, sc["cells"][r][c])
    ax.text(
        0, -0.25, _hud_text(sc["hud"]), color=PALETTE["text"], ha="left", va="top",
        fontsize=8.5, family="monospace", gid="hud",
    )  # fmt: skip
    return fig, ax


def rgb_array(state: Any, last_action: int | None = None) -> np.ndarray:
    """uint8[H, W, 3]: the picture ``draw`` makes, for video wrappers."""
    fig, _ = draw(state, last_action)
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()


def animate(
    states: Sequence[Any],
    interval: int = 200,
    save_path: str | Path | None = None,
    actions: Sequence[int | None] | None = None,
):
    """A matplotlib ``FuncAnimation`` over ``states``; ``save_path`` writes it (``.gif``: pillow).

    ``actions[i]`` (optional) is the action that led to ``states[i]``, shown in the HUD.
    """
    if actions is not None and len(actions) != len(states):
        raise ValueError(f"{len(actions)} actions for {len(states)} states")
    acts = [None] * len(states) if actions is None else list(actions)
    return animate_scenes(
        [scene(s, a) for s, a in zip(states, acts, strict=True)], interval, save_path
    )


def animate_scenes(
    scenes: Sequence[dict], interval: int = 200, save_path: str | Path | None = None
):
    """``animate`` over ``scene`` dicts (what recorded episodes keep)."""
    if len(scenes) == 0:
        raise ValueError("an animation needs at least one state")
    if int(interval) < 1:
        raise ValueError(f"interval must be a positive number of milliseconds, got {interval}")
    from matplotlib import animation

    fig, ax = draw_scene(scenes[0])

    def frame(i):
        draw_scene(scenes[i], ax=ax)
        return ()

    anim = animation.FuncAnimation(fig, frame, frames=len(scenes), interval=interval, blit=False)
    if save_path is not None:
        path = Path(save_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        writer = "pillow" if path.suffix.lower() in (".gif", ".webp", ".apng") else None
        anim.save(str(path), writer=writer, fps=max(1, round(1000 / interval)))
    return anim


def save_image(image: np.ndarray, path: str | Path) -> Path:
    """Write a uint8[H, W, 3] picture as PNG (or any format pillow knows from the suffix)."""
    from PIL import Image

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.asarray(image, np.uint8)).save(path)
    return path
