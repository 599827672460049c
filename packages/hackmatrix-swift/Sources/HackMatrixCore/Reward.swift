// The reward: 15 components in Double, summed left to right in the table
// order of interface §4.2. Mirror of reward.py.

/// The pre-action values the reward needs (interface §1 step 2).
public struct RewardBefore: Sendable {
    public var score: Int
    public var hp: Int
    public var credits: Int
    public var energy: Int
    public var distance: Int  // D0, 0 when unreachable

    public init(_ state: GameState) {
        score = state.player.score
        hp = state.player.hp
        credits = state.player.credits
        energy = state.player.energy
        distance = distanceToExit(state)
    }
}

/// The 15 components in `rewardComponents` order (interface §4.2); all 0 for a failed action.
public func rewardBreakdown(before: RewardBefore, after: GameState, events: StepEvents) -> [Double] {
    var r = [Double](repeating: 0, count: numRewardComponents)
    if events.failed { return r }
    let died = after.player.hp == 0
    r[0] = stepPenalty
    if events.stageCompleted {  // 2: completing stage 8 pays T[6] (quirk)
        let k = after.stage - 1
        if k >= 1 && k <= numStages { r[1] = stageReward[k - 1] }
    }
    r[2] = scoreCoef * Double(after.player.score - before.score)
    r[3] = killCoef * Double(events.kills)
    r[4] = events.dataSiphonCollected ? dataSiphonReward : 0
    // 6: distance shaping (interface §4.5).
    let delta: Int
    if died {
        delta = 0
    } else if events.stageCompleted {
        delta = before.distance
    } else {
        delta = before.distance - distanceToExit(after)
    }
    r[5] = distanceCoef * Double(max(delta, 0))
    if events.victory { r[6] = victoryBase + victoryScoreCoef * Double(after.player.score) }
    if died {  // 8 (interface §4.4); stages beyond the table add nothing (non-canonical)
        var sum = 0.0
        var i = 0
        while i <= after.stage - 2 && i < stageReward.count {
            sum += stageReward[i]
            i += 1
        }
        r[7] = deathCoef * sum
    }
    r[8] = resourceCoef * Double(after.player.credits - before.credits)
        + resourceCoef * Double(after.player.energy - before.energy)
    if events.stageCompleted {
        r[9] = holdingCoef * Double(after.player.credits) + holdingCoef * Double(after.player.energy)
    }
    r[10] = damageCoef * Double(max(before.hp - after.player.hp, 0))
    r[11] = recoveryCoef * Double(max(after.player.hp - before.hp, 0))
    if events.siphonFoundBetter {
        r[12] = siphonQualityCoef * (0.05 * Double(events.missedCredits) + 0.05 * Double(events.missedEnergy))
    }
    if events.resetWasteful { r[13] = programWastePenalty }
    if events.diedToSiphonEnemy { r[14] = siphonDeathPenalty }
    return r
}

/// Sum left to right: ((c1 + c2) + c3) + ... (interface §4.1).
public func sumReward(_ breakdown: [Double]) -> Double {
    var total = 0.0
    var first = true
    for v in breakdown {
        if first {
            total = v
            first = false
        } else {
            total += v
        }
    }
    return total
}
