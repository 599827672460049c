// Property tests over random play: the mask agrees with the step (interface
// §2), failed actions leave the state untouched, and invariants hold.
import XCTest

@testable import HackMatrixCore

final class MaskTests: XCTestCase {
    /// Visit states by random masked play; in each, try all 28 actions.
    func testMaskMatchesStep() {
        var rng = Rng(seed: 2024)
        var policy = Rng(seed: 77)
        var s = resetGame(rng: &rng)
        var checked = 0
        for _ in 0..<1500 {
            let mask = actionMask(s)
            for a in 0..<numActions {
                var t = s
                var r2 = rng
                let res = stepGame(&t, action: a, rng: &r2)
                XCTAssertEqual(res.events.failed, !mask[a], "action \(a)")
                if res.events.failed {
                    XCTAssertEqual(t, s)
                    XCTAssertEqual(res.reward, 0)
                    XCTAssertTrue(res.done)
                } else {
                    XCTAssertEqual(res.reward - res.breakdown.dropFirst().reduce(0, +), -0.01, accuracy: 1e-9)
                }
                checked += 1
            }
            let valid = validActions(s)
            XCTAssertFalse(valid.isEmpty)  // WAIT needs energy; directions almost always exist
            if valid.isEmpty { break }
            let r = stepGame(&s, action: valid[policy.int(below: valid.count)], rng: &rng)
            assertInvariants(s)
            if r.done { s = resetGame(rng: &rng) }
        }
        XCTAssertEqual(checked, 1500 * numActions)
    }

    func assertInvariants(_ s: GameState, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue((0...3).contains(s.player.hp), file: file, line: line)
        XCTAssertTrue(s.player.pos.inBounds, file: file, line: line)
        XCTAssertTrue((1...8).contains(s.stage), file: file, line: line)
        XCTAssertTrue(s.player.credits >= 0 && s.player.energy >= 0 && s.player.siphons >= 0, file: file, line: line)
        XCTAssertTrue(s.taskInterval >= 4, file: file, line: line)
        XCTAssertTrue(s.atkUsesThisStage <= 2, file: file, line: line)
        XCTAssertEqual(s.grid.cells.filter { $0.content == .exit }.count <= 1, true, file: file, line: line)
        for e in s.enemies {
            XCTAssertTrue(e.pos.inBounds && e.hp >= 1 && e.hp <= enemyMaxHp[e.kind.rawValue], file: file, line: line)
            XCTAssertEqual(e.disabled, 0, file: file, line: line)  // always 0 between steps (rules §2.5)
        }
        for t in s.transmissions {
            XCTAssertTrue(t.pos.inBounds && t.countdown >= 1, file: file, line: line)
            XCTAssertFalse(s.grid[t.pos].hasBlock, file: file, line: line)  // never on a block in generated games
        }
        XCTAssertEqual(Set(s.ownedPrograms).count, s.ownedPrograms.count, file: file, line: line)
        for c in s.grid.cells where c.hasBlock { XCTAssertEqual(c.resource, .none, file: file, line: line) }
    }
}
