// The 23 programs, actions 5–27: applicability and effects (programs.md §2, §4).
// Mirror of programs.py.

/// Applicability condition of program `p` (programs.md §2), on top of owned and affordable.
public func isProgramApplicable(_ state: GameState, program p: Int) -> Bool {
    let pp = state.player.pos
    switch Program(rawValue: p)! {
    case .push, .pull, .poly: return !state.enemies.isEmpty
    case .crash:
        return neighbour8Offsets.contains { d in
            let q = pp.offset(d)
            return q.inBounds && (state.grid[q].hasBlock || state.hasEnemy(at: q) || state.hasTransmission(at: q))
        }
    case .warp: return !state.enemies.isEmpty || !state.transmissions.isEmpty
    case .wait, .step, .siphPlus: return true
    case .debug: return state.enemies.contains { $0.pos.inBounds && state.grid[$0.pos].hasBlock }
    case .row: return state.enemies.contains { $0.pos.row == pp.row }
    case .col: return state.enemies.contains { $0.pos.col == pp.col }
    case .undo: return !state.history.isEmpty
    case .exch: return state.player.credits >= 4
    case .show: return !state.showFlag
    case .reset: return state.player.hp < maxHp
    case .calm: return !state.calmFlag
    case .dBom: return state.enemies.contains { $0.kind == .daemon }
    case .delay: return !state.transmissions.isEmpty
    case .antiV: return state.enemies.contains { $0.kind == .virus }
    case .score: return state.stage < numStages
    case .reduc:
        return state.grid.cells.contains { c in
            guard let b = c.block else { return false }
            return !c.siphoned && b.spawn > 0
        }
    case .atkPlus: return state.atkUsesThisStage < atkPlusUsesPerStage
    case .hack: return state.anySiphonedCell
    }
}

/// Full program mask: owned, affordable, applicable (programs.md §2, interface §2.4).
public func canRunProgram(_ state: GameState, program p: Int) -> Bool {
    state.owns(p) && state.player.credits >= programCost[p][0] && state.player.energy >= programCost[p][1]
        && isProgramApplicable(state, program: p)
}

/// Run program `p` (programs.md §3): validate, pay first, apply the effect.
/// WARP may set `exitReached`; only WAIT is turn-ending.
public func runProgram(_ state: inout GameState, program p: Int, events: inout StepEvents, rng: inout Rng) {
    guard canRunProgram(state, program: p) else {
        events.failed = true
        return
    }
    events.actionKind = .program
    state.player.credits -= programCost[p][0]  // step 3: pay
    state.player.energy -= programCost[p][1]
    let prog = Program(rawValue: p)!
    switch prog {
    case .push: pushEnemies(&state)
    case .pull: pullEnemies(&state)
    case .crash: events.kills += crash(&state)
    case .warp:
        events.kills += warp(&state, rng: &rng)
        if state.player.pos == state.exitPos { events.exitReached = true }  // programs §4.4 step 5
    case .poly: events.kills += poly(&state, rng: &rng)
    case .wait: events.turnEnding = true
    case .debug:
        for i in state.enemies.indices where state.enemies[i].pos.inBounds && state.grid[state.enemies[i].pos].hasBlock {
            state.hitEnemy(i, state.player.attack)
        }
        events.kills += state.sweepEnemies()
    case .row:
        for i in state.enemies.indices where state.enemies[i].pos.row == state.player.pos.row {
            state.hitEnemy(i, state.player.attack)
        }
        events.kills += state.sweepEnemies()
    case .col:
        for i in state.enemies.indices where state.enemies[i].pos.col == state.player.pos.col {
            state.hitEnemy(i, state.player.attack)
        }
        events.kills += state.sweepEnemies()
    case .undo: state.popHistory()  // programs §4.10, rules §11.3
    case .step: state.stepFlag = true
    case .siphPlus: state.player.siphons += 1
    case .exch: state.player.energy += 4
    case .show: state.showFlag = true
    case .reset: state.player.hp = maxHp
    case .calm: state.calmFlag = true
    case .dBom: events.kills += dBom(&state)
    case .delay:
        for i in state.transmissions.indices { state.transmissions[i].countdown += delayTurns }
    case .antiV:
        for i in state.enemies.indices where state.enemies[i].kind == .virus { state.hitEnemy(i, 1) }
        events.kills += state.sweepEnemies()
    case .score: state.player.score += numStages - state.stage
    case .reduc:
        for k in state.grid.cells.indices {
            guard var b = state.grid.cells[k].block, !state.grid.cells[k].siphoned else { continue }
            b.spawn = max(0, b.spawn - 1)
            state.grid.cells[k].content = .block(b)
        }
    case .atkPlus:
        state.player.attack += 1
        state.atkUsesThisStage += 1
    case .hack:
        for i in state.enemies.indices where state.enemies[i].pos.inBounds && state.grid[state.enemies[i].pos].siphoned {
            state.hitEnemy(i, state.player.attack)
        }
        events.kills += state.sweepEnemies()
    }
}

/// Pass 2 of PUSH/PULL: first claimer in list order wins, losers stay (programs §4.1).
func resolveClaims(_ state: inout GameState, targets: [Pos?]) {
    var claimed = Set<Pos>()
    for (i, t) in targets.enumerated() {
        guard let t else { continue }
        if claimed.contains(t) { continue }
        claimed.insert(t)
        state.enemies[i].pos = t
    }
}

/// PUSH (programs §4.1): target (clamp(r+dr), clamp(c+dc)), none if that is its own cell.
func pushEnemies(_ state: inout GameState) {
    let pp = state.player.pos
    func clamp(_ x: Int) -> Int { min(gridSize - 1, max(0, x)) }
    let targets: [Pos?] = state.enemies.map { e in
        let dr = (e.pos.row - pp.row).signum()
        let dc = (e.pos.col - pp.col).signum()
        let t = Pos(clamp(e.pos.row + dr), clamp(e.pos.col + dc))
        return t == e.pos ? nil : t
    }
    resolveClaims(&state, targets: targets)
}

/// PULL (programs §4.2): candidates diagonal, vertical, horizontal towards the
/// player (on board, not the player's cell); the nearest wins, ties to the earliest.
func pullEnemies(_ state: inout GameState) {
    let pp = state.player.pos
    let targets: [Pos?] = state.enemies.map { e in
        let dr = (pp.row - e.pos.row).signum()
        let dc = (pp.col - e.pos.col).signum()
        var cands = [Pos(e.pos.row + dr, e.pos.col + dc)]
        if dr != 0 { cands.append(Pos(e.pos.row + dr, e.pos.col)) }
        if dc != 0 { cands.append(Pos(e.pos.row, e.pos.col + dc)) }
        var best: Pos? = nil
        var bestDist = Int.max
        for c in cands where c.inBounds && c != pp {
            let d = c.manhattan(pp)
            if d < bestDist {
                bestDist = d
                best = c
            }
        }
        return best
    }
    resolveClaims(&state, targets: targets)
}

/// CRASH (programs §4.3): per 8-neighbour, destroy a block, erase enemies, erase transmissions.
func crash(_ state: inout GameState) -> Int {
    var kills = 0
    for d in neighbour8Offsets {
        let q = state.player.pos.offset(d)
        guard q.inBounds else { continue }
        if state.grid[q].hasBlock { state.grid[q].content = .empty }
        kills += state.eraseEnemies(at: q)
        kills += state.eraseTransmissions(at: q)
    }
    return kills
}

/// WARP (programs §4.4): one uniform draw over enemies then transmissions; move
/// there and erase all entities of the picked kind on that cell.
func warp(_ state: inout GameState, rng: inout Rng) -> Int {
    let ne = state.enemies.count
    let k = rng.int(below: ne + state.transmissions.count)  // rules §12.1 #13
    if k < ne {
        let p = state.enemies[k].pos
        state.player.pos = p
        return state.eraseEnemies(at: p)
    }
    let p = state.transmissions[k - ne].pos
    state.player.pos = p
    return state.eraseTransmissions(at: p)
}

/// POLY (programs §4.5): per enemy in list order, a new type among the other
/// three; damage carries over; then SWEEP.
func poly(_ state: inout GameState, rng: inout Rng) -> Int {
    for i in state.enemies.indices {
        let old = state.enemies[i].kind
        let damage = enemyMaxHp[old.rawValue] - state.enemies[i].hp
        let others = EnemyKind.allCases.filter { $0 != old }
        let new = others[rng.int(below: 3)]  // rules §12.1 #13
        state.enemies[i].kind = new
        state.enemies[i].hp = enemyMaxHp[new.rawValue] - damage
        if new == .cryptog { state.enemies[i].lastKnown = state.enemies[i].pos }
    }
    return state.sweepEnemies()
}

/// D_BOM (programs §4.17): erase the nearest daemon (ties: list order), then
/// HIT(1) every enemy in its 8-neighbourhood, then SWEEP.
func dBom(_ state: inout GameState) -> Int {
    let pp = state.player.pos
    var best: Int? = nil
    for (i, e) in state.enemies.enumerated() where e.kind == .daemon {
        if best == nil || e.pos.manhattan(pp) < state.enemies[best!].pos.manhattan(pp) { best = i }
    }
    guard let b = best else { return 0 }
    let p = state.enemies[b].pos
    var kills = state.enemies[b].fromTask ? 0 : 1
    state.enemies.remove(at: b)
    for d in neighbour8Offsets {
        let q = p.offset(d)
        for i in state.enemies.indices where state.enemies[i].pos == q { state.hitEnemy(i, 1) }
    }
    kills += state.sweepEnemies()
    return kills
}
