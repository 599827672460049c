// The game state as plain value types (mirror of types.py).
//
// `GameState` and every part are structs, so a value copy is a snapshot.
// Lists (enemies, transmissions, owned programs, history) are unbounded
// Swift arrays in spec list order (rules §2.7).

/// A board cell, (row, col); row 0 is the bottom row (rules §1.1).
public struct Pos: Hashable, Sendable, CustomStringConvertible {
    public var row: Int
    public var col: Int
    public init(_ row: Int, _ col: Int) {
        self.row = row
        self.col = col
    }
    public var inBounds: Bool { row >= 0 && row < gridSize && col >= 0 && col < gridSize }
    public func offset(_ d: (Int, Int)) -> Pos { Pos(row + d.0, col + d.1) }
    public func manhattan(_ o: Pos) -> Int { abs(row - o.row) + abs(col - o.col) }
    public var isCorner: Bool { (row == 0 || row == gridSize - 1) && (col == 0 || col == gridSize - 1) }
    public var description: String { "(\(row),\(col))" }
}

/// A block (rules §2.4). A question block carries its hidden content in
/// `kind`/`points`/`program`; siphoning it clears `isQuestion`.
public struct Block: Equatable, Sendable {
    public var kind: BlockKind
    public var points: Int  // data: 1..9 at generation; program: 0
    public var program: Int  // program index 0..22 (program blocks); -1 for data
    public var spawn: Int  // transmissions queued when siphoned
    public var isQuestion: Bool

    public init(kind: BlockKind, points: Int, program: Int, spawn: Int, isQuestion: Bool) {
        self.kind = kind
        self.points = points
        self.program = program
        self.spawn = spawn
        self.isQuestion = isQuestion
    }
    public static func data(points: Int, spawn: Int, question: Bool = false) -> Block {
        Block(kind: .data, points: points, program: -1, spawn: spawn, isQuestion: question)
    }
    public static func program(_ p: Int, spawn: Int, question: Bool = false) -> Block {
        Block(kind: .program, points: 0, program: p, spawn: spawn, isQuestion: question)
    }
}

/// What a cell holds besides resources (rules §2.3).
public enum Content: Equatable, Sendable {
    case empty
    case block(Block)
    case dataSiphon
    case exit
}

/// One of the 36 cells (rules §2.3).
public struct Cell: Equatable, Sendable {
    public var content: Content = .empty
    public var resource: Resource = .none
    public var amount: Int = 0
    public var siphoned: Bool = false
    public var centerMark: Bool = false
    public init() {}

    public var block: Block? {
        if case .block(let b) = content { return b }
        return nil
    }
    public var hasBlock: Bool { block != nil }
    public var credits: Int { resource == .credits ? amount : 0 }
    public var energy: Int { resource == .energy ? amount : 0 }
}

/// The 6×6 grid, row-major storage.
public struct Grid: Equatable, Sendable {
    public var cells: [Cell] = Array(repeating: Cell(), count: numCells)
    public init() {}
    public subscript(_ p: Pos) -> Cell {
        get { cells[p.row * gridSize + p.col] }
        set { cells[p.row * gridSize + p.col] = newValue }
    }
    public subscript(_ r: Int, _ c: Int) -> Cell {
        get { cells[r * gridSize + c] }
        set { cells[r * gridSize + c] = newValue }
    }
}

/// An enemy (rules §2.5).
public struct Enemy: Equatable, Sendable {
    public var kind: EnemyKind
    public var pos: Pos
    public var hp: Int
    public var disabled: Int = 0
    public var stunned: Bool = false
    public var lastKnown: Pos  // meaningful for cryptogs only
    public var fromTask: Bool = false
    public var fromSiphon: Bool = false

    public init(
        kind: EnemyKind, pos: Pos, hp: Int, disabled: Int = 0, stunned: Bool = false,
        lastKnown: Pos? = nil, fromTask: Bool = false, fromSiphon: Bool = false
    ) {
        self.kind = kind
        self.pos = pos
        self.hp = hp
        self.disabled = disabled
        self.stunned = stunned
        self.lastKnown = lastKnown ?? pos
        self.fromTask = fromTask
        self.fromSiphon = fromSiphon
    }
}

/// A pending enemy occupying a cell (rules §2.6).
public struct Transmission: Equatable, Sendable {
    public var pos: Pos
    public var countdown: Int
    public var kind: EnemyKind
    public var fromTask: Bool = false
    public var fromSiphon: Bool = false
    public init(pos: Pos, countdown: Int, kind: EnemyKind, fromTask: Bool = false, fromSiphon: Bool = false) {
        self.pos = pos
        self.countdown = countdown
        self.kind = kind
        self.fromTask = fromTask
        self.fromSiphon = fromSiphon
    }
}

/// The player (rules §2.2).
public struct Player: Equatable, Sendable {
    public var pos: Pos
    public var hp: Int = maxHp
    public var credits: Int = 0
    public var energy: Int = 0
    public var siphons: Int = 0
    public var score: Int = 0
    public var attack: Int = 1
    public init(pos: Pos) { self.pos = pos }
}

/// An UNDO snapshot: exactly the fields of rules §11.1 (no provenance flags).
public struct Snapshot: Equatable, Sendable {
    public var player: Player
    public var turn: Int
    public var ownedPrograms: [Int]
    public var enemies: [Enemy]  // fromTask/fromSiphon always false
    public var transmissions: [Transmission]  // fromTask/fromSiphon always false
    public var grid: Grid
    public var showFlag: Bool
    public var calmFlag: Bool
    public var atkUsesThisStage: Int
}

/// Host-side knobs that are not game state (the `--dev-mode --programs=` pool).
public struct GameParams: Sendable {
    /// Program indices eligible for program blocks, canonical order (rules §10.2 G4).
    public var programPool: [Int] = Array(0..<numPrograms)
    public init(programPool: [Int] = Array(0..<numPrograms)) { self.programPool = programPool }
}

/// The whole game state (rules §2.1). A copy is a full snapshot.
public struct GameState: Equatable, Sendable {
    public var stage: Int = 1
    public var turn: Int = 0
    public var taskInterval: Int = initialTaskInterval
    public var nextTaskTurn: Int = initialTaskInterval
    public var pendingSiphonSpawns: Int = 0
    public var showFlag: Bool = false
    public var calmFlag: Bool = false
    public var stepFlag: Bool = false
    public var atkUsesThisStage: Int = 0
    public var exitPos: Pos = setstateExit
    public var ownedPrograms: [Int] = []  // program indices, acquisition order
    public var player: Player
    public var enemies: [Enemy] = []
    public var transmissions: [Transmission] = []
    public var grid = Grid()
    public var history: [Snapshot] = []

    public init(player: Player) { self.player = player }

    public func owns(_ program: Int) -> Bool { ownedPrograms.contains(program) }
}

/// What happened in a step, read by the reward (mirror of StepEvents).
public struct StepEvents: Equatable, Sendable {
    public var actionKind: ActionKind = .invalid
    public var failed = false
    public var exitReached = false
    public var stageCompleted = false
    public var victory = false
    public var kills = 0
    public var dataSiphonCollected = false
    public var siphonFoundBetter = false
    public var missedCredits = 0
    public var missedEnergy = 0
    public var resetWasteful = false
    public var turnEnding = false
    public var enemyPhaseRan = false  // a real (not STEP-skipped) phase ran
    public var diedToSiphonEnemy = false
    public init() {}
}

/// The outcome of one step.
public struct StepResult: Sendable {
    public var reward: Double
    public var breakdown: [Double]  // numRewardComponents, rewardComponents order
    public var done: Bool
    public var events: StepEvents
}
