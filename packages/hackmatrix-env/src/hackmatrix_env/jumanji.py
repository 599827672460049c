"""``HackMatrixJumanji``: a Jumanji 1.1 ``Environment`` over the same game (layer 6).

The only module of the package that imports jumanji. The state carries its
own key (Jumanji's convention): ``step`` does ``key, sub = split(state.key)``,
uses ``sub`` for the game step and stores ``key`` back, so the stored key is
never one that was used (``AutoResetWrapper`` resets from ``split(state.key)``).
Nothing auto-resets here; wrap with ``jumanji.wrappers.AutoResetWrapper`` /
``VmapAutoResetWrapper`` for that.

Observation (``observation_spec``): the ``Observation`` NamedTuple of
``hackmatrix_env.types`` —

* ``player``: float32[10] (interface §3.2; nominally in [0, 1], can exceed 1),
* ``programs``: float32[23] in {0, 1} (owned flags),
* ``grid``: float32[6, 6, 42] (interface §3.4; nominally in [0, 1], can exceed 1),
* ``action_mask``: bool[28] (interface §2).

Action: ``DiscreteArray(28)``. Reward: float32, the sum of the 15 components
in ``extras["reward_breakdown"]``. A step terminates (discount 0) on an
invalid action, death or victory; with ``max_steps`` set, reaching it
truncates (discount 1, ``StepType.LAST``). ``extras``: ``reward_breakdown``
float32[15], ``action_kind`` int8, ``invalid_action`` bool.
"""

from __future__ import annotations

from functools import cached_property

import jax
import jax.numpy as jnp

try:
    import chex
    from jumanji import specs
    from jumanji.env import Environment
    from jumanji.types import TimeStep, restart, termination, transition, truncation
except ModuleNotFoundError as e:  # the optional extra is missing
    raise ModuleNotFoundError(
        f"hackmatrix_env.jumanji needs {e.name!r}: install the extra, "
        "pip install 'hackmatrix-env[jumanji]'"
    ) from e

from hackmatrix_env.constants import (
    GRID_CHANNELS,
    GRID_SIZE,
    HISTORY_DEPTH,
    NUM_ACTIONS,
    NUM_PROGRAMS,
    NUM_REWARD_COMPONENTS,
    PLAYER_FEATURES,
    ActionKind,
)
from hackmatrix_env.observation import observe
from hackmatrix_env.transition import action_index, reset_state, step_state
from hackmatrix_env.types import (
    EnvParams,
    EnvState,
    Observation,
    check_history_depth,
    check_integer,
)


@chex.dataclass
class State:
    """Jumanji state: the env state (game, UNDO ring, time) plus the key for the next step."""

    env_state: EnvState  # as the gymnax env's (hackmatrix_env.types.EnvState)
    key: chex.PRNGKey  # unused key; the next step splits it


class HackMatrixJumanji(Environment[State, specs.DiscreteArray, Observation]):
    """HackMatrix for Jumanji: ``reset(key)``, ``step(state, action)``, specs with the mask inside.

    Args:
        start_stage: curriculum start stage (1 = the real game), as ``EnvParams.start_stage``.
        max_steps: optional step limit; reaching it ends the episode by truncation.
        history_depth: UNDO snapshots kept, as ``EnvParams.history_depth`` (default 16).
    """

    def __init__(
        self,
        start_stage: int = 1,
        max_steps: int | None = None,
        history_depth: int = HISTORY_DEPTH,
    ):
        if not 1 <= check_integer("start_stage", start_stage) <= 8:
            raise ValueError(f"start_stage must be in 1..8, got {start_stage}")
        if max_steps is not None and check_integer("max_steps", max_steps) < 1:
            raise ValueError(f"max_steps must be positive, got {max_steps}")
        self.start_stage = int(start_stage)
        self.max_steps = None if max_steps is None else int(max_steps)
        self.history_depth = check_history_depth(history_depth)
        self._params = EnvParams(
            max_steps_in_episode=self.max_steps or 2**31 - 1,
            start_stage=self.start_stage,
            history_depth=self.history_depth,
        )
        super().__init__()  # last: it evaluates the specs

    def __repr__(self) -> str:
        return (
            f"HackMatrixJumanji(start_stage={self.start_stage}, max_steps={self.max_steps}, "
            f"history_depth={self.history_depth})"
        )

    def reset(self, key: chex.PRNGKey) -> tuple[State, TimeStep[Observation]]:
        """A fresh game (rules §10.1)."""
        key, sub = jax.random.split(key)
        env_state = reset_state(sub, self._params)
        timestep = restart(observation=observe(env_state), extras=_extras_zero(), dtype=jnp.float32)
        return State(env_state=env_state, key=key), timestep

    def step(self, state: State, action: chex.Array) -> tuple[State, TimeStep[Observation]]:
        """One game step (interface §1); no auto-reset."""
        key, sub = jax.random.split(state.key)
        action = action_index(action, "HackMatrixJumanji.step")
        env_state, reward, terminated, info = step_state(sub, state.env_state, action)
        obs = observe(env_state)
        extras = {k: info[k] for k in ("reward_breakdown", "action_kind", "invalid_action")}
        if self.max_steps is None:
            truncated = jnp.bool_(False)
        else:
            truncated = env_state.time >= self.max_steps
        timestep = jax.lax.cond(
            terminated,
            lambda: termination(reward, obs, extras=extras, dtype=jnp.float32),
            lambda: jax.lax.cond(
                truncated,
                lambda: truncation(reward, obs, extras=extras, dtype=jnp.float32),
                lambda: transition(reward, obs, extras=extras, dtype=jnp.float32),
            ),
        )
        return State(env_state=env_state, key=key), timestep

    def render(self, state: State, save_path: str | None = None):
        """uint8[H, W, 3]: a picture of ``state`` (board and HUD); ``save_path`` writes a PNG.

        Host only (``hackmatrix_env.viewer``, matplotlib); never called by ``step``.
        """
        from hackmatrix_env import viewer

        image = viewer.rgb_array(state)
        if save_path is not None:
            viewer.save_image(image, save_path)
        return image

    def animate(self, states, interval: int = 200, save_path: str | None = None):
        """A matplotlib ``FuncAnimation`` of ``states``; ``save_path`` (``.gif``) writes it."""
        from hackmatrix_env import viewer

        return viewer.animate(states, interval, save_path)

    @cached_property
    def observation_spec(self) -> specs.Spec[Observation]:
        """``Observation(player, programs, grid, action_mask)`` (module docstring)."""
        return specs.Spec(
            Observation,
            "ObservationSpec",
            player=specs.Array((PLAYER_FEATURES,), jnp.float32, "player"),
            programs=specs.BoundedArray((NUM_PROGRAMS,), jnp.float32, 0.0, 1.0, "programs"),
            grid=specs.Array((GRID_SIZE, GRID_SIZE, GRID_CHANNELS), jnp.float32, "grid"),
            action_mask=specs.BoundedArray((NUM_ACTIONS,), bool, False, True, "action_mask"),
        )

    @cached_property
    def action_spec(self) -> specs.DiscreteArray:
        """``DiscreteArray(28)``: 0-3 directions, 4 siphon, 5-27 programs."""
        return specs.DiscreteArray(NUM_ACTIONS, name="action")

    @cached_property
    def reward_spec(self) -> specs.Array:
        return specs.Array((), jnp.float32, "reward")

    @cached_property
    def discount_spec(self) -> specs.BoundedArray:
        return specs.BoundedArray((), jnp.float32, 0.0, 1.0, "discount")


def _extras_zero() -> dict:
    return {
        "reward_breakdown": jnp.zeros(NUM_REWARD_COMPONENTS, jnp.float32),
        "action_kind": jnp.int8(ActionKind.MOVE),
        "invalid_action": jnp.bool_(False),
    }
