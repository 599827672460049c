"""The board's eight symmetries: a network asked about every view of a state.

A new stage is symmetric under the square's eight symmetries (rules §10: the player on a
uniform corner, the exit uniform among the other three, blocks, resources and enemies uniform
over cells), and so are most rules: moves, shots and the siphon's cross treat the four
directions alike, and ROW and COL trade places under a transpose. Only orders break it (the
direction order of the enemies' tie-breaks, the processing order by position). A rotated or
reflected state is therefore one the network has met as often as the state itself, and its
answer, mapped back to the state's actions, is a second opinion from the same weights on other
inputs: an ensemble that costs no training, only the forward passes.

``symmetrized(apply_fn, views)`` is the network averaged over the first ``views`` symmetries:
the mean of their logits, each view's mapped back to the state's own actions (after the mask:
the renormalized geometric mean of the views' policies), and the mean of their values. The
views go through the network as one batch. ``views`` 1 is the network itself (the identity
first). Measured on the shipped agent (experiments/long_game.md, "The board's symmetries"):
8 views lift its greedy play and its search.

``viewed_by_state(apply_fn)`` is the network asked through one view per state, the view
chosen by a hash of the observation's bits (``state_view``): training through it
(``hm-train --random-views``) shows the network every state in one of its eight orientations,
the same one in the rollout and in the loss, so the run stays on-policy with nothing stored.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from hackmatrix_env.constants import DIR_OFFSETS, GRID_SIZE, Action

NUM_VIEWS = 8
# the program block's one-hot channel is the program's action index + this (interface §3.4)
PROGRAM_CHANNEL_OFFSET = 7


@dataclass(frozen=True)
class Symmetry:
    """One symmetry of the square: axes swapped (a transpose), then rows and columns flipped.
    A static setting, not a pytree (and no flax: the commands check ``--views`` before flax
    loads)."""

    swap: bool
    flip_rows: bool
    flip_cols: bool


# the identity first, so ``views`` 1 is the network itself
SYMMETRIES = tuple(
    Symmetry(swap, flip_rows, flip_cols)
    for swap in (False, True)
    for flip_rows in (False, True)
    for flip_cols in (False, True)
)


def map_cell(sym: Symmetry, row: int, col: int) -> tuple[int, int]:
    """Where the view ``sym`` shows the state's cell (row, col)."""
    last = GRID_SIZE - 1
    if sym.swap:
        row, col = col, row
    return (last - row if sym.flip_rows else row), (last - col if sym.flip_cols else col)


def map_step(sym: Symmetry, drow: int, dcol: int) -> tuple[int, int]:
    """The view's image of a step (drow, dcol): ``map_cell``'s linear part."""
    if sym.swap:
        drow, dcol = dcol, drow
    return (-drow if sym.flip_rows else drow), (-dcol if sym.flip_cols else dcol)


@functools.cache
def view_tables(sym: Symmetry, num_actions: int = len(Action), num_channels: int = 42):
    """``(cells, actions, channels, programs)``, int32 index arrays that build a view by
    gathering: ``cells[k]`` the state's cell (row-major) the view shows at its cell k;
    ``actions[a]`` the view's action for the state's action a, so a view's logits mapped back
    are ``view_logits[..., actions]``; ``channels`` and ``programs`` the grid channels and the
    owned-program flags in the view's order (ROW and COL trade places under a transpose)."""
    cells = np.zeros(GRID_SIZE * GRID_SIZE, np.int32)
    for row in range(GRID_SIZE):
        for col in range(GRID_SIZE):
            vrow, vcol = map_cell(sym, row, col)
            cells[vrow * GRID_SIZE + vcol] = row * GRID_SIZE + col
    steps = [tuple(int(x) for x in step) for step in DIR_OFFSETS]
    actions = np.arange(num_actions, dtype=np.int32)
    for d, step in enumerate(steps):
        actions[d] = steps.index(map_step(sym, *step))
    channels = np.arange(num_channels, dtype=np.int32)
    programs = np.arange(num_actions - int(Action.PUSH), dtype=np.int32)
    if sym.swap:
        pair = np.array([int(Action.ROW), int(Action.COL)])
        actions[pair] = pair[::-1]
        channels[pair + PROGRAM_CHANNEL_OFFSET] = pair[::-1] + PROGRAM_CHANNEL_OFFSET
        programs[pair - int(Action.PUSH)] = pair[::-1] - int(Action.PUSH)
    return cells, actions, channels, programs


def view_observation(obs, sym: Symmetry):
    """The observation of the state seen through ``sym`` (any leading batch shape): the grid's
    cells moved, the player's row and column mapped, ROW and COL traded under a transpose,
    the mask in the view's actions."""
    import jax.numpy as jnp

    cells, actions, channels, programs = view_tables(
        sym, obs.action_mask.shape[-1], obs.grid.shape[-1]
    )
    *batch, size, _, num_channels = obs.grid.shape
    grid = obs.grid.reshape((*batch, size * size, num_channels))[..., cells, :][..., channels]
    last = GRID_SIZE - 1
    # row / 5 and col / 5 (interface §3.2): a flip divides the flipped cell as the game does
    row, col = obs.player[..., 0], obs.player[..., 1]
    if sym.swap:
        row, col = col, row
    row = (last - jnp.round(row * last)) / last if sym.flip_rows else row
    col = (last - jnp.round(col * last)) / last if sym.flip_cols else col
    player = jnp.concatenate([row[..., None], col[..., None], obs.player[..., 2:]], axis=-1)
    return obs._replace(
        player=player,
        programs=obs.programs[..., programs],
        grid=grid.reshape(obs.grid.shape),
        action_mask=obs.action_mask[..., np.argsort(actions)],
    )


def check_views(views: int) -> None:
    """A ``ValueError`` for a number of views outside 1..8."""
    if not 1 <= views <= NUM_VIEWS:
        raise ValueError(f"--views must be 1 to {NUM_VIEWS}, got {views}")


def symmetrized(apply_fn, views: int = NUM_VIEWS):
    """``apply(params, obs) -> (logits, value)``: ``apply_fn`` averaged over the first
    ``views`` symmetries (module doc); ``apply_fn`` itself for one view."""
    check_views(views)
    if views == 1:
        return apply_fn
    syms = SYMMETRIES[:views]

    def apply(params, obs):
        import jax
        import jax.numpy as jnp

        stacked = jax.tree.map(
            lambda *leaves: jnp.stack(leaves), *[view_observation(obs, s) for s in syms]
        )
        logits, value = apply_fn(params, stacked)[:2]
        back = np.stack([view_tables(s, logits.shape[-1])[1] for s in syms])
        back = back.reshape((views,) + (1,) * (logits.ndim - 2) + back.shape[-1:])
        mapped = jnp.take_along_axis(logits, jnp.asarray(back), axis=-1)
        return mapped.mean(axis=0), value.mean(axis=0)

    return apply


class Symmetrized:
    """A network whose ``apply`` is ``symmetrized(net.apply, views)`` (``load_policy``'s
    ``wrap_network``); its params are the network's."""

    def __init__(self, net, views: int = NUM_VIEWS):
        self.net, self.views = net, views
        self.apply = symmetrized(net.apply, views)

    def init(self, *args, **kwargs):
        return self.net.init(*args, **kwargs)


# odd multipliers for the observation's words (fixed: a state's view is the same in every run)
_HASH_SEED = 0x5EED


@functools.cache
def _hash_weights(size: int) -> np.ndarray:
    rng = np.random.default_rng(_HASH_SEED)
    return (rng.integers(0, 2**31, size, dtype=np.uint64) * 2 + 1).astype(np.uint32)


def state_view(obs):
    """int32[...]: a view index in 0..7 for each observation of a batch, a hash of its bits.

    Integer arithmetic (a weighted sum of the words mod 2^32, then murmur3's finalizer) gives
    the same index for the same observation in any program and any order of summation: the
    rollout and the loss, which see the same stored observation, see it through one view."""
    import jax
    import jax.numpy as jnp

    batch = obs.action_mask.shape[:-1]
    words = []
    for leaf in (obs.player, obs.programs, obs.grid):
        leaf = leaf.reshape((*batch, -1))
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            leaf = jax.lax.bitcast_convert_type(leaf.astype(jnp.float32), jnp.uint32)
        words.append(leaf.astype(jnp.uint32))
    words = jnp.concatenate(words, axis=-1)
    h = jnp.sum(words * jnp.asarray(_hash_weights(words.shape[-1])), axis=-1, dtype=jnp.uint32)
    for shift, mult in ((16, 0x85EBCA6B), (13, 0xC2B2AE35), (16, None)):
        h = h ^ (h >> shift)
        h = h if mult is None else h * jnp.uint32(mult)
    return (h >> 29).astype(jnp.int32)  # the top three bits


def viewed_by_state(apply_fn):
    """``apply(params, obs, **kw)``: ``apply_fn`` on each observation seen through its own
    view (``state_view``), the logits mapped back to the state's actions; the value (and any
    further output) as the view gives it. A network trained through it meets every state in
    the orientation its hash picks: data augmentation over the board's symmetries."""

    def apply(params, obs, **kwargs):
        import jax
        import jax.numpy as jnp

        index = state_view(obs)
        views = [view_observation(obs, sym) for sym in SYMMETRIES]

        def pick(*leaves):  # each row's own view
            stacked = jnp.stack(leaves)
            where = index.reshape((1, *index.shape) + (1,) * (stacked.ndim - index.ndim - 1))
            return jnp.take_along_axis(stacked, where, axis=0)[0]

        out = apply_fn(params, jax.tree.map(pick, *views), **kwargs)
        back = np.stack([view_tables(s, out[0].shape[-1])[1] for s in SYMMETRIES])
        logits = jnp.take_along_axis(out[0], jnp.asarray(back)[index], axis=-1)
        return (logits, *out[1:])

    return apply
