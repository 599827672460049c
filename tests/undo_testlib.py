"""An env whose player owns UNDO in every game, for tests of UNDO-heavy play.

``OwnsUndo`` is HackMatrix with UNDO and 50 extra credits given at every fresh game (reset and
step's auto-reset), so a uniform policy presses UNDO often; ``uniform`` is that policy as an
``apply_fn`` (zero logits and values).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from hackmatrix_env import HackMatrix
from hackmatrix_env.constants import FIRST_PROGRAM, PROGRAM_NAMES

UNDO_IDX = PROGRAM_NAMES.index("undo")
UNDO_ACTION = FIRST_PROGRAM + UNDO_IDX


def owning_undo(state):
    """A fresh game whose player owns UNDO and 50 more credits to run it."""
    game = state.game
    player = game.player.replace(credits=game.player.credits + 50)
    owned = game.owned_list.at[0].set(UNDO_IDX)
    game = game.replace(player=player, owned_list=owned, num_owned=jnp.ones_like(game.num_owned))
    return state.replace(game=game)


def _where(pred, on_true, on_false):
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


class OwnsUndo:
    """HackMatrix whose every fresh game (reset and step's auto-reset) starts ``owning_undo``."""

    def __init__(self):
        self.env = HackMatrix()

    def reset(self, key, params):
        _, state = self.env.reset(key, params)
        state = owning_undo(state)
        return self.env.get_obs(state, params), state

    def step(self, key, state, action, params):
        obs, state, reward, terminated, truncated, info = self.env.step(key, state, action, params)
        done = terminated | truncated
        state = _where(done, owning_undo(state), state)
        obs = _where(done, self.env.get_obs(state, params), obs)
        return obs, state, reward, terminated, truncated, info


def uniform(params, obs):
    """The uniform masked policy as an ``apply_fn``: zero logits, zero values."""
    del params
    return jnp.zeros(obs.action_mask.shape, jnp.float32), jnp.zeros(obs.action_mask.shape[:-1])
