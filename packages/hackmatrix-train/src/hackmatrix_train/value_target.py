"""A target network for the value (``hm-train --value-target-tau``): GAE reads a slow copy.

PPO's value targets lean on the value itself: each TD error bootstraps from V(s') and the
advantage subtracts V(s), so the critic chases targets it moved itself an update ago. A target
network (DQN's, made smooth by Polyak averaging) breaks that loop: the optimizer keeps an
average of the params, moved ``tau`` of the way toward them after every gradient step
(``polyak_params``), and the update's GAE reads that average's value (``target_params``) where
plain PPO reads the rollout's. The online critic is still the one fitted, and the network the
policy, the search and an export read. ``tau`` 1 is plain PPO (the average is the params); 0 is
off, and leaves the optimizer exactly as it was.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import optax


class PolyakState(NamedTuple):
    """The optimizer state ``polyak_params`` adds: the params' running average."""

    target: Any


def polyak_params(tau: float) -> optax.GradientTransformation:
    """An optax transformation, last in a chain, that passes the updates through and keeps
    ``target <- (1 - tau) target + tau (params + updates)``: the average of the params after
    each step, from the params it was initialised with (a warm start's)."""
    if not 0.0 < tau <= 1.0:
        raise ValueError(f"a Polyak average moves 0 < tau <= 1 of the way, got {tau}")

    def init(params):
        return PolyakState(jax.tree.map(lambda p: p.copy(), params))

    def update(updates, state, params=None):
        if params is None:
            raise ValueError("polyak_params needs the params: call tx.update(g, state, params)")
        stepped = optax.apply_updates(params, updates)
        target = jax.tree.map(lambda t, p: (1 - tau) * t + tau * p, state.target, stepped)
        return updates, PolyakState(target)

    return optax.GradientTransformation(init, update)


def target_params(opt_state):
    """The average in an optimizer state whose chain ends with ``polyak_params``."""
    last = opt_state[-1] if isinstance(opt_state, tuple) and opt_state else None
    if not isinstance(last, PolyakState):
        raise ValueError("this optimizer keeps no target network (--value-target-tau 0)")
    return last.target
