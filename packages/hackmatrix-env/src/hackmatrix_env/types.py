"""State, params, observation and event types (pytrees of fixed shape).

Dtypes are part of the contract (see ../shared/style.md §3) and are checked
by a test after reset and after step: int8 for cell codes, kinds, hp,
countdowns, positions; int32 for unbounded counters; bool for flags; float32
for observation and reward.

Pools (enemies, transmissions) are kept *compact in spec list order*: the
alive entries occupy slots 0..count-1 in list order, appends write at slot
``count``, and removal is a stable compaction. So slot order == list order
(rules §2.7) and no spawn sequence number is needed.

Shape symbols: E = MAX_ENEMIES, T = MAX_TRANSMISSIONS, L = MAX_OWNED_LIST,
H = History.depth (default HISTORY_DEPTH), 6x6 grid indexed [row, col] with row 0 at the bottom.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import NamedTuple

import jax
import numpy as np
from flax import struct

from hackmatrix_env.constants import HISTORY_DEPTH, NUM_STAGES
from hackmatrix_env.gymnax_base import environment


@struct.dataclass
class Player:  # rules §2.2
    pos: jax.Array  # int8[2]   (row, col)
    hp: jax.Array  # int8[]    0..3
    credits: jax.Array  # int32[]
    energy: jax.Array  # int32[]
    siphons: jax.Array  # int32[]   data siphons held
    score: jax.Array  # int32[]
    attack: jax.Array  # int8[]    damage of a shot (ATK+ raises it, never reset)


@struct.dataclass
class Grid:  # rules §2.3-2.4; every field int8/bool[6, 6]
    content: jax.Array  # int8[6,6]  Content (EMPTY, BLOCK, DATA_SIPHON, EXIT)
    block_kind: jax.Array  # int8[6,6]  BlockKind (DATA/PROGRAM) where content == BLOCK
    block_question: jax.Array  # bool[6,6]  block is an unrevealed question block
    block_points: jax.Array  # int8[6,6]  data points (kept after siphon)
    block_program: jax.Array  # int8[6,6]  program index 0..22 for program blocks
    block_spawn: jax.Array  # int8[6,6]  transmissions owed when siphoned (0 after)
    resource_kind: jax.Array  # int8[6,6]  Resource (NONE, CREDITS, ENERGY)
    resource_amount: jax.Array  # int8[6,6]  stack size (0 when NONE)
    siphoned: jax.Array  # bool[6,6]
    center: jax.Array  # bool[6,6]  player stood here when siphoning (observation only)


@struct.dataclass
class Enemies:  # rules §2.5; pool compact in list order, alive entries first
    kind: jax.Array  # int8[E]     EnemyKind
    pos: jax.Array  # int8[E, 2]  (row, col)
    hp: jax.Array  # int8[E]
    disabled: jax.Array  # int8[E]     >0: cannot act (only inside an enemy phase)
    stunned: jax.Array  # bool[E]
    last_known: jax.Array  # int8[E, 2]  cryptog hint position
    from_task: jax.Array  # bool[E]     scheduled-task origin (never a reward kill)
    from_siphon: jax.Array  # bool[E]     siphon origin (siphon-death penalty, obs ch 6)
    alive: jax.Array  # bool[E]


@struct.dataclass
class Transmissions:  # rules §2.6; pool compact in list order
    pos: jax.Array  # int8[T, 2]
    countdown: jax.Array  # int8[T]
    kind: jax.Array  # int8[T]     EnemyKind it will hatch into
    from_task: jax.Array  # bool[T]
    from_siphon: jax.Array  # bool[T]
    alive: jax.Array  # bool[T]


@struct.dataclass
class SnapEnemies:  # enemies as a snapshot holds them (rules §11.1)
    # disabled/stunned are always 0/False when a snapshot is pushed (after status clearing,
    # rules §7.2 step 8) and provenance flags are cleared on restore, so they are not stored.
    kind: jax.Array  # int8[E]
    pos: jax.Array  # int8[E, 2]
    hp: jax.Array  # int8[E]
    last_known: jax.Array  # int8[E, 2]
    alive: jax.Array  # bool[E]


@struct.dataclass
class SnapTransmissions:  # transmissions as a snapshot holds them (no provenance flags)
    pos: jax.Array  # int8[T, 2]
    countdown: jax.Array  # int8[T]
    kind: jax.Array  # int8[T]
    alive: jax.Array  # bool[T]


@struct.dataclass
class Snapshot:  # rules §11.1: what UNDO restores (leading dim H inside History)
    player: Player
    turn: jax.Array  # int32[]
    owned_list: jax.Array  # int8[L]   program indices in acquisition order, -1 padded
    num_owned: jax.Array  # int8[]
    enemies: SnapEnemies
    transmissions: SnapTransmissions
    grid: Grid
    show_flag: jax.Array  # bool[]
    calm_flag: jax.Array  # bool[]
    atk_uses: jax.Array  # int8[]

    @classmethod
    def of(cls, game: GameState) -> Snapshot:
        """The part of ``game`` a snapshot holds (rules §11.1)."""
        e, t = game.enemies, game.transmissions
        return cls(
            player=game.player,
            turn=game.turn,
            owned_list=game.owned_list,
            num_owned=game.num_owned,
            enemies=SnapEnemies(
                kind=e.kind, pos=e.pos, hp=e.hp, last_known=e.last_known, alive=e.alive
            ),
            transmissions=SnapTransmissions(
                pos=t.pos, countdown=t.countdown, kind=t.kind, alive=t.alive
            ),
            grid=game.grid,
            show_flag=game.show_flag,
            calm_flag=game.calm_flag,
            atk_uses=game.atk_uses,
        )


@struct.dataclass
class History:  # rules §11: fixed-depth ring buffer of snapshots
    snapshots: Snapshot  # every leaf has a leading H axis
    top: jax.Array  # int32[]  slot the next push writes (mod H)
    size: jax.Array  # int32[]  snapshots held (0..H)
    lost: jax.Array  # int32[]  snapshots dropped because the ring was full
    # H, static: the ring arithmetic needs it even when ``snapshots`` is stripped (None).
    depth: int = struct.field(pytree_node=False, default=HISTORY_DEPTH)


@struct.dataclass
class GameState:
    """The game (rules §2): everything the rules read and write, except the UNDO ring.

    ``turn`` counts real enemy phases this stage. The rule modules take and return a
    ``GameState``; the UNDO ring lives beside it in ``EnvState`` and is written by the
    env shell only (``history.record_step``).
    """

    player: Player
    grid: Grid
    enemies: Enemies
    transmissions: Transmissions
    owned_list: jax.Array  # int8[L]   program indices in acquisition order, -1 padded
    num_owned: jax.Array  # int8[]
    stage: jax.Array  # int8[]    1..8 (stays 8 after victory)
    turn: jax.Array  # int32[]   real enemy phases this stage
    task_interval: jax.Array  # int32[]
    next_task_turn: jax.Array  # int32[]
    pending_siphon_spawns: jax.Array  # int32[]
    show_flag: jax.Array  # bool[]
    calm_flag: jax.Array  # bool[]
    step_flag: jax.Array  # bool[]
    atk_uses: jax.Array  # int8[]    ATK+ uses this stage
    exit_pos: jax.Array  # int8[2]
    overflow: jax.Array  # bool[]    a fixed pool or the UNDO ring ran out: no longer exact vs Swift


@struct.dataclass
class UndoTop:
    """What the game reads of the UNDO ring (rules §11): is a snapshot held, and the newest one.

    The UNDO program restores ``snapshot`` (garbage when ``available`` is False, never read
    then); the mask's UNDO entry is ``available``. The ring itself stays in the env shell.
    """

    available: jax.Array  # bool[]
    snapshot: Snapshot


@struct.dataclass
class EnvState(environment.EnvState):
    """The env's state: ``time`` (gymnax: env steps this episode), the game, the UNDO ring."""

    game: GameState
    history: History


@dataclasses.dataclass(frozen=True)
class EnvParams(environment.EnvParams):
    """Traced knobs, except ``history_depth``, which is static (it sets a buffer's shape).

    ``history_depth`` is the number of UNDO snapshots kept (specs/programs.md §5): the
    default 16 is exact for ordinary play; a study of UNDO-heavy policies (the stage
    farm) raises it. Changing it recompiles.

    Made on the host (``EnvParams(...)``, ``.replace(...)``), the fields are checked: a
    ``ValueError`` names a start stage outside 1..8, a step limit below 1, a history depth
    below 1, or a value that is not an integer (numpy arrays are checked element by element).
    JAX arrays are not checked (they may be tracers), and neither are the params that JAX
    rebuilds from leaves (``jit``, ``vmap``, ``jax.tree.map``): a tree of axes such as
    ``jax.tree.map(lambda _: 0, params)`` is a valid ``in_axes``.
    """

    max_steps_in_episode: int = 1000
    start_stage: int = 1  # curriculum: reset generates this stage (1 = the real game)
    history_depth: int = dataclasses.field(default=HISTORY_DEPTH, metadata={"static": True})

    def __post_init__(self) -> None:
        _check_param("max_steps_in_episode", self.max_steps_in_episode, 1, None)
        _check_param("start_stage", self.start_stage, 1, NUM_STAGES)
        check_history_depth(self.history_depth)


_PARAM_LEAVES = ("max_steps_in_episode", "start_stage")


def _check_param(name: str, value: object, low: int, high: int | None) -> None:
    """A ``ValueError`` naming ``EnvParams.<name>`` if a concrete host value is out of range."""
    if isinstance(value, jax.Array) or value is None:
        return  # traced or on device: checked by no one (see EnvParams)
    arr = np.asarray(value) if isinstance(value, (int, float, np.generic, np.ndarray)) else None
    if arr is None:
        raise ValueError(f"EnvParams.{name} must be an integer, got {value!r}")
    if arr.dtype.kind not in "iu" or isinstance(value, bool):
        raise ValueError(f"EnvParams.{name} must be an integer, got {value!r}")
    bad = arr < low if high is None else (arr < low) | (arr > high)
    if bad.any():
        allowed = f">= {low}" if high is None else f"in {low}..{high}"
        raise ValueError(f"EnvParams.{name} must be {allowed}, got {value!r}")


def _params_flatten_with_keys(p: EnvParams):
    return [(jax.tree_util.GetAttrKey(n), getattr(p, n)) for n in _PARAM_LEAVES], p.history_depth


def _params_flatten(p: EnvParams):
    return [getattr(p, n) for n in _PARAM_LEAVES], p.history_depth


def _params_unflatten(history_depth: int, leaves) -> EnvParams:
    """Rebuild without ``__post_init__``: leaves may be tracers, axes or placeholders."""
    p = object.__new__(EnvParams)
    for name, leaf in zip(_PARAM_LEAVES, leaves, strict=True):
        object.__setattr__(p, name, leaf)
    object.__setattr__(p, "history_depth", history_depth)
    return p


jax.tree_util.register_pytree_with_keys(
    EnvParams, _params_flatten_with_keys, _params_unflatten, _params_flatten
)


class Observation(NamedTuple):
    """What the agent sees (interface §3); the mask travels with it."""

    player: jax.Array  # float32[10]
    programs: jax.Array  # float32[23]  owned flags
    grid: jax.Array  # float32[6, 6, 42]
    action_mask: jax.Array  # bool[28]

    def __jax_array__(self):
        """Refuse to become one array (``jnp.asarray``, ``jnp.reshape``), and say what does.

        gymnax's ``FlattenObservationWrapper`` reshapes the observation; over ``HackMatrix``
        it needs the Box adapter underneath (what ``make_legacy_env`` builds).
        """
        raise TypeError(NOT_ONE_ARRAY)


# What the observation, and its space (env.ObservationSpace), say when used as one array / Box.
NOT_ONE_ARRAY = (
    "a HackMatrix Observation is a NamedTuple of four arrays (player, programs, grid, "
    "action_mask), not one array: flatten it with hackmatrix_env.observation."
    "flatten_observation, or put hackmatrix_env.adapters.BoxObservationWrapper under "
    "gymnax's FlattenObservationWrapper / LogWrapper (hackmatrix_env.adapters."
    "make_legacy_env() builds that stack)"
)


@struct.dataclass
class StepEvents:
    """What happened in a step that the reward reads but the state does not keep."""

    invalid: jax.Array  # bool[]   action failed: state unchanged, reward 0, done
    action_kind: jax.Array  # int8[]   ActionKind
    kills: jax.Array  # int32[]  kill events (interface §4.7)
    data_siphon_collected: jax.Array  # bool[]   a move picked up a data siphon
    exit_reached: jax.Array  # bool[]   stage completed this step (victory included)
    victory: jax.Array  # bool[]
    enemy_phase_ran: jax.Array  # bool[]   a real (non-skipped) enemy phase ran
    died_to_siphon_enemy: jax.Array  # bool[]   interface §1 step 7
    siphon_missed_credits: jax.Array  # int32[]  interface §4.6 (0 unless foundBetter)
    siphon_missed_energy: jax.Array  # int32[]
    reset_wasteful: jax.Array  # bool[]   RESET used at hp 2 (program_waste)
    dist_before: jax.Array  # int32[]  D0 (interface §4.5), 0 if no path
    undone: jax.Array  # bool[]   UNDO ran: the shell pops the ring (history.record_step)


def check_integer(name: str, value: object) -> int:
    """``value`` as a Python int, or a ``ValueError`` naming ``name`` (no float is truncated)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return int(value)


def check_history_depth(depth: object) -> int:
    """``depth`` as an int ≥ 1, or a ``ValueError`` that says what is wrong."""
    try:
        value = None if isinstance(depth, bool) else operator.index(depth)
    except TypeError:
        value = None
    if value is None or value < 1:
        raise ValueError(f"history_depth must be an int >= 1 (a static size), got {depth!r}")
    return value


def blank_game() -> GameState:
    """A game of the declared shapes and dtypes: empty board, no entities, fresh counters.

    Not a game position by itself (the exit is unset); ``stage.reset_game`` and
    ``scenario.state_from_json`` start from it. It fixes every dtype in one place.
    """
    import jax.numpy as jnp  # local: keeps this module's import surface tiny

    from hackmatrix_env.constants import (
        GRID_SIZE,
        INITIAL_TASK_INTERVAL,
        MAX_ENEMIES,
        MAX_HP,
        MAX_OWNED_LIST,
        MAX_TRANSMISSIONS,
    )

    i8, i32, b = jnp.int8, jnp.int32, jnp.bool_
    g = (GRID_SIZE, GRID_SIZE)
    player = Player(
        pos=jnp.zeros(2, i8),
        hp=i8(MAX_HP),
        credits=i32(0),
        energy=i32(0),
        siphons=i32(0),
        score=i32(0),
        attack=i8(1),
    )
    grid = Grid(
        content=jnp.zeros(g, i8),
        block_kind=jnp.zeros(g, i8),
        block_question=jnp.zeros(g, b),
        block_points=jnp.zeros(g, i8),
        block_program=jnp.zeros(g, i8),
        block_spawn=jnp.zeros(g, i8),
        resource_kind=jnp.zeros(g, i8),
        resource_amount=jnp.zeros(g, i8),
        siphoned=jnp.zeros(g, b),
        center=jnp.zeros(g, b),
    )
    e = MAX_ENEMIES
    enemies = Enemies(
        kind=jnp.zeros(e, i8),
        pos=jnp.zeros((e, 2), i8),
        hp=jnp.zeros(e, i8),
        disabled=jnp.zeros(e, i8),
        stunned=jnp.zeros(e, b),
        last_known=jnp.zeros((e, 2), i8),
        from_task=jnp.zeros(e, b),
        from_siphon=jnp.zeros(e, b),
        alive=jnp.zeros(e, b),
    )
    t = MAX_TRANSMISSIONS
    transmissions = Transmissions(
        pos=jnp.zeros((t, 2), i8),
        countdown=jnp.zeros(t, i8),
        kind=jnp.zeros(t, i8),
        from_task=jnp.zeros(t, b),
        from_siphon=jnp.zeros(t, b),
        alive=jnp.zeros(t, b),
    )
    return GameState(
        player=player,
        grid=grid,
        enemies=enemies,
        transmissions=transmissions,
        owned_list=jnp.full(MAX_OWNED_LIST, -1, i8),
        num_owned=i8(0),
        stage=i8(1),
        turn=i32(0),
        task_interval=i32(INITIAL_TASK_INTERVAL),
        next_task_turn=i32(INITIAL_TASK_INTERVAL),
        pending_siphon_spawns=i32(0),
        show_flag=b(False),
        calm_flag=b(False),
        step_flag=b(False),
        atk_uses=i8(0),
        exit_pos=jnp.zeros(2, i8),
        overflow=b(False),
    )


def blank_history(history_depth: int = HISTORY_DEPTH) -> History:
    """An empty UNDO ring of ``history_depth`` (static, ≥ 1) zeroed snapshots."""
    import jax.numpy as jnp

    depth = check_history_depth(history_depth)
    snapshot = Snapshot.of(blank_game())
    return History(
        snapshots=jax.tree.map(lambda x: jnp.zeros((depth, *x.shape), x.dtype), snapshot),
        top=jnp.int32(0),
        size=jnp.int32(0),
        lost=jnp.int32(0),
        depth=depth,
    )


def blank_state(history_depth: int = HISTORY_DEPTH) -> EnvState:
    """An env state: ``time`` 0, ``blank_game()``, an empty UNDO ring of ``history_depth``."""
    import jax.numpy as jnp

    history = blank_history(history_depth)
    return EnvState(time=jnp.int32(0), game=blank_game(), history=history)
