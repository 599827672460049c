"""Host-side text rendering of a state, for debugging and docs (side module, never jitted).

``render_text(state)`` draws row 5 at the top (row 0 is the bottom, rules §1.1)
with one 3-character cell per column, followed by a status line and a legend::

    stage 1  turn 0  hp 3  credits 10  energy 0  siphons 0  score 0  attack 1
         0  1  2  3  4  5
      5 [s] .  .  #4 .  EX
      ...

Cells: ``@`` player, ``V``/``D``/``G``/``C`` enemies (lower case when stunned,
the first enemy in list order is drawn), ``t`` transmission (countdown digit),
``#n`` data block with n points, ``P`` program block, ``?`` question block
(``*`` after a block when siphoned), ``EX`` exit, ``[s]`` data-siphon pickup,
``+n``/``~n`` credits/energy, ``.`` empty. Shows everything, hidden
information included (it is a debugging view, not the agent's view).
"""

from __future__ import annotations

import jax
import numpy as np

from hackmatrix_env.constants import (
    ENEMY_NAMES,
    FIRST_PROGRAM,
    GRID_SIZE,
    PROGRAM_NAMES,
    BlockKind,
    Content,
    Resource,
)
from hackmatrix_env.types import EnvState, GameState

_ENEMY_LETTER = {i: n[0].upper() for i, n in enumerate(ENEMY_NAMES)}


def _first(pool, r: int, c: int) -> int | None:
    for k in range(len(pool.alive)):
        if pool.alive[k] and int(pool.pos[k, 0]) == r and int(pool.pos[k, 1]) == c:
            return k
    return None


def _cell_text(s: GameState, r: int, c: int) -> str:
    g = s.grid
    if (int(s.player.pos[0]), int(s.player.pos[1])) == (r, c):
        return " @ "
    e = _first(s.enemies, r, c)
    if e is not None:
        letter = _ENEMY_LETTER[int(s.enemies.kind[e])]
        letter = letter.lower() if bool(s.enemies.stunned[e]) else letter
        return f"{letter}{int(s.enemies.hp[e])} "[:3]
    t = _first(s.transmissions, r, c)
    if t is not None:
        return f"t{int(s.transmissions.countdown[t])} "[:3]
    content = int(g.content[r, c])
    mark = "*" if bool(g.siphoned[r, c]) else " "
    if content == Content.BLOCK:
        if bool(g.block_question[r, c]):
            return "?" + " " + mark
        if int(g.block_kind[r, c]) == BlockKind.DATA:
            return f"#{int(g.block_points[r, c])}{mark}"
        return "P" + " " + mark
    if content == Content.EXIT:
        return "EX "
    if content == Content.DATA_SIPHON:
        return "[s]"
    amount = int(g.resource_amount[r, c])
    kind = int(g.resource_kind[r, c])
    if amount > 0 and kind == Resource.CREDITS:
        return f"+{amount} "[:3]
    if amount > 0 and kind == Resource.ENERGY:
        return f"~{amount} "[:3]
    return " . "


def render_text(state: EnvState) -> str:
    """A readable multi-line picture of one (unbatched) state, row 5 on top."""
    env_state = jax.device_get(state)
    s = env_state.game
    if np.ndim(s.stage) != 0:
        raise ValueError("render_text takes a single state, not a batch")
    p = s.player
    lines = [
        f"stage {int(s.stage)}  turn {int(s.turn)}  hp {int(p.hp)}  credits {int(p.credits)}  "
        f"energy {int(p.energy)}  siphons {int(p.siphons)}  score {int(p.score)}  "
        f"attack {int(p.attack)}",
        "     " + "".join(f" {c} " for c in range(GRID_SIZE)),
    ]
    for r in range(GRID_SIZE - 1, -1, -1):
        lines.append(f"  {r}  " + "".join(_cell_text(s, r, c) for c in range(GRID_SIZE)))
    owned = [PROGRAM_NAMES[int(x)] for x in s.owned_list[: int(s.num_owned)]]
    programs = []
    for r in range(GRID_SIZE):
        for c in range(GRID_SIZE):
            is_prog = int(s.grid.content[r, c]) == Content.BLOCK
            is_prog &= int(s.grid.block_kind[r, c]) == BlockKind.PROGRAM
            if is_prog and not bool(s.grid.block_question[r, c]):
                prog = int(s.grid.block_program[r, c])
                programs.append(f"({r},{c})={PROGRAM_NAMES[prog]}[{prog + FIRST_PROGRAM}]")
    flags = [
        name
        for name, on in (("SHOW", s.show_flag), ("CALM", s.calm_flag), ("STEP", s.step_flag))
        if bool(on)
    ]
    lines.append(
        f"exit {tuple(int(x) for x in s.exit_pos)}  task every {int(s.task_interval)} "
        f"(next turn {int(s.next_task_turn)})  pending spawns {int(s.pending_siphon_spawns)}  "
        f"undo depth {int(env_state.history.size)}"
        + (f"  flags {' '.join(flags)}" if flags else "")
    )
    lines.append("owned: " + (", ".join(owned) if owned else "-"))
    if programs:
        lines.append("program blocks: " + " ".join(programs))
    return "\n".join(lines)
