"""Every size, enum and table of the game, in one place (numpy only).

The rules (docs/rules/) are the source of each value; the section is named
next to it. Tables are numpy arrays: wrap them with ``jnp.asarray`` at the
point of use when indexing with a tracer. The Swift twin keeps the same tables
in ``Constants.swift`` in the same row order; a test compares the two.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

# --- Board (rules §1) -------------------------------------------------------
GRID_SIZE = 6
NUM_CELLS = GRID_SIZE * GRID_SIZE
NUM_DIRECTIONS = 4
NUM_ACTIONS = 28
FIRST_PROGRAM = 5  # program index = action - FIRST_PROGRAM
NUM_PROGRAMS = 23
NUM_ENEMY_KINDS = 4

# --- Fixed capacities (JAX only; the reference lists are unbounded) ---------
# Spec lists are unbounded; fixed pools are exact as long as they do not
# overflow. Overflow is recorded in EnvState.overflow (see specs/).
MAX_ENEMIES = 32
MAX_TRANSMISSIONS = 32
MAX_OWNED_LIST = 32  # ownedPrograms list (setState may inject duplicates)
HISTORY_DEPTH = 16  # UNDO snapshots kept (ring buffer, newest wins)


class Action(IntEnum):
    """Action indices (rules §1.3, interface §0.2)."""

    UP = 0
    DOWN = 1
    LEFT = 2
    RIGHT = 3
    SIPHON = 4
    PUSH = 5
    PULL = 6
    CRASH = 7
    WARP = 8
    POLY = 9
    WAIT = 10
    DEBUG = 11
    ROW = 12
    COL = 13
    UNDO = 14
    STEP = 15
    SIPH_PLUS = 16
    EXCH = 17
    SHOW = 18
    RESET = 19
    CALM = 20
    D_BOM = 21
    DELAY = 22
    ANTI_V = 23
    SCORE = 24
    REDUC = 25
    ATK_PLUS = 26
    HACK = 27


class Program(IntEnum):
    """Program index = action - FIRST_PROGRAM (programs.md §2)."""

    PUSH = 0
    PULL = 1
    CRASH = 2
    WARP = 3
    POLY = 4
    WAIT = 5
    DEBUG = 6
    ROW = 7
    COL = 8
    UNDO = 9
    STEP = 10
    SIPH_PLUS = 11
    EXCH = 12
    SHOW = 13
    RESET = 14
    CALM = 15
    D_BOM = 16
    DELAY = 17
    ANTI_V = 18
    SCORE = 19
    REDUC = 20
    ATK_PLUS = 21
    HACK = 22


class EnemyKind(IntEnum):
    """Enemy types; the value is the one-hot channel (interface §0.4)."""

    VIRUS = 0
    DAEMON = 1
    GLITCH = 2
    CRYPTOG = 3


class Content(IntEnum):
    """What a cell holds besides resources (rules §2.3)."""

    EMPTY = 0
    BLOCK = 1
    DATA_SIPHON = 2
    EXIT = 3


class BlockKind(IntEnum):
    """Block content; a question block hides one of these (rules §2.4)."""

    DATA = 0
    PROGRAM = 1


class Resource(IntEnum):
    """Resource stack kind on a cell (rules §2.3)."""

    NONE = 0
    CREDITS = 1
    ENERGY = 2


class ActionKind(IntEnum):
    """Kind of a step, for logging (info["action_kind"])."""

    MOVE = 0
    ATTACK = 1
    SIPHON = 2
    PROGRAM = 3
    INVALID = 4


# --- Directions (rules §1.2): UP DOWN LEFT RIGHT, as (drow, dcol) ----------
DIR_OFFSETS = np.array([[1, 0], [-1, 0], [0, -1], [0, 1]], np.int8)
# Siphon cross: centre, then canonical order (rules §5).
CROSS_OFFSETS = np.array([[0, 0], [1, 0], [-1, 0], [0, -1], [0, 1]], np.int8)
# 8-neighbourhood, drow outer -1..1, dcol inner -1..1, skipping (0,0) (programs §1.1).
NEIGHBOUR8_OFFSETS = np.array(
    [[dr, dc] for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)], np.int8
)
CORNERS = np.array([[0, 0], [0, 5], [5, 0], [5, 5]], np.int8)  # canonical order

# --- Enemies (rules §2.5) --------------------------------------------------
ENEMY_NAMES = ("virus", "daemon", "glitch", "cryptog")
ENEMY_MAX_HP = np.array([2, 3, 2, 2], np.int8)
ENEMY_SPEED = np.array([2, 1, 1, 1], np.int8)

# --- Programs (programs.md §2: the only authoritative copy) ---------------
PROGRAM_NAMES = (
    "push", "pull", "crash", "warp", "poly", "wait", "debug", "row", "col", "undo",
    "step", "siph+", "exch", "show", "reset", "calm", "d_bom", "delay", "anti-v",
    "score", "reduc", "atk+", "hack",
)  # fmt: skip
PROGRAM_ALIASES = {
    "siphplus": "siph+", "siph_plus": "siph+",
    "dbom": "d_bom", "d_bomb": "d_bom",
    "antiv": "anti-v", "anti_v": "anti-v",
    "atkplus": "atk+", "atk_plus": "atk+",
}  # fmt: skip
# [credits, energy] cost by program index.
PROGRAM_COST = np.array(
    [
        [0, 2], [0, 2], [3, 2], [2, 2], [1, 1], [0, 1], [3, 0], [3, 1], [3, 1], [1, 0],
        [0, 3], [5, 0], [4, 0], [2, 0], [0, 4], [2, 4], [3, 0], [1, 2], [3, 0], [0, 5],
        [2, 1], [4, 4], [2, 2],
    ],
    np.int32,
)  # fmt: skip
# Transmissions queued when a block holding this program is siphoned.
PROGRAM_SPAWN = np.array(
    [4, 4, 6, 5, 3, 1, 4, 2, 2, 3, 4, 7, 3, 2, 2, 6, 4, 4, 4, 5, 3, 8, 4], np.int8
)  # fmt: skip
ATK_PLUS_USES_PER_STAGE = 2

# --- Stages, scheduling, generation (rules §7.8, §9, §10) -----------------
NUM_STAGES = 8
INITIAL_TASK_INTERVAL = 12
MIN_TASK_INTERVAL = 4
SIPHON_TASK_DELAY = 5
STAGE_INTERVAL_BASE = 13  # task_interval := 13 - stage on completion
MAX_HP = 3
START_CREDITS_BONUS = 10
START_ENERGY_BONUS = 11
START_SIPHON_BONUS = 1
BLOCK_COUNT_MIN = 5
BLOCK_COUNT_MAX = 11
LAYOUT_ATTEMPTS = 100
PLACEMENT_TRIES = 100
QUESTION_PROBABILITY = 0.1
DATA_POINTS_MAX = 9
RESOURCE_AMOUNT_THRESHOLDS = (0.45, 0.9)  # u < .45 -> 1, u < .9 -> 2, else 3
DELAY_TURNS = 3
SETSTATE_DATA_POINTS = 5
SETSTATE_PROGRAM_SPAWN = 2
SETSTATE_EXIT = (5, 5)

# --- Reward (interface §4) ---------------------------------------------------
STAGE_REWARD = np.array([1, 2, 4, 8, 16, 32, 64, 100], np.float32)
STEP_PENALTY = -0.01
SCORE_COEF = 0.5
KILL_COEF = 0.3
DATA_SIPHON_REWARD = 1.0
DISTANCE_COEF = 0.05
VICTORY_BASE = 500.0
VICTORY_SCORE_COEF = 100.0
DEATH_COEF = -0.5
RESOURCE_COEF = 0.05
HOLDING_COEF = 0.01
DAMAGE_COEF = -1.0
RECOVERY_COEF = 1.0
SIPHON_QUALITY_COEF = -0.5  # times (0.05 * missed credits + 0.05 * missed energy)
PROGRAM_WASTE_PENALTY = -0.3
SIPHON_DEATH_PENALTY = -10.0

# The 15 components in summation order (interface §4.2).
REWARD_COMPONENTS = (
    "step_penalty", "stage_completion", "score_gain", "kills", "data_siphon",
    "distance_shaping", "victory", "death_penalty", "resource_gain", "resource_holding",
    "damage_penalty", "hp_recovery", "siphon_quality", "program_waste", "siphon_death_penalty",
)  # fmt: skip
NUM_REWARD_COMPONENTS = len(REWARD_COMPONENTS)
# Swift's 14 reward_breakdown keys (interface §5.5) -> our component name.
SWIFT_BREAKDOWN_KEYS = {
    "stage": "stage_completion", "score": "score_gain", "kills": "kills",
    "dataSiphon": "data_siphon", "distance": "distance_shaping", "victory": "victory",
    "death": "death_penalty", "resourceGain": "resource_gain",
    "resourceHolding": "resource_holding", "damagePenalty": "damage_penalty",
    "hpRecovery": "hp_recovery", "siphonQuality": "siphon_quality",
    "programWaste": "program_waste", "siphonDeathPenalty": "siphon_death_penalty",
}  # fmt: skip

# --- Observation (interface §3) ---------------------------------------------
PLAYER_FEATURES = 10
GRID_CHANNELS = 42
FLAT_OBS_SIZE = PLAYER_FEATURES + NUM_PROGRAMS + NUM_CELLS * GRID_CHANNELS  # 1545
