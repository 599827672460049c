"""HackMatrix in pure JAX: a gymnax 1.0 environment with the action mask in the observation.

    from hackmatrix_env import HackMatrix
    env = HackMatrix()
    obs, state = env.reset(key, env.default_params)
    obs, state, reward, terminated, truncated, info = env.step(key, state, action)

The Jumanji adapter lives in ``hackmatrix_env.jumanji``, the Gymnasium envs in
``hackmatrix_env.gymnasium`` (optional extras ``[jumanji]``, ``[gymnasium]``) and
the wrappers for pre-1.0 gymnax code in ``hackmatrix_env.adapters``; all are
imported on demand, never from here. The names below are imported lazily (PEP 562), so that
``import hackmatrix_env.devices`` can configure JAX's CPU devices before
anything starts a JAX backend (gymnax's import does).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # static tools see the real names
    from hackmatrix_env.env import HackMatrix
    from hackmatrix_env.observation import flatten_observation
    from hackmatrix_env.types import EnvParams, EnvState, GameState, Observation

_EXPORTS = {
    "HackMatrix": "hackmatrix_env.env",
    "flatten_observation": "hackmatrix_env.observation",
    "EnvParams": "hackmatrix_env.types",
    "EnvState": "hackmatrix_env.types",
    "GameState": "hackmatrix_env.types",
    "Observation": "hackmatrix_env.types",
}

__all__ = [
    "EnvParams",
    "EnvState",
    "GameState",
    "HackMatrix",
    "Observation",
    "flatten_observation",
]


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hackmatrix_env' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
