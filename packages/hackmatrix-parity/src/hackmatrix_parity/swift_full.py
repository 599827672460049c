"""Our Swift binary's ``getFullState`` schema <-> JAX ``EnvState`` (specs/swift.md).

The conversion itself is ``hackmatrix_env.scenario`` (``state_from_full_json`` /
``full_state_json``); this module only adapts it to the comparison:

* ``to_jax`` rebuilds an exact ``EnvState`` (resync after a random step) and
  refuses a dump whose history was left out;
* ``from_jax`` writes a JAX state as Swift would dump it (hidden-state
  comparison): no JAX-only ``"jax"`` extras, and ``historyDepth`` counts the
  snapshots the ring dropped too, since Swift's history has no depth limit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hackmatrix_env import scenario as env_scenario
from hackmatrix_env.types import EnvState


def to_jax(d: dict[str, Any], time: int = 0) -> EnvState:
    """EnvState from a Swift ``getFullState`` reply (history included if present)."""
    if d.get("historyDepth", 0) and not d.get("history"):
        raise ValueError("full state has historyDepth > 0 but no history (use includeHistory)")
    state = env_scenario.state_from_full_json(d)
    return state.replace(time=np.int32(time)) if time else state


def from_jax(state: EnvState, include_history: bool = False) -> dict[str, Any]:
    """A JAX state in the Swift ``getFullState`` schema."""
    d = env_scenario.full_state_json(state, include_history=include_history)
    extras = d.pop("jax")
    d["historyDepth"] += extras["historyLost"]
    return d
