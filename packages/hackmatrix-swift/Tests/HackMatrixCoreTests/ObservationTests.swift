// The observation tensor (interface §3).
import XCTest

@testable import HackMatrixCore

final class ObservationTests: XCTestCase {
    func testPlayerVector() {
        var s = scenario(
            #"{"player":{"row":5,"col":2,"hp":2,"credits":100,"energy":25,"dataSiphons":12,"attackDamage":4},"stage":3,"showActivated":true,"ownedPrograms":[5,27]}"#
        )
        s.calmFlag = false
        let o = observe(s)
        XCTAssertEqual(o.player, [1.0, 0.4, Float(2.0 / 3.0), 1.0, 0.5, Float(2.0 / 7.0), 1.2, 1.5, 1.0, 0.0])
        var programs = [Int32](repeating: 0, count: 23)
        programs[0] = 1
        programs[22] = 1
        XCTAssertEqual(o.programs, programs)
        XCTAssertEqual(o.flat.count, flatObsSize)
    }

    func testGridChannels() {
        var s = scenario(
            #"{"player":{"row":0,"col":0},"enemies":[{"type":"daemon","row":1,"col":1,"hp":2,"stunned":true,"spawnedFromSiphon":true},{"type":"virus","row":1,"col":1,"hp":1}],"#
                + #""blocks":[{"row":2,"col":2,"type":"data","points":9,"spawnCount":3},{"row":2,"col":3,"type":"program","programType":"hack","siphoned":true}],"#
                + #""transmissions":[{"row":4,"col":4,"turnsRemaining":9,"enemyType":"virus"},{"row":4,"col":4,"turnsRemaining":1,"enemyType":"virus"}],"#
                + #""resources":[{"row":3,"col":3,"energy":2},{"row":0,"col":5,"dataSiphon":true}]}"#
        )
        s.grid[Pos(2, 2)].resource = .credits  // hidden under an unsiphoned block
        s.grid[Pos(2, 2)].amount = 3
        s.grid[Pos(2, 3)].resource = .credits  // visible: the block is siphoned
        s.grid[Pos(2, 3)].amount = 5
        let o = observe(s)
        // First enemy on (1,1) only.
        XCTAssertEqual((0..<7).map { channel(o, 1, 1, $0) }, [0, 1, 0, 0, Float(2.0 / 3.0), 1, 1])
        XCTAssertEqual(channel(o, 2, 2, 7), 1)
        XCTAssertEqual(channel(o, 2, 2, 10), 1)
        XCTAssertEqual(channel(o, 2, 2, 35), Float(3.0 / 9.0))
        XCTAssertEqual(channel(o, 2, 2, 37), 0)
        XCTAssertEqual(channel(o, 2, 3, 8), 1)
        XCTAssertEqual(channel(o, 2, 3, 11), 1)
        XCTAssertEqual(channel(o, 2, 3, 12 + 22), 1)
        XCTAssertEqual(channel(o, 2, 3, 35), Float(2.0 / 9.0))  // setState keeps the given spawn
        XCTAssertEqual(channel(o, 2, 3, 37), Float(5.0 / 3.0))  // not clipped
        XCTAssertEqual(channel(o, 4, 4, 36), 1)  // first transmission: min(9/4, 1)
        XCTAssertEqual(channel(o, 3, 3, 38), Float(2.0 / 3.0))
        XCTAssertEqual(channel(o, 0, 5, 39), 1)
        XCTAssertEqual(channel(o, 5, 5, 40), 1)
        XCTAssertEqual(channel(o, 0, 0, 41), 0)
        XCTAssertEqual(channel(o, 2, 2, 11), 0)
    }

    /// interface §3.5: a cryptog is visible in the player's row/column or with SHOW.
    func testCryptogVisibility() {
        var s = scenario(#"{"player":{"row":0,"col":0},"enemies":[{"type":"cryptog","row":3,"col":3,"hp":2},{"type":"cryptog","row":0,"col":4,"hp":2}]}"#)
        var o = observe(s)
        XCTAssertEqual(channel(o, 3, 3, 3), 0)
        XCTAssertEqual(channel(o, 3, 3, 4), 0)
        XCTAssertEqual(channel(o, 0, 4, 3), 1)
        s.showFlag = true
        o = observe(s)
        XCTAssertEqual(channel(o, 3, 3, 3), 1)
    }
}
