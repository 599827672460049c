// BFS distance (interface §4.5) and enemy steps (rules §7.6).
import XCTest

@testable import HackMatrixCore

final class PathfindingTests: XCTestCase {
    func testBfsDistance() {
        let s = scenario(#"{"player":{"row":0,"col":0},"blocks":[{"row":1,"col":0,"type":"data"},{"row":1,"col":1,"type":"data"}]}"#)
        XCTAssertEqual(bfsDistance(s.grid, from: Pos(0, 0), to: Pos(5, 5)), 10)
        XCTAssertEqual(bfsDistance(s.grid, from: Pos(0, 0), to: Pos(2, 0)), 6)  // around the wall
        XCTAssertEqual(bfsDistance(s.grid, from: Pos(0, 0), to: Pos(1, 0)), 1)  // the target may be a block
        XCTAssertEqual(bfsDistance(s.grid, from: Pos(3, 3), to: Pos(3, 3)), 0)
    }

    func testNoPathCountsAsZero() {
        let s = scenario(#"{"player":{"row":0,"col":0},"blocks":[{"row":1,"col":0,"type":"data"},{"row":0,"col":1,"type":"data"}]}"#)
        XCTAssertNil(bfsDistance(s.grid, from: Pos(0, 0), to: Pos(5, 5)))
        XCTAssertEqual(distanceToExit(s), 0)
    }

    /// interface §4.5: enemies and transmissions are not obstacles for the reward BFS.
    func testEntitiesAreNotObstacles() {
        let s = scenario(#"{"player":{"row":0,"col":4},"enemies":[{"type":"daemon","row":1,"col":4,"hp":3}],"transmissions":[{"row":0,"col":5,"turnsRemaining":1,"enemyType":"virus"}]}"#)
        XCTAssertEqual(distanceToExit(s), 6)
    }

    /// rules §7.6: in open space the row difference is closed first (Up/Down before Left/Right).
    func testCanonicalTieBreak() {
        let s = scenario(#"{"player":{"row":5,"col":5},"enemies":[{"type":"daemon","row":0,"col":0,"hp":3}]}"#)
        XCTAssertEqual(nextEnemyStep(s, enemy: 0), Pos(1, 0))
        let t = scenario(#"{"player":{"row":0,"col":0},"enemies":[{"type":"daemon","row":5,"col":5,"hp":3}]}"#)
        XCTAssertEqual(nextEnemyStep(t, enemy: 0), Pos(4, 5))
    }

    /// rules §7.6 tier 1: other enemies and transmissions are avoided when a path exists.
    func testTierOneDetour() {
        let s = scenario(
            #"{"player":{"row":0,"col":0},"enemies":[{"type":"daemon","row":3,"col":0,"hp":3}],"transmissions":[{"row":2,"col":0,"turnsRemaining":5,"enemyType":"virus"}]}"#
        )
        XCTAssertEqual(nextEnemyStep(s, enemy: 0), Pos(3, 1))
    }
}
