// The siphon action: cross, yields, owed spawns, interval changes (rules §5)
// and the siphon-quality evaluation (interface §4.6). Mirror of siphon.py.

/// The in-board cross of `p`: centre, then Up, Down, Left, Right (rules §5).
public func crossCells(_ p: Pos) -> [Pos] {
    crossOffsets.map { p.offset($0) }.filter { $0.inBounds }
}

/// Yield(Q) of interface §4.6: credits, energy, sorted data points, new programs.
public struct SiphonYield: Equatable, Sendable {
    public var credits = 0
    public var energy = 0
    public var points: [Int] = []
    public var programs: Set<Int> = []
}

/// Yield(Q) (interface §4.6): empty if Q holds a block; otherwise the unsiphoned
/// cross cells' data points, unowned programs and non-block resources.
public func siphonYield(_ state: GameState, at q: Pos) -> SiphonYield {
    var y = SiphonYield()
    if state.grid[q].hasBlock { return y }
    for p in crossCells(q) {
        let cell = state.grid[p]
        if cell.siphoned { continue }
        if let b = cell.block {
            switch b.kind {
            case .data: y.points.append(b.points)
            case .program: if !state.owns(b.program) { y.programs.insert(b.program) }
            }
        } else {
            y.credits += cell.credits
            y.energy += cell.energy
        }
    }
    y.points.sort()
    return y
}

/// Siphon quality (interface §4.6) on the pre-siphon state:
/// (foundBetter, missedCredits, missedEnergy).
public func siphonQuality(_ state: GameState) -> (Bool, Int, Int) {
    let p = state.player.pos
    let best = siphonYield(state, at: p)
    var candidates: [Pos] = []
    if !best.points.isEmpty || !best.programs.isEmpty {
        // Centres whose cross covers every unsiphoned block of P's cross.
        var set: Set<Pos>? = nil
        for b in crossCells(p) where state.grid[b].hasBlock && !state.grid[b].siphoned {
            let centres = Set(crossCells(b).filter { !state.grid[$0].hasBlock })
            set = set.map { $0.intersection(centres) } ?? centres
        }
        candidates = Array(set ?? [])
    } else {
        for r in 0..<gridSize {
            for c in 0..<gridSize where !state.grid[r, c].hasBlock { candidates.append(Pos(r, c)) }
        }
    }
    var found = false
    var maxC = best.credits
    var maxE = best.energy
    for q in candidates {
        let y = siphonYield(state, at: q)
        guard y.points == best.points, y.programs == best.programs,
            y.credits >= best.credits, y.energy >= best.energy,
            y.credits > best.credits || y.energy > best.energy
        else { continue }
        found = true
        maxC = max(maxC, y.credits)
        maxE = max(maxE, y.energy)
    }
    return (found, maxC - best.credits, maxE - best.energy)
}

/// Siphon (rules §5). Fails (state unchanged) without data siphons.
public func applySiphon(_ state: inout GameState, events: inout StepEvents) {
    guard state.player.siphons >= 1 else {
        events.failed = true
        return
    }
    events.actionKind = .siphon
    let (found, mc, me) = siphonQuality(state)  // step 1, before anything changes
    events.siphonFoundBetter = found
    events.missedCredits = mc
    events.missedEnergy = me
    let p = state.player.pos
    state.grid[p].centerMark = true  // step 3
    for q in crossCells(p) {  // step 4
        var cell = state.grid[q]
        if cell.siphoned { continue }
        if var b = cell.block {
            switch b.kind {
            case .data:
                state.player.score += b.points
            case .program:
                if !state.owns(b.program) { state.ownedPrograms.append(b.program) }
            }
            state.pendingSiphonSpawns += b.spawn
            b.spawn = 0
            b.isQuestion = false
            cell.content = .block(b)
        } else if cell.resource != .none {
            if cell.resource == .credits { state.player.credits += cell.amount }
            else { state.player.energy += cell.amount }
            cell.resource = .none
            cell.amount = 0
        }
        cell.siphoned = true
        state.grid[q] = cell
    }
    state.player.siphons -= 1  // step 5
    state.taskInterval = max(minTaskInterval, state.taskInterval - 1)  // step 6
    state.nextTaskTurn += siphonTaskDelay
    events.turnEnding = true
}
