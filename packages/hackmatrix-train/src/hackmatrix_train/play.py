"""``hm-play``'s games: the JAX game (``JaxGame``), the Swift binary (``SwiftPlay``, via
``hackmatrix_parity``: the ``swift`` extra), and the search's hints (``Hinter``).

``--save-actions`` writes a JAX game as an action log (``episodes.py``) that ``hm-watch
--actions`` replays. ``--swift``'s UNDO key uses the binary's full-state commands.

``--hint`` loads a policy (``--hint-policy``, default the shipped agent, ``policy.py``) and ``h``
runs a Gumbel search (``search.py``, ``--search-simulations`` simulations, honest: the hidden
parts are re-drawn, so a hint knows only what the screen shows) from the current state; it lists
every action of the search with its key, root visits, Q and the network's prior, and marks where
the search overrules the greedy network. The hint is the one ``hm-watch --search`` computes for
episode 0 of a batch of 1 at that step (same key); it changes nothing in the game. The keys and
the screen are ``terminal.py``'s; the flags ``cli/play.py``'s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from hackmatrix_env.constants import REWARD_COMPONENTS

VICTORY = REWARD_COMPONENTS.index("victory")


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
    """``--hint``: a Gumbel search from a ``JaxGame``'s state with a policy's network (module doc).

    ``checkpoint``: None for the shipped agent; ``views``: ``load_policy``'s; ``options``:
    ``SearchConfig`` overrides (the ``--search-*`` flags)."""

    def __init__(self, checkpoint, simulations: int, max_steps: int, views: int = 1, **options):
        from hackmatrix_train.policy import load_policy, search_config
        from hackmatrix_train.search import make_search

        if simulations < 1:
            raise ValueError(f"--search-simulations must be >= 1, got {simulations}")
        policy = load_policy(checkpoint, max_steps=max_steps, views=views)
        self.params = policy.params
        options = {"mode": "honest", **options, "num_simulations": simulations}
        self.config = search_config(policy, **options)
        self.search = make_search(policy.apply_fn, self.config)
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


def load_scenario(path: str | None) -> dict | None:
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
