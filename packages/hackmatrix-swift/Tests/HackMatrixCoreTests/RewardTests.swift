// The worked reward examples of interface §4.8 and the tables of §4.2–4.4.
import XCTest

@testable import HackMatrixCore

final class RewardTests: XCTestCase {
    /// E1 — plain move: D0 = 10, D1 = 9.
    func testE1PlainMove() {
        var s = scenario(#"{"player":{"row":0,"col":0}}"#)
        let r = step(&s, 0)
        XCTAssertEqual(s.player.pos, Pos(1, 0))
        XCTAssertEqual(s.turn, 1)
        XCTAssertFalse(r.done)
        assertBreakdown(r, ["distance": 0.05], total: 0.04)
    }

    /// E2 — sub-optimal siphon.
    func testE2SubOptimalSiphon() {
        var s = scenario(
            #"{"player":{"row":2,"col":2,"dataSiphons":1},"blocks":[{"row":3,"col":2,"type":"data","points":4}],"#
                + #""resources":[{"row":2,"col":1,"credits":2},{"row":1,"col":2,"energy":1},{"row":4,"col":1,"credits":3},{"row":5,"col":2,"energy":2}]}"#
        )
        XCTAssertEqual(s.grid[Pos(3, 2)].block?.spawn, 4)  // spawnCount defaults to points
        let (found, mc, me) = siphonQuality(s)
        XCTAssertTrue(found)
        XCTAssertEqual(mc, 1)
        XCTAssertEqual(me, 1)
        let r = step(&s, 4)
        assertBreakdown(r, ["score": 2.0, "resourceGain": 0.15, "siphonQuality": -0.05], total: 2.09)
        XCTAssertEqual(s.player.score, 4)
        XCTAssertEqual(s.player.credits, 2)
        XCTAssertEqual(s.player.energy, 1)
        XCTAssertEqual(s.player.siphons, 0)
        XCTAssertTrue(s.grid[Pos(3, 2)].siphoned)
        XCTAssertEqual(s.grid[Pos(3, 2)].block?.spawn, 0)
        XCTAssertEqual(s.taskInterval, 11)
        XCTAssertEqual(s.nextTaskTurn, 17)
        XCTAssertEqual(s.turn, 1)
        XCTAssertEqual(s.pendingSiphonSpawns, 0)
        XCTAssertEqual(s.transmissions.count, 4)
        XCTAssertTrue(s.transmissions.allSatisfy { $0.countdown == 1 && $0.fromSiphon && !$0.fromTask })
        // Observation after the step.
        let o = observe(s)
        XCTAssertEqual(channel(o, 3, 2, 7), 1)
        XCTAssertEqual(channel(o, 3, 2, 10), Float(4.0 / 9.0))
        XCTAssertEqual(channel(o, 3, 2, 11), 1)
        XCTAssertEqual(channel(o, 3, 2, 35), 0)
        XCTAssertEqual(channel(o, 2, 2, 41), 1)
        XCTAssertEqual(channel(o, 2, 1, 37), 0)
        XCTAssertEqual(channel(o, 1, 2, 38), 0)
        var n36 = 0
        for r in 0..<6 { for c in 0..<6 where channel(o, r, c, 36) == 0.25 { n36 += 1 } }
        XCTAssertEqual(n36, 4)
        XCTAssertEqual(o.player[6], 0)
    }

    /// E3 — long-range kill, then SIPH+.
    func testE3LongRangeKillThenSiphPlus() {
        var s = scenario(
            #"{"player":{"row":3,"col":3,"credits":5},"enemies":[{"type":"virus","row":5,"col":3,"hp":1}],"ownedPrograms":[16]}"#
        )
        let a = step(&s, 0)
        XCTAssertEqual(s.player.pos, Pos(3, 3))
        XCTAssertTrue(s.enemies.isEmpty)
        XCTAssertEqual(s.turn, 1)
        assertBreakdown(a, ["kills": 0.3], total: 0.29)
        let b = step(&s, 16)
        XCTAssertEqual(s.player.siphons, 1)
        XCTAssertEqual(s.turn, 1)
        assertBreakdown(b, ["resourceGain": -0.25], total: -0.26)
    }

    /// E4 — death to a siphon-spawned enemy on stage 3.
    func testE4SiphonDeath() {
        var s = scenario(
            #"{"player":{"row":3,"col":3,"hp":1,"energy":1},"enemies":[{"type":"virus","row":4,"col":3,"hp":2,"spawnedFromSiphon":true}],"ownedPrograms":[10],"stage":3}"#
        )
        let r = step(&s, 10)
        XCTAssertEqual(s.player.hp, 0)
        XCTAssertTrue(r.done)
        XCTAssertTrue(r.events.diedToSiphonEnemy)
        assertBreakdown(
            r, ["resourceGain": -0.05, "damagePenalty": -1.0, "death": -1.5, "siphonDeathPenalty": -10.0],
            total: -12.56)
    }

    /// E5a — stage completion from stage 2.
    func testE5aStageCompletion() {
        var s = scenario(#"{"player":{"row":5,"col":4,"hp":2,"credits":10,"energy":5},"stage":2}"#)
        let r = step(&s, 3)
        XCTAssertTrue(r.events.stageCompleted)
        XCTAssertFalse(r.done)
        XCTAssertEqual(s.stage, 3)
        XCTAssertEqual(s.player.hp, 3)
        XCTAssertEqual(s.taskInterval, 10)
        XCTAssertEqual(s.nextTaskTurn, 10)
        XCTAssertEqual(s.turn, 0)
        assertBreakdown(r, ["stage": 2.0, "distance": 0.05, "resourceHolding": 0.15, "hpRecovery": 1.0], total: 3.19)
    }

    /// E5b — victory on stage 8 pays T[6] = 64 (quirk) and 500 + 100·score.
    func testE5bVictory() {
        var s = scenario(#"{"player":{"row":5,"col":4,"hp":3,"score":10},"stage":8}"#)
        let grid = s.grid
        let r = step(&s, 3)
        XCTAssertTrue(r.done)
        XCTAssertTrue(r.events.victory)
        XCTAssertEqual(s.stage, 8)
        XCTAssertEqual(s.player.pos, Pos(5, 5))
        XCTAssertEqual(s.grid, grid)  // unchanged grid
        XCTAssertEqual(observe(s).player[5], 1.0)
        assertBreakdown(r, ["stage": 64, "distance": 0.05, "victory": 1500], total: 1564.04)
    }

    /// E6 — RESET from hp 1 and hp 2 (program waste).
    func testE6Reset() {
        var s1 = scenario(#"{"player":{"row":0,"col":0,"hp":1,"energy":4},"ownedPrograms":[19]}"#)
        let r1 = step(&s1, 19)
        assertBreakdown(r1, ["resourceGain": -0.2, "hpRecovery": 2.0], total: 1.79)
        var s2 = scenario(#"{"player":{"row":0,"col":0,"hp":2,"energy":4},"ownedPrograms":[19]}"#)
        let r2 = step(&s2, 19)
        assertBreakdown(r2, ["resourceGain": -0.2, "hpRecovery": 1.0, "programWaste": -0.3], total: 0.49)
        XCTAssertEqual(s2.player.hp, 3)
    }

    /// Death penalty table (interface §4.4).
    func testDeathPenaltyTable() {
        let expected = [0.0, -0.5, -1.5, -3.5, -7.5, -15.5, -31.5, -63.5]
        for stage in 1...8 {
            // A state injected with hp 0 counts as dead after a successful free action.
            var s = scenario(#"{"player":{"row":0,"col":0,"hp":0,"energy":3},"ownedPrograms":[15],"stage":\#(stage)}"#)
            let r = step(&s, 15)
            XCTAssertTrue(r.done)
            XCTAssertEqual(component(r, "death"), expected[stage - 1], accuracy: 1e-12)
            XCTAssertEqual(component(r, "distance"), 0)  // forced to 0 on death
        }
    }

    /// A failed action: every component exactly 0, done (interface §2.5).
    func testInvalidActionGivesZero() {
        var s = scenario(#"{"player":{"row":0,"col":0}}"#)
        let before = s
        let r = step(&s, 1)  // down, off the board
        XCTAssertTrue(r.done)
        XCTAssertTrue(r.events.failed)
        XCTAssertEqual(r.reward, 0)
        XCTAssertTrue(r.breakdown.allSatisfy { $0 == 0 })
        XCTAssertEqual(s, before)
    }

    /// Summation is left to right in table order (interface §4.1).
    func testSumOrder() {
        let b = [-0.01, 0.1, 0.2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        XCTAssertEqual(sumReward(b), ((-0.01 + 0.1) + 0.2))
    }
}
