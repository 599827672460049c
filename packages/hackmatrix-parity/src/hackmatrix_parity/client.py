"""Client of the Swift headless binary's JSON-lines protocol (interface §5).

``SwiftGame`` starts the binary, sends one request per line and reads exactly one
reply line per request, with a per-request timeout. It turns every way the
binary can go wrong into a clear exception that carries the tail of its stderr:

* ``SwiftProcessError``: the process died (EOF on stdout) or could not start;
* ``SwiftTimeoutError``: no reply within the timeout (the process is killed);
* ``SwiftProtocolError``: a reply that is not one JSON object, or has the wrong shape;
* ``SwiftCommandError``: a well-formed ``{"error": ...}`` reply (the process lives on).

It works against the canonical binary (no seed, no extension commands) and
against ours, whose extensions (``version``, ``reset`` with ``seed``,
``getFullState``/``setFullState``) it detects at start-up (interface §5.8).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

NUM_ACTIONS = 28
ENV_VAR = "HACKMATRIX_SWIFT_BIN"
_STDERR_TAIL = 4000


class SwiftError(RuntimeError):
    """Base class of every client error."""


class SwiftProcessError(SwiftError):
    """The binary could not start, died, or was killed; the message holds its stderr tail."""


class SwiftTimeoutError(SwiftProcessError):
    """The binary did not answer in time (it is killed; ``restart()`` to continue)."""


class SwiftProtocolError(SwiftError):
    """The binary answered something that is not a valid reply (interface §5.2)."""


class SwiftCommandError(SwiftError):
    """The binary answered ``{"error": message}``; the process is still usable."""

    def __init__(self, message: str, request: dict[str, Any]):
        super().__init__(f"{message} (request: {_short(request)})")
        self.error = message
        self.request = request


def _short(obj: Any, limit: int = 200) -> str:
    text = json.dumps(obj, separators=(",", ":"))
    return text if len(text) <= limit else text[:limit] + "..."


def resolve_swift_binary(path: str | os.PathLike[str] | None = None) -> Path:
    """The binary to run: ``path``, else ``$HACKMATRIX_SWIFT_BIN``, else our built binary.

    The last fallback builds the repo's Swift package if needed
    (``hackmatrix_parity.build.ensure_swift_binary``).
    """
    if path is None:
        path = os.environ.get(ENV_VAR) or None
    if path is None:
        from hackmatrix_parity.build import ensure_swift_binary

        return ensure_swift_binary()
    p = Path(path).expanduser()
    if not p.is_file():
        raise SwiftProcessError(f"Swift binary not found: {p}")
    if not os.access(p, os.X_OK):
        raise SwiftProcessError(f"Swift binary is not executable: {p}")
    return p.resolve()


class SwiftGame:
    """One running Swift headless process (context manager).

    Args:
        binary: path of the binary (see ``resolve_swift_binary`` for the fallbacks).
        args: extra command-line arguments (``--headless-cli`` is always passed first).
        timeout: seconds to wait for each reply.
        seed: default seed of ``reset`` (sent only to a binary with our extensions).
        command: full argv to run instead of ``[binary, ...]`` (tests use it for fake binaries).
    """

    def __init__(
        self,
        binary: str | os.PathLike[str] | None = None,
        *,
        args: Sequence[str] = (),
        timeout: float = 10.0,
        seed: int | None = None,
        command: Sequence[str] | None = None,
    ):
        if command is None:
            self.binary: Path | None = resolve_swift_binary(binary)
            self._argv = [str(self.binary), "--headless-cli", *args]
        else:
            self.binary = None
            self._argv = [*command, *args]
        self.timeout = float(timeout)
        self.seed = seed
        self.version_info: dict[str, Any] | None = None
        self._supports_full_state: bool | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr_file: Any = None
        self.has_game = False
        self.requests_sent = 0
        self._start()

    # --- lifecycle -----------------------------------------------------------
    def _start(self) -> None:
        self._stderr_file = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        self._lines = queue.Queue()
        try:
            self._proc = subprocess.Popen(
                self._argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr_file,
            )
        except OSError as e:
            raise SwiftProcessError(f"cannot start {self._argv[0]}: {e}") from e
        reader = threading.Thread(target=self._read_stdout, args=(self._proc, self._lines))
        reader.daemon = True
        reader.start()
        self.has_game = False
        self._detect_extensions()

    @staticmethod
    def _read_stdout(proc: subprocess.Popen[bytes], lines: queue.Queue[bytes | None]) -> None:
        assert proc.stdout is not None
        # This thread owns stdout: it alone closes it, after EOF. (Closing it from another
        # thread could let the fd number be reused by the next process's pipe while this
        # thread still reads from it.)
        try:
            for line in iter(proc.stdout.readline, b""):
                lines.put(line)
        except (OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError):
                proc.stdout.close()
        lines.put(None)  # EOF

    def _detect_extensions(self) -> None:
        try:
            reply = self.request({"action": "version"})
        except SwiftCommandError:
            self.version_info = None  # canonical: "Unknown command: version"
            self._supports_full_state = False
            return
        self.version_info = reply
        self._supports_full_state = None  # probed on first use

    @property
    def extensions(self) -> bool:
        """True when the binary answered ``version`` (ours); False for the canonical binary."""
        return self.version_info is not None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stderr_tail(self, limit: int = _STDERR_TAIL) -> str:
        """The last ``limit`` characters the binary wrote to stderr."""
        f = self._stderr_file
        if f is None:
            return ""
        try:
            f.flush()
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        if proc.stdin is not None:  # stdout is closed by its reader thread at EOF
            with contextlib.suppress(OSError):
                proc.stdin.close()

    def close(self) -> None:
        """End the process: close stdin (the binary exits on EOF), then kill if it lingers."""
        proc = self._proc
        if proc is not None and proc.poll() is None and proc.stdin is not None:
            try:
                proc.stdin.close()
                proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()
        if self._stderr_file is not None:
            self._stderr_file.close()
            self._stderr_file = None
        self.has_game = False

    def restart(self) -> None:
        """Kill the current process (whatever its state) and start a fresh one."""
        self.close()
        self._start()

    def __enter__(self) -> SwiftGame:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # best effort; close() is the real API
        with contextlib.suppress(Exception):
            self._kill()

    # --- one request ---------------------------------------------------------
    def _fail(self, what: str) -> SwiftProcessError:
        proc = self._proc
        code = None if proc is None else proc.poll()
        tail = self.stderr_tail()
        msg = f"Swift binary {what} (exit code {code})"
        if tail.strip():
            msg += f"; stderr tail:\n{tail}"
        return SwiftProcessError(msg)

    def request(self, obj: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send one request object, return the reply object (interface §5.2)."""
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise SwiftProcessError("Swift binary is not running (closed or killed; restart())")
        line = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        try:
            proc.stdin.write(line)
            proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            err = self._fail(f"died before request {_short(obj)}")
            self._kill()
            raise err from e
        self.requests_sent += 1
        wait = self.timeout if timeout is None else timeout
        try:
            raw = self._lines.get(timeout=wait)
        except queue.Empty:
            err = self._fail(f"did not answer within {wait:.1f}s to {_short(obj)}")
            self._kill()
            raise SwiftTimeoutError(str(err)) from None
        if raw is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=2)
            err = self._fail(f"died (EOF, no reply) on request {_short(obj)}")
            self._kill()
            raise err
        try:
            reply = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            text = raw.decode("utf-8", "replace")[:300]
            raise SwiftProtocolError(
                f"reply to {_short(obj)} is not JSON: {text!r}; stderr tail:\n{self.stderr_tail()}"
            ) from None
        if not isinstance(reply, dict):
            raise SwiftProtocolError(f"reply to {_short(obj)} is not an object: {_short(reply)}")
        if "error" in reply:
            raise SwiftCommandError(str(reply["error"]), obj)
        return reply

    @staticmethod
    def _need(reply: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
        if key not in reply or not isinstance(reply[key], kind):
            raise SwiftProtocolError(f"reply lacks {key!r} of type {kind}: {_short(reply)}")
        return reply[key]

    def _observation(self, reply: dict[str, Any]) -> dict[str, Any]:
        obs = self._need(reply, "observation", dict)
        cells = obs.get("cells")
        if not (isinstance(cells, list) and len(cells) == 6 and all(len(r) == 6 for r in cells)):
            raise SwiftProtocolError(f"observation.cells is not 6x6: {_short(obs)}")
        return obs

    # --- commands (interface §5.5) -------------------------------------------
    def reset(self, seed: int | None = None) -> dict[str, Any]:
        """New random game; ``seed`` is sent only to a binary with our extensions."""
        req: dict[str, Any] = {"action": "reset"}
        seed = self.seed if seed is None else seed
        if seed is not None and self.extensions:
            req["seed"] = int(seed)
        obs = self._observation(self.request(req))
        self.has_game = True
        return obs

    def step(self, action: int) -> dict[str, Any]:
        """One step; returns ``{"observation", "reward", "done", "info"}`` (validated)."""
        if isinstance(action, bool) or not 0 <= int(action) < NUM_ACTIONS:
            raise ValueError(f"action must be in 0..27 (the binary aborts otherwise): {action!r}")
        if not self.has_game:
            raise SwiftError("step before reset/setState (the binary aborts on that)")
        reply = self.request({"action": "step", "actionIndex": int(action)})
        self._observation(reply)
        reward = self._need(reply, "reward", (int, float))
        done = self._need(reply, "done", bool)
        info = self._need(reply, "info", dict)
        bd = self._need(info, "reward_breakdown", dict)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in bd.values()):
            raise SwiftProtocolError(f"reward_breakdown has non-numbers: {_short(bd)}")
        reply["reward"] = float(reward)
        reply["done"] = bool(done)
        return reply

    def set_state(self, state: dict[str, Any]) -> dict[str, Any]:
        """Inject a state (interface §5.7); returns the observation."""
        obs = self._observation(self.request({"action": "setState", "state": state}))
        self.has_game = True
        return obs

    def valid_actions(self) -> list[int]:
        acts = self._need(self.request({"action": "getValidActions"}), "validActions", list)
        if not all(isinstance(a, int) and 0 <= a < NUM_ACTIONS for a in acts):
            raise SwiftProtocolError(f"validActions out of range: {acts}")
        return acts

    def action_mask(self) -> list[bool]:
        valid = set(self.valid_actions())
        return [a in valid for a in range(NUM_ACTIONS)]

    def internal_state(self) -> dict[str, Any]:
        reply = self.request({"action": "getInternalState"})
        self._need(reply, "enemies", list)
        return reply

    def action_space(self) -> dict[str, Any]:
        return self.request({"action": "getActionSpace"})

    def observation_space(self) -> dict[str, Any]:
        return self.request({"action": "getObservationSpace"})

    # --- our extensions (specs/swift.md) -------------------------------------
    @property
    def supports_full_state(self) -> bool:
        """Whether ``getFullState``/``setFullState`` exist (probed once)."""
        if self._supports_full_state is None:
            exts = (self.version_info or {}).get("extensions")
            if not self.extensions:
                self._supports_full_state = False
            elif isinstance(exts, list):
                self._supports_full_state = "getFullState" in exts
            else:  # probe; "No game" errors still mean the command exists
                try:
                    self.request({"action": "getFullState"})
                    self._supports_full_state = True
                except SwiftCommandError as e:
                    self._supports_full_state = not e.error.startswith("Unknown command")
        return self._supports_full_state

    def full_state(self, include_history: bool = False) -> dict[str, Any]:
        """The complete internal state (our binary only; schema in specs/swift.md)."""
        if not self.supports_full_state:
            raise SwiftError("this binary has no getFullState (canonical binary?)")
        req: dict[str, Any] = {"action": "getFullState"}
        if include_history:
            req["includeHistory"] = True
        reply = self.request(req)
        state = reply.get("state", reply)
        if not isinstance(state, dict):
            raise SwiftProtocolError(f"full state is not an object: {_short(reply)}")
        self._need(state, "player", dict)
        self._need(state, "enemies", list)
        self._need(state, "transmissions", list)
        cells = self._need(state, "cells", list)
        if not (len(cells) == 6 and all(isinstance(r, list) and len(r) == 6 for r in cells)):
            raise SwiftProtocolError(f"full state cells are not 6x6: {_short(state)}")
        return state

    def set_full_state(self, state: dict[str, Any]) -> dict[str, Any]:
        """Inject a complete internal state (our binary only); returns the observation."""
        if not self.supports_full_state:
            raise SwiftError("this binary has no setFullState (canonical binary?)")
        obs = self._observation(self.request({"action": "setFullState", "state": state}))
        self.has_game = True
        return obs
