// Reset, stage generation, stage completion and victory (rules §9–10).
// Mirror of stage.py. The block layout uses the literal rejection loop.

/// A fresh game (rules §10.1): random corner, random bonus, stage 1.
public func resetGame(rng: inout Rng, params: GameParams = GameParams()) -> GameState {
    let corner = corners[rng.int(below: 4)]  // rules §12.1 #1
    var state = GameState(player: Player(pos: corner))
    switch rng.int(below: 3) {  // #2
    case 0: state.player.credits = startCreditsBonus
    case 1: state.player.energy = startEnergyBonus
    default: state.player.siphons = startSiphonBonus
    }
    generateStage(&state, rng: &rng, params: params)
    return state
}

/// Build one block at a drawn cell (rules §10.2 G4 steps 1–4, §12.1 #6–7).
func drawBlock(used: inout [Bool], rng: inout Rng, params: GameParams) -> Block {
    let isData = rng.coin()
    let isQuestion = rng.double() < questionProbability
    if !isData {
        let unused = params.programPool.filter { !used[$0] }
        if !unused.isEmpty {
            let p = unused[rng.int(below: unused.count)]
            used[p] = true
            return .program(p, spawn: programSpawn[p], question: isQuestion)
        }
    }
    let points = rng.int(1, dataPointsMax)
    return .data(points: points, spawn: points, question: isQuestion)
}

/// Validation of a block layout (rules §10.2): V1 connectivity with the exit
/// quirk, V2 every block has an orthogonal non-block neighbour.
public func isLayoutValid(blocks: [Bool], exit: Pos) -> Bool {
    func blocked(_ p: Pos) -> Bool { blocks[p.row * gridSize + p.col] }
    // V1: BFS from the first non-block cell in row-major order.
    guard let startIdx = blocks.firstIndex(of: false) else { return true }
    let start = Pos(startIdx / gridSize, startIdx % gridSize)
    var reached = [Bool](repeating: false, count: numCells)
    reached[startIdx] = true
    var queue = [start]
    var head = 0
    while head < queue.count {
        let cur = queue[head]
        head += 1
        for d in dirOffsets {
            let n = cur.offset(d)
            guard n.inBounds, !blocked(n), !reached[n.row * gridSize + n.col] else { continue }
            reached[n.row * gridSize + n.col] = true
            if n != exit { queue.append(n) }  // the exit is marked, not expanded
        }
    }
    for k in 0..<numCells where !blocks[k] && !reached[k] { return false }
    // V2: siphonability.
    for k in 0..<numCells where blocks[k] {
        let p = Pos(k / gridSize, k % gridSize)
        if !dirOffsets.contains(where: { d in
            let n = p.offset(d)
            return n.inBounds && !blocked(n)
        }) { return false }
    }
    return true
}

/// Generate a stage (rules §10.2, G1–G6) around the current player, enemies
/// and transmissions.
public func generateStage(_ state: inout GameState, rng: inout Rng, params: GameParams = GameParams()) {
    // G1
    state.turn = 0
    state.nextTaskTurn = state.taskInterval
    state.showFlag = false
    state.calmFlag = false
    state.stepFlag = false
    state.atkUsesThisStage = 0
    // G2
    state.grid = Grid()
    // G3: exit among the corners other than the player's cell; pickups on the rest.
    let candidates = corners.filter { $0 != state.player.pos }
    let exitIdx = rng.int(below: candidates.count)  // #3
    state.exitPos = candidates[exitIdx]
    state.grid[state.exitPos].content = .exit
    for (i, c) in candidates.enumerated() where i != exitIdx { state.grid[c].content = .dataSiphon }
    // G4: blocks, literal rejection loop.
    var occupied = [Bool](repeating: false, count: numCells)
    for e in state.enemies where e.pos.inBounds { occupied[e.pos.row * gridSize + e.pos.col] = true }
    for t in state.transmissions where t.pos.inBounds { occupied[t.pos.row * gridSize + t.pos.col] = true }
    var eligible = 0
    for k in 0..<numCells where !occupied[k] && !Pos(k / gridSize, k % gridSize).isCorner { eligible += 1 }
    var n = rng.int(blockCountMin, blockCountMax)  // #4, drawn once
    // Non-canonical finite fallback (the reference loops forever): cap N.
    n = min(n, eligible)
    for _ in 0..<layoutAttempts {
        var blocks = [Bool](repeating: false, count: numCells)
        var placed: [(Pos, Block)] = []
        var used = [Bool](repeating: false, count: numPrograms)
        while placed.count < n {
            let r = rng.int(below: gridSize)  // #5
            let c = rng.int(below: gridSize)
            let p = Pos(r, c)
            let k = r * gridSize + c
            if p.isCorner || occupied[k] || blocks[k] { continue }
            blocks[k] = true
            placed.append((p, drawBlock(used: &used, rng: &rng, params: params)))
        }
        if isLayoutValid(blocks: blocks, exit: state.exitPos) {
            for (p, b) in placed { state.grid[p].content = .block(b) }
            break
        }
    }
    // G5: resources on every non-block, non-exit cell, row-major.
    for k in 0..<numCells {
        switch state.grid.cells[k].content {
        case .empty, .dataSiphon:
            let u = rng.double()  // #9
            let amount = u < resourceAmountThresholds.0 ? 1 : (u < resourceAmountThresholds.1 ? 2 : 3)
            state.grid.cells[k].resource = rng.coin() ? .credits : .energy
            state.grid.cells[k].amount = amount
        default: break
        }
    }
    // G6: `stage` transmissions, no provenance.
    placeTransmissions(&state, count: state.stage, fromTask: false, fromSiphon: false, rng: &rng)
}

/// Complete the current stage (rules §9.2). Returns true on victory.
public func completeStage(_ state: inout GameState, rng: inout Rng, params: GameParams = GameParams()) -> Bool {
    state.player.hp = min(maxHp, state.player.hp + 1)
    let k = state.stage
    if k < numStages {
        state.stage = k + 1
        state.taskInterval = stageIntervalBase - state.stage
        generateStage(&state, rng: &rng, params: params)
        return false
    }
    return true
}
