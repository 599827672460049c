// The protocol (interface §5): in-process through `Server.handle`, and through
// a pipe to the built binary, including malformed input.
import Foundation
import XCTest

@testable import HackMatrixCore
@testable import hackmatrix_headless

final class ProtocolTests: XCTestCase {
    func server(seed: UInt64 = 1) -> Server {
        Server(seed: seed, params: GameParams(), logLevel: .quiet, log: { _ in })
    }

    func reply(_ s: inout Server, _ line: String) -> JSON {
        let text = s.handle(line)
        XCTAssertFalse(text.contains("\n"))
        return try! JSONParser.parse(text)
    }

    /// interface §5.5 commands and §5.6 error messages; our error lines replace the aborts.
    func testCommandsAndErrors() {
        var s = server()
        XCTAssertEqual(reply(&s, #"{"action":"getValidActions"}"#).text, #"{"validActions":[]}"#)
        XCTAssertEqual(reply(&s, #"{"action":"step","actionIndex":0}"#)["error"]!.text, #""No game: send reset or setState before step""#)
        XCTAssertEqual(reply(&s, #"{"action":"getActionSpace"}"#).text, #"{"actionSpaceSize":28}"#)
        XCTAssertEqual(
            reply(&s, #"{"action":"getObservationSpace"}"#).text, #"{"gridSize":6,"playerFeatures":9,"cellFeatures":20}"#)
        XCTAssertEqual(reply(&s, #"{"action":"nope"}"#).text, #"{"error":"Unknown command: nope"}"#)
        XCTAssertEqual(reply(&s, #"{"action":"setState"}"#).text, #"{"error":"Missing state data for setState command"}"#)
        XCTAssertEqual(reply(&s, #"{"action":"setState","state":null}"#).text, #"{"error":"Missing state data for setState command"}"#)
        for bad in ["", "x", "{}", #"{"action":1}"#, #"{"action":"step","actionIndex":"1"}"#, #"{"action":"reset"} {}"#,
                    #"{"action":"reset","state":{"player":{}}}"#, #"{"action":"reset","seed":true}"#] {
            XCTAssertEqual(reply(&s, bad).text, #"{"error":"Invalid command"}"#, bad)
        }
        _ = reply(&s, #"{"action":"setState","state":{"player":{"row":0,"col":0}}}"#)
        XCTAssertEqual(reply(&s, #"{"action":"step"}"#).text, #"{"error":"Missing actionIndex"}"#)
        XCTAssertEqual(reply(&s, #"{"action":"step","actionIndex":28}"#).text, #"{"error":"actionIndex out of range 0..27: 28"}"#)
        XCTAssertEqual(reply(&s, #"{"action":"getValidActions"}"#).text, #"{"validActions":[0,3]}"#)
        let r = reply(&s, "{\"action\":\"step\",\"actionIndex\":0}\r")
        guard case .double(let reward) = r["reward"]! else { return XCTFail("reward") }
        XCTAssertEqual(reward, 0.04, accuracy: 1e-12)
        guard case .object(let breakdown) = r["info"]!["reward_breakdown"]! else { return XCTFail("breakdown") }
        XCTAssertEqual(breakdown.map { $0.0 }, swiftBreakdownKeys.map { $0.0 })
        XCTAssertEqual(
            reply(&s, #"{"action":"getInternalState"}"#).text,
            #"{"scheduledTaskInterval":12,"nextScheduledTaskTurn":12,"pendingSiphonTransmissions":0,"turnCount":1,"enemies":[]}"#)
    }

    /// Our extension: `reset` with a seed is reproducible, whatever came before.
    func testSeededReset() {
        var a = server(seed: 1)
        var b = server(seed: 2)
        _ = reply(&b, #"{"action":"reset"}"#)
        XCTAssertEqual(a.handle(#"{"action":"reset","seed":-5}"#), b.handle(#"{"action":"reset","seed":-5}"#))
        XCTAssertEqual(a.handle(#"{"action":"step","actionIndex":10}"#), b.handle(#"{"action":"step","actionIndex":10}"#))
    }

    /// The built binary over a pipe: only protocol lines on stdout, one per request.
    func testBinaryOverPipe() throws {
        let bin = productsDirectory.appendingPathComponent("hackmatrix-headless")
        guard FileManager.default.fileExists(atPath: bin.path) else { throw XCTSkip("binary not built") }
        let p = Process()
        p.executableURL = bin
        p.arguments = ["--headless-cli", "--debug", "--seed", "3"]
        let input = Pipe()
        let output = Pipe()
        p.standardInput = input
        p.standardOutput = output
        p.standardError = FileHandle.nullDevice
        try p.run()
        var lines = [#"{"action":"reset"}"#, "garbage", #"{"action":"step","actionIndex":"#,
                     #"{"action":"step","actionIndex":99999999999999999999999}"#, #"{"action":"frob"}"#]
        for k in 0..<300 { lines.append(#"{"action":"step","actionIndex":\#(k % 28)}"#) }
        input.fileHandleForWriting.write((lines.joined(separator: "\n") + "\n").data(using: .utf8)!)
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        let out = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertEqual(out.count, lines.count + 1)  // one line each, then the final newline
        for l in out.dropLast() { XCTAssertNoThrow(try JSONParser.parse(String(l))) }
        XCTAssertEqual(out[1], #"{"error":"Invalid command"}"#)
        XCTAssertEqual(out[2], #"{"error":"Invalid command"}"#)
        XCTAssertEqual(out[3], #"{"error":"Invalid command"}"#)
        XCTAssertEqual(out[4], #"{"error":"Unknown command: frob"}"#)
    }

    var productsDirectory: URL {
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            return bundle.bundleURL.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug")
    }
}
