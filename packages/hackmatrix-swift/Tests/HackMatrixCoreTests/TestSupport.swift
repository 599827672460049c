// Shared helpers: scenarios are written as setState JSON (interface §5.7), the
// same form the spec uses for its worked examples.
import XCTest

@testable import HackMatrixCore

/// Build a state from a setState STATE JSON string.
func scenario(_ json: String, file: StaticString = #filePath, line: UInt = #line) -> GameState {
    do {
        return try stateFromJSON(try JSONParser.parse(json))
    } catch {
        XCTFail("bad scenario: \(error)", file: file, line: line)
        return GameState(player: Player(pos: Pos(0, 0)))
    }
}

/// Step with a fixed-seed rng (deterministic scenarios do not draw).
@discardableResult
func step(_ s: inout GameState, _ a: Int, seed: UInt64 = 1) -> StepResult {
    var rng = Rng(seed: seed)
    return stepGame(&s, action: a, rng: &rng)
}

/// Breakdown value by Swift key (interface §5.5).
func component(_ r: StepResult, _ swiftKey: String) -> Double {
    if swiftKey == "stepPenalty" { return r.breakdown[0] }
    let name = swiftBreakdownKeys.first { $0.0 == swiftKey }!.1
    return r.breakdown[rewardComponents.firstIndex(of: name)!]
}

/// Assert the listed components, and that every unlisted one is 0.
func assertBreakdown(
    _ r: StepResult, _ expected: [String: Double], total: Double, file: StaticString = #filePath, line: UInt = #line
) {
    var all = expected
    if all["stepPenalty"] == nil { all["stepPenalty"] = -0.01 }
    let keys = ["stepPenalty"] + swiftBreakdownKeys.map { $0.0 }
    for k in keys {
        XCTAssertEqual(component(r, k), all[k] ?? 0, accuracy: 1e-9, "component \(k)", file: file, line: line)
    }
    XCTAssertEqual(r.reward, total, accuracy: 1e-9, "total", file: file, line: line)
}

func enemyKinds(_ s: GameState) -> [EnemyKind] { s.enemies.map { $0.kind } }
func enemyPositions(_ s: GameState) -> [Pos] { s.enemies.map { $0.pos } }

/// Channel `ch` of cell (r, c) of the observation tensor.
func channel(_ o: Observation, _ r: Int, _ c: Int, _ ch: Int) -> Float { o.grid[(r * gridSize + c) * gridChannels + ch] }
