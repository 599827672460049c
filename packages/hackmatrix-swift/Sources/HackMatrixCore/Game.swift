// One step of the game: the pipeline of interface §1 / rules §3.
// Mirror of game.py.

/// Run one action (0..27) on `state` (interface §1). A failed action leaves
/// the state unchanged, reward 0, done = true (rules §3 step 3).
public func stepGame(
    _ state: inout GameState, action: Int, rng: inout Rng, params: GameParams = GameParams()
) -> StepResult {
    precondition(action >= 0 && action < numActions, "action index outside 0..27")
    let before = RewardBefore(state)  // §1 step 2
    var ev = StepEvents()
    // Every action fails before it mutates anything, so the state is edited in place.
    // §1 step 3: player phase.
    if action < numDirections {
        resolveDirection(&state, direction: action, events: &ev)
    } else if action == Action.siphon.rawValue {
        applySiphon(&state, events: &ev)
    } else {
        let p = action - firstProgram
        ev.resetWasteful = p == Program.reset.rawValue && before.hp == 2
        runProgram(&state, program: p, events: &ev, rng: &rng)
    }
    // §1 step 4: failure path.
    if ev.failed {
        ev.actionKind = .invalid
        ev.resetWasteful = false
        return StepResult(
            reward: 0, breakdown: [Double](repeating: 0, count: numRewardComponents), done: true, events: ev)
    }
    if ev.exitReached {  // §1 step 5 (rules §9)
        ev.stageCompleted = true
        ev.victory = completeStage(&state, rng: &rng, params: params)
    } else if ev.turnEnding {  // §1 step 6 (rules §7)
        ev.enemyPhaseRan = runEnemyPhase(&state, rng: &rng)
    }
    // §1 step 7: death; the siphon-death check follows a turn-ending action.
    let died = state.player.hp == 0
    if died && ev.turnEnding && !ev.exitReached {
        let pp = state.player.pos
        ev.diedToSiphonEnemy = state.enemies.contains { $0.fromSiphon && $0.pos.manhattan(pp) == 1 }
    }
    let breakdown = rewardBreakdown(before: before, after: state, events: ev)
    return StepResult(reward: sumReward(breakdown), breakdown: breakdown, done: died || ev.victory, events: ev)
}
