// The RL observation tensor (interface §3) and the visibility rules (§3.5).
// Mirror of observation.py. Values are computed in Double and stored as Float.

/// player f32[10], programs i32[23], grid f32[6*6*42] (row-major, channel last).
public struct Observation: Equatable, Sendable {
    public var player: [Float]
    public var programs: [Int32]
    public var grid: [Float]

    /// Flat f32[1545]: player, programs, grid (interface §3.1).
    public var flat: [Float] { player + programs.map { Float($0) } + grid }
}

/// Index of the enemy shown on `p`: the first in list order with hp > 0,
/// if visible (interface §3.5). Returns (index, visible).
public func shownEnemy(_ state: GameState, at p: Pos) -> (Int, Bool)? {
    guard let i = state.enemies.firstIndex(where: { $0.pos == p && $0.hp > 0 }) else { return nil }
    let e = state.enemies[i]
    let visible = e.kind != .cryptog || e.pos.row == state.player.pos.row
        || e.pos.col == state.player.pos.col || state.showFlag
    return (i, visible)
}

/// Resources of a cell are visible iff it holds no block or is siphoned (interface §3.5).
public func resourcesVisible(_ cell: Cell) -> Bool { !cell.hasBlock || cell.siphoned }

/// Build the observation tensor from the state (interface §3.2–3.4).
public func observe(_ state: GameState) -> Observation {
    let pl = state.player
    let player: [Float] = [
        Float(Double(pl.pos.row) / 5), Float(Double(pl.pos.col) / 5), Float(Double(pl.hp) / 3),
        Float(min(Double(pl.credits) / 50, 1)), Float(min(Double(pl.energy) / 50, 1)),
        Float(Double(state.stage - 1) / 7), Float(Double(pl.siphons) / 10),
        Float(Double(pl.attack - 1) / 2), state.showFlag ? 1 : 0, state.calmFlag ? 1 : 0,
    ]
    var programs = [Int32](repeating: 0, count: numPrograms)
    for p in state.ownedPrograms where p >= 0 && p < numPrograms { programs[p] = 1 }
    var grid = [Float](repeating: 0, count: numCells * gridChannels)
    for r in 0..<gridSize {
        for c in 0..<gridSize {
            let p = Pos(r, c)
            let base = (r * gridSize + c) * gridChannels
            let cell = state.grid[p]
            if let (i, visible) = shownEnemy(state, at: p), visible {
                let e = state.enemies[i]
                grid[base + e.kind.rawValue] = 1
                grid[base + 4] = Float(Double(e.hp) / 3)
                grid[base + 5] = e.stunned ? 1 : 0
                grid[base + 6] = e.fromSiphon ? 1 : 0
            }
            if let b = cell.block {
                if b.isQuestion {
                    grid[base + 9] = 1
                } else {
                    grid[base + (b.kind == .data ? 7 : 8)] = 1
                    if b.kind == .data { grid[base + 10] = Float(Double(b.points) / 9) }
                    if b.kind == .program && b.program >= 0 && b.program < numPrograms {
                        grid[base + 12 + b.program] = 1
                    }
                    grid[base + 35] = Float(Double(b.spawn) / 9)
                }
                grid[base + 11] = cell.siphoned ? 1 : 0
            }
            if let t = state.transmissionIndex(at: p) {
                grid[base + 36] = Float(min(Double(state.transmissions[t].countdown) / 4, 1))
            }
            if resourcesVisible(cell) {
                grid[base + 37] = Float(Double(cell.credits) / 3)
                grid[base + 38] = Float(Double(cell.energy) / 3)
            }
            grid[base + 39] = cell.content == .dataSiphon ? 1 : 0
            grid[base + 40] = cell.content == .exit ? 1 : 0
            grid[base + 41] = cell.centerMark ? 1 : 0
        }
    }
    return Observation(player: player, programs: programs, grid: grid)
}
