// Siphon (rules §5) and siphon quality (interface §4.6).
import XCTest

@testable import HackMatrixCore

final class SiphonTests: XCTestCase {
    /// The worked example of rules §5.
    func testWorkedExample() {
        var s = scenario(
            #"{"player":{"row":2,"col":2,"dataSiphons":1},"blocks":[{"row":3,"col":2,"type":"data","points":7},"#
                + #"{"row":2,"col":1,"type":"program","programType":"crash","spawnCount":4},{"row":2,"col":3,"type":"data","points":2,"siphoned":true}],"#
                + #""resources":[{"row":2,"col":2,"credits":2},{"row":1,"col":2,"energy":1}],"scheduledTasksDisabled":true}"#
        )
        var ev = StepEvents()
        applySiphon(&s, events: &ev)
        XCTAssertEqual(s.player.score, 7)
        XCTAssertEqual(s.ownedPrograms, [Program.crash.rawValue])
        XCTAssertEqual(s.player.credits, 2)
        XCTAssertEqual(s.player.energy, 1)
        XCTAssertEqual(s.pendingSiphonSpawns, 11)
        for p in [Pos(2, 2), Pos(3, 2), Pos(2, 1), Pos(1, 2)] { XCTAssertTrue(s.grid[p].siphoned, "\(p)") }
        XCTAssertEqual(s.grid[Pos(2, 3)].block?.spawn, 2)  // already siphoned: untouched
        XCTAssertEqual(s.grid[Pos(3, 2)].block?.spawn, 0)
        XCTAssertEqual(s.grid[Pos(2, 1)].block?.spawn, 0)
        XCTAssertEqual(s.grid[Pos(3, 2)].block?.points, 7)
        XCTAssertTrue(s.grid[Pos(2, 2)].centerMark)
        XCTAssertEqual(s.player.siphons, 0)
        XCTAssertEqual(s.taskInterval, 11)
        XCTAssertEqual(s.nextTaskTurn, 17)
    }

    /// rules §5: siphoning with nothing in range is legal and still moves the clock.
    func testEmptySiphon() {
        var s = scenario(#"{"player":{"row":0,"col":0,"dataSiphons":2}}"#)
        let r = step(&s, 4)
        XCTAssertFalse(r.events.failed)
        XCTAssertEqual(s.player.siphons, 1)
        XCTAssertEqual(s.taskInterval, 11)
        XCTAssertEqual(s.nextTaskTurn, 17)
        // Corner cross: 3 cells marked.
        XCTAssertEqual(s.grid.cells.filter { $0.siphoned }.count, 3)
        XCTAssertEqual(component(r, "siphonQuality"), 0)
    }

    /// rules §5: the interval never drops below 4.
    func testIntervalFloor() {
        var s = scenario(#"{"player":{"row":0,"col":0,"dataSiphons":10}}"#)
        for _ in 0..<9 { step(&s, 4) }
        XCTAssertEqual(s.taskInterval, 4)
    }

    /// rules §5: owning the program already gives nothing, but the spawns are queued.
    func testOwnedProgramStillSpawns() {
        var s = scenario(
            #"{"player":{"row":2,"col":2,"dataSiphons":1},"ownedPrograms":[7],"blocks":[{"row":3,"col":2,"type":"program","programType":"crash","spawnCount":6}]}"#
        )
        var ev = StepEvents()
        applySiphon(&s, events: &ev)
        XCTAssertEqual(s.ownedPrograms, [2])
        XCTAssertEqual(s.pendingSiphonSpawns, 6)
    }

    /// rules §5: a question block resolves to its hidden content and becomes plain.
    func testQuestionBlockResolves() {
        var s = scenario(#"{"player":{"row":2,"col":2,"dataSiphons":1}}"#)
        s.grid[Pos(3, 2)].content = .block(.program(Program.hack.rawValue, spawn: 4, question: true))
        s.grid[Pos(1, 2)].content = .block(.data(points: 6, spawn: 6, question: true))
        let o = observe(s)
        XCTAssertEqual(channel(o, 3, 2, 9), 1)
        XCTAssertEqual(channel(o, 3, 2, 35), 0)  // hidden spawn count
        XCTAssertEqual(channel(o, 1, 2, 10), 0)  // hidden points
        var ev = StepEvents()
        applySiphon(&s, events: &ev)
        XCTAssertEqual(s.player.score, 6)
        XCTAssertEqual(s.ownedPrograms, [Program.hack.rawValue])
        XCTAssertEqual(s.pendingSiphonSpawns, 10)
        XCTAssertEqual(s.grid[Pos(3, 2)].block?.isQuestion, false)
        XCTAssertEqual(s.grid[Pos(1, 2)].block?.isQuestion, false)
    }

    /// interface §4.6: ties are never better; strict dominance needs the same V and S.
    func testQualityTiesAreNotBetter() {
        // P=(2,2) yields credits 2 from (2,1); (4,2) would yield credits 2 from (5,2) -> tie.
        let s = scenario(
            #"{"player":{"row":2,"col":2,"dataSiphons":1},"blocks":[{"row":3,"col":2,"type":"data","points":4}],"#
                + #""resources":[{"row":2,"col":1,"credits":2},{"row":5,"col":2,"credits":2}]}"#
        )
        XCTAssertEqual(siphonQuality(s).0, false)
    }

    /// interface §4.6: missed credits and energy are maximised independently.
    func testQualityIndependentMaxima() {
        // Nothing valued in P's cross -> every non-block cell is a candidate.
        let s = scenario(
            #"{"player":{"row":0,"col":0,"dataSiphons":1},"resources":[{"row":3,"col":3,"credits":3},{"row":5,"col":0,"energy":2}]}"#
        )
        let (found, mc, me) = siphonQuality(s)
        XCTAssertTrue(found)
        XCTAssertEqual(mc, 3)
        XCTAssertEqual(me, 2)
    }

    /// interface §4.6: a block under P gives an empty yield.
    func testYieldOnBlockIsEmpty() {
        let s = scenario(#"{"player":{"row":2,"col":2},"blocks":[{"row":2,"col":2,"type":"data"}],"resources":[{"row":2,"col":1,"credits":2}]}"#)
        XCTAssertEqual(siphonYield(s, at: Pos(2, 2)), SiphonYield())
    }
}
