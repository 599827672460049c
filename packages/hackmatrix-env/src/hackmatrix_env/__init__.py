"""HackMatrix in pure JAX: a gymnax 1.0 environment with the action mask in the observation.

    from hackmatrix_env import HackMatrix
    env = HackMatrix()
    obs, state = env.reset(key, env.default_params)
    obs, state, reward, terminated, truncated, info = env.step(key, state, action)

The Jumanji adapter lives in ``hackmatrix_env.jumanji`` (imported on demand,
never from here).
"""

from hackmatrix_env.env import HackMatrix
from hackmatrix_env.observation import flatten_observation
from hackmatrix_env.types import EnvParams, EnvState, Observation

__all__ = ["EnvParams", "EnvState", "HackMatrix", "Observation", "flatten_observation"]
