"""``SwiftEnv``: a Gymnasium env over the Swift binary (interface §5.9, §3).

Observations are the same tensors as the JAX env (interface §3.7, built by
``swift_tensor``), as a ``Dict`` of ``player``/``programs``/``grid``, or the flat
1545-vector with ``flatten=True``. ``action_masks()`` follows the sb3-contrib
MaskablePPO convention (bool[28] for the current state). The game never
truncates by itself; ``max_episode_steps`` (default 1000, the original
training setup) truncates here.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hackmatrix_parity.client import SwiftGame
from hackmatrix_parity.tensor import breakdown15, flatten_tensor, mask_from_valid, swift_tensor


class SwiftEnv(gym.Env):
    # the JAX env's render metadata (hackmatrix_env.gymnasium.HackMatrixEnv), checked by a test
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        swift_bin: str | None = None,
        *,
        flatten: bool = False,
        max_episode_steps: int | None = 1000,
        timeout: float = 10.0,
        render_mode: str | None = None,
        game: SwiftGame | None = None,
    ):
        self.game = game if game is not None else SwiftGame(swift_bin, timeout=timeout)
        self.flatten = flatten
        self.max_episode_steps = max_episode_steps
        self.render_mode = render_mode
        self.action_space = spaces.Discrete(28)
        if flatten:
            self.observation_space = spaces.Box(0.0, 1.0, (1545,), np.float32)
        else:
            self.observation_space = spaces.Dict(
                {
                    "player": spaces.Box(0.0, 1.0, (10,), np.float32),
                    "programs": spaces.Box(0, 1, (23,), np.int32),
                    "grid": spaces.Box(0.0, 1.0, (6, 6, 42), np.float32),
                }
            )
        self._mask = np.zeros(28, bool)
        self._steps = 0
        self._last_obs: dict[str, Any] | None = None

    def _encode(self, obs_json: dict[str, Any]):
        player, programs, grid = swift_tensor(obs_json)
        if self.flatten:
            return flatten_tensor(player, programs, grid)
        return {"player": player, "programs": programs, "grid": grid}

    def action_masks(self) -> np.ndarray:
        """bool[28]: valid actions in the current state (sb3-contrib convention)."""
        return self._mask.copy()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """New game; ``options={"state": setState dict}`` injects a scenario instead.

        ``seed`` is forwarded to a binary with our extensions; the canonical binary
        cannot be seeded (interface §5.8).
        """
        super().reset(seed=seed)
        if not self.game.alive:
            self.game.restart()
        if options and "state" in options:
            obs = self.game.set_state(options["state"])
        else:
            obs = self.game.reset(seed=seed)
        self._mask = mask_from_valid(self.game.valid_actions())
        self._steps = 0
        self._last_obs = obs
        return self._encode(obs), {"action_mask": self.action_masks(), "observation_json": obs}

    def step(self, action: int):
        reply = self.game.step(int(action))
        obs = reply["observation"]
        self._last_obs = obs
        self._mask = mask_from_valid(self.game.valid_actions())
        self._steps += 1
        info = dict(reply["info"])
        info["reward_breakdown_15"] = breakdown15(reply["reward"], reply["info"])
        info["action_mask"] = self.action_masks()
        terminated = bool(reply["done"])
        truncated = (
            not terminated
            and self.max_episode_steps is not None
            and self._steps >= self.max_episode_steps
        )
        return self._encode(obs), float(reply["reward"]), terminated, truncated, info

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self._last_obs is None:
            return None
        o = self._last_obs
        rows = []
        for r in range(5, -1, -1):
            line = ""
            for c in range(6):
                cell = o["cells"][r][c]
                ch = "."
                if "block" in cell:
                    ch = "#"
                if cell["isExit"]:
                    ch = "E"
                if cell["isDataSiphon"]:
                    ch = "s"
                if "transmission" in cell:
                    ch = "t"
                if "enemy" in cell:
                    ch = cell["enemy"]["type"][0].upper()
                if (r, c) == (o["playerRow"], o["playerCol"]):
                    ch = "@"
                line += ch
            rows.append(line)
        return "\n".join(rows)

    def close(self) -> None:
        self.game.close()
