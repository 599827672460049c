"""Start-kit curriculum (training only): resets hand the player extra siphons, resources, programs.

``StartKit(siphons, credits, energy, programs, prob)`` is ``HackMatrix`` whose ``reset_extras`` (so
also the auto-reset inside ``step``) adds, with probability ``prob`` per reset, ``siphons``
data siphons, ``credits`` and ``energy`` to the player's fresh-game stock (rules §10.1 R2-R3
still apply first), and makes the player own ``programs`` distinct programs drawn uniformly
(acquisition order = draw order; from ``pool``, a tuple of program names, when given: e.g.
``("undo",)`` hands out UNDO only). Nothing else changes: the board, enemies, the reward and the
step are the real game's. The kit only lets the agent *experience* siphons and programs early;
it is not the game, so evaluation uses ``unwrapped`` (the bare env, stage 1).

The draws use ``fold_in(key, _KIT_SITE)``, so the stage the wrapped env generates is exactly the
one the bare env generates from the same key; ``prob == 0`` (or an empty kit) is the bare env.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from hackmatrix_env import HackMatrix
from hackmatrix_env.constants import PROGRAM_NAMES

_KIT_SITE = 0x4B17  # fold_in site of the kit draws


class StartKit(HackMatrix):
    """HackMatrix whose resets add a start kit with probability ``prob`` (training curriculum)."""

    def __init__(
        self,
        siphons: int = 0,
        credits: int = 0,
        energy: int = 0,
        programs: int = 0,
        prob: float = 1.0,
        pool: tuple[str, ...] | None = None,
    ):
        super().__init__()
        kit = (int(siphons), int(credits), int(energy), int(programs))
        if min(kit) < 0:
            raise ValueError(f"start kit amounts must be >= 0, got {kit}")
        names = PROGRAM_NAMES if pool is None else tuple(pool)
        unknown = sorted(set(names) - set(PROGRAM_NAMES))
        if unknown or len(set(names)) != len(names) or not names:
            raise ValueError(
                f"start kit pool must be distinct program names from {PROGRAM_NAMES}, got {names}"
            )
        if kit[3] > len(names):
            raise ValueError(f"start kit programs must be <= {len(names)} (the pool), got {kit[3]}")
        self.pool = tuple(PROGRAM_NAMES.index(n) for n in names)
        if not 0.0 <= float(prob) <= 1.0:
            raise ValueError(f"start kit probability must be in [0, 1], got {prob}")
        self.siphons, self.credits, self.energy, self.programs = kit
        self.prob = float(prob)

    def _key(self) -> tuple:
        return (self.siphons, self.credits, self.energy, self.programs, self.prob, self.pool)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash((type(self), self._key()))

    def __repr__(self) -> str:
        return (
            f"StartKit(siphons={self.siphons}, credits={self.credits}, energy={self.energy}, "
            f"programs={self.programs}, prob={self.prob}, pool={self.pool})"
        )

    @property
    def unwrapped(self) -> HackMatrix:
        """The bare game (evaluate on it)."""
        return HackMatrix()

    def reset_extras(self, key: jax.Array, state, params):
        """The kit with probability ``prob``, on top of a fresh game (rules §10.1)."""
        k_on, k_prog = jax.random.split(jax.random.fold_in(key, _KIT_SITE))
        on = jax.random.uniform(k_on) < self.prob
        p = state.player

        def add(value: jax.Array, amount: int) -> jax.Array:
            return jnp.where(on, value + amount, value).astype(value.dtype)

        player = p.replace(
            siphons=add(p.siphons, self.siphons),
            credits=add(p.credits, self.credits),
            energy=add(p.energy, self.energy),
        )
        state = state.replace(player=player)
        if self.programs:
            order = jax.random.permutation(k_prog, len(self.pool))[: self.programs]
            drawn = jnp.asarray(self.pool, jnp.int32)[order]
            owned = state.owned_list.at[: self.programs].set(drawn.astype(state.owned_list.dtype))
            state = state.replace(
                owned_list=jnp.where(on, owned, state.owned_list),
                num_owned=jnp.where(on, self.programs, state.num_owned).astype(
                    state.num_owned.dtype
                ),
            )
        return state
