// Direction actions: target search, shooting, moving, pickups (rules §4).
// Mirror of movement.py.

/// What a direction action targets (rules §4.1).
public enum ShotTarget: Equatable, Sendable {
    case transmission(Int)  // index in the list
    case enemy(Int)
}

/// Walk the line of fire from the player (rules §4.1): off board -> none;
/// transmission -> it; enemy -> it; block -> none; else continue.
public func findTarget(_ state: GameState, direction d: Int) -> ShotTarget? {
    var p = state.player.pos.offset(dirOffsets[d])
    while p.inBounds {
        if let t = state.transmissionIndex(at: p) { return .transmission(t) }
        if let e = state.enemyIndex(at: p) { return .enemy(e) }
        if state.grid[p].hasBlock { return nil }
        p = p.offset(dirOffsets[d])
    }
    return nil
}

/// Direction validity for the mask: the adjacent cell is on the board and holds
/// no block or has an enemy on it (interface §2.2).
public func canEnterOrHit(_ state: GameState, direction d: Int) -> Bool {
    let t = state.player.pos.offset(dirOffsets[d])
    guard t.inBounds else { return false }
    return !state.grid[t].hasBlock || state.hasEnemy(at: t)
}

/// Move or shoot along a direction (rules §4). Sets `events.failed` when the
/// move is impossible; the state is then unchanged.
public func resolveDirection(_ state: inout GameState, direction d: Int, events: inout StepEvents) {
    if let target = findTarget(state, direction: d) {
        // rules §4.2: shooting; the player does not move.
        events.actionKind = .attack
        switch target {
        case .transmission(let i):
            if !state.transmissions[i].fromTask { events.kills += 1 }  // interface §4.7
            state.transmissions.remove(at: i)
        case .enemy(let i):
            state.enemies[i].hp = max(0, state.enemies[i].hp - state.player.attack)
            if state.enemies[i].hp > 0 {
                state.enemies[i].stunned = true
            } else {
                if !state.enemies[i].fromTask { events.kills += 1 }
                state.enemies.remove(at: i)
            }
        }
        events.turnEnding = true
        return
    }
    // rules §4.3: moving.
    let dest = state.player.pos.offset(dirOffsets[d])
    guard dest.inBounds, !state.grid[dest].hasBlock else {
        events.failed = true
        return
    }
    events.actionKind = .move
    state.player.pos = dest
    switch state.grid[dest].content {
    case .dataSiphon:
        state.player.siphons += 1
        state.grid[dest].content = .empty
        events.dataSiphonCollected = true
        events.turnEnding = true
    case .exit:
        events.exitReached = true
    default:
        events.turnEnding = true
    }
}
