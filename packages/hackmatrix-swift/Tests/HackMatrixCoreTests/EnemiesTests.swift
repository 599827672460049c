// The enemy phase (rules §7): order, sub-steps, attacks, hatching, STEP,
// scheduled task, status clearing.
import Foundation
import XCTest

@testable import HackMatrixCore

final class EnemiesTests: XCTestCase {
    func phase(_ s: inout GameState, seed: UInt64 = 7) {
        var rng = Rng(seed: seed)
        runEnemyPhase(&s, rng: &rng)
    }

    /// rules §7.6 worked example 1: daemon from (3,3) towards (0,0).
    func testDaemonPath() {
        var s = scenario(#"{"player":{"row":0,"col":0},"enemies":[{"type":"daemon","row":3,"col":3,"hp":3}],"scheduledTasksDisabled":true}"#)
        let expected = [Pos(2, 3), Pos(1, 3), Pos(0, 3), Pos(0, 2), Pos(0, 1)]
        for p in expected {
            phase(&s)
            XCTAssertEqual(s.enemies[0].pos, p)
            XCTAssertEqual(s.player.hp, 3)
        }
        phase(&s)
        XCTAssertEqual(s.enemies[0].pos, Pos(0, 1))
        XCTAssertEqual(s.player.hp, 2)
    }

    /// rules §7.6 worked example 2: A and B attack; C is blocked and moves away.
    func testBlockedEnemyMovesAway() {
        for seed in 1...6 as ClosedRange<UInt64> {
            var s = scenario(
                #"{"player":{"row":0,"col":0},"enemies":[{"type":"daemon","row":1,"col":0,"hp":3},{"type":"daemon","row":0,"col":1,"hp":3},{"type":"daemon","row":2,"col":0,"hp":3}],"scheduledTasksDisabled":true}"#
            )
            phase(&s, seed: seed)
            XCTAssertEqual(s.player.hp, 1)
            XCTAssertEqual(enemyPositions(s), [Pos(1, 0), Pos(0, 1), Pos(3, 0)])
        }
    }

    /// rules §7.6 worked example 3: a virus moves twice; then attacks once.
    func testVirusDoubleStep() {
        var s = scenario(#"{"player":{"row":0,"col":0},"enemies":[{"type":"virus","row":3,"col":0,"hp":2}],"scheduledTasksDisabled":true}"#)
        phase(&s)
        XCTAssertEqual(s.enemies[0].pos, Pos(1, 0))
        XCTAssertEqual(s.player.hp, 3)
        phase(&s)
        XCTAssertEqual(s.enemies[0].pos, Pos(1, 0))
        XCTAssertEqual(s.player.hp, 2)  // at most one attack per phase
        var t = scenario(#"{"player":{"row":0,"col":0},"enemies":[{"type":"virus","row":2,"col":0,"hp":2}],"scheduledTasksDisabled":true}"#)
        phase(&t)
        XCTAssertEqual(t.enemies[0].pos, Pos(1, 0))
        XCTAssertEqual(t.player.hp, 2)  // moved in sub-step 0, attacked in sub-step 1
    }

    /// rules §7.5: a non-virus that moves adjacent does not attack in the same turn.
    func testMoveThenNoAttack() {
        var s = scenario(#"{"player":{"row":0,"col":0},"enemies":[{"type":"glitch","row":2,"col":0,"hp":2}],"scheduledTasksDisabled":true}"#)
        phase(&s)
        XCTAssertEqual(s.enemies[0].pos, Pos(1, 0))
        XCTAssertEqual(s.player.hp, 3)
    }

    /// rules §7.6: blocks stop non-glitches; glitches path through them.
    func testGlitchPassesBlocks() {
        let json = #"{"player":{"row":0,"col":0},"enemies":[{"type":"KIND","row":2,"col":0,"hp":2}],"blocks":[{"row":1,"col":0,"type":"data"}],"scheduledTasksDisabled":true}"#
        var d = scenario(json.replacingOccurrences(of: "KIND", with: "cryptog"))
        phase(&d)
        XCTAssertEqual(d.enemies[0].pos, Pos(2, 1))
        var g = scenario(json.replacingOccurrences(of: "KIND", with: "glitch"))
        phase(&g)
        XCTAssertEqual(g.enemies[0].pos, Pos(1, 0))
    }

    /// rules §7.6 special case: a non-glitch cannot reach a player standing on a
    /// block, so tier 3 applies (greedy, even though the goal is unreachable).
    func testPlayerOnBlockUsesGreedyTier() {
        var s = scenario(
            #"{"player":{"row":2,"col":2},"blocks":[{"row":2,"col":2,"type":"data"}],"enemies":[{"type":"daemon","row":5,"col":2,"hp":3}],"scheduledTasksDisabled":true}"#
        )
        phase(&s)
        XCTAssertEqual(s.enemies[0].pos, Pos(4, 2))
    }

    /// rules §7.6 special case: an enemy on the player's cell steps to the first free neighbour.
    func testEnemyOnPlayerCellStepsOff() {
        var s = scenario(#"{"player":{"row":2,"col":2},"enemies":[{"type":"daemon","row":2,"col":2,"hp":3}],"scheduledTasksDisabled":true}"#)
        phase(&s)
        XCTAssertEqual(s.enemies[0].pos, Pos(3, 2))
        XCTAssertEqual(s.player.hp, 3)
    }

    /// rules §7.3, §10.2 timeline: a countdown-1 transmission hatches in turn 1
    /// (disabled) and its enemy first acts in turn 2.
    func testHatchingTimeline() {
        var s = scenario(
            #"{"player":{"row":0,"col":0},"transmissions":[{"row":0,"col":2,"turnsRemaining":1,"enemyType":"daemon"},{"row":4,"col":4,"turnsRemaining":3,"enemyType":"virus"}],"scheduledTasksDisabled":true}"#
        )
        phase(&s)
        XCTAssertEqual(s.enemies.count, 1)
        XCTAssertEqual(s.enemies[0].pos, Pos(0, 2))  // did not act
        XCTAssertEqual(s.enemies[0].hp, 3)
        XCTAssertEqual(s.enemies[0].disabled, 0)  // cleared at the end of the phase
        XCTAssertEqual(s.transmissions.map { $0.countdown }, [2])
        phase(&s)
        XCTAssertEqual(s.enemies[0].pos, Pos(0, 1))
        phase(&s)
        XCTAssertEqual(s.player.hp, 2)
        XCTAssertEqual(s.enemies.count, 2)  // the virus hatched in turn 3
        XCTAssertEqual(s.enemies[1].kind, .virus)
    }

    /// rules §7.1: STEP skips the whole phase.
    func testStepSkipsPhase() {
        var s = scenario(
            #"{"player":{"row":0,"col":0,"energy":3},"ownedPrograms":[15],"enemies":[{"type":"virus","row":1,"col":0,"hp":2,"stunned":true}],"transmissions":[{"row":3,"col":3,"turnsRemaining":1,"enemyType":"daemon"}]}"#
        )
        s.pendingSiphonSpawns = 2
        step(&s, 15)
        XCTAssertTrue(s.stepFlag)
        let r = step(&s, 3)  // move right: turn-ending, skipped phase
        XCTAssertFalse(r.events.enemyPhaseRan)
        XCTAssertFalse(s.stepFlag)
        XCTAssertEqual(s.turn, 0)
        XCTAssertEqual(s.transmissions.count, 1)
        XCTAssertEqual(s.transmissions[0].countdown, 1)
        XCTAssertTrue(s.enemies[0].stunned)
        XCTAssertEqual(s.pendingSiphonSpawns, 2)
        XCTAssertTrue(s.history.isEmpty)
        XCTAssertEqual(s.player.hp, 3)
    }

    /// rules §7.8: stage 1 without siphons spawns at turns 12, 24, 36.
    func testScheduledTaskTiming() {
        var s = scenario(#"{"player":{"row":0,"col":0}}"#)
        var spawnTurns: [Int] = []
        var rng = Rng(seed: 3)
        for _ in 0..<40 {
            let before = s.transmissions.filter { $0.fromTask }.count + s.enemies.filter { $0.fromTask }.count
            runEnemyPhase(&s, rng: &rng)
            let after = s.transmissions.filter { $0.fromTask }.count + s.enemies.filter { $0.fromTask }.count
            if after > before { spawnTurns.append(s.turn) }
        }
        XCTAssertEqual(spawnTurns, [12, 24, 36])
    }

    /// rules §7.8: one siphon before enemy phase 3 -> interval 11, next 17 -> 17, 28, 39.
    func testScheduledTaskTimingAfterSiphon() {
        var s = scenario(#"{"player":{"row":0,"col":0,"dataSiphons":1}}"#)
        var rng = Rng(seed: 4)
        var spawnTurns: [Int] = []
        for t in 1...40 {
            let before = s.transmissions.filter { $0.fromTask }.count + s.enemies.filter { $0.fromTask }.count
            if t == 3 {
                var ev = StepEvents()
                applySiphon(&s, events: &ev)
            }
            runEnemyPhase(&s, rng: &rng)
            let after = s.transmissions.filter { $0.fromTask }.count + s.enemies.filter { $0.fromTask }.count
            if after > before { spawnTurns.append(s.turn) }
        }
        XCTAssertEqual(spawnTurns, [17, 28, 39])
    }

    /// rules §7.8: with CALM nothing happens and next_task_turn does not advance.
    func testCalmFreezesSchedule() {
        var s = scenario(#"{"player":{"row":0,"col":0},"turn":20,"scheduledTasksDisabled":true}"#)
        phase(&s)
        XCTAssertTrue(s.transmissions.isEmpty)
        XCTAssertEqual(s.nextTaskTurn, 12)
    }

    /// interface §5.7: turn >= 11 after setState makes a scheduled spawn appear at the first enemy turn.
    func testSetStateTurnTriggersSchedule() {
        var s = scenario(#"{"player":{"row":0,"col":0},"turn":11}"#)
        phase(&s)
        XCTAssertEqual(s.transmissions.count, 1)
        XCTAssertTrue(s.transmissions[0].fromTask)
        XCTAssertEqual(s.nextTaskTurn, 24)
    }

    /// rules §7.5 step 4: a cryptog's last_known follows it only into the player's row/column.
    func testCryptogLastKnown() {
        var s = scenario(#"{"player":{"row":0,"col":0},"enemies":[{"type":"cryptog","row":3,"col":3,"hp":2}],"scheduledTasksDisabled":true}"#)
        phase(&s)
        XCTAssertEqual(s.enemies[0].pos, Pos(2, 3))
        XCTAssertEqual(s.enemies[0].lastKnown, Pos(3, 3))
        phase(&s)
        phase(&s)
        XCTAssertEqual(s.enemies[0].pos, Pos(0, 3))
        XCTAssertEqual(s.enemies[0].lastKnown, Pos(0, 3))
    }

    /// rules §7.2 step 8: every real phase pushes one snapshot.
    func testSnapshotPerPhase() {
        var s = scenario(#"{"player":{"row":0,"col":0}}"#)
        phase(&s)
        phase(&s)
        XCTAssertEqual(s.history.count, 2)
        XCTAssertEqual(s.history[1].turn, 2)
    }

    /// rules §7.9: owed siphon transmissions are placed at the end of the phase.
    func testOwedSpawnsPlaced() {
        var s = scenario(#"{"player":{"row":0,"col":0},"scheduledTasksDisabled":true}"#)
        s.pendingSiphonSpawns = 3
        phase(&s)
        XCTAssertEqual(s.pendingSiphonSpawns, 0)
        XCTAssertEqual(s.transmissions.count, 3)
        XCTAssertTrue(s.transmissions.allSatisfy { $0.fromSiphon && $0.countdown == 1 })
        XCTAssertEqual(Set(s.transmissions.map { $0.pos }).count, 3)
    }
}
