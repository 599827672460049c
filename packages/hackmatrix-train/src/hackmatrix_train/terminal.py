"""``hm-play``'s terminal: the screen as text, single keys in, the interactive loop (``run``).

Each turn draws the board (``hackmatrix_env.viewer.scene`` as text), the HUD, the legal
actions with their keys and the last step's reward components. Keys:

* arrows or ``w a s d``: move or shoot up/left/down/right (the game decides which, rules §4);
* ``space`` or ``x``: siphon (``s`` is already "down");
* ``1``-``9``, ``0``, then ``b c e f g ...``: the owned programs, in the order listed;
* ``u``: take the last step back (the interface's undo, not the UNDO program);
* ``n``: new game (next seed); ``q``, Ctrl+C or end of input: quit; ``?``: help;
* ``h`` (with ``--hint``): the search's suggestion for the current state.

A key that is not a legal action prints a message and changes nothing. The games it plays are
in ``play.py``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys

import numpy as np
from hackmatrix_env.constants import Action
from hackmatrix_env.viewer import ACTION_NAMES, ENEMY_LETTER

from hackmatrix_train import progress

DIRECTION_KEYS = {
    "UP": Action.UP, "w": Action.UP, "DOWN": Action.DOWN, "s": Action.DOWN,
    "LEFT": Action.LEFT, "a": Action.LEFT, "RIGHT": Action.RIGHT, "d": Action.RIGHT,
    " ": Action.SIPHON, "x": Action.SIPHON,
}  # fmt: skip
ARROWS = {"UP": "↑", "DOWN": "↓", "LEFT": "←", "RIGHT": "→"}
PROGRAM_KEYS = "1234567890bcefgijklmoprtvyz"  # owned programs in list order
COMMAND_KEYS = {"u": "undo", "n": "new", "q": "quit", "?": "help", "h": "hint"}
CELL_WIDTH = 9


# --------------------------------------------------------------------------- screen


def _paint(text: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color and text.strip() else text


def _cell_lines(items: list[dict]) -> tuple[str, str, str]:
    """(main text, extras text, ANSI colour) of one cell: the top item, then the rest."""
    main, code, extras = "·", "90", []
    for it in items:  # bottom to top: later items cover earlier ones
        k = it["kind"]
        if k == "exit":
            main, code = "EXIT", "92;1"
        elif k == "data_siphon":
            main, code = "DS", "95;1"
        elif k == "block":
            main = {"data": f"#{it['points']}", "question": "?"}.get(
                it["block"], f"[{it['program']}]"
            )
            code = {"data": "94;1", "question": "33;1"}.get(it["block"], "35;1")
            extras.append("*" if it["siphoned"] else "")
        elif k == "resource":
            extras.append(("$" if it["resource"] == "credits" else "e") + str(it["amount"]))
        elif k == "transmission":
            extras.append(f"t{it['countdown']}{ENEMY_LETTER[it['type']].lower()}")
        elif k == "cryptog_hint":
            extras.append("c?")
        elif k == "enemy":
            hidden = "(hid)" if it["hidden"] else ""
            main = f"{ENEMY_LETTER[it['type']]}{it['hp']}{'z' if it['stunned'] else ''}{hidden}"
            code = "91;1"
        elif k == "player":
            main, code = f"@{it['hp']}", "96;1"
    return main, " ".join(e for e in extras if e), code


def board_text(scene: dict, color: bool = False) -> str:
    """The board as text, row 5 on top, two lines per row (occupant, then extras)."""
    lines = ["    " + "".join(f"{c:<{CELL_WIDTH}}" for c in range(6))]
    for r in range(5, -1, -1):
        top, bottom = f" {r}  ", "    "
        for c in range(6):
            main, extras, code = _cell_lines(scene["cells"][r][c])
            top += _paint(f"{main:<{CELL_WIDTH}}"[:CELL_WIDTH], code, color)
            bottom += _paint(f"{extras:<{CELL_WIDTH}}"[:CELL_WIDTH], "2", color)
        lines += [top.rstrip(), bottom.rstrip()]
    return "\n".join(lines)


def hud_text(h: dict) -> str:
    flags = "  " + " ".join(f.upper() for f in h["flags"]) if h["flags"] else ""
    return (
        f"stage {h['stage']}/8  turn {h['turn']}  HP {h['hp']}/{h['max_hp']}  "
        f"credits {h['credits']}  energy {h['energy']}  score {h['score']}  "
        f"siphons {h['siphons']}  attack {h['attack']}{flags}"
    )


def program_keys(owned: list[str]) -> dict[str, int]:
    """``{key: action}`` for the owned programs in list order (duplicates share the first key)."""
    out: dict[str, int] = {}
    for name in owned:
        action = ACTION_NAMES.index(name)
        if action not in out.values() and len(out) < len(PROGRAM_KEYS):
            out[PROGRAM_KEYS[len(out)]] = action
    return out


def legal_text(mask: np.ndarray, owned: list[str]) -> str:
    """The legal actions with their keys, and the owned programs not usable now."""
    parts = []
    for name, action in (("UP", 0), ("DOWN", 1), ("LEFT", 2), ("RIGHT", 3)):
        if mask[action]:
            wasd = "wsad"[action]
            parts.append(f"[{ARROWS[name]}/{wasd}] {ACTION_NAMES[action]}")
    if mask[Action.SIPHON]:
        parts.append("[space/x] siphon")
    idle = []
    for key, action in program_keys(owned).items():
        (parts if mask[action] else idle).append(f"[{key}] {ACTION_NAMES[action]}")
    text = "legal: " + ("  ".join(parts) if parts else "none")
    if idle:
        text += "\nnot now: " + "  ".join(idle)
    return text


def breakdown_text(breakdown: dict[str, float]) -> str:
    nonzero = [f"{k.replace('_', ' ')} {v:+.3f}" for k, v in breakdown.items() if v != 0]
    return ", ".join(nonzero) if nonzero else "all components 0"


HELP = (
    "keys: arrows or w/a/s/d move or shoot; space or x siphon; 1-9,0,b,c,... programs;\n"
    "      u take the last step back; n new game; q quit; h hint (with --hint)"
)


def action_key(action: int, owned: list[str]) -> str:
    """The key that plays ``action`` (as ``legal_text`` writes it), '-' if none."""
    if action < 4:
        name = ACTION_NAMES[action].upper()
        return f"{ARROWS[name]}/{'wsad'[action]}"
    if action == Action.SIPHON:
        return "space/x"
    keys = {a: k for k, a in program_keys(owned).items()}
    return keys.get(action, "-")


def hint_text(hint: dict, owned: list[str]) -> str:
    """A search's suggestion (``episodes.search_frame``): the move, then per action its key,
    root visits, Q (— where unvisited) and the network's prior, most visited first."""
    chosen, greedy = hint["action"], hint["greedy"]
    head = f"hint: {ACTION_NAMES[chosen]} [{action_key(chosen, owned)}]"
    head += f"  ({hint['simulations']} simulations"
    head += f", search value {hint['value']:+.3f})" if hint["value"] is not None else ")"
    if hint["differs"]:
        head += f"; the greedy network would play {ACTION_NAMES[greedy]}"
    lines = [head, f"  {'action':<18}{'visits':>7}{'Q':>9}{'prior':>8}"]
    for a, n, q, p in hint["actions"]:
        label = f"[{action_key(a, owned)}] {ACTION_NAMES[a]}"
        mark = " <" if a == chosen else ""
        q_text = "—" if q is None else f"{q:+.3f}"
        lines.append(f"  {label:<18}{n:>7}{q_text:>9}{100 * p:>7.1f}%{mark}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- input


class Keys:
    """Single keys from a file descriptor; arrows become ``UP``/``DOWN``/``LEFT``/``RIGHT``.

    On a terminal the input is switched to cbreak mode (no Enter needed) and restored on
    close; from a pipe the same bytes are read, newlines ignored. ``None`` means end of input.
    """

    def __init__(self, fd: int):
        self.fd = fd
        self._saved = None
        if os.isatty(fd):
            import termios
            import tty

            self._saved = termios.tcgetattr(fd)
            tty.setcbreak(fd)

    def close(self) -> None:
        if self._saved is not None:
            import termios

            with contextlib.suppress(termios.error):  # a terminal that hung up needs nothing
                termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
            self._saved = None

    def _byte(self) -> str | None:
        try:
            b = os.read(self.fd, 1)
        except OSError:  # a terminal that went away (EIO) reads as the end of input
            return None
        return b.decode("latin-1") if b else None

    def read(self) -> str | None:
        while True:
            ch = self._byte()
            if ch is None:
                return None
            if ch in "\r\n":
                continue
            if ch == "\x03" or ch == "\x04":  # Ctrl+C / Ctrl+D in cbreak mode
                return None
            if ch != "\x1b":
                return ch
            if self._byte() != "[":
                return "ESC"
            code = self._byte()
            return {"A": "UP", "B": "DOWN", "C": "RIGHT", "D": "LEFT"}.get(code or "", "ESC")


# --------------------------------------------------------------------------- loop


def describe_key(key: str) -> str:
    return ARROWS.get(key, key if key.isprintable() and key != " " else repr(key))


def resolve_key(key: str, mask: np.ndarray, owned: list[str]) -> tuple[int | None, str | None]:
    """``(action, None)`` for a legal action key, ``(None, message)`` otherwise."""
    action = DIRECTION_KEYS.get(key)
    if action is None:
        action = program_keys(owned).get(key)
    if action is None:
        return None, f"'{describe_key(key)}' is not a key of this game (? for help)"
    if not mask[int(action)]:
        return None, f"{ACTION_NAMES[int(action)]} is not legal now"
    return int(action), None


def run(game, keys: Keys, out=None, color: bool = False, clear: bool = False, hinter=None) -> int:
    """The interactive loop (writes to ``out``, default stdout); returns the exit status."""
    out = sys.stdout if out is None else out
    message, last, ended = "", None, None

    def draw():
        sc = game.scene()
        screen = [
            f"HackMatrix  seed {game.seed}  step {len(game.actions)}",
            hud_text(sc["hud"]),
            "programs: " + (", ".join(sc["hud"]["owned"]) or "-"),
            board_text(sc, color),
        ]
        if last is not None:
            a, res = last
            screen.append(
                f"last: {ACTION_NAMES[a]}  reward {res.reward:+.3f}  ({breakdown_text(res.breakdown)})"
            )
        if ended:
            screen.append(f"GAME OVER: {ended}.  u take back, n new game, q quit")
        else:
            screen.append(legal_text(game.mask(), sc["hud"]["owned"]))
        if message:
            screen.append(f"! {message}")
        text = "\n".join(screen)
        out.write(("\x1b[2J\x1b[H" if clear else "\n") + text + "\n> ")
        out.flush()

    draw()
    while True:
        key = keys.read()
        if key is None or COMMAND_KEYS.get(key) == "quit":
            out.write("\nbye\n")
            out.flush()
            return 0
        message = ""
        command = COMMAND_KEYS.get(key)
        if command == "help":
            message = HELP
        elif command == "undo":
            if game.undo():
                last, ended, message = None, None, "took the last step back"
            else:
                message = "nothing to take back"
        elif command == "new":
            game.new(game.seed + 1)
            last, ended = None, None
            message = f"new game, seed {game.seed}"
        elif command == "hint":
            if hinter is None:
                message = "no hints: start hm-play with --hint"
            elif ended:
                message = f"the game is over ({ended}): no move to suggest"
            else:
                if hinter.compiled:
                    found = hinter.suggest(game)
                else:  # the first hint compiles the search: say so, and for how long
                    out.write("\n")
                    sims = hinter.config.num_simulations
                    what = f"the search ({sims} simulations; the first hint)"
                    with progress.compiling(what, progress.COLD_COMPILE_S["search"], out):
                        found = hinter.suggest(game)
                message = hint_text(found, game.scene()["hud"]["owned"])
        elif ended:
            message = f"the game is over ({ended}): u, n or q"
        else:
            action, message = resolve_key(key, game.mask(), game.scene()["hud"]["owned"])
            message = message or ""
            if action is not None:
                result = game.step(action)
                last, ended = (action, result), result.end
        draw()


def is_terminal(stream) -> bool:
    try:
        return os.isatty(stream.fileno())
    except (AttributeError, OSError, ValueError):  # a stream with no file (captured output)
        return False


def play(game, no_color: bool = False, hinter=None) -> int:
    """``hm-play``'s session on this process's terminal: colour unless ``no_color``,
    ``NO_COLOR`` or piped output; Ctrl-C or a hung-up terminal (EIO) ends it quietly."""
    color = is_terminal(sys.stdout) and not no_color and not os.environ.get("NO_COLOR")
    keys = Keys(sys.stdin.fileno())
    try:
        return run(game, keys, color=color, clear=color, hinter=hinter)
    except KeyboardInterrupt:
        return 0
    except OSError as e:  # the terminal hung up: nothing left to talk to
        if e.errno != errno.EIO:
            raise
        return 0
    finally:
        keys.close()
