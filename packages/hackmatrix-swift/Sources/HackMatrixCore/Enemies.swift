// The enemy phase in its exact order (rules §7). Mirror of enemies.py.

/// Transmission tick (rules §7.3): countdown <= 1 hatches (full hp, disabled 1,
/// flags copied, last_known = cell), else countdown - 1. Hatched enemies are
/// appended in transmission order after the whole list is processed.
public func tickTransmissions(_ state: inout GameState) {
    var hatched: [Enemy] = []
    var kept: [Transmission] = []
    for t in state.transmissions {
        if t.countdown <= 1 {
            hatched.append(
                Enemy(
                    kind: t.kind, pos: t.pos, hp: enemyMaxHp[t.kind.rawValue], disabled: 1,
                    stunned: false, lastKnown: t.pos, fromTask: t.fromTask, fromSiphon: t.fromSiphon))
        } else {
            var u = t
            u.countdown -= 1
            kept.append(u)
        }
    }
    state.transmissions = kept
    state.enemies.append(contentsOf: hatched)
}

/// One movement sub-step (rules §7.5): each enemy in a fresh random order
/// attacks if adjacent, otherwise moves (rules §7.6).
func runSubStep(_ state: inout GameState, subStep s: Int, attacked: inout [Bool], rng: inout Rng) {
    let order = rng.permutation(state.enemies.count)  // rules §12.1 #12
    for i in order {
        let e = state.enemies[i]
        if e.disabled > 0 || e.stunned || attacked[i] || s >= enemySpeed[e.kind.rawValue] { continue }
        if e.pos.manhattan(state.player.pos) == 1 {
            state.player.hp = max(0, state.player.hp - 1)
            attacked[i] = true
            continue
        }
        guard let dest = nextEnemyStep(state, enemy: i) else { continue }
        state.enemies[i].pos = dest
        if e.kind == .cryptog && dest != e.pos
            && (dest.row == state.player.pos.row || dest.col == state.player.pos.col)
        {
            state.enemies[i].lastKnown = dest
        }
    }
}

/// The enemy phase (rules §7.1–7.2). Returns true if a real phase ran, false
/// if STEP skipped it.
@discardableResult
public func runEnemyPhase(_ state: inout GameState, rng: inout Rng) -> Bool {
    if state.stepFlag {  // rules §7.1
        state.stepFlag = false
        return false
    }
    state.turn += 1  // 1
    tickTransmissions(&state)  // 2
    let subSteps = state.enemies.contains { $0.kind == .virus } ? 2 : 1  // 3 (rules §7.4)
    var attacked = [Bool](repeating: false, count: state.enemies.count)
    for s in 0..<subSteps {  // 4
        runSubStep(&state, subStep: s, attacked: &attacked, rng: &rng)
    }
    // 5: scheduled task (rules §7.8).
    if !state.calmFlag && state.taskInterval > 0 && state.turn >= state.nextTaskTurn {
        placeTransmissions(&state, count: 1, fromTask: true, fromSiphon: false, rng: &rng)
        state.nextTaskTurn = state.turn + state.taskInterval
    }
    // 6: owed siphon transmissions (rules §7.9).
    if state.pendingSiphonSpawns > 0 {
        placeTransmissions(&state, count: state.pendingSiphonSpawns, fromTask: false, fromSiphon: true, rng: &rng)
        state.pendingSiphonSpawns = 0
    }
    // 7: status clearing (rules §7.10).
    for i in state.enemies.indices {
        state.enemies[i].disabled = max(0, state.enemies[i].disabled - 1)
        state.enemies[i].stunned = false
    }
    state.pushHistory()  // 8 (rules §11.2)
    return true
}
