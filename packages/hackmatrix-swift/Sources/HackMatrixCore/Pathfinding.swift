// Breadth-first searches: reward distance (interface §4.5) and enemy
// movement (rules §7.6). Mirror of pathfinding.py.

/// Bit `row * 6 + col` is set for every cell holding a block (any block).
public func blockMask(_ grid: Grid) -> UInt64 {
    var m: UInt64 = 0
    for k in 0..<numCells where grid.cells[k].hasBlock { m |= 1 << UInt64(k) }
    return m
}

/// The in-board neighbour of cell index `k` in direction `d` (canonical order), or -1.
@inline(__always)
func neighbourIndex(_ k: Int, _ d: Int) -> Int {
    let r = k / gridSize
    let c = k % gridSize
    switch d {
    case 0: return r + 1 < gridSize ? k + gridSize : -1  // up
    case 1: return r > 0 ? k - gridSize : -1  // down
    case 2: return c > 0 ? k - 1 : -1  // left
    default: return c + 1 < gridSize ? k + 1 : -1  // right
    }
}

/// BFS path length from `s` to `x`; every block is a wall, `x` is always
/// enterable; nil if there is no path (interface §4.5).
public func bfsDistance(_ grid: Grid, from s: Pos, to x: Pos) -> Int? {
    bfsDistance(blocks: blockMask(grid), from: s, to: x)
}

/// `bfsDistance` on a block bit mask (FIFO queue, visited on enqueue).
public func bfsDistance(blocks: UInt64, from s: Pos, to x: Pos) -> Int? {
    if s == x { return 0 }
    guard s.inBounds, x.inBounds else { return nil }
    let start = s.row * gridSize + s.col
    let target = x.row * gridSize + x.col
    return withUnsafeTemporaryAllocation(of: (Int, Int).self, capacity: numCells) { queue -> Int? in
        var visited: UInt64 = 1 << UInt64(start)
        queue[0] = (start, 0)
        var head = 0
        var tail = 1
        while head < tail {
            let (cur, depth) = queue[head]
            head += 1
            for d in 0..<numDirections {
                let n = neighbourIndex(cur, d)
                guard n >= 0, visited & (1 << UInt64(n)) == 0 else { continue }
                if n == target { return depth + 1 }
                visited |= 1 << UInt64(n)
                if blocks & (1 << UInt64(n)) != 0 { continue }
                queue[tail] = (n, depth + 1)
                tail += 1
            }
        }
        return nil
    }
}

/// Distance from the player to `exit_pos`, 0 when unreachable (interface §4.5).
public func distanceToExit(_ state: GameState) -> Int {
    bfsDistance(state.grid, from: state.player.pos, to: state.exitPos) ?? 0
}

/// First step of the BFS path from `start` to `goal` (rules §7.6 tiers 1–2):
/// FIFO queue, neighbours in canonical order, visited on enqueue; intermediate
/// cells must be in `usable` (bit mask), the goal only `pass(goal)`. nil if unreachable.
func bfsFirstStep(from start: Pos, to goal: Pos, goalPasses: Bool, usable: UInt64) -> Pos? {
    guard goalPasses, start != goal, start.inBounds, goal.inBounds else { return nil }
    let s = start.row * gridSize + start.col
    let g = goal.row * gridSize + goal.col
    let found = withUnsafeTemporaryAllocation(of: (Int, Int).self, capacity: numCells) { queue -> Int in
        var visited: UInt64 = 1 << UInt64(s)
        queue[0] = (s, -1)  // (cell, first step)
        var head = 0
        var tail = 1
        while head < tail {
            let (cur, first) = queue[head]
            head += 1
            for d in 0..<numDirections {
                let n = neighbourIndex(cur, d)
                guard n >= 0, visited & (1 << UInt64(n)) == 0 else { continue }
                if n == g { return first < 0 ? n : first }
                guard usable & (1 << UInt64(n)) != 0 else { continue }
                visited |= 1 << UInt64(n)
                queue[tail] = (n, first < 0 ? n : first)
                tail += 1
            }
        }
        return -1
    }
    return found < 0 ? nil : Pos(found / gridSize, found % gridSize)
}

/// The cell enemy `i` moves to, or nil if it stays (rules §7.6, three tiers).
public func nextEnemyStep(_ state: GameState, enemy i: Int) -> Pos? {
    let e = state.enemies[i]
    let t = state.player.pos
    let all: UInt64 = (1 << UInt64(numCells)) - 1
    let passMask = e.kind == .glitch ? all : all & ~blockMask(state.grid)
    func bit(_ p: Pos) -> UInt64 { p.inBounds ? 1 << UInt64(p.row * gridSize + p.col) : 0 }
    func pass(_ x: Pos) -> Bool { x.inBounds && passMask & bit(x) != 0 }
    var occ: UInt64 = 0
    for (j, o) in state.enemies.enumerated() where j != i { occ |= bit(o.pos) }
    for tr in state.transmissions { occ |= bit(tr.pos) }

    // Tier 1: shortest path avoiding others.
    if let n = bfsFirstStep(from: e.pos, to: t, goalPasses: pass(t), usable: passMask & ~occ) {
        return n != t ? n : nil
    }
    // Tier 2: shortest path ignoring others; only if the first step is free.
    if let n = bfsFirstStep(from: e.pos, to: t, goalPasses: pass(t), usable: passMask) {
        if n != t && occ & bit(n) == 0 { return n }
    }
    // Tier 3: greedy step to the free neighbour nearest the player (may move away).
    var best: Pos? = nil
    var bestDist = Int.max
    for d in dirOffsets {
        let n = e.pos.offset(d)
        guard pass(n), occ & bit(n) == 0, n != t else { continue }
        let dist = n.manhattan(t)
        if dist < bestDist {
            bestDist = dist
            best = n
        }
    }
    return best
}
