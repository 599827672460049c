// The JSON-lines protocol of interface §5, plus our extensions (specs/swift.md):
// `reset` with an optional integer `seed`, `version`, `getFullState`,
// `setFullState`, `render`, and an error line (instead of an abort) for a step
// before any game, an action index outside 0..27 and malformed input.

import HackMatrixCore

let binaryVersion = "0.1.0"

/// Log verbosity chosen on the command line (interface §5.1).
enum LogLevel: Int {
    case quiet = 0, info, debug
}

/// One protocol session: the current game, the PRNG and the host knobs.
struct Server {
    var state: GameState? = nil
    var rng: Rng
    var params: GameParams
    var logLevel: LogLevel
    var log: (String) -> Void

    init(seed: UInt64, params: GameParams, logLevel: LogLevel, log: @escaping (String) -> Void) {
        rng = Rng(seed: seed)
        self.params = params
        self.logLevel = logLevel
        self.log = log
    }

    static func error(_ message: String) -> String { JSON.object([("error", .string(message))]).text }
    static let invalidCommand = error("Invalid command")

    /// Answer one request line with exactly one response line (no newline).
    mutating func handle(_ rawLine: String) -> String {
        var line = rawLine
        if line.hasSuffix("\r") { line.removeLast() }  // interface §5.2
        // Decode the request (interface §5.3).
        guard let json = try? JSONParser.parse(line), case .object = json,
            let actionJ = json["action"], case .string(let action) = actionJ
        else {
            if logLevel.rawValue >= LogLevel.debug.rawValue { log("invalid request line: \(line.prefix(200))") }
            return Server.invalidCommand
        }
        let actionIndex: Int?
        let seed: Int?
        let includeHistory: Bool
        var decodedState: GameState? = nil
        var stateRangeError: String? = nil
        do {
            let f = try Fields(json, path: "request")
            actionIndex = try f.optInt("actionIndex")
            seed = action == "reset" ? try f.optInt("seed") : nil
            includeHistory = action == "getFullState" ? (try f.optBool("includeHistory") ?? false) : false
            // `state` is decoded for every command except setFullState (interface §5.3).
            if action != "setFullState", let s = json["state"] {
                if case .null = s {} else {
                    do { decodedState = try stateFromJSON(s) } catch let e as StateRangeError {
                        stateRangeError = e.message
                    }
                }
            }
        } catch {
            if logLevel.rawValue >= LogLevel.debug.rawValue { log("invalid request: \(error)") }
            return Server.invalidCommand
        }
        if logLevel.rawValue >= LogLevel.debug.rawValue { log("request: \(action) \(actionIndex.map(String.init) ?? "")") }

        switch action {
        case "reset":
            if let s = seed { rng = Rng(seed: UInt64(bitPattern: Int64(s))) }
            let st = resetGame(rng: &rng, params: params)
            state = st
            if logLevel.rawValue >= LogLevel.info.rawValue { log("reset: player \(st.player.pos) exit \(st.exitPos)") }
            return Server.observationResponse(st)
        case "step":
            guard let a = actionIndex else { return Server.error("Missing actionIndex") }
            guard state != nil else { return Server.error("No game: send reset or setState before step") }
            guard a >= 0 && a < numActions else { return Server.error("actionIndex out of range 0..27: \(a)") }
            return step(a)
        case "getValidActions":
            let valid = state.map(validActions) ?? []
            return JSON.object([("validActions", .array(valid.map { .int($0) }))]).text
        case "getActionSpace":
            return JSON.object([("actionSpaceSize", .int(numActions))]).text
        case "getObservationSpace":  // stale constants, reproduced verbatim (interface §5.5)
            return JSON.object([("gridSize", .int(6)), ("playerFeatures", .int(9)), ("cellFeatures", .int(20))]).text
        case "setState":
            if let msg = stateRangeError { return Server.error("Invalid state: \(msg)") }
            guard let st = decodedState else { return Server.error("Missing state data for setState command") }
            state = st
            return Server.observationResponse(st)
        case "getInternalState":
            return internalStateJSON(state).text
        case "version":
            return JSON.object([
                ("version", .string(binaryVersion)), ("implementation", .string("hackmatrix-swift")),
                (
                    "extensions",
                    .array(["seed", "version", "getFullState", "setFullState", "render"].map { .string($0) })
                ),
            ]).text
        case "getFullState":
            guard let st = state else { return Server.error("No game: send reset or setState first") }
            return fullStateJSON(st, includeHistory: includeHistory).text
        case "setFullState":
            guard let s = json["state"], !isNull(s) else { return Server.error("Missing state data for setFullState command") }
            do {
                let st = try fullStateFromJSON(s)
                state = st
                return Server.observationResponse(st)
            } catch let e as DecodeError {
                return Server.error("Invalid full state: \(e.message)")
            } catch let e as StateRangeError {
                return Server.error("Invalid full state: \(e.message)")
            } catch {
                return Server.error("Invalid full state")
            }
        case "render":
            guard let st = state else { return Server.error("No game: send reset or setState first") }
            return JSON.object([("render", .string(renderText(st)))]).text
        default:
            return Server.error("Unknown command: \(action)")
        }
    }

    func isNull(_ j: JSON) -> Bool {
        if case .null = j { return true }
        return false
    }

    /// `step` (interface §5.5): observation, reward, done, info.
    mutating func step(_ a: Int) -> String {
        var st = state!
        state = nil  // keep the arrays uniquely referenced: no copy-on-write in the step
        let result = stepGame(&st, action: a, rng: &rng, params: params)
        state = st
        let ev = result.events
        var info: [(String, JSON)] = []
        if ev.failed { info.append(("invalid_action", .bool(true))) }
        if ev.stageCompleted { info.append(("stage_complete", .bool(true))) }
        if !ev.failed && st.player.hp == 0 { info.append(("death", .bool(true))) }
        // The 14 Swift keys; the step penalty (component 0) is not reported.
        var breakdown: [(String, JSON)] = []
        for (key, name) in swiftBreakdownKeys {
            let k = rewardComponents.firstIndex(of: name)!
            breakdown.append((key, .double(result.breakdown[k])))
        }
        info.append(("reward_breakdown", .object(breakdown)))
        if logLevel.rawValue >= LogLevel.info.rawValue {
            log("step \(a): reward \(result.reward) done \(result.done) kind \(ev.actionKind)")
            if ev.stageCompleted { log(ev.victory ? "victory" : "stage complete -> stage \(st.stage)") }
        }
        if logLevel.rawValue >= LogLevel.debug.rawValue { log(renderText(st)) }
        var w = JSONBuffer()
        w.raw("{\"observation\":")
        writeObservation(st, into: &w)
        w.raw(",\"reward\":")
        w.json(.double(result.reward))
        w.raw(",\"done\":")
        w.bool(result.done)
        w.raw(",\"info\":")
        w.json(.object(info))
        w.raw("}")
        return w.text
    }

    /// `{"observation": OBS}` (reset, setState, setFullState).
    static func observationResponse(_ st: GameState) -> String {
        var w = JSONBuffer()
        w.raw("{\"observation\":")
        writeObservation(st, into: &w)
        w.raw("}")
        return w.text
    }
}