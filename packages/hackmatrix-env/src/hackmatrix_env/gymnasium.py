"""Gymnasium 1.x envs over the JAX game: one game, or N games stepped by one jitted call (layer 7).

The only module of the package that imports gymnasium (the ``[gymnasium]``
extra). Importing it registers the ids::

    import gymnasium as gym
    import hackmatrix_env.gymnasium  # or gym.make("hackmatrix_env.gymnasium:HackMatrix-v0")
    env = gym.make("HackMatrix-v0")                                   # HackMatrixEnv
    envs = gym.make_vec("HackMatrix-v0", num_envs=64)                  # HackMatrixVectorEnv
    envs = gym.make_vec("HackMatrix-v0", num_envs=8, vectorization_mode="sync")  # 8 HackMatrixEnv

Spaces (both envs; ``flatten=True`` picks the flat one):

* action: ``Discrete(28)`` (0-3 directions, 4 siphon, 5-27 programs; interface §0.2).
* observation: ``Dict(player Box f32[10], programs Box f32[23], grid Box f32[6,6,42],
  action_mask MultiBinary(28) int8)`` (interface §3; player and grid are
  ``Box(0, inf)`` because a few features exceed 1, interface §3.6), or with
  ``flatten=True`` ``Box(0, inf, f32[1545])`` (``flatten_observation``, the layout of
  ``SwiftEnv(flatten=True)`` and of the original training wrapper).
* ``action_masks()``: bool[28] (vector env: bool[N, 28]) for the current state, as
  sb3-contrib's ``MaskablePPO`` asks for it.

``info`` carries the same keys after every ``reset`` and ``step``:
``reward_breakdown`` f32[15] (names in ``constants.REWARD_COMPONENTS``; its sum is
the reward), ``action_kind`` int8, ``invalid_action`` bool, ``history_overflow``
bool, ``action_mask`` bool[28]. After a reset the first four are zeros/False.

An action the mask forbids is not an error: the game treats it as invalid
(state unchanged, reward 0, ``terminated``; interface §2). An action that is
not an integer in 0..27 raises ``ValueError``. Episodes are truncated at
``max_episode_steps`` (default 1000) by the game's own clock
(``EnvParams.max_steps_in_episode``). ``gymnasium.make`` keeps that argument for
its ``TimeLimit`` wrapper (registered: 1000, the game's default), so
``gym.make("HackMatrix-v0", max_episode_steps=50)`` truncates at 50 through the
wrapper; ``gymnasium.make_vec`` hands it to the vector env's game clock.

Randomness (``hackmatrix_env.vector``): ``reset(seed=s)`` starts the game from
``jax.random.key(s)``; the vector env seeds game ``i`` with ``s + i``, as
Gymnasium's ``SyncVectorEnv`` does, so ``HackMatrixVectorEnv`` plays exactly the
games of ``SyncVectorEnv`` over ``HackMatrixEnv`` in ``SAME_STEP`` mode (a test
checks it). ``reset()`` without a seed continues the game's key chain.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import jax
import numpy as np

try:
    import gymnasium as gym
    from gymnasium import spaces
    from gymnasium.envs.registration import register, registry
    from gymnasium.vector import AutoresetMode, VectorEnv
    from gymnasium.vector.utils import batch_space
except ModuleNotFoundError as e:  # the optional extra is missing
    raise ModuleNotFoundError(
        f"hackmatrix_env.gymnasium needs {e.name!r}: install the extra, "
        "pip install 'hackmatrix-env[gymnasium]'"
    ) from e

from hackmatrix_env.constants import (
    GRID_CHANNELS,
    GRID_SIZE,
    NUM_ACTIONS,
    NUM_PROGRAMS,
    NUM_REWARD_COMPONENTS,
    PLAYER_FEATURES,
    ActionKind,
)
from hackmatrix_env.render import render_text
from hackmatrix_env.types import EnvParams, EnvState, Observation, check_integer
from hackmatrix_env.vector import reset_batch, reset_one, step_batch, step_one

ENV_ID = "HackMatrix-v0"
FLAT_FEATURES = PLAYER_FEATURES + NUM_PROGRAMS + GRID_SIZE * GRID_SIZE * GRID_CHANNELS  # 1545
STEP_INFO_KEYS = ("reward_breakdown", "action_kind", "invalid_action", "history_overflow")
_SEED_BOUND = 2**63  # jax.random.key takes a 64-bit seed


def observation_space(flatten: bool) -> spaces.Space:
    """The space of one game's observation (module docstring)."""
    if flatten:
        return spaces.Box(0.0, np.inf, (FLAT_FEATURES,), np.float32)
    return spaces.Dict(
        {
            "player": spaces.Box(0.0, np.inf, (PLAYER_FEATURES,), np.float32),
            "programs": spaces.Box(0.0, 1.0, (NUM_PROGRAMS,), np.float32),
            "grid": spaces.Box(0.0, np.inf, (GRID_SIZE, GRID_SIZE, GRID_CHANNELS), np.float32),
            "action_mask": spaces.MultiBinary(NUM_ACTIONS),
        }
    )


def observation_to_numpy(obs: Observation, flatten: bool) -> dict[str, np.ndarray] | np.ndarray:
    """One game's or a batch's ``Observation`` (host numpy) in the Gymnasium layout."""
    player = np.asarray(obs.player, np.float32)
    programs = np.asarray(obs.programs, np.float32)
    grid = np.asarray(obs.grid, np.float32)
    if flatten:
        lead = player.shape[:-1]
        return np.concatenate([player, programs, grid.reshape(*lead, -1)], axis=-1)
    return {
        "player": player,
        "programs": programs,
        "grid": grid,
        "action_mask": np.asarray(obs.action_mask, np.int8),
    }


def check_action(action: Any) -> int:
    """The action as a Python int; ``ValueError`` unless it is an integer in 0..27."""
    a = np.asarray(action)
    if a.shape != () or not np.issubdtype(a.dtype, np.integer):
        raise ValueError(
            f"action must be one integer in 0..{NUM_ACTIONS - 1}, got {action!r} "
            f"(shape {a.shape}, dtype {a.dtype})"
        )
    value = int(a)
    if not 0 <= value < NUM_ACTIONS:
        raise ValueError(f"action must be in 0..{NUM_ACTIONS - 1}, got {value}")
    return value


def check_actions(actions: Any, num_envs: int) -> np.ndarray:
    """int32[num_envs]; ``ValueError`` on a wrong shape, a non-integer dtype or a value out of range."""
    a = np.asarray(actions)
    if a.shape != (num_envs,):
        raise ValueError(f"actions must have shape ({num_envs},), got {a.shape}")
    if not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"actions must be integers in 0..{NUM_ACTIONS - 1}, got dtype {a.dtype}")
    bad = (a < 0) | (a >= NUM_ACTIONS)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"actions must be in 0..{NUM_ACTIONS - 1}; env {i} got {int(a[i])}")
    return a.astype(np.int32)


def check_seed(seed: Any) -> int:
    """The seed as a Python int in ``[0, 2**63)``; ``ValueError`` otherwise."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    if not 0 <= int(seed) < _SEED_BOUND:
        raise ValueError(f"seed must be in [0, 2**63), got {seed}")
    return int(seed)


def make_params(max_episode_steps: int | None, start_stage: int) -> EnvParams:
    """``EnvParams`` from the Gymnasium-style arguments, checked on the host."""
    steps = (
        1000 if max_episode_steps is None else check_integer("max_episode_steps", max_episode_steps)
    )
    if steps < 1:
        raise ValueError(f"max_episode_steps must be positive, got {max_episode_steps}")
    if not 1 <= check_integer("start_stage", start_stage) <= 8:
        raise ValueError(f"start_stage must be in 1..8, got {start_stage}")
    return EnvParams(max_steps_in_episode=steps, start_stage=int(start_stage))


def reset_info(mask: np.ndarray) -> dict[str, Any]:
    """``info`` of a fresh game: the step keys zeroed, and its mask."""
    return {
        "reward_breakdown": np.zeros(NUM_REWARD_COMPONENTS, np.float32),
        "action_kind": np.int8(ActionKind.MOVE),
        "invalid_action": False,
        "history_overflow": False,
        "action_mask": np.asarray(mask, bool),
    }


class HackMatrixEnv(gym.Env):
    """One game as a ``gymnasium.Env`` (module docstring for spaces, info and seeding).

    Each ``step`` is one call of the jitted gymnax ``HackMatrix.step``. When an
    episode ends, the game has already been restarted inside that call (gymnax
    auto-reset); the ended game's observation is returned, and the next
    ``reset()`` without a seed returns the restarted game, so a ``SyncVectorEnv``
    of these envs plays the same games as ``HackMatrixVectorEnv``.

    Args:
        flatten: observation as the flat ``float32[1545]`` instead of the Dict.
        max_episode_steps: truncation step count (default 1000).
        start_stage: curriculum start stage (1 = the real game).
        render_mode: ``"ansi"`` (``render()`` returns the board as text) or None.
    """

    # render_fps: the pace a viewer replays the text frames at (gymnasium's checker asks for it;
    # the game is turn-based, so it sets no simulation speed)
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        *,
        flatten: bool = False,
        max_episode_steps: int | None = 1000,
        start_stage: int = 1,
        render_mode: str | None = None,
    ):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None")
        self.flatten = bool(flatten)
        self.params = make_params(max_episode_steps, start_stage)
        self.render_mode = render_mode
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        self.observation_space = observation_space(self.flatten)
        self._chain: jax.Array | None = None
        self._state: EnvState | None = None
        self._mask = np.zeros(NUM_ACTIONS, bool)
        self._restarted: tuple[EnvState, Observation] | None = None  # after an episode end

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """A fresh game: from ``key(seed)``, else the game restarted at the last episode end,
        else the next key of the chain."""
        del options
        seed = None if seed is None else check_seed(seed)
        super().reset(seed=seed)
        if seed is not None:
            key = jax.random.key(seed)
        elif self._chain is None:
            key = jax.random.key(int(self.np_random.integers(0, 2**62)))
        else:
            key = None
        if key is None and self._restarted is not None:
            self._state, obs = self._restarted
        else:
            self._chain, k_reset = jax.random.split(self._chain if key is None else key)
            obs, self._state = reset_one(k_reset, self.params)
        self._restarted = None
        return self._observe(obs), reset_info(self._mask)

    def step(self, action: Any):
        """One game step (interface §1); see the class docstring for the episode end."""
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        a = check_action(action)
        self._chain, k_step = jax.random.split(self._chain)
        obs, state, reward, terminated, truncated, info = step_one(
            k_step, self._state, a, self.params
        )
        terminated, truncated = bool(terminated), bool(truncated)
        self._restarted = None  # stepping on after an episode end plays the restarted game
        if terminated or truncated:
            self._restarted = (state, obs)
            obs = info["final_observation"]
        self._state = state
        host = jax.device_get({k: info[k] for k in STEP_INFO_KEYS})
        out = self._observe(obs)
        step_info = {
            "reward_breakdown": np.asarray(host["reward_breakdown"], np.float32),
            "action_kind": np.int8(host["action_kind"]),
            "invalid_action": bool(host["invalid_action"]),
            "history_overflow": bool(host["history_overflow"]),
            "action_mask": self._mask.copy(),
        }
        return out, float(reward), terminated, truncated, step_info

    def action_masks(self) -> np.ndarray:
        """bool[28]: the actions valid in the current state (sb3-contrib convention)."""
        return self._mask.copy()

    def render(self) -> str | None:
        """The board as text (``render_mode="ansi"``); the restarted game after an episode end."""
        if self.render_mode != "ansi" or self._state is None:
            return None
        return render_text(self._state)

    def _observe(self, obs: Observation):
        host = jax.device_get(obs)
        self._mask = np.asarray(host.action_mask, bool)
        return observation_to_numpy(host, self.flatten)


class HackMatrixVectorEnv(VectorEnv):
    """N games as a ``gymnasium.vector.VectorEnv``, stepped by one jitted ``vmap`` call.

    Autoreset mode: ``AutoresetMode.SAME_STEP`` (``metadata["autoreset_mode"]``).
    A game whose episode ends in a ``step`` is restarted in that same ``step``:
    the returned observation row (and ``info`` row, see the module docstring) is
    the new game's, and the ended episode's last observation and info are in
    ``info["final_obs"]`` (an object array: the observation for the rows that
    ended, None elsewhere; mask ``info["_final_obs"]``) and ``info["final_info"]``
    (a dict of arrays with masks ``_<key>``; mask ``info["_final_info"]``), exactly
    as Gymnasium's ``SyncVectorEnv`` in ``SAME_STEP`` mode lays them out. Every
    ``info`` key has its ``_<key>`` mask. ``reward``, ``terminated`` and
    ``truncated`` are the ended step's. The next action for such a row is taken in
    the new game. There is never a step that only resets.

    Args:
        num_envs: number of games N.
        flatten, max_episode_steps, start_stage: as ``HackMatrixEnv``.
    """

    metadata: ClassVar[dict[str, Any]] = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(
        self,
        num_envs: int,
        *,
        flatten: bool = False,
        max_episode_steps: int | None = 1000,
        start_stage: int = 1,
        render_mode: str | None = None,
    ):
        if isinstance(num_envs, bool) or int(num_envs) != num_envs or int(num_envs) < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        if render_mode is not None:
            raise ValueError("HackMatrixVectorEnv does not render; use HackMatrixEnv")
        self.num_envs = int(num_envs)
        self.flatten = bool(flatten)
        self.params = make_params(max_episode_steps, start_stage)
        self.single_action_space = spaces.Discrete(NUM_ACTIONS)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.single_observation_space = observation_space(self.flatten)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self._chains: jax.Array | None = None
        self._state: EnvState | None = None
        self._masks = np.zeros((self.num_envs, NUM_ACTIONS), bool)

    def reset(
        self,
        *,
        seed: int | Sequence[int] | None = None,
        options: dict[str, Any] | None = None,
    ):
        """Restart every game: game ``i`` from ``key(seed + i)`` (or ``key(seed[i])``), else
        from the next key of its chain."""
        del options
        if seed is None:
            chains = self._chains
            if chains is None:
                base = int(self.np_random.integers(0, 2**62))
                chains = self._keys([base + i for i in range(self.num_envs)])
        else:
            if isinstance(seed, int | np.integer) and not isinstance(seed, bool):
                seeds = [check_seed(seed) + i for i in range(self.num_envs)]
                super().reset(seed=int(seed))
            else:
                seeds = [check_seed(s) for s in seed]
                if len(seeds) != self.num_envs:
                    raise ValueError(f"seed must be an int or {self.num_envs} ints, got {seed!r}")
            chains = self._keys(seeds)
        self._chains, obs, self._state = reset_batch(chains, self.params)
        host = jax.device_get(obs)
        self._masks = np.asarray(host.action_mask, bool)
        info = {k: np.stack([v] * self.num_envs) for k, v in reset_info(self._masks[0]).items()}
        info["action_mask"] = self._masks.copy()
        return observation_to_numpy(host, self.flatten), _with_masks(info, self.num_envs)

    def step(self, actions: Any):
        """Step every game with ``actions`` (int[N]) in one jitted call; see the class docstring."""
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        a = check_actions(actions, self.num_envs)
        self._chains, obs, self._state, reward, terminated, truncated, info = step_batch(
            self._chains, self._state, a, self.params
        )
        host_obs, reward, terminated, truncated, info = jax.device_get(
            (obs, reward, terminated, truncated, info)
        )
        terminated = np.asarray(terminated, bool)
        truncated = np.asarray(truncated, bool)
        done = terminated | truncated
        self._masks = np.asarray(host_obs.action_mask, bool)
        final = info["final_observation"]
        step_info = {
            "reward_breakdown": np.asarray(info["reward_breakdown"], np.float32),
            "action_kind": np.asarray(info["action_kind"], np.int8),
            "invalid_action": np.asarray(info["invalid_action"], bool),
            "history_overflow": np.asarray(info["history_overflow"], bool),
            "action_mask": np.asarray(final.action_mask, bool),
        }
        # Rows that ended carry the restarted game's info; the ended step's goes to final_info.
        restarted = reset_info(np.zeros(NUM_ACTIONS, bool))
        out_info = {
            k: np.where(_rows(done, v), restarted[k], v).astype(v.dtype)
            for k, v in step_info.items()
        }
        out_info["action_mask"] = self._masks.copy()
        out_info = _with_masks(out_info, self.num_envs)
        if done.any():
            final_obs = observation_to_numpy(final, self.flatten)
            objs = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(done):
                objs[i] = _row(final_obs, i)
            final_info: dict[str, np.ndarray] = {}
            for k, v in step_info.items():
                final_info[k] = np.where(_rows(done, v), v, 0).astype(v.dtype)
                final_info[f"_{k}"] = done.copy()
            out_info.update(
                final_obs=objs,
                _final_obs=done.copy(),
                final_info=final_info,
                _final_info=done.copy(),
            )
        return (
            observation_to_numpy(host_obs, self.flatten),
            np.asarray(reward, np.float64),
            terminated,
            truncated,
            out_info,
        )

    def action_masks(self) -> np.ndarray:
        """bool[N, 28]: each game's valid actions in its current state."""
        return self._masks.copy()

    @staticmethod
    def _keys(seeds: Sequence[int]) -> jax.Array:
        return jax.numpy.stack([jax.random.key(s) for s in seeds])


def _rows(done: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``done`` broadcast over the trailing axes of ``value`` (rows are the first axis)."""
    return done.reshape(done.shape + (1,) * (value.ndim - 1))


def _row(obs: dict[str, np.ndarray] | np.ndarray, i: int):
    if isinstance(obs, dict):
        return {k: v[i].copy() for k, v in obs.items()}
    return obs[i].copy()


def _with_masks(info: dict[str, np.ndarray], num_envs: int) -> dict[str, np.ndarray]:
    """``info`` with Gymnasium's ``_<key>`` presence masks, all True (every game has every key)."""
    out: dict[str, np.ndarray] = {}
    for k, v in info.items():
        out[k] = v
        out[f"_{k}"] = np.ones(num_envs, bool)
    return out


def make_vector_env(num_envs: int, **kwargs: Any) -> HackMatrixVectorEnv:
    """``vector_entry_point`` of ``HackMatrix-v0`` (``gymnasium.make_vec``)."""
    return HackMatrixVectorEnv(num_envs, **kwargs)


if ENV_ID not in registry:
    register(
        id=ENV_ID,
        entry_point="hackmatrix_env.gymnasium:HackMatrixEnv",
        vector_entry_point="hackmatrix_env.gymnasium:make_vector_env",
        max_episode_steps=1000,
    )
