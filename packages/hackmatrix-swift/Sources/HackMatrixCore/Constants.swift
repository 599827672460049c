// Every size, enum and table of the game, in one place (mirror of constants.py).
//
// The tables have the same row order and values as
// packages/hackmatrix-env/src/hackmatrix_env/constants.py; tests/swift compares
// the two through `hackmatrix-headless --dump-constants`.

// MARK: - Board (rules §1)

public let gridSize = 6
public let numCells = gridSize * gridSize
public let numDirections = 4
public let numActions = 28
public let firstProgram = 5  // program index = action - firstProgram
public let numPrograms = 23
public let numEnemyKinds = 4

/// Action indices (rules §1.3, interface §0.2).
public enum Action: Int, CaseIterable, Sendable {
    case up = 0, down, left, right, siphon
    case push, pull, crash, warp, poly, wait, debug, row, col, undo, step
    case siphPlus, exch, show, reset, calm, dBom, delay, antiV, score, reduc, atkPlus, hack
}

/// Program index = action - firstProgram (programs.md §2).
public enum Program: Int, CaseIterable, Sendable {
    case push = 0, pull, crash, warp, poly, wait, debug, row, col, undo, step
    case siphPlus, exch, show, reset, calm, dBom, delay, antiV, score, reduc, atkPlus, hack
}

/// Enemy types; the raw value is the one-hot channel (interface §0.4).
public enum EnemyKind: Int, CaseIterable, Sendable {
    case virus = 0, daemon, glitch, cryptog
}

/// Block content; a question block hides one of these (rules §2.4).
public enum BlockKind: Int, CaseIterable, Sendable {
    case data = 0, program
}

/// Resource stack kind on a cell (rules §2.3).
public enum Resource: Int, CaseIterable, Sendable {
    case none = 0, credits, energy
}

/// Kind of a step, for logging (mirrors ActionKind).
public enum ActionKind: Int, CaseIterable, Sendable {
    case move = 0, attack, siphon, program, invalid
}

// MARK: - Directions (rules §1.2): UP DOWN LEFT RIGHT, as (drow, dcol)

public let dirOffsets: [(Int, Int)] = [(1, 0), (-1, 0), (0, -1), (0, 1)]
/// Siphon cross: centre, then canonical order (rules §5).
public let crossOffsets: [(Int, Int)] = [(0, 0), (1, 0), (-1, 0), (0, -1), (0, 1)]
/// 8-neighbourhood, drow outer -1..1, dcol inner -1..1, skipping (0,0) (programs §1.1).
public let neighbour8Offsets: [(Int, Int)] = [
    (-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1),
]
public let corners: [Pos] = [Pos(0, 0), Pos(0, 5), Pos(5, 0), Pos(5, 5)]  // canonical order

// MARK: - Enemies (rules §2.5)

public let enemyNames = ["virus", "daemon", "glitch", "cryptog"]
public let enemyMaxHp = [2, 3, 2, 2]
public let enemySpeed = [2, 1, 1, 1]

// MARK: - Programs (programs.md §2: the only authoritative copy)

public let programNames = [
    "push", "pull", "crash", "warp", "poly", "wait", "debug", "row", "col", "undo",
    "step", "siph+", "exch", "show", "reset", "calm", "d_bom", "delay", "anti-v",
    "score", "reduc", "atk+", "hack",
]
public let programAliases: [String: String] = [
    "siphplus": "siph+", "siph_plus": "siph+",
    "dbom": "d_bom", "d_bomb": "d_bom",
    "antiv": "anti-v", "anti_v": "anti-v",
    "atkplus": "atk+", "atk_plus": "atk+",
]
/// [credits, energy] cost by program index.
public let programCost: [[Int]] = [
    [0, 2], [0, 2], [3, 2], [2, 2], [1, 1], [0, 1], [3, 0], [3, 1], [3, 1], [1, 0],
    [0, 3], [5, 0], [4, 0], [2, 0], [0, 4], [2, 4], [3, 0], [1, 2], [3, 0], [0, 5],
    [2, 1], [4, 4], [2, 2],
]
/// Transmissions queued when a block holding this program is siphoned.
public let programSpawn = [4, 4, 6, 5, 3, 1, 4, 2, 2, 3, 4, 7, 3, 2, 2, 6, 4, 4, 4, 5, 3, 8, 4]
public let atkPlusUsesPerStage = 2

// MARK: - Stages, scheduling, generation (rules §7.8, §9, §10)

public let numStages = 8
public let initialTaskInterval = 12
public let minTaskInterval = 4
public let siphonTaskDelay = 5
public let stageIntervalBase = 13  // task_interval := 13 - stage on completion
public let maxHp = 3
public let startCreditsBonus = 10
public let startEnergyBonus = 11
public let startSiphonBonus = 1
public let blockCountMin = 5
public let blockCountMax = 11
public let layoutAttempts = 100
public let placementTries = 100
public let questionProbability = 0.1
public let dataPointsMax = 9
public let resourceAmountThresholds = (0.45, 0.9)  // u < .45 -> 1, u < .9 -> 2, else 3
public let delayTurns = 3
public let setstateDataPoints = 5
public let setstateProgramSpawn = 2
public let setstateExit = Pos(5, 5)

// MARK: - Reward (interface §4)

public let stageReward: [Double] = [1, 2, 4, 8, 16, 32, 64, 100]
public let stepPenalty = -0.01
public let scoreCoef = 0.5
public let killCoef = 0.3
public let dataSiphonReward = 1.0
public let distanceCoef = 0.05
public let victoryBase = 500.0
public let victoryScoreCoef = 100.0
public let deathCoef = -0.5
public let resourceCoef = 0.05
public let holdingCoef = 0.01
public let damageCoef = -1.0
public let recoveryCoef = 1.0
public let siphonQualityCoef = -0.5  // times (0.05 * missed credits + 0.05 * missed energy)
public let programWastePenalty = -0.3
public let siphonDeathPenalty = -10.0

/// The 15 components in summation order (interface §4.2).
public let rewardComponents = [
    "step_penalty", "stage_completion", "score_gain", "kills", "data_siphon",
    "distance_shaping", "victory", "death_penalty", "resource_gain", "resource_holding",
    "damage_penalty", "hp_recovery", "siphon_quality", "program_waste", "siphon_death_penalty",
]
public let numRewardComponents = rewardComponents.count
/// Swift's 14 reward_breakdown keys (interface §5.5) -> our component name, in table order.
public let swiftBreakdownKeys: [(String, String)] = [
    ("stage", "stage_completion"), ("score", "score_gain"), ("kills", "kills"),
    ("dataSiphon", "data_siphon"), ("distance", "distance_shaping"), ("victory", "victory"),
    ("death", "death_penalty"), ("resourceGain", "resource_gain"),
    ("resourceHolding", "resource_holding"), ("damagePenalty", "damage_penalty"),
    ("hpRecovery", "hp_recovery"), ("siphonQuality", "siphon_quality"),
    ("programWaste", "program_waste"), ("siphonDeathPenalty", "siphon_death_penalty"),
]

// MARK: - Observation (interface §3)

public let playerFeatures = 10
public let gridChannels = 42
public let flatObsSize = playerFeatures + numPrograms + numCells * gridChannels  // 1545
