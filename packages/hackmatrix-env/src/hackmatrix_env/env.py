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

``step`` keeps the gymnax 1.0 contract (auto-reset on ``terminated |
truncated``) with these savings (specs/env-shell.md §4, §7.3): the UNDO
history buffer is not selected between the reset and the stepped state (on
reset only the ring's counters are zeroed: an empty ring is never read);
under ``vmap`` the reset is computed only for the envs that are done, by the
same sparse job as the generation of the stages completed this step (two
passes of one ``compute_where``: the stage generation is compiled once);
the observation is computed densely for the returned state and
``final_observation`` sparsely for the done rows. Results equal the base
class's ``step`` exactly, apart from the unread snapshot buffer.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from gymnax.environments import environment, spaces

from hackmatrix_env.batching import compute_where
from hackmatrix_env.board import select_tree
from hackmatrix_env.constants import (
    GRID_CHANNELS,
    GRID_SIZE,
    NUM_ACTIONS,
    NUM_PROGRAMS,
    NUM_STAGES,
    PLAYER_FEATURES,
    Content,
)
from hackmatrix_env.game import step_game, step_keys
from hackmatrix_env.observation import observe
from hackmatrix_env.reward import reward_breakdown, total_reward
from hackmatrix_env.stage import generate_or_reset, reset_game, trim_history
from hackmatrix_env.types import EnvParams, EnvState, Observation


def _step_outcome(state: EnvState, after: EnvState, ev) -> tuple[EnvState, Any, Any, dict]:
    """``(after with time + 1, reward f32, terminated, info)`` of one game step (interface §4)."""
    breakdown = reward_breakdown(state, after, ev)
    reward = total_reward(breakdown).astype(jnp.float32)
    terminated = ev.invalid | ev.victory | (after.player.hp == 0)
    after = after.replace(time=(state.time + 1).astype(jnp.int32))
    info = {
        "reward_breakdown": breakdown,
        "action_kind": ev.action_kind,
        "invalid_action": ev.invalid,
        "history_overflow": after.overflow,
    }
    return after, reward, terminated, info


def _stage_and_reset(
    need_stage: jax.Array,
    done: jax.Array,
    key_stage: jax.Array,
    key_reset: jax.Array,
    light: EnvState,
    params: EnvParams,
) -> tuple[EnvState, Observation]:
    """(state after the step's generations, final observation of the done rows).

    Pass 0: ``generate_stage`` where ``need_stage``; the done rows' final
    observation is that state's. Pass 1: a fresh game where ``done`` (a reset
    reads nothing of pass 0's state). One ``fori_loop`` of two trips over one
    ``compute_where`` job, so the stage generation is traced and compiled once,
    and the state is not materialised twice as the stacked default of a K-job
    list (−7.7 % time, specs/env-shell.md §7.8). The final
    observation of a row that is not done is zeros (the caller selects).
    """
    keys = jnp.stack([key_stage, key_reset])

    def one_pass(p, carry):
        cur, final_obs = carry
        pred = jnp.where(p == 0, need_stage, done)
        # The job reads ``light`` (a reset reads no state), so ``cur`` is only the
        # default and its buffer is updated in place.
        cur = compute_where(pred, generate_or_reset, (p == 1, keys[p], light, params), cur)
        final_obs = compute_where(done & (p == 0), observe, (cur,), final_obs)
        return cur, final_obs

    zeros = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), jax.eval_shape(observe, light))
    return jax.lax.fori_loop(0, 2, one_pass, (light, zeros))


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

    @partial(jax.jit, static_argnames=("self",))
    def step(
        self,
        key: jax.Array,
        state: EnvState,
        action: int | jax.Array,
        params: EnvParams | None = None,
    ) -> tuple[Observation, EnvState, jax.Array, jax.Array, jax.Array, dict[str, Any]]:
        """gymnax 1.0 ``step`` with auto-reset; the history buffer is not selected (see module doc)."""
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
                "call; override reset_extras(key, state, params) instead"
            )
        key_step, key_reset = jax.random.split(key)
        action = jnp.asarray(action, jnp.int32)
        # step_env without the new stage's generation: it runs below, in the sparse job
        # shared with the auto-reset (_stage_and_reset: one compiled generation).
        keys = step_keys(key_step)
        state_st, ev = step_game(key_step, state, action, generate=False, keys=keys)
        state_st, reward, terminated, info = _step_outcome(state, state_st, ev)
        truncated = self.is_truncated(state_st, params)
        done = terminated | truncated
        # Two passes of one sparse job (``_stage_and_reset``, traced once): pass 0 generates
        # the next stage where one was completed (step_game's generation), pass 1
        # resets the done rows. Between them the done rows' final observation is
        # taken. The snapshot buffer is never selected: a fresh game's ring is
        # empty, so only its counters are reset.
        snapshots = state_st.history.snapshots
        light = trim_history(state_st)
        trimmed, final_obs = _stage_and_reset(
            ev.exit_reached & ~ev.victory, done, keys[1], key_reset, light, params
        )
        if type(self).reset_extras is not HackMatrix.reset_extras:  # a subclass's additions
            trimmed = select_tree(done, self.reset_extras(key_reset, trimmed, params), trimmed)
        obs = self.observe(key_step, trimmed, action, params)
        # The stepped state's observation differs from obs only on the done rows
        # (computed sparsely, for those rows only, inside _stage_and_reset).
        obs_st = select_tree(done, final_obs, obs)
        state = trimmed.replace(history=trimmed.history.replace(snapshots=snapshots))
        info = {
            **info,
            "terminated": terminated,
            "truncated": truncated,
            "final_observation": obs_st,
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
        action = jnp.asarray(action, jnp.int32)
        next_state, ev = step_game(key, state, action)
        next_state, reward, terminated, info = _step_outcome(state, next_state, ev)
        obs = self.observe(key, next_state, action, params)
        return obs, next_state, reward, terminated, info

    def reset_env(self, key: jax.Array, params: EnvParams) -> tuple[Observation, EnvState]:
        """A fresh game (rules §10.1); ``params.start_stage`` > 1 starts at that stage."""
        state = self.reset_extras(key, reset_game(key, params), params)
        return self.observe(key, state, None, params), state

    def reset_extras(self, key: jax.Array, state: EnvState, params: EnvParams) -> EnvState:
        """What a subclass adds to a fresh game (identity here), e.g. a training start kit.

        Override this, not ``reset_env``: ``step``'s auto-reset builds the fresh game in a
        job list shared with stage generation and then applies this hook with the same
        key ``reset_env`` would get, so both paths give the same state. ``state`` may come
        without its snapshot buffer (``history.snapshots`` None); leave the history alone.
        """
        return state

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
        """bool[]: dead, or stage 8 won (player on the exit at stage 8).

        An invalid action also terminates a step, but that is a property of the
        step, not of the state (see ``info["invalid_action"]``).
        """
        del params
        r, c = state.player.pos[0].astype(jnp.int32), state.player.pos[1].astype(jnp.int32)
        on_exit = state.grid.content[r, c] == Content.EXIT
        return (state.player.hp == 0) | ((state.stage >= NUM_STAGES) & on_exit)

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

    def observation_space(self, params: EnvParams | None = None) -> spaces.Dict:
        """The ``Observation`` fields; declared bounds [0, 1] (values may exceed 1, interface §3.6)."""
        del params
        return spaces.Dict(
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
