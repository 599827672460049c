// setState decoding and defaults (interface §5.3, §5.7), the JSON value type,
// observation JSON (§5.4) and the full-state round trip.
import XCTest

@testable import HackMatrixCore

final class ScenarioTests: XCTestCase {
    func parse(_ s: String) -> JSON? { try? JSONParser.parse(s) }

    func testJSONParserDistinguishesTypes() throws {
        let j = try JSONParser.parse(#"{"a":true,"b":1,"c":1.5,"d":null,"e":"x\u00e9\n","f":[1,2],"g":-0,"h":1e2}"#)
        guard case .bool(true) = j["a"]! else { return XCTFail("a") }
        guard case .int(1) = j["b"]! else { return XCTFail("b") }
        guard case .double(1.5) = j["c"]! else { return XCTFail("c") }
        guard case .null = j["d"]! else { return XCTFail("d") }
        guard case .string("xé\n") = j["e"]! else { return XCTFail("e") }
        XCTAssertThrowsError(try asInt(j["a"]!, path: "a"))  // a boolean is never an integer
        XCTAssertEqual(try asInt(j["h"]!, path: "h"), 100)
        XCTAssertThrowsError(try asInt(j["c"]!, path: "c"))
    }

    func testJSONParserRejectsMalformed() {
        for bad in ["", "{", "{\"a\":}", "{} {}", "[1,]", "{\"a\" 1}", "nul", "01", "1.", "\"\\x\"", "{\"a\":1}x",
                    String(repeating: "[", count: 10_000)] {
            XCTAssertNil(parse(bad), bad.prefix(20).description)
        }
        // Huge integers become doubles (and then fail integer decoding).
        guard case .double = parse("123456789012345678901234567890")! else { return XCTFail("huge") }
    }

    func testJSONWriterRoundTrip() throws {
        let j = JSON.object([("s", .string("a\"b\\c\u{1}")), ("i", .int(-3)), ("d", .double(0.04)), ("z", .double(-0.0)),
                             ("b", .bool(false)), ("n", .null), ("a", .array([.int(1), .double(64)]))])
        let back = try JSONParser.parse(j.text)
        XCTAssertEqual(back.text, j.text)
        XCTAssertTrue(j.text.contains("\"d\":0.04"))
        XCTAssertTrue(j.text.contains("64.0"))
    }

    /// interface §5.7 defaults: data points 5, spawn = points, program spawn 2,
    /// programActionIndex ignored, "question" places nothing, exit at (5,5).
    func testSetStateBlockDefaults() {
        let s = scenario(
            #"{"player":{"row":0,"col":0},"blocks":[{"row":1,"col":1,"type":"data"},{"row":1,"col":2,"type":"data","points":3},"#
                + #"{"row":1,"col":3,"type":"program","programType":"ATK_PLUS","programActionIndex":5},{"row":1,"col":4,"type":"question","siphoned":true},"#
                + #"{"row":1,"col":5,"type":"program","programType":"nope"},{"row":9,"col":9,"type":"data"},{"row":5,"col":5,"type":"data"}]}"#
        )
        XCTAssertEqual(s.grid[Pos(1, 1)].block, .data(points: 5, spawn: 5))
        XCTAssertEqual(s.grid[Pos(1, 2)].block, .data(points: 3, spawn: 3))
        XCTAssertEqual(s.grid[Pos(1, 3)].block, .program(Program.atkPlus.rawValue, spawn: 2))
        XCTAssertNil(s.grid[Pos(1, 4)].block)
        XCTAssertTrue(s.grid[Pos(1, 4)].siphoned)
        XCTAssertNil(s.grid[Pos(1, 5)].block)
        XCTAssertEqual(s.grid[Pos(5, 5)].content, .exit)  // the exit overwrites the block
        XCTAssertEqual(s.exitPos, Pos(5, 5))
        XCTAssertEqual([s.taskInterval, s.nextTaskTurn, s.stage, s.turn], [12, 12, 1, 0])
    }

    /// interface §5.7: resources precedence, hp mapping, enemy parsing, owned list.
    func testSetStateOtherFields() {
        let s = scenario(
            #"{"player":{"row":2,"col":3,"hp":7,"score":4},"resources":[{"row":0,"col":1,"credits":2,"energy":3},{"row":0,"col":2,"credits":0,"energy":3},"#
                + #"{"row":0,"col":3,"dataSiphon":true,"credits":5},{"row":5,"col":5,"energy":2}],"#
                + #""enemies":[{"type":"Daemon","row":4,"col":4,"hp":9,"stunned":true},{"type":"dragon","row":1,"col":1,"hp":1},{"type":"cryptog","row":3,"col":0,"hp":2,"isFromScheduledTask":true}],"#
                + #""transmissions":[{"row":2,"col":2,"turnsRemaining":0,"enemyType":"VIRUS"},{"row":2,"col":1,"turnsRemaining":2,"enemyType":"x"}],"#
                + #""ownedPrograms":[27,4,5,27,30],"stage":4,"turn":9,"showActivated":true}"#
        )
        XCTAssertEqual(s.player.hp, 3)
        XCTAssertEqual(s.player.score, 4)
        XCTAssertEqual(s.grid[Pos(0, 1)].resource, .credits)
        XCTAssertEqual(s.grid[Pos(0, 2)].resource, .energy)
        XCTAssertEqual(s.grid[Pos(0, 3)].content, .dataSiphon)
        XCTAssertEqual(s.grid[Pos(0, 3)].resource, .none)
        XCTAssertEqual(s.grid[Pos(5, 5)].content, .exit)
        XCTAssertEqual(s.grid[Pos(5, 5)].energy, 2)  // the exit keeps the cell's resources
        XCTAssertEqual(enemyKinds(s), [.daemon, .cryptog])
        XCTAssertEqual(s.enemies[0].hp, 9)
        XCTAssertTrue(s.enemies[0].stunned)
        XCTAssertEqual(s.enemies[0].disabled, 0)
        XCTAssertTrue(s.enemies[1].fromTask)
        XCTAssertEqual(s.enemies[1].lastKnown, Pos(3, 0))
        XCTAssertEqual(s.transmissions.count, 1)
        XCTAssertEqual(s.transmissions[0].countdown, 0)
        XCTAssertEqual(s.ownedPrograms, [22, 0, 22])
        XCTAssertEqual([s.stage, s.turn, s.taskInterval, s.nextTaskTurn], [4, 9, 12, 12])
        XCTAssertTrue(s.showFlag)
    }

    /// interface §5.3: wrong types and missing required fields are errors; null = absent.
    func testSetStateDecodingErrors() {
        let bad = [
            #"{"player":{"row":0}}"#, #"{"player":{"row":0,"col":true}}"#, #"{"player":{"row":0,"col":0},"stage":"2"}"#,
            #"{"player":{"row":0,"col":0},"enemies":[{"type":"virus","row":1,"col":1}]}"#,
            #"{"player":{"row":0,"col":0},"transmissions":[{"row":1,"col":1,"turnsRemaining":1}]}"#,
            #"{"player":{"row":0,"col":0},"showActivated":1}"#, #"{"player":null}"#, #"[]"#,
            #"{"player":{"row":0,"col":0},"ownedPrograms":[true]}"#,
        ]
        for b in bad {
            XCTAssertThrowsError(try stateFromJSON(try JSONParser.parse(b)), b) { e in
                XCTAssertTrue(e is DecodeError, b)
            }
        }
        XCTAssertNoThrow(try stateFromJSON(try JSONParser.parse(#"{"player":{"row":0,"col":0,"hp":null},"stage":null,"extra":{"x":1}}"#)))
        for range in [#"{"player":{"row":6,"col":0}}"#, #"{"player":{"row":0,"col":0,"hp":4294967296}}"#,
                      #"{"player":{"row":0,"col":0},"turn":-3000000000}"#, #"{"player":{"row":0,"col":0},"stage":0}"#,
                      #"{"player":{"row":0,"col":0},"enemies":[{"type":"virus","row":0,"col":1,"hp":9999999999}]}"#] {
            XCTAssertThrowsError(try stateFromJSON(try JSONParser.parse(range)), range) { e in
                XCTAssertTrue(e is StateRangeError, range)
            }
        }
    }

    /// interface §5.4: observation JSON fields and hiding rules.
    func testObservationJSON() throws {
        var s = scenario(
            #"{"player":{"row":0,"col":0},"enemies":[{"type":"cryptog","row":3,"col":3,"hp":2},{"type":"virus","row":0,"col":4,"hp":1,"spawnedFromSiphon":true}],"#
                + #""blocks":[{"row":2,"col":2,"type":"program","programType":"warp"}],"transmissions":[{"row":4,"col":4,"turnsRemaining":2,"enemyType":"glitch"}],"#
                + #""resources":[{"row":1,"col":1,"credits":3}]}"#
        )
        s.grid[Pos(2, 3)].content = .block(.data(points: 7, spawn: 7, question: true))
        var o = observationJSON(s)
        let cells = o["cells"]!
        guard case .array(let rows) = cells, case .array(let row3) = rows[3], case .array(let row0) = rows[0],
            case .array(let row2) = rows[2], case .array(let row4) = rows[4], case .array(let row1) = rows[1]
        else { return XCTFail("cells") }
        XCTAssertNil(row3[3]["enemy"])  // hidden cryptog
        XCTAssertEqual(o["cryptogHints"]!.text, #"[{"row":3,"col":3}]"#)
        XCTAssertEqual(row0[4]["enemy"]!.text, #"{"type":"virus","hp":1,"isStunned":false,"spawnedFromSiphon":true}"#)
        XCTAssertEqual(
            row2[2]["block"]!.text,
            #"{"blockType":"program","isSiphoned":false,"points":0,"programType":"warp","programActionIndex":8,"transmissionSpawnCount":2}"#)
        XCTAssertEqual(row2[3]["block"]!.text, #"{"blockType":"question","isSiphoned":false}"#)
        XCTAssertEqual(row4[4]["transmission"]!.text, #"{"turnsUntilSpawn":2}"#)
        XCTAssertEqual(row1[1]["credits"]!.text, "3")
        s.showFlag = true
        o = observationJSON(s)
        guard case .array(let rows2) = o["cells"]!, case .array(let r3) = rows2[3], case .array(let r4) = rows2[4] else {
            return XCTFail("cells")
        }
        XCTAssertNotNil(r3[3]["enemy"])
        XCTAssertEqual(o["cryptogHints"]!.text, "[]")
        XCTAssertEqual(r4[4]["transmission"]!.text, #"{"turnsUntilSpawn":2,"enemyType":"glitch"}"#)
    }

    /// getFullState / setFullState are exact inverses, history included.
    func testFullStateRoundTrip() throws {
        var rng = Rng(seed: 11)
        var s = resetGame(rng: &rng)
        var policy = Rng(seed: 12)
        for _ in 0..<60 {
            let valid = validActions(s)
            if valid.isEmpty { break }
            let r = stepGame(&s, action: valid[policy.int(below: valid.count)], rng: &rng)
            if r.done { s = resetGame(rng: &rng) }
        }
        s.grid[Pos(2, 2)].content = .block(.program(3, spawn: 1, question: true))
        let j = fullStateJSON(s, includeHistory: true)
        let back = try fullStateFromJSON(try JSONParser.parse(j.text))
        XCTAssertEqual(back, s)
        let noHistory = try fullStateFromJSON(try JSONParser.parse(fullStateJSON(s, includeHistory: false).text))
        XCTAssertTrue(noHistory.history.isEmpty)
        XCTAssertEqual(noHistory.grid, s.grid)
    }

    func testGetInternalStateWithoutGame() {
        XCTAssertEqual(
            internalStateJSON(nil).text,
            #"{"scheduledTaskInterval":0,"nextScheduledTaskTurn":0,"pendingSiphonTransmissions":0,"turnCount":0,"enemies":[]}"#)
    }
}
