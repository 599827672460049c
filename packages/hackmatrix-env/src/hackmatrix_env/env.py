"""``HackMatrix``: the gymnax 1.0 environment (layer 6).

A thin shell over ``game.step_game`` (interface §1), ``stage.reset_game``
(rules §10.1) and ``observation.observe`` (interface §3)::

    env = HackMatrix()
    params = env.default_params            # EnvParams(max_steps_in_episode=1000, start_stage=1,
                                           #           history_depth=16)
    obs, state = env.reset(key, params)
    obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)

* ``obs`` is an ``Observation`` NamedTuple: ``player`` float32[10],
  ``programs`` float32[23], ``grid`` float32[6,6,42], ``action_mask`` bool[28]
  (``flatten_observation`` gives the 1545-vector).
* ``reward`` float32 = the sum, in table order, of ``info["reward_breakdown"]``
  (float32[15], names in ``constants.REWARD_COMPONENTS``, interface §4.2).
* ``terminated``: the action was invalid (state unchanged, reward 0), the
  player died, or stage 8 was completed (victory). ``truncated``: ``time``
  reached ``params.max_steps_in_episode``.
* ``info`` has the same keys every step: ``reward_breakdown``,
  ``action_kind`` (int8, ``ActionKind``), ``invalid_action`` (bool),
  ``history_overflow`` (bool: the episode's UNDO ring ran dry while the
  reference's unbounded stack would not, so from there on it may differ from
  Swift; raise ``EnvParams.history_depth``, specs/programs.md §5), plus
  gymnax's ``terminated``, ``truncated`` and ``final_observation``.

The state is ``EnvState(time, game, history)``: the game (``GameState``, what the rules
read and write) and the UNDO ring, which this shell keeps: a step reads the ring's top
(``history.undo_top``), runs ``game.step_game`` and records the step in the ring
(``history.record_step``: pop if UNDO ran, push after a real enemy phase).

``step`` keeps the gymnax 1.0 contract (auto-reset on ``terminated | truncated``). Under
``vmap`` the reset is computed only for the envs that are done (``batching.compute_where``),
and so is ``final_observation``; the step leaves a completed stage's generation owed
(``transition.step_state_owing``) and one traced generation makes both the new stage and the
fresh games (``generate_and_reset``); the UNDO ring's buffer is never selected (a fresh game's
ring is empty, so only its counters are reset; an empty ring is never read). Results equal
the base class's ``step`` exactly, apart from that unread buffer.
"""

from __future__ import annotations

import sys
from typing import Any

import jax
import jax.numpy as jnp

from hackmatrix_env.batching import compute_where
from hackmatrix_env.constants import (
    GRID_CHANNELS,
    GRID_SIZE,
    NUM_ACTIONS,
    NUM_PROGRAMS,
    NUM_STAGES,
    PLAYER_FEATURES,
)
from hackmatrix_env.eager import quick_when_eager
from hackmatrix_env.game import OwedStage, is_episode_over, on_final_exit
from hackmatrix_env.gymnax_base import environment, spaces
from hackmatrix_env.history import has_snapshot
from hackmatrix_env.observation import observe, observe_game
from hackmatrix_env.stage import generate_from_seed, start_game
from hackmatrix_env.transition import (
    action_index,
    clear_history,
    reset_state,
    step_state,
    step_state_owing,
)
from hackmatrix_env.types import NOT_ONE_ARRAY, EnvParams, EnvState, GameState, Observation


def generate_and_reset(
    game: GameState, owed: OwedStage, done: jax.Array, key: jax.Array, params: EnvParams
) -> tuple[GameState, GameState]:
    """The step's generations, one traced job run in two passes: ``(stepped, next)``.

    Pass 1 generates the owed new stage where it is due (``stepped``: the step's own
    result, what ``final_observation`` shows); pass 2 replaces the ``done`` games by fresh
    ones (``stage.start_game``, then the same generation). A step that completes a stage and
    is truncated needs both. Each pass is sparse (``compute_where``), and the generation is
    traced once where a stage completion and a separate reset would trace it twice
    (specs/env-shell.md §4, §7.12: a smaller graph).
    """
    reset_seed, start = start_game(key, params)

    def one_pass(i, games):
        current, stepped = games
        first = i == 0  # pass 1 generates from the stepped game itself, pass 2 from start
        pred = jnp.where(first, owed.due, done)
        seed = jnp.where(first, owed.seed, reset_seed)
        given = jax.tree.map(lambda c, s: jnp.where(first, c, s), current, start)
        out = compute_where(pred, generate_from_seed, (seed, given), current)
        return out, jax.tree.map(lambda o, k: jnp.where(first, o, k), out, stepped)

    game, stepped = jax.lax.fori_loop(0, 2, one_pass, (game, game))
    return stepped, game


class ObservationSpace(spaces.Dict):
    """The ``Dict`` space of the observation's four fields, which will not pass for a ``Box``.

    RL code written for one flat array treats the space as a ``Box``: gymnax's
    ``FlattenObservationWrapper.observation_space`` asserts ``isinstance(space, Box)``, and
    purejaxrl and rejax size their networks from ``space.shape``. Both get a ``TypeError`` /
    ``AttributeError`` naming the Box adapter (``BoxObservationWrapper``, ``make_legacy_env``)
    and ``flatten_observation``, as the observation itself does when reshaped
    (``Observation.__jax_array__``), rather than gymnax's "Only Box spaces are supported" or
    a bare missing attribute. Everything else sees a plain ``spaces.Dict``: ``isinstance``
    anywhere but in that wrapper, ``spaces``, ``sample``, ``contains``, gymnax's conversion
    to a gym ``Dict`` (``GymnaxToGymWrapper``).
    """

    _BOX_ATTRIBUTES = frozenset({"low", "high", "shape", "dtype"})

    @property
    def __class__(self):
        # isinstance(space, C) reads __class__ only when the type is not a subclass of C:
        # refused when gymnax's FlattenObservationWrapper asks whether this is its Box
        from gymnax.wrappers.purerl import FlattenObservationWrapper

        if sys._getframe(1).f_code is FlattenObservationWrapper.observation_space.__code__:
            raise TypeError(
                f"the HackMatrix observation space is a Dict, not a Box: {NOT_ONE_ARRAY}"
            )
        return type(self)

    def __getattr__(self, name: str):
        if name in ObservationSpace._BOX_ATTRIBUTES:
            raise AttributeError(
                f"the HackMatrix observation space is a Dict of four spaces and has no Box "
                f"{name!r}: {NOT_ONE_ARRAY}"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


class HackMatrix(environment.Environment[EnvState, EnvParams]):
    """HackMatrix as a gymnax 1.0 ``Environment`` with the action mask in the observation.

    The object has no configuration (everything tunable is in ``EnvParams``),
    so all instances compare equal and hash alike: jitted methods (``self`` is
    a static argument) compile once per process, whichever instance calls them.
    """

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    @property
    def default_params(self) -> EnvParams:
        """``max_steps_in_episode=1000`` (the original wrappers' limit), ``start_stage=1``."""
        return EnvParams()

    @property
    def name(self) -> str:
        return "HackMatrix"

    @property
    def num_actions(self) -> int:
        return NUM_ACTIONS

    # ------------------------------------------------------------------ transitions

    @quick_when_eager
    def reset(
        self, key: jax.Array, params: EnvParams | None = None
    ) -> tuple[Observation, EnvState]:
        """gymnax's ``reset`` (``reset_env`` with the default params when none are given), its
        eager calls compiled quick (``eager.py``)."""
        if params is None:
            params = self.default_params
        return self.reset_env(key, params)

    @quick_when_eager
    def step(
        self,
        key: jax.Array,
        state: EnvState,
        action: int | jax.Array,
        params: EnvParams | None = None,
    ) -> tuple[Observation, EnvState, jax.Array, jax.Array, jax.Array, dict[str, Any]]:
        """gymnax 1.0 ``step`` with auto-reset; the history buffer is not selected (see module
        doc). Its eager calls compile quick (``eager.py``)."""
        if params is None:
            params = self.default_params
        if state.history.depth != params.history_depth:  # static ints: checked at trace time
            raise ValueError(
                f"state has an UNDO history of depth {state.history.depth} but "
                f"params.history_depth is {params.history_depth}; reset with the same params "
                "(or build scenarios with state_from_json(..., history_depth=...))"
            )
        if type(self).reset_env is not HackMatrix.reset_env:
            raise TypeError(
                f"{type(self).__name__} overrides reset_env, which step's auto-reset does not "
                "call (it builds fresh games sparsely, with stage.reset_game); wrap the env "
                "instead (e.g. a gymnax wrapper) to change what a reset gives"
            )
        key_step, key_reset = jax.random.split(key)
        action = action_index(action, "HackMatrix.step")
        stepped, reward, terminated, info, owed = step_state_owing(key_step, state, action)
        truncated = self.is_truncated(stepped, params)
        done = terminated | truncated
        # The owed new stage and the reset are rare: both generated by one sparse job (under
        # vmap for those rows only). The ring's buffer is not selected: a fresh game's ring
        # is empty, so only its counters reset.
        stepped_game, game = generate_and_reset(stepped.game, owed, done, key_reset, params)
        time = jnp.where(done, jnp.int32(0), stepped.time)
        history = clear_history(stepped.history, done)
        state = EnvState(time=time, game=game, history=history)
        obs = self.observe(key_step, state, action, params)
        # The stepped state's observation differs from obs only on the done rows.
        undo_ok = has_snapshot(stepped.history)
        final_obs = compute_where(done, observe_game, (stepped_game, undo_ok), obs)
        info = {
            **info,
            "terminated": terminated,
            "truncated": truncated,
            "final_observation": final_obs,
        }
        return obs, state, reward, terminated, truncated, info

    def step_env(
        self,
        key: jax.Array,
        state: EnvState,
        action: int | jax.Array,
        params: EnvParams,
    ) -> tuple[Observation, EnvState, jax.Array, jax.Array, dict[str, Any]]:
        """One game step (interface §1) without auto-reset."""
        next_state, reward, terminated, info = step_state(
            key, state, action_index(action, "HackMatrix.step_env")
        )
        obs = self.observe(key, next_state, action, params)
        return obs, next_state, reward, terminated, info

    def reset_env(self, key: jax.Array, params: EnvParams) -> tuple[Observation, EnvState]:
        """A fresh game (rules §10.1) with an empty UNDO ring; ``params.start_stage`` > 1
        starts at that stage."""
        state = reset_state(key, params)
        return self.observe(key, state, None, params), state

    def observe(
        self,
        key: jax.Array | None,
        state: EnvState,
        action: int | jax.Array | None,
        params: EnvParams | None,
    ) -> Observation:
        """The observation of ``state`` (interface §3); key, action and params are unused."""
        del key, action, params
        return observe(state)

    def get_obs(self, state: EnvState, params: EnvParams | None = None, key=None) -> Observation:
        """Legacy gymnax hook: ``observe(state)``."""
        del params, key
        return observe(state)

    def is_terminated(self, state: EnvState, params: EnvParams) -> jax.Array:
        """bool[]: dead, or stage 8 won (player on the exit at stage 8): ``game.is_episode_over``.

        An invalid action also terminates a step, but that is a property of the
        step, not of the state (see ``info["invalid_action"]``).
        """
        del params
        game = state.game
        return is_episode_over(game, failed=jnp.bool_(False), won=on_final_exit(game))

    # ------------------------------------------------------------------ rendering

    def render(self, state: EnvState, params: EnvParams | None = None):
        """``(fig, ax)``: a matplotlib picture of one state (gymnax's convention).

        Host only and never called by ``step``; needs matplotlib (``hackmatrix_env.viewer``,
        which also has ``rgb_array`` for video wrappers).
        """
        from hackmatrix_env import viewer

        del params
        return viewer.draw(state)

    # ------------------------------------------------------------------ spaces

    def action_space(self, params: EnvParams | None = None) -> spaces.Discrete:
        """``Discrete(28)``: 0-3 directions, 4 siphon, 5-27 programs (interface §0.2)."""
        del params
        return spaces.Discrete(NUM_ACTIONS)

    def observation_space(self, params: EnvParams | None = None) -> ObservationSpace:
        """The ``Observation`` fields; declared bounds [0, 1] (values may exceed 1, interface §3.6).

        A ``spaces.Dict`` that names the Box adapter when used as a ``Box`` (``ObservationSpace``).
        """
        del params
        return ObservationSpace(
            {
                "player": spaces.Box(0.0, 1.0, (PLAYER_FEATURES,), jnp.float32),
                "programs": spaces.Box(0.0, 1.0, (NUM_PROGRAMS,), jnp.float32),
                "grid": spaces.Box(0.0, 1.0, (GRID_SIZE, GRID_SIZE, GRID_CHANNELS), jnp.float32),
                "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), jnp.bool_),
            }
        )

    def state_space(self, params: EnvParams | None = None) -> spaces.Dict:
        """The main scalar fields of ``EnvState`` (pools and grid are fixed-shape int8 arrays)."""
        params = self.default_params if params is None else params
        return spaces.Dict(
            {
                "time": spaces.Discrete(params.max_steps_in_episode + 1),
                "stage": spaces.Box(1, NUM_STAGES, (), jnp.int8),
                "turn": spaces.Box(0, jnp.iinfo(jnp.int32).max, (), jnp.int32),
                "player_pos": spaces.Box(0, GRID_SIZE - 1, (2,), jnp.int8),
                "player_hp": spaces.Box(0, 3, (), jnp.int8),
                "grid_content": spaces.Box(0, 3, (GRID_SIZE, GRID_SIZE), jnp.int8),
            }
        )
