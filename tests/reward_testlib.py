"""Helpers shared by tests/env/test_reward.py and test_programs_reward.py (jitted once here).

``step`` runs one action on an ``EnvState`` through the real pipeline (``transition.advance``:
``game.step_game`` and the UNDO ring) and returns ``(after, events, breakdown[15], total)``,
``after`` an ``EnvState``; ``check_reward`` compares a breakdown with the spec's expected
non-zero components and total.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from hackmatrix_env import reward, transition
from hackmatrix_env.constants import FIRST_PROGRAM, PROGRAM_NAMES, REWARD_COMPONENTS

IDX = {name: i for i, name in enumerate(REWARD_COMPONENTS)}


@jax.jit
def _step(key, state, action):
    after, events = transition.advance(key, state, action)
    bd = reward.reward_breakdown(state.game, after.game, events)
    return after, events, bd, reward.total_reward(bd)


def step(state, action, seed=0):
    """One step with ``jax.random.key(seed)``; ``action`` is an index or a program wire name."""
    a = FIRST_PROGRAM + PROGRAM_NAMES.index(action) if isinstance(action, str) else int(action)
    return _step(jax.random.key(seed), state, jnp.int32(a))


def nonzero(bd) -> dict[str, float]:
    """The components of a breakdown that are not 0 (-0.0 counts as 0), by name."""
    return {n: float(bd[i]) for n, i in IDX.items() if float(bd[i]) != 0.0}


def check_reward(bd, total, expected: dict[str, float], expected_total: float) -> None:
    """Exactly the ``expected`` components are non-zero, with these values, and the total."""
    got = nonzero(bd)
    assert set(got) == set(expected), got
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-5), name
    assert float(total) == pytest.approx(expected_total, abs=1e-4)
