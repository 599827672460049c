// The 23 programs (programs.md §4), with the spec's examples.
import XCTest

@testable import HackMatrixCore

/// A player with every program and plenty of resources, plus `extra` JSON members.
func programScenario(player: String = #""row":0,"col":0"#, _ extra: String = "") -> GameState {
    let all = (5...27).map(String.init).joined(separator: ",")
    let tail = extra.isEmpty ? "" : "," + extra
    return scenario(#"{"player":{\#(player),"credits":50,"energy":50},"ownedPrograms":[\#(all)]\#(tail)}"#)
}

func enemiesJSON(_ list: [(String, Int, Int, Int)]) -> String {
    "\"enemies\":[" + list.map { #"{"type":"\#($0.0)","row":\#($0.1),"col":\#($0.2),"hp":\#($0.3)}"# }.joined(separator: ",") + "]"
}

final class ProgramsTests: XCTestCase {
    /// §4.1 PUSH stacking example: player (2,2); A (2,4), B (2,5), C (4,4), D (5,5).
    func testPushStacking() {
        var s = programScenario(
            player: #""row":2,"col":2"#,
            enemiesJSON([("daemon", 2, 4, 3), ("daemon", 2, 5, 3), ("daemon", 4, 4, 3), ("daemon", 5, 5, 3)]))
        let r = step(&s, 5)
        XCTAssertEqual(enemyPositions(s), [Pos(2, 5), Pos(2, 5), Pos(5, 5), Pos(5, 5)])
        XCTAssertEqual(component(r, "kills"), 0)
        XCTAssertEqual(s.turn, 0)  // free action
    }

    /// §4.1 PUSH collision: player (0,0), [A (4,5), B (5,4)] both target (5,5): first wins.
    func testPushCollision() {
        var s = programScenario(enemiesJSON([("virus", 4, 5, 2), ("virus", 5, 4, 2)]))
        step(&s, 5)
        XCTAssertEqual(enemyPositions(s), [Pos(5, 5), Pos(5, 4)])
        var t = programScenario(enemiesJSON([("virus", 5, 4, 2), ("virus", 4, 5, 2)]))
        step(&t, 5)
        XCTAssertEqual(enemyPositions(t), [Pos(5, 5), Pos(4, 5)])
    }

    /// §4.2 PULL stacking: player (0,0); A (1,0), B (2,0), C (1,1), D (3,3).
    func testPullStacking() {
        var s = programScenario(enemiesJSON([("daemon", 1, 0, 3), ("daemon", 2, 0, 3), ("daemon", 1, 1, 3), ("daemon", 3, 3, 3)]))
        step(&s, 6)
        XCTAssertEqual(enemyPositions(s), [Pos(1, 0), Pos(1, 0), Pos(0, 1), Pos(2, 2)])
    }

    /// §4.2 PULL collision: player (0,0), [A (0,2), B (1,2)]: A -> (0,1), B stays.
    func testPullCollision() {
        var s = programScenario(enemiesJSON([("daemon", 0, 2, 3), ("daemon", 1, 2, 3)]))
        step(&s, 6)
        XCTAssertEqual(enemyPositions(s), [Pos(0, 1), Pos(1, 2)])
    }

    /// §4.3 CRASH: blocks, enemies and transmissions in the 8 neighbours; stacks count once.
    func testCrash() {
        var s = programScenario(
            player: #""row":2,"col":2"#,
            #"""
            "blocks":[{"row":3,"col":3,"type":"data","siphoned":true},{"row":1,"col":1,"type":"program","programType":"warp"},{"row":4,"col":4,"type":"data"}],
            "enemies":[{"type":"virus","row":2,"col":3,"hp":2},{"type":"virus","row":2,"col":3,"hp":1},{"type":"daemon","row":1,"col":2,"hp":3,"isFromScheduledTask":true},{"type":"virus","row":2,"col":2,"hp":2}],
            "transmissions":[{"row":3,"col":2,"turnsRemaining":1,"enemyType":"virus"}],
            "resources":[{"row":3,"col":3,"credits":2}]
            """#)
        let r = step(&s, 7)
        XCTAssertNil(s.grid[Pos(3, 3)].block)
        XCTAssertTrue(s.grid[Pos(3, 3)].siphoned)  // flag kept
        XCTAssertEqual(s.grid[Pos(3, 3)].credits, 2)  // resource kept
        XCTAssertNil(s.grid[Pos(1, 1)].block)
        XCTAssertNotNil(s.grid[Pos(4, 4)].block)  // outside the 3×3
        XCTAssertEqual(enemyPositions(s), [Pos(2, 2)])  // the player's own cell is untouched
        XCTAssertTrue(s.transmissions.isEmpty)
        // (2,3): one kill for the stack; (1,2): scheduled, no kill; (3,2): transmission kill.
        XCTAssertEqual(component(r, "kills"), 0.6, accuracy: 1e-12)
        XCTAssertEqual(component(r, "resourceGain"), -0.25, accuracy: 1e-12)
    }

    /// §4.4 WARP example: 50% to the enemy (kill), 50% to the exit transmission (stage complete).
    func testWarpTargets() {
        var seenEnemy = false
        var seenExit = false
        for seed in 1...40 as ClosedRange<UInt64> {
            var s = programScenario(
                enemiesJSON([("virus", 1, 1, 2)]) + #","transmissions":[{"row":5,"col":5,"turnsRemaining":2,"enemyType":"daemon"}]"#)
            let r = step(&s, 8, seed: seed)
            if r.events.stageCompleted {
                seenExit = true
                XCTAssertEqual(s.stage, 2)
                XCTAssertEqual(s.player.pos, Pos(5, 5))
                XCTAssertEqual(component(r, "kills"), 0.3, accuracy: 1e-12)
                XCTAssertEqual(component(r, "distance"), 0.05 * 10, accuracy: 1e-12)  // D0 from (0,0)
                XCTAssertEqual(s.enemies.count, 1)  // kept across the stage
            } else {
                seenEnemy = true
                XCTAssertEqual(s.player.pos, Pos(1, 1))
                XCTAssertTrue(s.enemies.isEmpty)
                XCTAssertEqual(s.transmissions.count, 1)
                XCTAssertEqual(component(r, "kills"), 0.3, accuracy: 1e-12)
            }
        }
        XCTAssertTrue(seenEnemy && seenExit)
    }

    /// §4.4: WARP erases only the picked kind and collects no pickup.
    func testWarpErasesPickedKindOnly() {
        var s = programScenario(
            enemiesJSON([("virus", 2, 2, 2)])
                + #","transmissions":[{"row":2,"col":2,"turnsRemaining":2,"enemyType":"daemon"}],"resources":[{"row":2,"col":2,"dataSiphon":true}]"#)
        // Find a seed that picks the enemy (index 0 of 2).
        var rng = Rng(seed: 1)
        var seed: UInt64 = 1
        while true {
            rng = Rng(seed: seed)
            if rng.int(below: 2) == 0 { break }
            seed += 1
        }
        step(&s, 8, seed: seed)
        XCTAssertEqual(s.player.pos, Pos(2, 2))
        XCTAssertTrue(s.enemies.isEmpty)
        XCTAssertEqual(s.transmissions.count, 1)
        XCTAssertEqual(s.player.siphons, 0)
        XCTAssertEqual(s.grid[Pos(2, 2)].content, .dataSiphon)
    }

    /// §4.5 POLY: a daemon at 1 hp dies; a 2-hp daemon becomes a 1-hp other type.
    func testPoly() {
        for seed in 1...10 as ClosedRange<UInt64> {
            var s = programScenario(enemiesJSON([("daemon", 3, 3, 1), ("daemon", 4, 4, 2), ("virus", 5, 5, 1), ("glitch", 1, 4, 2)]))
            let r = step(&s, 9, seed: seed)
            XCTAssertEqual(component(r, "kills"), 0.3, accuracy: 1e-12)
            XCTAssertEqual(s.enemies.count, 3)
            XCTAssertNotEqual(s.enemies[0].kind, .daemon)
            XCTAssertEqual(s.enemies[0].hp, 1)
            XCTAssertNotEqual(s.enemies[1].kind, .virus)
            XCTAssertEqual(s.enemies[1].hp, s.enemies[1].kind == .daemon ? 2 : 1)
            XCTAssertNotEqual(s.enemies[2].kind, .glitch)
            XCTAssertEqual(s.enemies[2].hp, enemyMaxHp[s.enemies[2].kind.rawValue])
            for e in s.enemies where e.kind == .cryptog { XCTAssertEqual(e.lastKnown, e.pos) }
        }
    }

    /// §4.6 WAIT: the only program with an enemy phase.
    func testWait() {
        var s = programScenario(enemiesJSON([("daemon", 3, 0, 3)]))
        let r = step(&s, 10)
        XCTAssertEqual(s.turn, 1)
        XCTAssertEqual(s.enemies[0].pos, Pos(2, 0))
        XCTAssertEqual(s.player.energy, 49)
        XCTAssertTrue(r.events.enemyPhaseRan)
    }

    /// §4.7 DEBUG: A damage to enemies on blocks, stun survivors.
    func testDebug() {
        var s = programScenario(
            player: #""row":0,"col":0,"attackDamage":2"#,
            enemiesJSON([("daemon", 3, 3, 3), ("virus", 4, 4, 2), ("virus", 1, 4, 2)])
                + #","blocks":[{"row":3,"col":3,"type":"data"},{"row":4,"col":4,"type":"data","siphoned":true}]"#)
        let r = step(&s, 11)
        XCTAssertEqual(s.enemies.map { $0.hp }, [1, 2])
        XCTAssertEqual(s.enemies.map { $0.stunned }, [true, false])
        XCTAssertEqual(component(r, "kills"), 0.3, accuracy: 1e-12)
    }

    /// programs §8: ROW killing one normal virus: +0.09.
    func testRowExample() {
        var s = programScenario(player: #""row":2,"col":0"#, enemiesJSON([("virus", 2, 5, 1), ("daemon", 3, 0, 3)]))
        let r = step(&s, 12)
        XCTAssertEqual(s.enemies.count, 1)
        XCTAssertEqual(r.reward, 0.09, accuracy: 1e-9)
    }

    /// §4.9 COL: A damage with stun along the column, through blocks.
    func testCol() {
        var s = programScenario(
            player: #""row":0,"col":2"#,
            enemiesJSON([("daemon", 5, 2, 3), ("daemon", 4, 3, 3)]) + #","blocks":[{"row":2,"col":2,"type":"data"}]"#)
        step(&s, 13)
        XCTAssertEqual(s.enemies.map { $0.hp }, [2, 3])
        XCTAssertEqual(s.enemies.map { $0.stunned }, [true, false])
    }

    /// §4.10 UNDO worked example.
    func testUndoWorkedExample() {
        var s = programScenario(player: #""row":0,"col":0"#, enemiesJSON([("daemon", 5, 5, 3)]) + #","scheduledTasksDisabled":true"#)
        XCTAssertFalse(actionMask(s)[14])  // 1: history empty
        step(&s, 0)  // 2: move -> S1
        XCTAssertEqual(s.history.count, 1)
        let afterS1 = s
        step(&s, 5)  // 3: PUSH (-2 E)
        XCTAssertEqual(s.player.energy, 48)
        let r = step(&s, 14)  // UNDO: restore S1
        XCTAssertEqual(s.player, afterS1.player)
        XCTAssertEqual(s.enemies, afterS1.enemies)
        XCTAssertTrue(s.history.isEmpty)
        XCTAssertFalse(actionMask(s)[14])
        XCTAssertEqual(component(r, "resourceGain"), 0.1, accuracy: 1e-12)  // energy +2, credits back
        step(&s, 0)  // 4: move -> S2
        step(&s, 0)  // move -> S3
        XCTAssertEqual(s.turn, 3)
        let atS3 = s
        step(&s, 14)  // restores S3: no change
        XCTAssertEqual(s.player, atS3.player)
        XCTAssertEqual(s.turn, 3)
        step(&s, 14)  // restores S2
        XCTAssertEqual(s.turn, 2)
        XCTAssertEqual(s.player.pos, Pos(2, 0))
    }

    /// §4.10: UNDO clears provenance flags and keeps STEP, schedule and pending spawns.
    func testUndoFlagsAndKeptFields() {
        var s = programScenario(#""enemies":[{"type":"daemon","row":5,"col":5,"hp":3,"isFromScheduledTask":true,"spawnedFromSiphon":true}]"#)
        step(&s, 10)  // WAIT -> snapshot
        s.stepFlag = true
        s.pendingSiphonSpawns = 3
        s.nextTaskTurn = 40
        s.taskInterval = 9
        step(&s, 14)
        XCTAssertFalse(s.enemies[0].fromTask)
        XCTAssertFalse(s.enemies[0].fromSiphon)
        XCTAssertTrue(s.stepFlag)
        XCTAssertEqual(s.pendingSiphonSpawns, 3)
        XCTAssertEqual(s.nextTaskTurn, 40)
        XCTAssertEqual(s.taskInterval, 9)
    }

    /// rules §11.4: UNDO right after a stage change restores the previous stage's grid.
    func testUndoCrossStageQuirk() {
        var s = programScenario(player: #""row":5,"col":3"#, #""scheduledTasksDisabled":true"#)
        step(&s, 3)  // (5,4), snapshot S1 (old grid, exit at (5,5))
        let oldGrid = s.grid
        step(&s, 3)  // onto the exit: stage 2
        XCTAssertEqual(s.stage, 2)
        let newExit = s.exitPos
        step(&s, 14)
        XCTAssertEqual(s.stage, 2)
        XCTAssertEqual(s.exitPos, newExit)
        XCTAssertEqual(s.grid, oldGrid)
        XCTAssertEqual(s.player.pos, Pos(5, 4))
        // Walking onto the restored exit cell completes stage 2.
        let r = step(&s, 3)
        XCTAssertTrue(r.events.stageCompleted)
        XCTAssertEqual(s.stage, 3)
    }

    /// §4.11 STEP: pays again when set; the flag is a boolean.
    func testStepTwice() {
        var s = programScenario()
        step(&s, 15)
        step(&s, 15)
        XCTAssertTrue(s.stepFlag)
        XCTAssertEqual(s.player.energy, 44)
    }

    /// §4.12–4.16: SIPH+, EXCH, SHOW, RESET, CALM.
    func testSimplePrograms() {
        var s = programScenario(player: #""row":0,"col":0,"hp":1"#)
        XCTAssertEqual(step(&s, 16).reward, -0.26, accuracy: 1e-9)
        XCTAssertEqual(s.player.siphons, 1)
        XCTAssertEqual(step(&s, 17).reward, -0.01, accuracy: 1e-9)
        XCTAssertEqual(s.player.energy, 54)
        step(&s, 18)
        XCTAssertTrue(s.showFlag)
        XCTAssertFalse(actionMask(s)[18])
        step(&s, 19)
        XCTAssertEqual(s.player.hp, 3)
        XCTAssertFalse(actionMask(s)[19])
        step(&s, 20)
        XCTAssertTrue(s.calmFlag)
        XCTAssertFalse(actionMask(s)[20])
    }

    /// §4.17 D_BOM example: player (0,0), [D2 (0,4), D1 (2,2)]: D2 picked; splash 1 damage.
    func testDBom() {
        var s = programScenario(
            enemiesJSON([
                ("daemon", 0, 4, 3), ("daemon", 2, 2, 3), ("virus", 0, 3, 1), ("virus", 1, 5, 2), ("daemon", 1, 4, 3),
                ("glitch", 2, 4, 2),
            ]))
        let r = step(&s, 21)
        XCTAssertEqual(enemyPositions(s), [Pos(2, 2), Pos(1, 5), Pos(1, 4), Pos(2, 4)])
        XCTAssertEqual(s.enemies.map { $0.hp }, [3, 1, 2, 2])
        XCTAssertEqual(s.enemies.map { $0.stunned }, [false, true, true, false])
        XCTAssertEqual(component(r, "kills"), 0.6, accuracy: 1e-12)  // D2 + the 1-hp virus
    }

    /// §4.18 DELAY: +3 per use, stacking.
    func testDelay() {
        var s = programScenario(#""transmissions":[{"row":3,"col":3,"turnsRemaining":1,"enemyType":"virus"}]"#)
        step(&s, 22)
        step(&s, 22)
        XCTAssertEqual(s.transmissions[0].countdown, 7)
    }

    /// §4.19 ANTI-V: fixed 1 damage to viruses only.
    func testAntiV() {
        var s = programScenario(player: #""row":0,"col":0,"attackDamage":3"#, enemiesJSON([("virus", 3, 3, 2), ("virus", 4, 4, 1), ("daemon", 5, 5, 3)]))
        let r = step(&s, 23)
        XCTAssertEqual(s.enemies.map { $0.hp }, [1, 3])
        XCTAssertEqual(s.enemies.map { $0.stunned }, [true, false])
        XCTAssertEqual(component(r, "kills"), 0.3, accuracy: 1e-12)
    }

    /// §4.20 SCORE: 8 - stage points; masked on stage 8.
    func testScore() {
        var s = programScenario()
        let r = step(&s, 24)
        XCTAssertEqual(s.player.score, 7)
        XCTAssertEqual(r.reward, -0.01 + 3.5 - 0.25, accuracy: 1e-9)
        XCTAssertFalse(actionMask(programScenario(#""stage":8"#))[24])
    }

    /// §4.21 REDUC: unsiphoned blocks lose one spawn; points unchanged.
    func testReduc() {
        var s = programScenario(
            #""blocks":[{"row":2,"col":2,"type":"data","points":4},{"row":3,"col":3,"type":"data","points":4,"siphoned":true},{"row":1,"col":1,"type":"program","programType":"hack","spawnCount":0}]"#)
        step(&s, 25)
        XCTAssertEqual(s.grid[Pos(2, 2)].block?.spawn, 3)
        XCTAssertEqual(s.grid[Pos(2, 2)].block?.points, 4)
        XCTAssertEqual(s.grid[Pos(3, 3)].block?.spawn, 4)
        XCTAssertEqual(s.grid[Pos(1, 1)].block?.spawn, 0)
        var t = programScenario(#""blocks":[{"row":1,"col":1,"type":"data","points":0}]"#)
        XCTAssertFalse(actionMask(t)[25])
        t.grid[Pos(2, 2)].content = .block(.data(points: 3, spawn: 3, question: true))
        XCTAssertTrue(actionMask(t)[25])
    }

    /// §4.22 ATK+: twice per stage, no cap, persists across stages.
    func testAtkPlus() {
        var s = programScenario(player: #""row":5,"col":4"#)
        step(&s, 26)
        step(&s, 26)
        XCTAssertEqual(s.player.attack, 3)
        XCTAssertFalse(actionMask(s)[26])
        step(&s, 3)  // onto the exit: new stage resets the counter, not the attack
        XCTAssertEqual(s.atkUsesThisStage, 0)
        XCTAssertEqual(s.player.attack, 3)
        step(&s, 26)
        XCTAssertEqual(s.player.attack, 4)
        XCTAssertEqual(observe(s).player[7], 1.5)  // not capped
    }

    /// §4.23 HACK: any siphoned cell; A damage to enemies on siphoned cells.
    func testHack() {
        var s = programScenario(
            player: #""row":0,"col":0,"attackDamage":2"#,
            enemiesJSON([("daemon", 3, 3, 3), ("virus", 4, 4, 2)]))
        XCTAssertFalse(actionMask(s)[27])
        s.grid[Pos(3, 3)].siphoned = true
        XCTAssertTrue(actionMask(s)[27])
        let r = step(&s, 27)
        XCTAssertEqual(s.enemies.map { $0.hp }, [1, 2])
        XCTAssertTrue(s.enemies[0].stunned)
        XCTAssertEqual(component(r, "kills"), 0)
    }

    /// programs §2: mask = owned ∧ affordable ∧ applicable.
    func testProgramMaskNeedsOwnershipAndCost() {
        let s = scenario(#"{"player":{"row":0,"col":0,"credits":50,"energy":50}}"#)
        XCTAssertTrue(actionMask(s)[5...].allSatisfy { !$0 })
        let t = scenario(#"{"player":{"row":0,"col":0,"credits":2,"energy":1},"ownedPrograms":[10,7,16]}"#)
        XCTAssertEqual(validActions(t), [0, 3, 10])
        var u = t
        let before = u
        let r = step(&u, 16)  // unaffordable SIPH+
        XCTAssertTrue(r.events.failed)
        XCTAssertEqual(u, before)
    }

    /// programs §2 applicability conditions, one at a time.
    func testApplicability() {
        let empty = programScenario()
        let m = actionMask(empty)
        for a in [5, 6, 7, 8, 9, 11, 12, 13, 14, 19, 21, 22, 23, 25, 27] { XCTAssertFalse(m[a], "action \(a)") }
        for a in [10, 15, 16, 17, 18, 20, 24, 26] { XCTAssertTrue(m[a], "action \(a)") }
        let withEnemy = programScenario(enemiesJSON([("cryptog", 0, 3, 2)]))
        let w = actionMask(withEnemy)
        for a in [5, 6, 8, 9, 12] { XCTAssertTrue(w[a], "action \(a)") }
        for a in [7, 11, 13, 21, 22, 23] { XCTAssertFalse(w[a], "action \(a)") }
        let crashable = programScenario(#""transmissions":[{"row":1,"col":1,"turnsRemaining":2,"enemyType":"virus"}]"#)
        XCTAssertTrue(actionMask(crashable)[7])
        XCTAssertTrue(actionMask(crashable)[8])
        XCTAssertTrue(actionMask(crashable)[22])
    }
}
