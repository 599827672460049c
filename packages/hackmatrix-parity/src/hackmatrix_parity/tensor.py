"""Swift JSON observation -> RL tensors (interface §3.7), and reply helpers.

Pure numpy, no JAX: the same function feeds ``SwiftEnv`` and the parity comparison.
"""

from __future__ import annotations

from typing import Any

import numpy as np

NUM_PROGRAMS = 23
GRID_CHANNELS = 42
FIRST_PROGRAM = 5
ENEMY_TYPES = ("virus", "daemon", "glitch", "cryptog")
BLOCK_TYPES = ("data", "program", "question")

# Swift's 14 breakdown keys -> our component names (interface §4.2, §5.5); the
# 15th, step_penalty, is derived. Kept here (not imported) so this module needs no JAX;
# a test checks it equals hackmatrix_env.constants.SWIFT_BREAKDOWN_KEYS.
SWIFT_BREAKDOWN_KEYS = {
    "stage": "stage_completion", "score": "score_gain", "kills": "kills",
    "dataSiphon": "data_siphon", "distance": "distance_shaping", "victory": "victory",
    "death": "death_penalty", "resourceGain": "resource_gain",
    "resourceHolding": "resource_holding", "damagePenalty": "damage_penalty",
    "hpRecovery": "hp_recovery", "siphonQuality": "siphon_quality",
    "programWaste": "program_waste", "siphonDeathPenalty": "siphon_death_penalty",
}  # fmt: skip
REWARD_COMPONENTS = (
    "step_penalty", "stage_completion", "score_gain", "kills", "data_siphon",
    "distance_shaping", "victory", "death_penalty", "resource_gain", "resource_holding",
    "damage_penalty", "hp_recovery", "siphon_quality", "program_waste", "siphon_death_penalty",
)  # fmt: skip


def _f(d: dict[str, Any], key: str) -> float:
    v = d.get(key)
    return 0.0 if v is None else float(v)


def _b(d: dict[str, Any], key: str) -> float:
    return 1.0 if d.get(key) is True else 0.0


def player_vector(obs: dict[str, Any]) -> np.ndarray:
    """player[10] (interface §3.2), float64 arithmetic stored as float32."""
    v = [
        obs["playerRow"] / 5,
        obs["playerCol"] / 5,
        obs["playerHP"] / 3,
        min(obs["credits"] / 50, 1.0),
        min(obs["energy"] / 50, 1.0),
        (obs["stage"] - 1) / 7,
        obs["dataSiphons"] / 10,
        (obs["baseAttack"] - 1) / 2,
        _b(obs, "showActivated"),
        _b(obs, "scheduledTasksDisabled"),
    ]
    return np.asarray(v, np.float64).astype(np.float32)


def programs_vector(obs: dict[str, Any]) -> np.ndarray:
    """programs[23] int32 ownership flags (interface §3.3, §3.7 step 2)."""
    out = np.zeros(NUM_PROGRAMS, np.int32)
    for a in obs.get("ownedPrograms", ()):
        if isinstance(a, int) and FIRST_PROGRAM <= a < FIRST_PROGRAM + NUM_PROGRAMS:
            out[a - FIRST_PROGRAM] = 1
    return out


def cell_features(cell: dict[str, Any]) -> np.ndarray:
    """The 42 channels of one cell object (interface §3.4, §3.7 step 3), float64."""
    f = np.zeros(GRID_CHANNELS, np.float64)
    enemy = cell.get("enemy")
    if enemy is not None:
        if enemy.get("type") in ENEMY_TYPES:
            f[ENEMY_TYPES.index(enemy["type"])] = 1.0
        f[4] = _f(enemy, "hp") / 3
        f[5] = _b(enemy, "isStunned")
        f[6] = _b(enemy, "spawnedFromSiphon")
    block = cell.get("block")
    if block is not None:
        if block.get("blockType") in BLOCK_TYPES:
            f[7 + BLOCK_TYPES.index(block["blockType"])] = 1.0
        f[10] = _f(block, "points") / 9
        f[11] = _b(block, "isSiphoned")
        idx = block.get("programActionIndex")
        if isinstance(idx, int) and FIRST_PROGRAM <= idx < FIRST_PROGRAM + NUM_PROGRAMS:
            f[12 + idx - FIRST_PROGRAM] = 1.0
        f[35] = _f(block, "transmissionSpawnCount") / 9
    trans = cell.get("transmission")
    if trans is not None:
        f[36] = min(_f(trans, "turnsUntilSpawn") / 4, 1.0)
    f[37] = _f(cell, "credits") / 3
    f[38] = _f(cell, "energy") / 3
    f[39] = _b(cell, "isDataSiphon")
    f[40] = _b(cell, "isExit")
    f[41] = _b(cell, "siphonCenter")
    return f


def grid_tensor(obs: dict[str, Any]) -> np.ndarray:
    """grid[6, 6, 42] float32, by array position ``cells[r][c]`` (not the embedded row/col)."""
    cells = obs["cells"]
    g = np.zeros((6, 6, GRID_CHANNELS), np.float64)
    for r in range(6):
        for c in range(6):
            g[r, c] = cell_features(cells[r][c])
    return g.astype(np.float32)


def swift_tensor(obs: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(player f32[10], programs i32[23], grid f32[6,6,42]) from a Swift JSON observation."""
    return player_vector(obs), programs_vector(obs), grid_tensor(obs)


def flatten_tensor(player: np.ndarray, programs: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The 1545-long float32 vector (interface §3.1)."""
    return np.concatenate(
        [player.astype(np.float32), programs.astype(np.float32), grid.reshape(-1)]
    ).astype(np.float32)


def mask_from_valid(valid: list[int]) -> np.ndarray:
    """bool[28] from a ``validActions`` list."""
    m = np.zeros(28, bool)
    m[list(valid)] = True
    return m


def breakdown15(reward: float, info: dict[str, Any]) -> dict[str, float]:
    """Swift's 14 keys mapped to our 15 names; ``step_penalty`` = reward − Σ(14) (interface §5.5).

    The derived penalty is rounded to the two values it can take (−0.01 or 0) when it is
    within 1e-9 of one of them, to remove float64 summation noise; anything else is kept raw
    so that a wrong total shows up as a step_penalty mismatch.
    """
    bd = info.get("reward_breakdown", {})
    out = {name: 0.0 for name in REWARD_COMPONENTS}
    extra = set(bd) - set(SWIFT_BREAKDOWN_KEYS)
    if extra:
        out.update({f"?{k}": float(bd[k]) for k in extra})
    total = 0.0
    for key, name in SWIFT_BREAKDOWN_KEYS.items():
        v = float(bd.get(key, 0.0))
        out[name] = v
        total += v
    pen = reward - total
    for target in (-0.01, 0.0):
        if abs(pen - target) < 1e-9:
            pen = target
    out["step_penalty"] = pen
    return out
