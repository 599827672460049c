// Direction actions (rules §4) and the direction/siphon mask (interface §2.2–2.3).
import XCTest

@testable import HackMatrixCore

final class MovementTests: XCTestCase {
    /// rules §4.4: a virus far up the column is shot: hp 1, stunned, player stays.
    func testLongRangeShotStuns() {
        var s = scenario(#"{"player":{"row":0,"col":3},"enemies":[{"type":"virus","row":5,"col":3,"hp":2}],"scheduledTasksDisabled":true}"#)
        let r = step(&s, 0)
        XCTAssertEqual(s.player.pos, Pos(0, 3))
        XCTAssertEqual(s.enemies[0].hp, 1)
        // The stun is cleared at the end of the enemy phase, which the virus sat out.
        XCTAssertEqual(s.enemies[0].pos, Pos(5, 3))
        XCTAssertFalse(s.enemies[0].stunned)
        XCTAssertEqual(r.events.actionKind, .attack)
        XCTAssertEqual(component(r, "kills"), 0)
    }

    /// rules §4.4: a block (siphoned or not) stops the line; the player moves.
    func testBlockStopsLineOfFire() {
        for siphoned in [false, true] {
            var s = scenario(
                #"{"player":{"row":0,"col":3},"enemies":[{"type":"virus","row":5,"col":3,"hp":2}],"blocks":[{"row":3,"col":3,"type":"data","siphoned":\#(siphoned)}]}"#
            )
            step(&s, 0)
            XCTAssertEqual(s.player.pos, Pos(1, 3))
            XCTAssertEqual(s.enemies[0].hp, 2)
        }
    }

    /// rules §4.4: a transmission two cells left is destroyed; the player stays.
    func testShotDestroysTransmission() {
        var s = scenario(#"{"player":{"row":2,"col":2},"transmissions":[{"row":2,"col":0,"turnsRemaining":3,"enemyType":"daemon"}]}"#)
        let r = step(&s, 2)
        XCTAssertEqual(s.player.pos, Pos(2, 2))
        XCTAssertTrue(s.transmissions.isEmpty)
        XCTAssertEqual(component(r, "kills"), 0.3, accuracy: 1e-12)
    }

    /// rules §4.4: walking never collects credits; they stay on the cell.
    func testWalkingDoesNotCollectCredits() {
        var s = scenario(#"{"player":{"row":2,"col":2},"resources":[{"row":2,"col":1,"credits":3}]}"#)
        let r = step(&s, 2)
        XCTAssertEqual(s.player.pos, Pos(2, 1))
        XCTAssertEqual(s.player.credits, 0)
        XCTAssertEqual(s.grid[Pos(2, 1)].credits, 3)
        XCTAssertEqual(component(r, "resourceGain"), 0)
    }

    /// rules §4.1: a transmission and an enemy on one cell: the transmission is hit.
    func testTransmissionPreferredOnSharedCell() {
        var s = scenario(
            #"{"player":{"row":0,"col":0},"enemies":[{"type":"daemon","row":0,"col":3,"hp":3}],"transmissions":[{"row":0,"col":3,"turnsRemaining":2,"enemyType":"virus"}]}"#
        )
        step(&s, 3)
        XCTAssertTrue(s.transmissions.isEmpty)
        XCTAssertEqual(s.enemies[0].hp, 3)
    }

    /// rules §4.1: an enemy standing on a block is targetable; what is behind is not.
    func testEnemyOnBlockIsTargetable() {
        var s = scenario(
            #"{"player":{"row":0,"col":0},"enemies":[{"type":"glitch","row":0,"col":2,"hp":2},{"type":"virus","row":0,"col":4,"hp":1}],"blocks":[{"row":0,"col":2,"type":"data"}]}"#
        )
        XCTAssertTrue(actionMask(s)[3])
        step(&s, 3)
        XCTAssertEqual(s.enemies.map { $0.hp }, [1, 1])
    }

    /// rules §4.3: walking onto a data-siphon pickup.
    func testDataSiphonPickup() {
        var s = scenario(#"{"player":{"row":0,"col":0},"resources":[{"row":1,"col":0,"dataSiphon":true}]}"#)
        let r = step(&s, 0)
        XCTAssertEqual(s.player.siphons, 1)
        XCTAssertEqual(s.grid[Pos(1, 0)].content, .empty)
        XCTAssertTrue(r.events.dataSiphonCollected)
        XCTAssertEqual(component(r, "dataSiphon"), 1.0)
    }

    /// interface §2.2: the mask depends only on the adjacent cell.
    func testDirectionMask() {
        // Blocked up by a siphoned block, down off board, left off board, right free.
        let s = scenario(#"{"player":{"row":0,"col":0},"blocks":[{"row":1,"col":0,"type":"data","siphoned":true}]}"#)
        XCTAssertEqual(Array(actionMask(s)[0..<5]), [false, false, false, true, false])
        // A block with an enemy on it unblocks; a target further away does not.
        let t = scenario(
            #"{"player":{"row":0,"col":0},"blocks":[{"row":1,"col":0,"type":"data"},{"row":0,"col":1,"type":"data"}],"enemies":[{"type":"glitch","row":1,"col":0,"hp":2},{"type":"virus","row":0,"col":3,"hp":2}]}"#
        )
        XCTAssertEqual(Array(actionMask(t)[0..<4]), [true, false, false, false])
    }

    /// interface §2.3: siphon valid iff dataSiphons > 0.
    func testSiphonMask() {
        XCTAssertFalse(actionMask(scenario(#"{"player":{"row":2,"col":2}}"#))[4])
        XCTAssertTrue(actionMask(scenario(#"{"player":{"row":2,"col":2,"dataSiphons":1}}"#))[4])
    }

    /// interface §2.2 edge case: a transmission on a block next to the player —
    /// masked out, yet the action hits it.
    func testTransmissionOnBlockEdgeCase() {
        var s = scenario(
            #"{"player":{"row":0,"col":0},"blocks":[{"row":1,"col":0,"type":"data"}],"transmissions":[{"row":1,"col":0,"turnsRemaining":2,"enemyType":"virus"}]}"#
        )
        XCTAssertFalse(actionMask(s)[0])
        let r = step(&s, 0)
        XCTAssertFalse(r.events.failed)
        XCTAssertTrue(s.transmissions.isEmpty)
    }

    /// rules §3 step 4: moving onto the exit runs no enemy phase.
    func testExitStepRunsNoEnemyPhase() {
        var s = scenario(#"{"player":{"row":5,"col":4},"enemies":[{"type":"virus","row":4,"col":4,"hp":2}]}"#)
        step(&s, 3)
        XCTAssertEqual(s.stage, 2)
        XCTAssertEqual(s.player.hp, 3)
        XCTAssertEqual(s.turn, 0)
        XCTAssertTrue(s.history.isEmpty)
        XCTAssertEqual(s.enemies.first?.pos, Pos(4, 4))  // enemies kept, did not act
    }
}
