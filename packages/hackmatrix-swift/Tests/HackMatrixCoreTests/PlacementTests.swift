// Standard transmission placement (rules §8).
import Foundation
import XCTest

@testable import HackMatrixCore

final class PlacementTests: XCTestCase {
    /// rules §8: transmissions do not shield; enemies and blocks do.
    func testLineOfFireDefinition() {
        let s = scenario(
            #"{"player":{"row":0,"col":0},"transmissions":[{"row":0,"col":2,"turnsRemaining":1,"enemyType":"virus"}],"enemies":[{"type":"virus","row":2,"col":0,"hp":2}],"blocks":[{"row":3,"col":3,"type":"data"}]}"#
        )
        XCTAssertTrue(s.isInPlacementLineOfFire(Pos(0, 4)))  // behind a transmission
        XCTAssertTrue(s.isInPlacementLineOfFire(Pos(1, 0)))
        XCTAssertFalse(s.isInPlacementLineOfFire(Pos(4, 0)))  // behind an enemy
        XCTAssertFalse(s.isInPlacementLineOfFire(Pos(3, 4)))  // other row and column
        XCTAssertFalse(s.isEmptyForPlacement(Pos(0, 0)))  // player
        XCTAssertFalse(s.isEmptyForPlacement(Pos(0, 2)))  // transmission
        XCTAssertFalse(s.isEmptyForPlacement(Pos(2, 0)))  // enemy
        XCTAssertFalse(s.isEmptyForPlacement(Pos(3, 3)))  // block
        XCTAssertTrue(s.isEmptyForPlacement(Pos(5, 5)))  // the exit counts as empty
    }

    /// rules §8 distribution note: with one out-of-line empty cell (|E1| = 1) the
    /// preferred search fails with probability (35/36)^100 ≈ 6 %, and the
    /// fallback is uniform over E0 (3 cells): P(an in-line cell) ≈ 0.0397.
    func testHundredTryLimit() {
        var blocks: [String] = []
        for r in 0..<6 {
            for c in 0..<6 where ![(0, 0), (0, 1), (1, 0), (5, 5)].contains(where: { $0 == (r, c) }) {
                blocks.append(#"{"row":\#(r),"col":\#(c),"type":"data"}"#)
            }
        }
        let s = scenario(#"{"player":{"row":0,"col":0},"blocks":[\#(blocks.joined(separator: ","))]}"#)
        // (5,5) holds the exit, which counts as empty; (0,1) and (1,0) are in line.
        var inLine = 0
        let trials = 4000
        for seed in 0..<UInt64(trials) {
            var rng = Rng(seed: seed)
            guard let p = drawPlacementCell(s, rng: &rng) else { continue }  // both loops failed: ~1e-5
            XCTAssertTrue([Pos(0, 1), Pos(1, 0), Pos(5, 5)].contains(p))
            if p != Pos(5, 5) { inLine += 1 }
        }
        let expected = pow(35.0 / 36.0, 100) * (2.0 / 3.0)  // ≈ 0.0397
        XCTAssertEqual(Double(inLine) / Double(trials), expected, accuracy: 0.015)
    }

    /// rules §8: with no empty cell nothing is placed and no type is drawn.
    func testNoEmptyCell() {
        var blocks: [String] = []
        for r in 0..<6 { for c in 0..<6 where (r, c) != (0, 0) { blocks.append(#"{"row":\#(r),"col":\#(c),"type":"data"}"#) } }
        var s = scenario(#"{"player":{"row":0,"col":0},"blocks":[\#(blocks.joined(separator: ","))]}"#)
        // setState puts the exit on (5,5), replacing the block: make it a block again.
        s.grid[Pos(5, 5)].content = .block(.data(points: 1, spawn: 1))
        var rng = Rng(seed: 1)
        XCTAssertEqual(placeTransmissions(&s, count: 2, fromTask: true, fromSiphon: false, rng: &rng), 0)
        XCTAssertTrue(s.transmissions.isEmpty)
    }

    /// A huge owed count on a full board ends (our shortcut: no empty cell -> stop drawing).
    func testHugeBatchTerminates() {
        var s = scenario(#"{"player":{"row":0,"col":0}}"#)
        var rng = Rng(seed: 2)
        XCTAssertEqual(placeTransmissions(&s, count: Int(Int32.max), fromTask: false, fromSiphon: true, rng: &rng), 35)
    }

    /// rules §8: a batch sees its own earlier placements; cells are distinct.
    func testBatchCellsDistinct() {
        var s = scenario(#"{"player":{"row":0,"col":0}}"#)
        var rng = Rng(seed: 5)
        XCTAssertEqual(placeTransmissions(&s, count: 20, fromTask: false, fromSiphon: true, rng: &rng), 20)
        XCTAssertEqual(Set(s.transmissions.map { $0.pos }).count, 20)
        XCTAssertFalse(s.transmissions.contains { $0.pos == Pos(0, 0) })
    }
}
