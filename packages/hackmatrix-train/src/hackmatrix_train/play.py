"""``hm-play``: play HackMatrix yourself in the terminal (the JAX game, or ``--swift``).

Each turn draws the board (``hackmatrix_env.viewer.scene`` as text), the HUD, the legal
actions with their keys and the last step's reward components. Keys:

* arrows or ``w a s d``: move or shoot up/left/down/right (the game decides which, rules §4);
* ``space`` or ``x``: siphon (``s`` is already "down");
* ``1``-``9``, ``0``, then ``b c e f g ...``: the owned programs, in the order listed;
* ``u``: take the last step back (the interface's undo, not the UNDO program);
* ``n``: new game (next seed); ``q``, Ctrl+C or end of input: quit; ``?``: help;
* ``h`` (with ``--hint``): the search's suggestion for the current state.

A key that is not a legal action prints a message and changes nothing. ``--save-actions``
writes the game as an action log (``episodes.py``) that ``hm-watch --actions`` replays.
``--swift`` plays against the Swift binary (via ``hackmatrix_parity``, imported only
then); its UNDO key uses the binary's full-state commands.

``--hint`` loads a policy (``--hint-policy``, default the shipped
``policies/default-cpu-42m-s1-vf0125``) and ``h`` runs a Gumbel search (``search.py``,
``--hint-sims`` simulations, honest: the hidden parts are re-drawn, so a hint knows only what
the screen shows) from the current state; it lists every action of the search with its key,
root visits, Q and the network's prior, and marks where the search overrules the greedy
network. The hint is the one ``hm-watch --search`` computes for episode 0 of a batch of 1 at
that step (same key); it changes nothing in the game.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from hackmatrix_env.argparsing import Parser, existing_path, fail
from hackmatrix_env.constants import NUM_STAGES, REWARD_COMPONENTS, Action
from hackmatrix_env.viewer import ACTION_NAMES, ENEMY_LETTER

from hackmatrix_train import compile_cache

DIRECTION_KEYS = {
    "UP": Action.UP, "w": Action.UP, "DOWN": Action.DOWN, "s": Action.DOWN,
    "LEFT": Action.LEFT, "a": Action.LEFT, "RIGHT": Action.RIGHT, "d": Action.RIGHT,
    " ": Action.SIPHON, "x": Action.SIPHON,
}  # fmt: skip
ARROWS = {"UP": "↑", "DOWN": "↓", "LEFT": "←", "RIGHT": "→"}
PROGRAM_KEYS = "1234567890bcefgijklmoprtvyz"  # owned programs in list order
COMMAND_KEYS = {"u": "undo", "n": "new", "q": "quit", "?": "help", "h": "hint"}
VICTORY = REWARD_COMPONENTS.index("victory")
CELL_WIDTH = 9
HINT_POLICY = "default-cpu-42m-s1-vf0125"  # in policies/ at the repository root


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


# --------------------------------------------------------------------------- games


@dataclass
class StepResult:
    reward: float
    breakdown: dict[str, float]
    end: str | None  # cause of the end, None while the game goes on


@dataclass
class JaxGame:
    """The JAX game, one env, keys as ``hm-eval``'s episode 0 of a batch of 1 (``episodes.py``)."""

    seed: int
    start_stage: int = 1
    scenario: dict | None = None
    max_steps: int = 1000
    actions: list[int] = field(default_factory=list)

    def __post_init__(self):
        from hackmatrix_env import EnvParams

        from hackmatrix_train.episodes import Stepper

        self.env_params = EnvParams(
            max_steps_in_episode=self.max_steps, start_stage=self.start_stage
        )
        self.stepper = Stepper(self.env_params)
        self.new(self.seed)

    def new(self, seed: int) -> None:
        import jax
        from hackmatrix_env.history import without_snapshots

        from hackmatrix_train.episodes import start_from_scenarios

        self.seed = seed
        self.obs, self.state = self.stepper.reset(seed, 1, np.array([0]))
        if self.scenario is not None:
            self.obs, self.state = start_from_scenarios(
                self.stepper, self.obs, self.state, [0], {0: self.scenario}
            )
        self.keys = self.stepper.run_keys(seed)
        self.host = jax.tree.map(lambda x: x[0], jax.device_get(without_snapshots(self.state)))
        self.actions, self.history, self.last_action = [], [], None

    def mask(self) -> np.ndarray:
        return np.asarray(self.obs.action_mask[0])

    def scene(self) -> dict:
        from hackmatrix_env.viewer import scene

        return scene(self.host, self.last_action)

    def step(self, action: int) -> StepResult:
        import jax

        from hackmatrix_train.episodes import end_cause

        t = len(self.actions)
        self.history.append((self.obs, self.state, self.host, self.last_action))
        self.obs, self.state, trimmed, _, _, _, out, _ = self.stepper.step(
            None, self.obs, self.state, self.keys[t], 1, np.array([0]), np.array([action])
        )
        reward, _, truncated, breakdown, invalid = (x[0] for x in out)
        self.host = jax.tree.map(lambda x: x[0], trimmed)
        self.actions.append(int(action))
        self.last_action = int(action)
        end = end_cause(
            bool(invalid), breakdown[VICTORY] > 0, int(self.host.game.player.hp), bool(truncated)
        )
        return StepResult(
            float(reward), dict(zip(REWARD_COMPONENTS, map(float, breakdown), strict=True)), end
        )

    def undo(self) -> bool:
        if not self.history:
            return False
        self.obs, self.state, self.host, self.last_action = self.history.pop()
        self.actions.pop()
        return True

    def action_log(self) -> dict:
        from hackmatrix_train.episodes import Episode, action_log

        ep = Episode(0, actions=list(self.actions), scenario=self.scenario)
        return action_log([ep], self.seed, 1, self.env_params)


class Hinter:
    """``--hint``: a Gumbel search from a ``JaxGame``'s state with a policy's network (module doc)."""

    def __init__(self, checkpoint, simulations: int, max_steps: int):
        from hackmatrix_train.search import make_search
        from hackmatrix_train.watch import load_policy, search_config

        if simulations < 1:
            raise ValueError(f"--hint-sims must be >= 1, got {simulations}")
        apply_fn, self.params, env_params, meta = load_policy(checkpoint, max_steps=max_steps)
        self.config = search_config(meta, env_params, simulations, "honest")
        self.search = make_search(apply_fn, self.config)
        self.compiled = False

    def suggest(self, game: JaxGame) -> dict:
        """The search's view of the game's current state (``episodes.search_frame``).

        The key is the step's policy key, as ``episodes.play`` draws it for episode 0 of a
        batch of 1: asking twice gives the same hint, and the game's own draws are untouched.
        """
        import jax

        from hackmatrix_train.episodes import search_frame

        k_pol, _ = jax.random.split(game.keys[len(game.actions)])
        found = jax.device_get(self.search(self.params, k_pol, game.state))
        self.compiled = True
        return search_frame(jax.tree.map(lambda x: x[0], found))


def hint_policy(path: str | None) -> Path:
    """``--hint-policy``, else the shipped default policy; a ``ValueError`` if it is missing."""
    found = Path(path) if path else Path(__file__).resolve().parents[4] / "policies" / HINT_POLICY
    if not found.exists():
        raise ValueError(f"no such file or directory: {found} (give --hint-policy CHECKPOINT)")
    return found


class SwiftPlay:
    """The Swift binary (``hackmatrix_parity.client``); the board comes from its full state."""

    def __init__(self, seed: int, start_stage: int = 1, scenario: dict | None = None, binary=None):
        from hackmatrix_parity.client import SwiftGame

        self.game = SwiftGame(binary)
        if not self.game.supports_full_state:
            raise ValueError("--swift needs our binary's getFullState/setFullState (not canonical)")
        self.start_stage, self.scenario = start_stage, scenario
        self.new(seed)

    def new(self, seed: int) -> None:
        self.seed = seed
        if self.scenario is not None:
            self.game.set_state(self.scenario)
        elif self.start_stage > 1:  # the binary resets to stage 1: inject JAX's stage start
            import jax
            from hackmatrix_env import EnvParams
            from hackmatrix_env.transition import reset_state
            from hackmatrix_parity.swift_full import from_jax

            params = EnvParams(start_stage=self.start_stage)
            self.game.set_full_state(from_jax(reset_state(jax.random.key(seed), params)))
        else:
            self.game.reset(seed=seed)
        self.history, self.last_action, self.actions = [], None, []
        self._refresh()

    def _refresh(self) -> None:
        from hackmatrix_parity.swift_full import to_jax
        from hackmatrix_parity.tensor import mask_from_valid

        self.full = self.game.full_state(include_history=True)
        self.host = to_jax(self.full)
        self._mask = mask_from_valid(self.game.valid_actions())

    def mask(self) -> np.ndarray:
        return self._mask

    def scene(self) -> dict:
        from hackmatrix_env.viewer import scene

        return scene(self.host, self.last_action)

    def step(self, action: int) -> StepResult:
        from hackmatrix_parity.tensor import breakdown15

        from hackmatrix_train.episodes import end_cause

        self.history.append((self.full, self.last_action))
        reply = self.game.step(int(action))
        self.last_action = int(action)
        self.actions.append(int(action))
        self._refresh()
        bd = breakdown15(reply["reward"], reply["info"])
        bd = {k: bd.get(k, 0.0) for k in REWARD_COMPONENTS}
        end = None
        if reply["done"]:
            end = (
                end_cause(False, bd["victory"] > 0, int(self.host.game.player.hp), False) or "done"
            )
        return StepResult(float(reply["reward"]), bd, end)

    def undo(self) -> bool:
        if not self.history:
            return False
        full, self.last_action = self.history.pop()
        self.game.set_full_state(full)
        self.actions.pop()
        self._refresh()
        return True

    def action_log(self) -> dict:
        raise ValueError("--save-actions replays JAX games only (the Swift RNG differs)")


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
                if not hinter.compiled:
                    out.write("\nsearching (the first hint compiles the search)...\n")
                    out.flush()
                message = hint_text(hinter.suggest(game), game.scene()["hud"]["owned"])
        elif ended:
            message = f"the game is over ({ended}): u, n or q"
        else:
            action, message = resolve_key(key, game.mask(), game.scene()["hud"]["owned"])
            message = message or ""
            if action is not None:
                result = game.step(action)
                last, ended = (action, result), result.end
        draw()


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="hm-play", description="Play HackMatrix in the terminal.")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stage", type=int, default=1, help="start at this stage (1..8)")
    p.add_argument(
        "--scenario", type=existing_path, help="start from this setState JSON (interface §5.7)"
    )
    p.add_argument("--max-steps", type=int, default=1000, help="step limit (truncation)")
    p.add_argument("--swift", action="store_true", help="play against the Swift binary")
    p.add_argument(
        "--swift-bin", type=existing_path, help="the Swift binary (default: built from the repo)"
    )
    p.add_argument("--save-actions", help="write the game's action log here on exit")
    p.add_argument("--no-color", action="store_true", help="plain text (also NO_COLOR=1)")
    p.add_argument("--hint", action="store_true", help="h shows a search's suggestion")
    p.add_argument("--hint-sims", type=int, default=32, help="simulations per hint")
    p.add_argument(
        "--hint-policy", default=None,
        help=f"the checkpoint whose network guides the hint's search (default: policies/{HINT_POLICY})",
    )  # fmt: skip
    compile_cache.add_arguments(p)
    return p


def _load_scenario(path: str | None) -> dict | None:
    if path is None:
        return None
    try:
        d = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"cannot read scenario {path}: {e}") from None
    d = d.get("state", d) if isinstance(d, dict) else d
    if not isinstance(d, dict):
        raise ValueError(f"{path}: a scenario is a setState object")
    from hackmatrix_env.scenario import state_from_json

    state_from_json(d)  # a ValueError names the bad field
    return d


def _is_terminal(stream) -> bool:
    try:
        return os.isatty(stream.fileno())
    except (AttributeError, OSError, ValueError):  # a stream with no file (captured output)
        return False


def main(argv=None) -> int:
    from hackmatrix_train.checkpoint import CheckpointError

    args = build_parser().parse_args(argv)
    compile_cache.enable_from_args(args)
    if not 1 <= args.stage <= NUM_STAGES:
        return fail("hm-play", f"--stage must be in 1..{NUM_STAGES}")
    if args.swift and args.save_actions:
        return fail("hm-play", "--save-actions replays JAX games only (the Swift RNG differs)")
    if args.max_steps < 1:
        return fail("hm-play", "--max-steps must be >= 1")
    if args.hint and args.swift:
        return fail("hm-play", "--hint searches the JAX game; it cannot be used with --swift")
    try:
        scenario = _load_scenario(args.scenario)
        hinter = None
        if args.hint:
            hinter = Hinter(hint_policy(args.hint_policy), args.hint_sims, args.max_steps)
        if args.swift:
            game = SwiftPlay(args.seed, args.stage, scenario, args.swift_bin)
        else:
            game = JaxGame(args.seed, args.stage, scenario, args.max_steps)
    except (ValueError, RuntimeError, ImportError, CheckpointError) as e:  # bad input, Swift
        return fail("hm-play", str(e))
    tty = _is_terminal(sys.stdout)
    color = tty and not args.no_color and not os.environ.get("NO_COLOR")
    keys = Keys(sys.stdin.fileno())
    try:
        status = run(game, keys, color=color, clear=color, hinter=hinter)
    except KeyboardInterrupt:
        status = 0
    except OSError as e:  # the terminal hung up (EIO): nothing left to talk to
        if e.errno != errno.EIO:
            raise
        status = 0
    finally:
        keys.close()
    if args.save_actions:
        try:
            log = game.action_log()
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        path = Path(args.save_actions)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(log, indent=1))
        print(f"wrote {path}")
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
