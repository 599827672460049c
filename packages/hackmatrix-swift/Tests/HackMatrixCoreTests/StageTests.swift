// Reset, stage generation, validation, completion (rules §9–10).
import XCTest

@testable import HackMatrixCore

final class StageTests: XCTestCase {
    /// rules §10.1–10.2 invariants over many seeded resets.
    func testResetInvariants() {
        var questions = 0
        var dataBlocks = 0
        var total = 0
        var noBlockStages = 0
        for seed in 0..<400 as Range<UInt64> {
            var rng = Rng(seed: seed)
            let s = resetGame(rng: &rng)
            XCTAssertTrue(corners.contains(s.player.pos))
            XCTAssertTrue(corners.contains(s.exitPos))
            XCTAssertNotEqual(s.exitPos, s.player.pos)
            XCTAssertEqual(s.grid[s.exitPos].content, .exit)
            for c in corners where c != s.exitPos && c != s.player.pos {
                XCTAssertEqual(s.grid[c].content, .dataSiphon)
            }
            XCTAssertEqual(s.grid[s.player.pos].content, .empty)
            // Exactly one bonus.
            let p = s.player
            let bonus = [p.credits == 10 && p.energy == 0 && p.siphons == 0,
                         p.credits == 0 && p.energy == 11 && p.siphons == 0,
                         p.credits == 0 && p.energy == 0 && p.siphons == 1]
            XCTAssertEqual(bonus.filter { $0 }.count, 1)
            XCTAssertEqual(p.hp, 3)
            XCTAssertEqual(p.attack, 1)
            XCTAssertEqual([s.stage, s.turn, s.taskInterval, s.nextTaskTurn], [1, 0, 12, 12])
            XCTAssertTrue(s.ownedPrograms.isEmpty && s.enemies.isEmpty && s.history.isEmpty)
            XCTAssertEqual(s.transmissions.count, 1)
            XCTAssertEqual(s.transmissions[0].countdown, 1)
            var blocks = [Bool](repeating: false, count: numCells)
            var programs: [Int] = []
            for k in 0..<numCells {
                let cell = s.grid.cells[k]
                let pos = Pos(k / 6, k % 6)
                if let b = cell.block {
                    blocks[k] = true
                    XCTAssertFalse(pos.isCorner)
                    XCTAssertEqual(cell.resource, .none)
                    total += 1
                    if b.isQuestion { questions += 1 }
                    if b.kind == .data {
                        dataBlocks += 1
                        XCTAssertTrue((1...9).contains(b.points))
                        XCTAssertEqual(b.spawn, b.points)
                    } else {
                        programs.append(b.program)
                        XCTAssertEqual(b.spawn, programSpawn[b.program])
                    }
                } else if cell.content == .exit {
                    XCTAssertEqual(cell.resource, .none)
                } else {
                    XCTAssertNotEqual(cell.resource, .none)
                    XCTAssertTrue((1...3).contains(cell.amount))
                }
                XCTAssertFalse(cell.siphoned || cell.centerMark)
            }
            XCTAssertEqual(Set(programs).count, programs.count)  // distinct per stage
            let n = blocks.filter { $0 }.count
            if n == 0 { noBlockStages += 1 } else { XCTAssertTrue((5...11).contains(n)) }
            XCTAssertTrue(isLayoutValid(blocks: blocks, exit: s.exitPos))
            let tp = s.transmissions[0].pos
            XCTAssertTrue(tp != s.player.pos && !s.grid[tp].hasBlock)
        }
        // Per-block types: question 10 %, data 50 % (rules §10.2).
        XCTAssertEqual(Double(questions) / Double(total), 0.1, accuracy: 0.03)
        XCTAssertEqual(Double(dataBlocks) / Double(total), 0.5, accuracy: 0.05)
        XCTAssertLessThan(noBlockStages, 5)
    }

    /// rules §10.2 V1 quirk: with the exit at (0,0) it acts as a passage.
    func testValidationExitQuirk() {
        var blocks = [Bool](repeating: false, count: numCells)
        blocks[1 * 6 + 1] = true
        blocks[2 * 6 + 0] = true
        XCTAssertTrue(isLayoutValid(blocks: blocks, exit: Pos(0, 0)))
        var mirrored = [Bool](repeating: false, count: numCells)
        mirrored[4 * 6 + 4] = true
        mirrored[5 * 6 + 3] = true
        XCTAssertFalse(isLayoutValid(blocks: mirrored, exit: Pos(5, 5)))
        XCTAssertTrue(isLayoutValid(blocks: mirrored, exit: Pos(0, 5)))
    }

    /// rules §10.2 V2: a block with no orthogonal non-block neighbour is invalid.
    func testValidationSiphonability() {
        var blocks = [Bool](repeating: false, count: numCells)
        // A plus of blocks around (2,2) plus (2,2) itself: (2,2) has no free neighbour.
        for (r, c) in [(2, 2), (3, 2), (1, 2), (2, 1), (2, 3)] { blocks[r * 6 + c] = true }
        XCTAssertFalse(isLayoutValid(blocks: blocks, exit: Pos(5, 5)))
        blocks[2 * 6 + 2] = false
        XCTAssertFalse(isLayoutValid(blocks: blocks, exit: Pos(5, 5)))  // (2,2) is then an enclosed pocket
        blocks[2 * 6 + 3] = false
        XCTAssertTrue(isLayoutValid(blocks: blocks, exit: Pos(5, 5)))
    }

    /// rules §9.2: completion keeps entities, resets per-stage fields.
    func testStageCompletionBookkeeping() {
        var s = scenario(
            #"{"player":{"row":5,"col":5,"hp":1},"enemies":[{"type":"virus","row":0,"col":0,"hp":1,"stunned":true}],"transmissions":[{"row":0,"col":1,"turnsRemaining":2,"enemyType":"glitch"}],"showActivated":true,"scheduledTasksDisabled":true,"turn":7}"#
        )
        s.stepFlag = true
        s.atkUsesThisStage = 2
        s.pendingSiphonSpawns = 4
        s.player.attack = 3
        var rng = Rng(seed: 9)
        let victory = completeStage(&s, rng: &rng)
        XCTAssertFalse(victory)
        XCTAssertEqual(s.stage, 2)
        XCTAssertEqual(s.player.hp, 2)
        XCTAssertEqual(s.player.attack, 3)
        XCTAssertEqual([s.turn, s.taskInterval, s.nextTaskTurn, s.atkUsesThisStage, s.pendingSiphonSpawns], [0, 11, 11, 0, 4])
        XCTAssertFalse(s.showFlag || s.calmFlag || s.stepFlag)
        XCTAssertEqual(s.enemies.count, 1)
        XCTAssertTrue(s.enemies[0].stunned)  // stun survives a stage change
        XCTAssertEqual(s.transmissions.count, 3)  // 1 kept + 2 stage transmissions
        XCTAssertEqual(s.transmissions[0].countdown, 2)
        XCTAssertEqual(s.player.pos, Pos(5, 5))
        XCTAssertNotEqual(s.exitPos, Pos(5, 5))
        // Blocks never on corners or under entities.
        for e in s.enemies { XCTAssertFalse(s.grid[e.pos].hasBlock) }
        for t in s.transmissions { XCTAssertFalse(s.grid[t.pos].hasBlock) }
    }

    /// Same seed, same game; different seeds, different boards.
    func testSeededResetIsReproducible() {
        var a = Rng(seed: 42)
        var b = Rng(seed: 42)
        XCTAssertEqual(resetGame(rng: &a), resetGame(rng: &b))
        var c = Rng(seed: 43)
        var d = Rng(seed: 42)
        XCTAssertNotEqual(resetGame(rng: &c).grid, resetGame(rng: &d).grid)
    }

    /// interface §5.1: the dev-mode pool restricts program blocks; with the pool
    /// exhausted, program draws become data blocks (rules §10.2 G4 step 3).
    func testDevModeProgramPool() {
        let params = GameParams(programPool: [Program.wait.rawValue])
        for seed in 0..<50 as Range<UInt64> {
            var rng = Rng(seed: seed)
            let s = resetGame(rng: &rng, params: params)
            let programs = s.grid.cells.compactMap { $0.block }.filter { $0.kind == .program }
            XCTAssertLessThanOrEqual(programs.count, 1)
            XCTAssertTrue(programs.allSatisfy { $0.program == Program.wait.rawValue })
        }
    }
}
