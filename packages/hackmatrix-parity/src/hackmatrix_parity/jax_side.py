"""The JAX side of the differential test: load states, step them under K keys at once.

Everything that touches ``hackmatrix_env`` lives here, so the rest of the
package (client, tensor, SwiftEnv) imports without JAX.

``CandidateStepper`` jit-compiles one function for a fixed batch ``B`` of
lanes (scenarios run in lockstep) and ``K`` keys per lane:
``(states[B], actions[B], keys[B, K]) -> outcomes[B, K]``, where an outcome
is the stepped state plus everything the comparison reads (reward, the 15
breakdown values, tensors, mask, done, info flags). The stepped states stay
on the device; ``select`` picks one candidate per lane as the next batch.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from hackmatrix_env import scenario as env_scenario
from hackmatrix_env.constants import ENEMY_NAMES
from hackmatrix_env.types import EnvState


def load_scenario(sc: dict[str, Any]) -> EnvState:
    """EnvState from a ``setState`` dict, with Swift's lenient semantics."""
    return env_scenario.state_from_json(sc, strict=False)


def load_full_state(d: dict[str, Any]) -> EnvState:
    """EnvState from a full-state dump (Swift ``getFullState``; specs/full-state.md)."""
    return env_scenario.state_from_full_json(d)


def full_state_json(state: EnvState) -> dict[str, Any]:
    return env_scenario.full_state_json(state)


def observation_json(state: EnvState) -> dict[str, Any]:
    return env_scenario.observation_json(state)


def internal_state_json(state: EnvState) -> dict[str, Any]:
    """The ``getInternalState`` reply (interface §5.5) computed from a JAX state."""
    s = jax.device_get(state).game
    e = s.enemies
    enemies = []
    for k in range(len(e.alive)):
        if not bool(e.alive[k]):
            continue
        enemies.append(
            {
                "row": int(e.pos[k, 0]),
                "col": int(e.pos[k, 1]),
                "type": ENEMY_NAMES[int(e.kind[k])],
                "hp": int(e.hp[k]),
                "disabledTurns": int(e.disabled[k]),
                "isStunned": bool(e.stunned[k]),
                "spawnedFromSiphon": bool(e.from_siphon[k]),
                "isFromScheduledTask": bool(e.from_task[k]),
            }
        )
    return {
        "scheduledTaskInterval": int(s.task_interval),
        "nextScheduledTaskTurn": int(s.next_task_turn),
        "pendingSiphonTransmissions": int(s.pending_siphon_spawns),
        "turnCount": int(s.turn),
        "enemies": enemies,
    }


def transmission_entries(state: EnvState) -> list[tuple[int, int, int, int, bool, bool]]:
    """The transmission list in order: ``(row, col, countdown, kind, from_task, from_siphon)``."""
    t = state.game.transmissions
    return [
        (int(t.pos[i, 0]), int(t.pos[i, 1]), int(t.countdown[i]), int(t.kind[i]),
         bool(t.from_task[i]), bool(t.from_siphon[i]))
        for i in range(len(t.alive))
        if bool(t.alive[i])
    ]  # fmt: skip


def history_counters(state: EnvState) -> tuple[int, int, int]:
    """``(top, size, lost)`` of the UNDO ring: enough to tell a push from a pop."""
    h = state.history
    return int(h.top), int(h.size), int(h.lost)


def history_depth(state: EnvState) -> int:
    return int(state.history.depth)


def with_transmissions(state: EnvState, entries: list[tuple]) -> EnvState:
    """``state`` with its transmission list replaced by ``entries`` (``transmission_entries``
    tuples, list order): the engine resyncs hidden types and order with it."""
    t = jax.device_get(state.game.transmissions)
    n, cap = len(entries), len(t.alive)
    if n > cap:
        raise ValueError(f"{n} transmissions exceed the pool capacity {cap}")
    rows = np.array([e[:4] for e in entries], np.int64).reshape(n, 4)
    flags = np.array([e[4:] for e in entries], bool).reshape(n, 2)

    def padded(values: np.ndarray, like: np.ndarray) -> np.ndarray:
        out = np.zeros_like(like)
        out[:n] = values
        return out

    transmissions = t.replace(
        pos=padded(rows[:, :2], t.pos),
        countdown=padded(rows[:, 2], t.countdown),
        kind=padded(rows[:, 3], t.kind),
        from_task=padded(flags[:, 0], t.from_task),
        from_siphon=padded(flags[:, 1], t.from_siphon),
        alive=padded(np.ones(n, bool), t.alive),
    )
    return state.replace(game=state.game.replace(transmissions=transmissions))


def with_top_snapshot_cells(state: EnvState, old: list[tuple], new: list[tuple]) -> EnvState:
    """``state`` with the cells of its newest UNDO snapshot's transmissions moved from
    ``old`` to ``new`` (entry lists of one length), when that snapshot holds ``old``.

    The enemy phase pushes its snapshot after placing transmissions, so a step whose
    placement the engine rebuilds from Swift's cells must rebuild the snapshot too, or a
    later UNDO would restore the JAX key's cells.
    """
    h = state.history
    if int(h.size) == 0 or h.snapshots is None:
        return state
    slot = (int(h.top) - 1) % h.depth
    snap = jax.device_get(h.snapshots.transmissions)
    alive = np.flatnonzero(np.asarray(snap.alive[slot]))
    held = [
        (int(snap.pos[slot, i, 0]), int(snap.pos[slot, i, 1]), int(snap.countdown[slot, i]),
         int(snap.kind[slot, i]))
        for i in alive
    ]  # fmt: skip
    if held != [e[:4] for e in old] or len(new) != len(old):
        return state
    pos = np.array(snap.pos, copy=True)
    for i, e in zip(alive, new, strict=True):
        pos[slot, i] = e[:2]
    snapshots = h.snapshots.replace(transmissions=snap.replace(pos=pos))
    return state.replace(history=h.replace(snapshots=snapshots))


def _outcome(key, state, action):
    """One candidate: the stepped state (``time`` unchanged) and what the comparison reads."""
    from hackmatrix_env.observation import observe
    from hackmatrix_env.reward import reward_breakdown
    from hackmatrix_env.transition import advance

    after, ev = advance(key, state, action)
    bd = reward_breakdown(state.game, after.game, ev).astype(jnp.float32)
    obs = observe(after)
    mask = obs.action_mask
    invalid = jnp.asarray(ev.invalid, bool)
    died = (~invalid) & (after.game.player.hp == 0)
    out = {
        "reward": jnp.sum(bd),
        "breakdown": bd,
        "player": obs.player,
        "programs": obs.programs.astype(jnp.float32),
        "grid": obs.grid,
        "mask": mask,
        "done": invalid | died | jnp.asarray(ev.victory, bool),
        "invalid_action": invalid,
        "stage_complete": (~invalid) & jnp.asarray(ev.exit_reached, bool),
        "death": died,
    }
    return after, out


def _initial(state):
    from hackmatrix_env.observation import observe

    obs = observe(state)
    return {
        "player": obs.player,
        "programs": obs.programs.astype(jnp.float32),
        "grid": obs.grid,
        "mask": obs.action_mask,
    }


def _slim(states: EnvState) -> EnvState:
    """The state without its UNDO snapshots (the comparison reads only the history counters)."""
    from hackmatrix_env.history import without_snapshots

    return without_snapshots(states)


class Candidates:
    """Host views of stepped candidates, fetched lazily (candidate 0 of every lane at once)."""

    def __init__(self, stepper: CandidateStepper, nxt: EnvState):
        self.stepper, self.nxt = stepper, nxt
        self._first: EnvState | None = None
        self._lanes: dict[int, EnvState] = {}

    def get(self, b: int, k: int) -> EnvState:
        """Candidate (b, k) without snapshots (enough for every comparison)."""
        if k == 0:
            if self._first is None:
                self._first = jax.device_get(self.stepper._pick0(self.nxt))
            return jax.tree.map(lambda x: x[b], self._first)
        if b not in self._lanes:
            self._lanes[b] = jax.device_get(self.stepper._lane_slim(self.nxt, b))
        return jax.tree.map(lambda x: x[k], self._lanes[b])

    def full(self, b: int, k: int) -> EnvState:
        """Candidate (b, k) with its history (to continue from it)."""
        return self.stepper.take(self.nxt, b, k)


class CandidateStepper:
    """Jitted ``B`` lanes x ``K`` keys stepping; compiled once per (B, K)."""

    def __init__(self, batch: int, num_keys: int):
        self.B, self.K = int(batch), int(num_keys)
        # Import the game's modules before tracing: their module-level constants must not be
        # created inside a trace.
        import hackmatrix_env.observation
        import hackmatrix_env.transition  # noqa: F401

        over_keys = jax.vmap(_outcome, in_axes=(0, None, None))
        self._step = jax.jit(jax.vmap(over_keys, in_axes=(0, 0, 0)))
        self._select = jax.jit(
            lambda states, idx: jax.tree.map(lambda x: x[jnp.arange(x.shape[0]), idx], states)
        )
        self._take = jax.jit(lambda states, b, k: jax.tree.map(lambda x: x[b, k], states))
        self._lane = jax.jit(lambda batch, b: jax.tree.map(lambda x: x[b], batch))
        self._set_lane = jax.jit(
            lambda batch, b, s: jax.tree.map(lambda x, y: x.at[b].set(y), batch, s)
        )
        self._initial = jax.jit(jax.vmap(_initial))
        self._pick0 = jax.jit(lambda states: _slim(jax.tree.map(lambda x: x[:, 0], states)))
        self._lane_slim = jax.jit(lambda states, b: _slim(jax.tree.map(lambda x: x[b], states)))

    @staticmethod
    def stack(states: list[EnvState]) -> EnvState:
        return jax.tree.map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *states)

    def step(self, batch: EnvState, actions: np.ndarray, keys: jax.Array):
        """-> (next_states[B, K] on device, outcome dict of host numpy arrays [B, K, ...])."""
        nxt, out = self._step(keys, batch, jnp.asarray(actions, jnp.int32))
        return nxt, jax.device_get(out)

    def initial(self, batch: EnvState) -> dict[str, np.ndarray]:
        return jax.device_get(self._initial(batch))

    def select(self, nxt: EnvState, idx: np.ndarray) -> EnvState:
        return self._select(nxt, jnp.asarray(idx, jnp.int32))

    def take(self, nxt: EnvState, b: int, k: int) -> EnvState:
        return jax.device_get(self._take(nxt, b, k))

    def lane(self, batch: EnvState, b: int) -> EnvState:
        return jax.device_get(self._lane(batch, b))

    def set_lane(self, batch: EnvState, b: int, state: EnvState) -> EnvState:
        return self._set_lane(batch, b, state)


_STEPPERS: dict[tuple[int, int], CandidateStepper] = {}


def get_stepper(batch: int, num_keys: int) -> CandidateStepper:
    """A shared stepper per (B, K): compilation is the dominant cost, so reuse shapes."""
    key = (int(batch), int(num_keys))
    if key not in _STEPPERS:
        _STEPPERS[key] = CandidateStepper(*key)
    return _STEPPERS[key]


def candidate(host_states: EnvState, b: int, k: int) -> EnvState:
    """Candidate (b, k) of a host copy of the stepped states [B, K, ...] (numpy views)."""
    return jax.tree.map(lambda x: x[b, k], host_states)


def make_keys(seed: int, tick: int, batch: int, num_keys: int) -> jax.Array:
    """keys[B, K] for one lockstep tick; key k of a lane is fixed given (seed, tick, lane)."""
    base = jax.random.fold_in(jax.random.key(seed), tick)
    return jax.random.split(base, batch * num_keys).reshape(batch, num_keys)
