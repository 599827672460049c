// Breadth-first searches: reward distance (interface §4.5) and enemy
// movement (rules §7.6). Mirror of pathfinding.py.

/// BFS path length from `s` to `x`; every block is a wall, `x` is always
/// enterable; nil if there is no path (interface §4.5).
public func bfsDistance(_ grid: Grid, from s: Pos, to x: Pos) -> Int? {
    if s == x { return 0 }
    var visited = [Bool](repeating: false, count: numCells)
    var queue: [(Pos, Int)] = [(s, 0)]
    visited[s.row * gridSize + s.col] = true
    var head = 0
    while head < queue.count {
        let (cur, depth) = queue[head]
        head += 1
        for d in dirOffsets {
            let n = cur.offset(d)
            guard n.inBounds, !visited[n.row * gridSize + n.col] else { continue }
            if n == x { return depth + 1 }
            visited[n.row * gridSize + n.col] = true
            if grid[n].hasBlock { continue }
            queue.append((n, depth + 1))
        }
    }
    return nil
}

/// Distance from the player to `exit_pos`, 0 when unreachable (interface §4.5).
public func distanceToExit(_ state: GameState) -> Int {
    bfsDistance(state.grid, from: state.player.pos, to: state.exitPos) ?? 0
}

/// First step of the BFS path from `start` to `goal` (rules §7.6 tiers 1–2):
/// FIFO queue, neighbours in canonical order, visited on enqueue; intermediate
/// cells must satisfy `usable`, the goal only `pass(goal)`. nil if unreachable.
func bfsFirstStep(from start: Pos, to goal: Pos, goalPasses: Bool, usable: (Pos) -> Bool) -> Pos? {
    guard goalPasses, start != goal else { return nil }
    var visited = [Bool](repeating: false, count: numCells)
    visited[start.row * gridSize + start.col] = true
    var queue: [(cell: Pos, first: Pos?)] = [(start, nil)]
    var head = 0
    while head < queue.count {
        let (cur, first) = queue[head]
        head += 1
        for d in dirOffsets {
            let n = cur.offset(d)
            guard n.inBounds, !visited[n.row * gridSize + n.col] else { continue }
            if n == goal { return first ?? n }
            guard usable(n) else { continue }
            visited[n.row * gridSize + n.col] = true
            queue.append((n, first ?? n))
        }
    }
    return nil
}

/// The cell enemy `i` moves to, or nil if it stays (rules §7.6, three tiers).
public func nextEnemyStep(_ state: GameState, enemy i: Int) -> Pos? {
    let e = state.enemies[i]
    let t = state.player.pos
    let isGlitch = e.kind == .glitch
    func pass(_ x: Pos) -> Bool { x.inBounds && (isGlitch || !state.grid[x].hasBlock) }
    var occ = [Bool](repeating: false, count: numCells)
    for (j, o) in state.enemies.enumerated() where j != i && o.pos.inBounds {
        occ[o.pos.row * gridSize + o.pos.col] = true
    }
    for tr in state.transmissions where tr.pos.inBounds {
        occ[tr.pos.row * gridSize + tr.pos.col] = true
    }
    func isOcc(_ x: Pos) -> Bool { occ[x.row * gridSize + x.col] }

    // Tier 1: shortest path avoiding others.
    if let n = bfsFirstStep(from: e.pos, to: t, goalPasses: pass(t), usable: { pass($0) && !isOcc($0) }) {
        if n != t { return n }
        return nil
    }
    // Tier 2: shortest path ignoring others; only if the first step is free.
    if let n = bfsFirstStep(from: e.pos, to: t, goalPasses: pass(t), usable: { pass($0) }) {
        if n != t && !isOcc(n) { return n }
    }
    // Tier 3: greedy step to the free neighbour nearest the player (may move away).
    var best: Pos? = nil
    var bestDist = Int.max
    for d in dirOffsets {
        let n = e.pos.offset(d)
        guard pass(n), !isOcc(n), n != t else { continue }
        let dist = n.manhattan(t)
        if dist < bestDist {
            bestDist = dist
            best = n
        }
    }
    return best
}
