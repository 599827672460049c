"""Record whole episodes frame by frame (host loop over jitted steps), and action logs.

A recorded episode is what the HTML replay, the GIF and the action log are made of: per
frame the ``hackmatrix_env.viewer.scene`` of the state, the action that led to it, the
policy's probabilities over the legal actions and its value estimate at the state the
action was chosen from, the mask of that state, and the step's 15 reward components.

Keys follow ``evaluate.make_evaluate`` exactly, so ``record_episodes`` plays the very
episodes ``hm-eval`` scores with the same seed and episode count (a test checks the returns)::

    k_reset, k_run = split(key(seed));  reset key of episode i = split(k_reset, batch)[i]
    step t: k_pol, k_env = split(split(k_run, max_steps)[t]);  env key = split(k_env, batch)[i]

(the env key goes to gymnax's ``step``, whose non-reset half is ``step_env(split(key)[0])``).
An action log (``ACTIONS_FORMAT``, JSON) therefore needs only the seed, the batch size, the
step limit, each episode's index in the batch and its actions to be replayed exactly::

    {"format": "hackmatrix-actions/1", "seed": 0, "batch": 4, "max_steps": 1000,
     "start_stage": 1, "history_depth": 16,
     "episodes": [{"index": 0, "actions": [3, 3, 4, ...]}, ...]}

An episode may add ``"scenario"``: a ``setState`` object (interface §5.7) it starts from
instead of the reset (``hm-play --scenario`` writes those).

**Search** (``Stepper(..., search=SearchConfig)``): each move is a Gumbel search's
(``search.py``) over the whole batch, drawn with the policy's key ``k_pol`` exactly as
``search_evaluate.make_search_evaluate`` does, and each frame adds ``"search"`` (``search_frame``).
With ``track_cryptogs`` the stepper follows each game's cryptog belief from move to move as
that evaluation does (``reset`` starts it over).
The env keys do not depend on the policy, so a searched episode's action log replays it
with no search at all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from hackmatrix_env import EnvParams, HackMatrix
from hackmatrix_env.action_set import allowed_actions, restrict_mask
from hackmatrix_env.constants import (
    NUM_ACTIONS,
    NUM_STAGES,
    REWARD_COMPONENTS,
)
from hackmatrix_env.eager import few_games_jit, few_games_options
from hackmatrix_env.history import without_snapshots
from hackmatrix_env.viewer import scene

from hackmatrix_train import progress
from hackmatrix_train.network import masked_categorical

ACTIONS_FORMAT = "hackmatrix-actions/1"
VICTORY = REWARD_COMPONENTS.index("victory")
TOP_K = 6  # policy probabilities kept per frame


@dataclass
class Episode:
    """One recorded episode: frames (JSON-ready dicts) and its summary."""

    index: int
    frames: list[dict] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    ret: float = 0.0
    stage: int = 1
    end: str = "unfinished"
    scenario: dict | None = None
    states: list = field(default_factory=list)  # host states per frame, if asked to keep them

    def summary(self) -> dict:
        return {
            "index": self.index,
            "return": round(self.ret, 4),
            "length": len(self.actions),
            "stage": self.stage,
            "end": self.end,
        }


def end_cause(invalid: bool, victory: bool, hp: int, truncated: bool) -> str | None:
    """Why an episode ended after a step, or None if it goes on (interface §1 step 7)."""
    if invalid:
        return "invalid action"
    if victory:
        return "victory"
    if hp == 0:
        return "died"
    if truncated:
        return "time limit"
    return None


_ENV = HackMatrix()  # no configuration: every instance is the same env (env.py)


def _reset_games(keys, env_params):
    return jax.vmap(_ENV.reset, in_axes=(0, None))(keys, env_params)


def _advance_games(env_params, state, action, env_keys):
    """One ``step_env`` per row with its env key (module doc); no auto-reset.

    Module level and free of the batch size, so every ``Stepper`` and every batch with the
    same number of rows share one compiled program (the env step is the costly compile).
    """
    step_keys = jax.vmap(lambda k: jax.random.split(k)[0])(env_keys)
    obs, state, reward, terminated, info = jax.vmap(_ENV.step_env, in_axes=(0, 0, 0, None))(
        step_keys, state, action, env_params
    )
    truncated = state.time >= env_params.max_steps_in_episode
    out = (reward, terminated, truncated, info["reward_breakdown"], info["invalid_action"])
    return obs, state, without_snapshots(state), out


# the game alone: compiled quick for a few games (hackmatrix_env.eager.few_games_options)
_reset = few_games_jit(_reset_games, lambda keys, env_params: keys.shape[0])
_advance = few_games_jit(_advance_games, lambda env_params, state, action, keys: action.shape[0])


class Stepper:
    """Jitted policy-and-step over a batch of envs, shared by hm-watch, hm-eval and hm-play.

    ``apply_fn=None`` is the uniform masked policy (no value estimate). Compiled programs are
    cached per ``(batch size, row count)``; build one ``Stepper`` per policy and reuse it.
    ``report`` (``progress.Reporter``) hears of the compile when the first step runs.
    """

    def __init__(
        self, env_params: EnvParams, apply_fn=None, greedy: bool = True, disabled=(), search=None,
        report=progress.QUIET,
    ):  # fmt: skip
        self.env_params = env_params
        self.report = report
        self._stepped = False
        self.apply_fn = apply_fn
        self.greedy = bool(greedy)
        # actions out of the policy's mask (a run's --disabled-programs), as hm-eval's env has
        self.disabled = tuple(disabled)
        self._allowed = allowed_actions(self.disabled)
        self._decide = jax.jit(self._decide_impl)
        # a SearchConfig: the search plays each move (module doc); the policy's net is its prior
        self.search = search
        self._search = None
        if search is not None:
            if apply_fn is None:
                raise ValueError("a search plans with a policy's network: give a checkpoint")
            from hackmatrix_train.search import make_search

            self._search = make_search(apply_fn, search)
        # the honest search's cryptog belief (hidden.track_cryptogs), followed move by move as
        # make_search_evaluate follows it; None at an episode's start (set by the first step)
        self._tracks = search is not None and search.mode == "honest" and search.track_cryptogs
        self._belief = None

    def _decide_impl(self, params, obs, key):
        """``(action int32[m], probs f32[m, 28], value f32[m])`` as ``make_evaluate`` decides."""
        mask = restrict_mask(obs.action_mask, jnp.asarray(self._allowed))
        if self.apply_fn is None:
            logits = jnp.zeros(mask.shape, jnp.float32)
            value = jnp.full(mask.shape[:-1], jnp.nan, jnp.float32)
        else:
            logits, value = self.apply_fn(params, obs)
        pi = masked_categorical(logits, mask)
        if self.greedy and self.apply_fn is not None:
            action = jnp.argmax(pi.logits, axis=-1).astype(jnp.int32)
        else:
            action = pi.sample(seed=key).astype(jnp.int32)
        return action, pi.probs, value

    def reset(self, seed: int, batch: int, rows: np.ndarray):
        """``(obs, state)`` of the rows' fresh games under the evaluation key scheme."""
        k_reset, _ = jax.random.split(jax.random.key(seed))
        self._belief = None
        return _reset(jax.random.split(k_reset, batch)[jnp.asarray(rows)], self.env_params)

    def run_keys(self, seed: int) -> jax.Array:
        _, k_run = jax.random.split(jax.random.key(seed))
        return jax.random.split(k_run, int(self.env_params.max_steps_in_episode))

    def step(self, params, obs, state, run_key, batch: int, rows, forced=None):
        """One policy decision and env step for the rows; ``forced`` overrides the actions.

        Returns ``(obs, state, trimmed host state, action, probs, value, outcome, found)``
        where ``outcome`` is host numpy ``(reward, terminated, truncated, breakdown, invalid)``
        and ``found`` the host ``SearchOutput`` of the rows (None without a search).
        """
        if self._stepped:
            return self._step(params, obs, state, run_key, batch, rows, forced)
        if self._search is None:
            few = few_games_options(len(rows)) is not None  # the env step compiles quick
            what = "the policy and the env step"
            estimate = progress.COLD_COMPILE_S["recording a few games" if few else "recording"]
        else:
            what = f"the search ({self.search.num_simulations} simulations, {self.search.mode})"
            estimate = progress.COLD_COMPILE_S["search"]
        with self.report.compiling(what, estimate):
            out = self._step(params, obs, state, run_key, batch, rows, forced)
        self._stepped = True
        return out

    def _step(self, params, obs, state, run_key, batch: int, rows, forced=None):
        k_pol, k_env = jax.random.split(run_key)
        action, probs, value = self._decide(params, obs, k_pol)
        found = None
        if self._tracks and self._belief is None:
            self._belief = start_cryptog_belief(state)
        if self._search is not None:  # make_search_evaluate's draw: the search takes k_pol
            found = self._search(params, k_pol, state, self._belief)
            action = found.action
        if forced is not None:
            action = jnp.asarray(forced, jnp.int32)
        env_keys = jax.random.split(k_env, batch)[jnp.asarray(rows)]
        before = state
        obs, state, trimmed, out = _advance(self.env_params, state, action, env_keys)
        if self._tracks:
            self._belief = follow_cryptog_belief(self._belief, before, action, state)
        host = jax.device_get((trimmed, action, probs, value, out, found))
        return obs, state, *host


@jax.jit
def start_cryptog_belief(state):
    """bool[B,6,6]: each game's cryptog belief at its episode's start."""
    from hackmatrix_env.hidden import initial_cryptog_belief

    return jax.vmap(initial_cryptog_belief)(state)


@jax.jit
def follow_cryptog_belief(belief, state, action, next_state):
    """bool[B,6,6]: each game's cryptog belief after one step (``hidden.track_cryptogs``)."""
    from hackmatrix_env.hidden import track_cryptogs

    return jax.vmap(track_cryptogs)(belief, state, action, next_state)


def _row(tree, i: int):
    return jax.tree.map(lambda x: x[i], tree)


def top_probs(probs: np.ndarray, mask: np.ndarray, k: int = TOP_K) -> list[list]:
    """``[[action, prob], ...]``: the ``k`` most likely legal actions, most likely first."""
    legal = np.flatnonzero(mask)
    order = legal[np.argsort(-probs[legal], kind="stable")][:k]
    return [[int(a), round(float(probs[a]), 4)] for a in order]


def search_frame(found) -> dict:
    """The search's view of one decision (one row of a host ``SearchOutput``), JSON-ready.

    ``actions`` lists the actions of the search's mask, most visited first (then by prior),
    as ``[action, visits, Q, prior]``; Q is None for an action the search never visited
    (mctx's root Q is 0 there, not an estimate). ``differs``: the search plays another
    action than the greedy network (the prior's argmax).
    """
    legal = np.flatnonzero(found.mask)
    visits = np.asarray(found.visit_counts)
    order = legal[np.lexsort((-found.prior[legal], -visits[legal]))]

    def q_of(a):
        q = float(found.q_values[a])
        return round(q, 4) if visits[a] > 0 and np.isfinite(q) else None

    rows = [[int(a), int(visits[a]), q_of(a), round(float(found.prior[a]), 4)] for a in order]
    value = float(found.search_value)
    return {
        "action": int(found.action),
        "greedy": int(found.prior_action),
        "differs": bool(found.action != found.prior_action),
        "simulations": int(visits.sum()),
        "value": round(value, 4) if np.isfinite(value) else None,
        "actions": rows,
    }


def search_differs(episode: Episode) -> int | None:
    """How many of an episode's moves the search chose against greedy (None: not searched)."""
    marks = [f["search"]["differs"] for f in episode.frames if "search" in f]
    return sum(marks) if marks else None


def frame(state, action=None, mask=None, probs=None, value=None, reward=0.0, breakdown=None):
    """One JSON-ready frame: the scene after ``action`` and what led to it (module doc)."""
    out: dict[str, Any] = {"scene": scene(state, action)}
    if action is not None:
        value = None if value is None or not np.isfinite(value) else round(float(value), 4)
        out.update(
            action=int(action),
            reward=round(float(reward), 5),
            breakdown=[round(float(x), 5) for x in breakdown],
            mask="".join("1" if m else "0" for m in mask),
            probs=top_probs(probs, mask) if probs is not None else [],
            value=value,
        )
    return out


def play(
    stepper: Stepper,
    params,
    seed: int,
    batch: int,
    rows=None,
    forced: dict[int, list[int]] | None = None,
    scenarios: dict[int, dict] | None = None,
    keep_states: bool = False,
    report=progress.QUIET,
) -> list[Episode]:
    """Record the episodes ``rows`` (default all) of a batch of ``batch`` under ``seed``.

    ``forced[i]`` replays episode ``i``'s logged actions (the episode stops when the log
    does); ``scenarios[i]`` starts episode ``i`` from a ``setState`` object. ``keep_states``
    also keeps each frame's host state (without the UNDO snapshots) in ``Episode.states``.
    ``report`` shows a bar of the episodes recorded (the stepper reports its compile).
    """
    with report.bar(len(episode_rows(batch, rows)), "recording", unit="episode") as bar:
        return _play(stepper, params, seed, batch, rows, forced, scenarios, keep_states, bar)


def episode_rows(batch: int, rows=None) -> np.ndarray:
    """The episode indices ``play`` records: ``rows`` (checked) or the whole batch."""
    rows = np.arange(batch) if rows is None else np.asarray(rows, np.int64)
    if rows.size == 0:
        raise ValueError("no episodes to play")
    if rows.min() < 0 or rows.max() >= batch:
        raise ValueError(f"episode indices must be in 0..{batch - 1}, got {rows.tolist()}")
    return rows


def _play(stepper, params, seed, batch, rows, forced, scenarios, keep_states, bar):
    rows = episode_rows(batch, rows)
    obs, state = stepper.reset(seed, batch, rows)
    if scenarios:
        obs, state = start_from_scenarios(stepper, obs, state, rows, scenarios)
    episodes = [Episode(int(i), scenario=(scenarios or {}).get(int(i))) for i in rows]
    first = jax.device_get(without_snapshots(state))
    for j, ep in enumerate(episodes):
        ep.frames.append(frame(_row(first, j)))
        ep.states += [_row(first, j)] if keep_states else []
        ep.stage = int(first.game.stage[j])
    alive = np.ones(len(rows), bool)
    ended = 0  # episodes that ended by the rules (the bar's count)
    host_obs_mask = np.asarray(obs.action_mask)
    for t, run_key in enumerate(stepper.run_keys(seed)):
        force = None
        if forced is not None:
            logs = [forced.get(int(i), []) for i in rows]
            log_over = alive & np.array([t >= len(log) for log in logs])
            for j in np.flatnonzero(log_over):  # the log stops before the game does
                episodes[j].end = "end of log"
            alive &= ~log_over
            if not alive.any():
                break
            force = np.array([log[t] if t < len(log) else 0 for log in logs], np.int32)
        obs, state, trimmed, action, probs, value, out, found = stepper.step(
            params, obs, state, run_key, batch, rows, force
        )
        reward, _, truncated, breakdown, invalid = out
        for j in np.flatnonzero(alive):
            ep = episodes[j]
            s = _row(trimmed, j)
            seen = None if found is None else _row(found, j)
            f = frame(s, action[j], host_obs_mask[j], probs[j], value[j], reward[j], breakdown[j])
            ep.frames.append(f | ({"search": search_frame(seen)} if seen is not None else {}))
            ep.states += [s] if keep_states else []
            ep.actions.append(int(action[j]))
            ep.ret += float(reward[j])
            ep.stage = max(ep.stage, min(int(s.game.stage), NUM_STAGES))
            cause = end_cause(
                bool(invalid[j]),
                breakdown[j][VICTORY] > 0,
                int(s.game.player.hp),
                bool(truncated[j]),
            )
            if cause is not None:
                ep.end, alive[j] = cause, False
                ended += 1
                bar.update()
        host_obs_mask = np.asarray(obs.action_mask)
        if not alive.any():
            break
    for j in np.flatnonzero(alive):
        episodes[j].end = "end of log" if forced is not None else "unfinished"
    bar.update(len(rows) - ended)  # the episodes cut by the step limit or their log's end
    return episodes


def start_from_scenarios(stepper: Stepper, obs, state, rows, scenarios: dict[int, dict]):
    """Replace the rows that have a ``setState`` scenario by that state and its observation."""
    from hackmatrix_env.observation import observe
    from hackmatrix_env.scenario import state_from_json

    depth = stepper.env_params.history_depth
    for j, i in enumerate(rows):
        if int(i) in scenarios:
            s = state_from_json(scenarios[int(i)], history_depth=depth)
            state = jax.tree.map(lambda b, x, j=j: b.at[j].set(x), state, s)
            obs = jax.tree.map(lambda b, x, j=j: b.at[j].set(x), obs, observe(s))
    return obs, state


# --------------------------------------------------------------------------- action logs


def action_log(episodes: list[Episode], seed: int, batch: int, env_params: EnvParams) -> dict:
    """The ``ACTIONS_FORMAT`` object that replays ``episodes`` exactly (module doc)."""
    return {
        "format": ACTIONS_FORMAT,
        "seed": int(seed),
        "batch": int(batch),
        "max_steps": int(env_params.max_steps_in_episode),
        "start_stage": int(env_params.start_stage),
        "history_depth": int(env_params.history_depth),
        "episodes": [
            {"index": ep.index, "actions": list(ep.actions)}
            | ({"scenario": ep.scenario} if ep.scenario is not None else {})
            for ep in episodes
        ],
    }


def read_action_log(path: str | Path) -> dict:
    """Load and check an action log; a ``ValueError`` names what is wrong."""
    try:
        log = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ValueError(f"no such file or directory: {path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path} is not JSON: {e}") from None
    if not isinstance(log, dict) or log.get("format") != ACTIONS_FORMAT:
        raise ValueError(f"{path}: not a {ACTIONS_FORMAT} action log")
    for key in ("seed", "batch", "max_steps", "start_stage", "history_depth"):
        if not isinstance(log.get(key), int) or isinstance(log.get(key), bool):
            raise ValueError(f"{path}: '{key}' must be an integer")
    if log["batch"] < 1 or log["max_steps"] < 1 or not 1 <= log["start_stage"] <= NUM_STAGES:
        raise ValueError(f"{path}: batch and max_steps must be >= 1, start_stage in 1..8")
    episodes = log.get("episodes")
    if not isinstance(episodes, list) or not episodes:
        raise ValueError(f"{path}: 'episodes' must be a non-empty list")
    indices = [ep.get("index") if isinstance(ep, dict) else None for ep in episodes]
    if len(set(map(repr, indices))) != len(indices):
        raise ValueError(f"{path}: two episodes share an index")
    for n, ep in enumerate(episodes):
        where = f"{path}: episodes[{n}]"
        if not isinstance(ep, dict) or not isinstance(ep.get("index"), int):
            raise ValueError(f"{where} needs an integer 'index'")
        if not 0 <= ep["index"] < log["batch"]:
            raise ValueError(f"{where}.index must be in 0..{log['batch'] - 1}")
        acts = ep.get("actions")
        if not isinstance(acts, list) or not all(
            isinstance(a, int) and not isinstance(a, bool) and 0 <= a < NUM_ACTIONS for a in acts
        ):
            raise ValueError(f"{where}.actions must be a list of action indices 0..27")
        if len(acts) > log["max_steps"]:
            raise ValueError(f"{where} has more actions than max_steps")
        if "scenario" in ep and not isinstance(ep["scenario"], dict):
            raise ValueError(f"{where}.scenario must be a setState object")
    return log


def replay_log(
    log: dict, stepper: Stepper | None = None, params=None, report=progress.QUIET
) -> list[Episode]:
    """Replay an action log's episodes; ``stepper`` (a policy) adds its probabilities.

    ``report`` shows a bar of the episodes replayed (the stepper reports its compile)."""
    env_params = EnvParams(
        max_steps_in_episode=log["max_steps"],
        start_stage=log["start_stage"],
        history_depth=log["history_depth"],
    )
    if stepper is None:
        stepper = Stepper(env_params, report=report)
    elif stepper.env_params != env_params:
        stepper = Stepper(
            env_params, stepper.apply_fn, stepper.greedy, stepper.disabled, stepper.search,
            stepper.report,
        )  # fmt: skip
    # One episode at a time: each replay is exact whatever the others are, and every log
    # runs the same compiled one-row step (hm-play's too).
    episodes = []
    with report.bar(len(log["episodes"]), "replaying", unit="episode") as bar:
        for ep in log["episodes"]:
            i = ep["index"]
            scenarios = {i: ep["scenario"]} if "scenario" in ep else None
            episodes += play(
                stepper, params, log["seed"], log["batch"], [i], {i: ep["actions"]}, scenarios
            )
            bar.update()
    return episodes
