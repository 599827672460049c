// Host-side JSON: a small strict JSON value type with parser and writer, the
// observation JSON (interface §5.4), `setState` decoding and application
// (interface §5.3, §5.7), `getInternalState`, and our `getFullState` /
// `setFullState` extension (schema in specs/swift.md). Mirror of scenario.py.
//
// The JSON code is hand-written (no Foundation) so that integers, doubles and
// booleans are told apart exactly: `true` is never an integer here.

// MARK: - JSON value

public indirect enum JSON: Sendable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    /// Member lookup (last duplicate wins); nil for non-objects and absent keys.
    public subscript(key: String) -> JSON? {
        guard case .object(let pairs) = self else { return nil }
        return pairs.last { $0.0 == key }?.1
    }
}

public struct JSONParseError: Error, Sendable {
    public var message: String
}

/// Strict RFC 8259 parser over UTF-8 bytes. An integer literal that does not
/// fit in Int becomes `.double`; nesting deeper than 256 is rejected.
public struct JSONParser {
    private let b: [UInt8]
    private var i = 0
    private var depth = 0

    public static func parse(_ text: String) throws -> JSON {
        var p = JSONParser(bytes: Array(text.utf8))
        p.skipWS()
        let v = try p.value()
        p.skipWS()
        if p.i != p.b.count { throw JSONParseError(message: "trailing characters") }
        return v
    }

    init(bytes: [UInt8]) { b = bytes }

    private mutating func skipWS() {
        while i < b.count, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0A || b[i] == 0x0D { i += 1 }
    }

    private func fail(_ m: String) -> JSONParseError { JSONParseError(message: m) }

    private mutating func literal(_ s: String, _ v: JSON) throws -> JSON {
        let u = Array(s.utf8)
        guard i + u.count <= b.count, Array(b[i..<(i + u.count)]) == u else { throw fail("bad literal") }
        i += u.count
        return v
    }

    private mutating func value() throws -> JSON {
        guard i < b.count else { throw fail("unexpected end") }
        switch b[i] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        default: return try number()
        }
    }

    private mutating func object() throws -> JSON {
        depth += 1
        if depth > 256 { throw fail("nesting too deep") }
        defer { depth -= 1 }
        i += 1
        var pairs: [(String, JSON)] = []
        skipWS()
        if i < b.count, b[i] == UInt8(ascii: "}") {
            i += 1
            return .object(pairs)
        }
        while true {
            skipWS()
            guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw fail("expected key") }
            let k = try string()
            skipWS()
            guard i < b.count, b[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            i += 1
            skipWS()
            let v = try value()
            pairs.append((k, v))
            skipWS()
            guard i < b.count else { throw fail("unexpected end") }
            if b[i] == UInt8(ascii: ",") {
                i += 1
                continue
            }
            if b[i] == UInt8(ascii: "}") {
                i += 1
                return .object(pairs)
            }
            throw fail("expected ',' or '}'")
        }
    }

    private mutating func array() throws -> JSON {
        depth += 1
        if depth > 256 { throw fail("nesting too deep") }
        defer { depth -= 1 }
        i += 1
        var items: [JSON] = []
        skipWS()
        if i < b.count, b[i] == UInt8(ascii: "]") {
            i += 1
            return .array(items)
        }
        while true {
            skipWS()
            items.append(try value())
            skipWS()
            guard i < b.count else { throw fail("unexpected end") }
            if b[i] == UInt8(ascii: ",") {
                i += 1
                continue
            }
            if b[i] == UInt8(ascii: "]") {
                i += 1
                return .array(items)
            }
            throw fail("expected ',' or ']'")
        }
    }

    private mutating func hex4() throws -> UInt32 {
        guard i + 4 <= b.count else { throw fail("bad \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = b[i]
            i += 1
            v <<= 4
            switch c {
            case 0x30...0x39: v |= UInt32(c - 0x30)
            case 0x41...0x46: v |= UInt32(c - 0x41 + 10)
            case 0x61...0x66: v |= UInt32(c - 0x61 + 10)
            default: throw fail("bad \\u escape")
            }
        }
        return v
    }

    private mutating func string() throws -> String {
        i += 1  // opening quote
        var out: [UInt8] = []
        while true {
            guard i < b.count else { throw fail("unterminated string") }
            let c = b[i]
            i += 1
            if c == UInt8(ascii: "\"") { break }
            if c < 0x20 { throw fail("control character in string") }
            if c != UInt8(ascii: "\\") {
                out.append(c)
                continue
            }
            guard i < b.count else { throw fail("bad escape") }
            let e = b[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if scalar >= 0xD800 && scalar < 0xDC00 {
                    guard i + 2 <= b.count, b[i] == UInt8(ascii: "\\"), b[i + 1] == UInt8(ascii: "u") else {
                        throw fail("lone surrogate")
                    }
                    i += 2
                    let low = try hex4()
                    guard low >= 0xDC00 && low < 0xE000 else { throw fail("bad surrogate pair") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if scalar >= 0xDC00 && scalar < 0xE000 {
                    throw fail("lone surrogate")
                }
                guard let u = Unicode.Scalar(scalar) else { throw fail("bad scalar") }
                out.append(contentsOf: Array(String(Character(u)).utf8))
            default: throw fail("bad escape")
            }
        }
        guard let s = String(validating: out, as: UTF8.self) else { throw fail("invalid UTF-8") }
        return s
    }

    private mutating func number() throws -> JSON {
        let start = i
        var isInt = true
        if i < b.count, b[i] == UInt8(ascii: "-") { i += 1 }
        func digits() -> Int {
            let s = i
            while i < b.count, b[i] >= 0x30 && b[i] <= 0x39 { i += 1 }
            return i - s
        }
        guard i < b.count else { throw fail("bad number") }
        if b[i] == UInt8(ascii: "0") {
            i += 1
        } else if digits() == 0 {
            throw fail("unexpected character")
        }
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            isInt = false
            if digits() == 0 { throw fail("bad number") }
        }
        if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            i += 1
            isInt = false
            if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
            if digits() == 0 { throw fail("bad number") }
        }
        let text = String(decoding: b[start..<i], as: UTF8.self)
        if isInt, let v = Int(text) { return .int(v) }
        guard let d = Double(text) else { throw fail("bad number") }
        return .double(d)
    }
}

/// Compact JSON writer. Integers print as integers; doubles with Swift's
/// shortest round-trip form (always with a '.' or an exponent).
public func writeJSON(_ v: JSON, into out: inout String) {
    switch v {
    case .null: out += "null"
    case .bool(let x): out += x ? "true" : "false"
    case .int(let x): out += String(x)
    case .double(let x):
        if x.isFinite { out += x.description } else { out += "null" }
    case .string(let s): writeJSONString(s, into: &out)
    case .array(let items):
        out += "["
        for (k, item) in items.enumerated() {
            if k > 0 { out += "," }
            writeJSON(item, into: &out)
        }
        out += "]"
    case .object(let pairs):
        out += "{"
        for (k, (key, item)) in pairs.enumerated() {
            if k > 0 { out += "," }
            writeJSONString(key, into: &out)
            out += ":"
            writeJSON(item, into: &out)
        }
        out += "}"
    }
}

func writeJSONString(_ s: String, into out: inout String) {
    out += "\""
    for u in s.unicodeScalars {
        switch u {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if u.value < 0x20 {
                let h = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - h.count) + h
            } else {
                out.unicodeScalars.append(u)
            }
        }
    }
    out += "\""
}

extension JSON {
    /// Compact serialisation.
    public var text: String {
        var s = ""
        writeJSON(self, into: &s)
        return s
    }
}

// MARK: - Typed decoding (interface §5.3: null = absent, wrong type = error)

/// A decoding failure; `field` names the offending path.
public struct DecodeError: Error, Sendable {
    public var field: String
    public var problem: String
    public var message: String { "\(field): \(problem)" }
}

/// Helpers that read typed members of a JSON object.
public struct Fields {
    public let json: JSON
    public let path: String
    /// Integers must fit in 32 bits (game state: keeps every later sum far from Int overflow).
    public let bounded: Bool

    public init(_ json: JSON, path: String, bounded: Bool = false) throws {
        guard case .object = json else { throw DecodeError(field: path, problem: "expected an object") }
        self.json = json
        self.path = path
        self.bounded = bounded
    }

    func present(_ k: String) -> JSON? {
        guard let v = json[k] else { return nil }
        if case .null = v { return nil }
        return v
    }

    public func optInt(_ k: String) throws -> Int? {
        guard let v = present(k) else { return nil }
        let x = try asInt(v, path: "\(path).\(k)")
        if bounded && (x < Int(Int32.min) || x > Int(Int32.max)) {
            throw StateRangeError(message: "\(path).\(k) is outside the 32-bit integer range")
        }
        return x
    }
    public func int(_ k: String) throws -> Int {
        guard let v = try optInt(k) else { throw DecodeError(field: "\(path).\(k)", problem: "missing") }
        return v
    }
    public func optBool(_ k: String) throws -> Bool? {
        guard let v = present(k) else { return nil }
        guard case .bool(let x) = v else { throw DecodeError(field: "\(path).\(k)", problem: "expected a boolean") }
        return x
    }
    public func bool(_ k: String) throws -> Bool {
        guard let v = try optBool(k) else { throw DecodeError(field: "\(path).\(k)", problem: "missing") }
        return v
    }
    public func optString(_ k: String) throws -> String? {
        guard let v = present(k) else { return nil }
        guard case .string(let x) = v else { throw DecodeError(field: "\(path).\(k)", problem: "expected a string") }
        return x
    }
    public func string(_ k: String) throws -> String {
        guard let v = try optString(k) else { throw DecodeError(field: "\(path).\(k)", problem: "missing") }
        return v
    }
    public func optArray(_ k: String) throws -> [JSON]? {
        guard let v = present(k) else { return nil }
        guard case .array(let x) = v else { throw DecodeError(field: "\(path).\(k)", problem: "expected an array") }
        return x
    }
    public func array(_ k: String) throws -> [JSON] {
        guard let v = try optArray(k) else { throw DecodeError(field: "\(path).\(k)", problem: "missing") }
        return v
    }
    public func optObject(_ k: String) throws -> Fields? {
        guard let v = present(k) else { return nil }
        return try Fields(v, path: "\(path).\(k)", bounded: bounded)
    }
    public func object(_ k: String) throws -> Fields {
        guard let v = try optObject(k) else { throw DecodeError(field: "\(path).\(k)", problem: "missing") }
        return v
    }
}

/// An integer: a JSON integer, or an integral double within ±2^53; never a boolean.
public func asInt(_ v: JSON, path: String) throws -> Int {
    switch v {
    case .int(let x): return x
    case .double(let d) where d == d.rounded() && abs(d) <= 9_007_199_254_740_992: return Int(d)
    default: throw DecodeError(field: path, problem: "expected an integer")
    }
}

// MARK: - Names

/// Program index from a wire name or alias, case-insensitive (interface §0.3).
public func programIndex(named name: String) -> Int? {
    let n = name.lowercased()
    let canonical = programAliases[n] ?? n
    return programNames.firstIndex(of: canonical)
}

/// Enemy kind from a wire name, case-insensitive (interface §5.7 step 6).
public func enemyKind(named name: String) -> EnemyKind? {
    enemyNames.firstIndex(of: name.lowercased()).map { EnemyKind(rawValue: $0)! }
}

// MARK: - Observation JSON (interface §5.4)

func posJSON(_ p: Pos) -> JSON { .object([("row", .int(p.row)), ("col", .int(p.col))]) }

/// A byte buffer for writing compact JSON directly (the observation is on the
/// hot path of the protocol, so it is written without building a `JSON` tree).
public struct JSONBuffer {
    public var bytes: [UInt8] = []
    public init() { bytes.reserveCapacity(4096) }

    public mutating func raw(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }
    public mutating func int(_ v: Int) {
        if v < 0 { bytes.append(UInt8(ascii: "-")) }
        var m = v.magnitude
        var tmp: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                  UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = 0
        withUnsafeMutableBytes(of: &tmp) { t in
            repeat {
                t[n] = UInt8(ascii: "0") + UInt8(m % 10)
                m /= 10
                n += 1
            } while m > 0
            while n > 0 {
                n -= 1
                bytes.append(t[n])
            }
        }
    }
    public mutating func bool(_ b: Bool) { b ? raw("true") : raw("false") }
    public mutating func string(_ s: String) {
        var out = ""
        writeJSONString(s, into: &out)
        bytes.append(contentsOf: out.utf8)
    }
    public mutating func json(_ v: JSON) {
        var out = ""
        writeJSON(v, into: &out)
        bytes.append(contentsOf: out.utf8)
    }
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}

/// Write the JSON observation shared by reset, step and setState (interface §5.4).
public func writeObservation(_ state: GameState, into w: inout JSONBuffer) {
    let pl = state.player
    w.raw("{\"playerRow\":"); w.int(pl.pos.row)
    w.raw(",\"playerCol\":"); w.int(pl.pos.col)
    w.raw(",\"playerHP\":"); w.int(pl.hp)
    w.raw(",\"credits\":"); w.int(pl.credits)
    w.raw(",\"energy\":"); w.int(pl.energy)
    w.raw(",\"dataSiphons\":"); w.int(pl.siphons)
    w.raw(",\"stage\":"); w.int(state.stage)
    w.raw(",\"turn\":"); w.int(state.turn)
    w.raw(",\"baseAttack\":"); w.int(pl.attack)
    w.raw(",\"score\":"); w.int(pl.score)
    w.raw(",\"showActivated\":"); w.bool(state.showFlag)
    w.raw(",\"scheduledTasksDisabled\":"); w.bool(state.calmFlag)
    w.raw(",\"ownedPrograms\":[")
    for (k, p) in state.ownedPrograms.enumerated() {
        if k > 0 { w.raw(",") }
        w.int(p + firstProgram)
    }
    w.raw("],\"cells\":[")
    var hints: [Pos] = []
    for r in 0..<gridSize {
        w.raw(r == 0 ? "[" : ",[")
        for c in 0..<gridSize {
            let p = Pos(r, c)
            let cell = state.grid[p]
            w.raw(c == 0 ? "{\"row\":" : ",{\"row\":"); w.int(r)
            w.raw(",\"col\":"); w.int(c)
            if let (i, visible) = shownEnemy(state, at: p) {
                let e = state.enemies[i]
                if visible {
                    w.raw(",\"enemy\":{\"type\":"); w.string(enemyNames[e.kind.rawValue])
                    w.raw(",\"hp\":"); w.int(e.hp)
                    w.raw(",\"isStunned\":"); w.bool(e.stunned)
                    w.raw(",\"spawnedFromSiphon\":"); w.bool(e.fromSiphon)
                    w.raw("}")
                } else {
                    hints.append(e.lastKnown)
                }
            }
            if let b = cell.block {
                w.raw(",\"block\":{\"blockType\":")
                if b.isQuestion {
                    w.raw("\"question\",\"isSiphoned\":"); w.bool(cell.siphoned)
                } else if b.kind == .data {
                    w.raw("\"data\",\"isSiphoned\":"); w.bool(cell.siphoned)
                    w.raw(",\"points\":"); w.int(b.points)
                    w.raw(",\"transmissionSpawnCount\":"); w.int(b.spawn)
                } else {
                    w.raw("\"program\",\"isSiphoned\":"); w.bool(cell.siphoned)
                    w.raw(",\"points\":0,\"programType\":"); w.string(programNames[b.program])
                    w.raw(",\"programActionIndex\":"); w.int(b.program + firstProgram)
                    w.raw(",\"transmissionSpawnCount\":"); w.int(b.spawn)
                }
                w.raw("}")
            }
            if let t = state.transmissionIndex(at: p) {
                w.raw(",\"transmission\":{\"turnsUntilSpawn\":"); w.int(state.transmissions[t].countdown)
                if state.showFlag {
                    w.raw(",\"enemyType\":"); w.string(enemyNames[state.transmissions[t].kind.rawValue])
                }
                w.raw("}")
            }
            if resourcesVisible(cell) {
                if cell.resource == .credits { w.raw(",\"credits\":"); w.int(cell.amount) }
                if cell.resource == .energy { w.raw(",\"energy\":"); w.int(cell.amount) }
            }
            w.raw(",\"isDataSiphon\":"); w.bool(cell.content == .dataSiphon)
            w.raw(",\"isExit\":"); w.bool(cell.content == .exit)
            w.raw(",\"siphonCenter\":"); w.bool(cell.centerMark)
            w.raw("}")
        }
        w.raw("]")
    }
    w.raw("],\"cryptogHints\":[")
    for (k, h) in hints.enumerated() {
        w.raw(k == 0 ? "{\"row\":" : ",{\"row\":"); w.int(h.row)
        w.raw(",\"col\":"); w.int(h.col)
        w.raw("}")
    }
    w.raw("]}")
}

/// The observation as a `JSON` value (parsed back from `writeObservation`).
public func observationJSON(_ state: GameState) -> JSON {
    var w = JSONBuffer()
    writeObservation(state, into: &w)
    return try! JSONParser.parse(w.text)
}

/// The `getInternalState` response (interface §5.5); all zeros without a game.
public func internalStateJSON(_ state: GameState?) -> JSON {
    guard let s = state else {
        return .object([
            ("scheduledTaskInterval", .int(0)), ("nextScheduledTaskTurn", .int(0)),
            ("pendingSiphonTransmissions", .int(0)), ("turnCount", .int(0)), ("enemies", .array([])),
        ])
    }
    return .object([
        ("scheduledTaskInterval", .int(s.taskInterval)), ("nextScheduledTaskTurn", .int(s.nextTaskTurn)),
        ("pendingSiphonTransmissions", .int(s.pendingSiphonSpawns)), ("turnCount", .int(s.turn)),
        (
            "enemies",
            .array(
                s.enemies.map { e in
                    .object([
                        ("row", .int(e.pos.row)), ("col", .int(e.pos.col)),
                        ("type", .string(enemyNames[e.kind.rawValue])), ("hp", .int(e.hp)),
                        ("disabledTurns", .int(e.disabled)), ("isStunned", .bool(e.stunned)),
                        ("spawnedFromSiphon", .bool(e.fromSiphon)), ("isFromScheduledTask", .bool(e.fromTask)),
                    ])
                })
        ),
    ])
}

// MARK: - setState (interface §5.7)

/// Decode a `setState` STATE object and build the state it describes
/// (interface §5.7). Throws `DecodeError` for a missing required field or a
/// wrong JSON type (the protocol answers "Invalid command") and
/// `StateRangeError` for values the reference would crash on later.
public func stateFromJSON(_ json: JSON) throws -> GameState {
    let f = try Fields(json, path: "state", bounded: true)
    // Decode everything first: any type error fails the whole request.
    let pf = try f.object("player")
    let prow = try pf.int("row")
    let pcol = try pf.int("col")
    let php = try pf.optInt("hp")
    let pcredits = try pf.optInt("credits")
    let penergy = try pf.optInt("energy")
    let psiphons = try pf.optInt("dataSiphons")
    let pattack = try pf.optInt("attackDamage")
    let pscore = try pf.optInt("score")

    struct E { var type: String; var row: Int; var col: Int; var hp: Int; var stunned: Bool; var siph: Bool; var task: Bool }
    var enemies: [E] = []
    for (k, item) in (try f.optArray("enemies") ?? []).enumerated() {
        let e = try Fields(item, path: "state.enemies[\(k)]", bounded: true)
        enemies.append(
            E(
                type: try e.string("type"), row: try e.int("row"), col: try e.int("col"), hp: try e.int("hp"),
                stunned: try e.optBool("stunned") ?? false, siph: try e.optBool("spawnedFromSiphon") ?? false,
                task: try e.optBool("isFromScheduledTask") ?? false))
    }
    struct T { var row: Int; var col: Int; var turns: Int; var type: String }
    var transmissions: [T] = []
    for (k, item) in (try f.optArray("transmissions") ?? []).enumerated() {
        let t = try Fields(item, path: "state.transmissions[\(k)]", bounded: true)
        transmissions.append(
            T(row: try t.int("row"), col: try t.int("col"), turns: try t.int("turnsRemaining"), type: try t.string("enemyType")))
    }
    struct B {
        var row: Int; var col: Int; var type: String; var points: Int?; var spawn: Int?; var siphoned: Bool?
        var programType: String?
    }
    var blocks: [B] = []
    for (k, item) in (try f.optArray("blocks") ?? []).enumerated() {
        let b = try Fields(item, path: "state.blocks[\(k)]", bounded: true)
        _ = try b.optInt("programActionIndex")  // decoded (type-checked) but ignored
        blocks.append(
            B(
                row: try b.int("row"), col: try b.int("col"), type: try b.string("type"), points: try b.optInt("points"),
                spawn: try b.optInt("spawnCount"), siphoned: try b.optBool("siphoned"),
                programType: try b.optString("programType")))
    }
    struct R { var row: Int; var col: Int; var credits: Int?; var energy: Int?; var dataSiphon: Bool? }
    var resources: [R] = []
    for (k, item) in (try f.optArray("resources") ?? []).enumerated() {
        let r = try Fields(item, path: "state.resources[\(k)]", bounded: true)
        resources.append(
            R(row: try r.int("row"), col: try r.int("col"), credits: try r.optInt("credits"),
              energy: try r.optInt("energy"), dataSiphon: try r.optBool("dataSiphon")))
    }
    var owned: [Int] = []
    for (k, item) in (try f.optArray("ownedPrograms") ?? []).enumerated() {
        owned.append(try asInt(item, path: "state.ownedPrograms[\(k)]"))
    }
    let stage = try f.optInt("stage")
    let turn = try f.optInt("turn")
    let show = try f.optBool("showActivated")
    let calm = try f.optBool("scheduledTasksDisabled")

    // Values the reference accepts but crashes on later: refused here.
    guard Pos(prow, pcol).inBounds else { throw StateRangeError(message: "player position out of range") }
    for (k, e) in enemies.enumerated() where !Pos(e.row, e.col).inBounds {
        throw StateRangeError(message: "enemies[\(k)] position out of range")
    }
    for (k, t) in transmissions.enumerated() where !Pos(t.row, t.col).inBounds {
        throw StateRangeError(message: "transmissions[\(k)] position out of range")
    }
    if let s = stage, s < 1 { throw StateRangeError(message: "stage must be >= 1") }

    // 1–2: fresh game, cleared grid and lists, no stage generated.
    var st = GameState(player: Player(pos: Pos(prow, pcol)))
    // 3: player.
    if let v = php { st.player.hp = (0...maxHp).contains(v) ? v : maxHp }
    if let v = pcredits { st.player.credits = v }
    if let v = penergy { st.player.energy = v }
    if let v = psiphons { st.player.siphons = v }
    if let v = pattack { st.player.attack = v }
    if let v = pscore { st.player.score = v }
    // 4: flags (interval and next task turn stay 12).
    if let v = stage { st.stage = v }
    if let v = turn { st.turn = v }
    if let v = show { st.showFlag = v }
    if let v = calm { st.calmFlag = v }
    // 5: owned programs, duplicates kept.
    for a in owned where a >= firstProgram && a < numActions { st.ownedPrograms.append(a - firstProgram) }
    // 6: enemies.
    for e in enemies {
        guard let kind = enemyKind(named: e.type) else { continue }
        st.enemies.append(
            Enemy(kind: kind, pos: Pos(e.row, e.col), hp: e.hp, disabled: 0, stunned: e.stunned,
                  fromTask: e.task, fromSiphon: e.siph))
    }
    // 7: transmissions.
    for t in transmissions {
        guard let kind = enemyKind(named: t.type) else { continue }
        st.transmissions.append(Transmission(pos: Pos(t.row, t.col), countdown: t.turns, kind: kind))
    }
    // 8: blocks.
    for b in blocks {
        let p = Pos(b.row, b.col)
        guard p.inBounds else { continue }
        if b.type == "data" {
            let points = b.points ?? setstateDataPoints
            st.grid[p].content = .block(.data(points: points, spawn: b.spawn ?? points))
        } else if b.type == "program" {
            if let name = b.programType, let prog = programIndex(named: name) {
                st.grid[p].content = .block(.program(prog, spawn: b.spawn ?? setstateProgramSpawn))
            }
        }
        if b.siphoned == true { st.grid[p].siphoned = true }
    }
    // 9: resources, data siphon > credits > energy.
    for r in resources {
        let p = Pos(r.row, r.col)
        guard p.inBounds else { continue }
        if r.dataSiphon == true {
            st.grid[p].content = .dataSiphon
        } else if let c = r.credits, c > 0 {
            st.grid[p].resource = .credits
            st.grid[p].amount = c
        } else if let e = r.energy, e > 0 {
            st.grid[p].resource = .energy
            st.grid[p].amount = e
        }
    }
    // 10: the exit is always (5,5).
    st.grid[setstateExit].content = .exit
    st.exitPos = setstateExit
    return st
}

/// A state value our binary refuses because the reference would crash on it later.
public struct StateRangeError: Error, Sendable {
    public var message: String
}

// MARK: - Full state (extension; schema in specs/swift.md)

func playerJSON(_ p: Player) -> JSON {
    .object([
        ("row", .int(p.pos.row)), ("col", .int(p.pos.col)), ("hp", .int(p.hp)), ("credits", .int(p.credits)),
        ("energy", .int(p.energy)), ("dataSiphons", .int(p.siphons)), ("score", .int(p.score)),
        ("attackDamage", .int(p.attack)),
    ])
}

func enemyJSON(_ e: Enemy) -> JSON {
    .object([
        ("type", .string(enemyNames[e.kind.rawValue])), ("row", .int(e.pos.row)), ("col", .int(e.pos.col)),
        ("hp", .int(e.hp)), ("disabled", .int(e.disabled)), ("stunned", .bool(e.stunned)),
        ("lastKnownRow", .int(e.lastKnown.row)), ("lastKnownCol", .int(e.lastKnown.col)),
        ("fromTask", .bool(e.fromTask)), ("fromSiphon", .bool(e.fromSiphon)),
    ])
}

func transmissionJSON(_ t: Transmission) -> JSON {
    .object([
        ("row", .int(t.pos.row)), ("col", .int(t.pos.col)), ("countdown", .int(t.countdown)),
        ("enemyType", .string(enemyNames[t.kind.rawValue])), ("fromTask", .bool(t.fromTask)),
        ("fromSiphon", .bool(t.fromSiphon)),
    ])
}

func cellJSON(_ c: Cell) -> JSON {
    var o: [(String, JSON)] = []
    switch c.content {
    case .empty: o.append(("content", .string("empty")))
    case .dataSiphon: o.append(("content", .string("dataSiphon")))
    case .exit: o.append(("content", .string("exit")))
    case .block(let b):
        o.append(("content", .string("block")))
        o.append(
            (
                "block",
                .object([
                    ("kind", .string(b.kind == .data ? "data" : "program")), ("points", .int(b.points)),
                    ("program", b.kind == .program ? .int(b.program + firstProgram) : .null),
                    ("spawnCount", .int(b.spawn)), ("isQuestion", .bool(b.isQuestion)),
                ])
            ))
    }
    o.append(("resource", .string(c.resource == .none ? "none" : (c.resource == .credits ? "credits" : "energy"))))
    o.append(("amount", .int(c.amount)))
    o.append(("siphoned", .bool(c.siphoned)))
    o.append(("center", .bool(c.centerMark)))
    return .object(o)
}

func gridJSON(_ g: Grid) -> JSON {
    .array((0..<gridSize).map { r in .array((0..<gridSize).map { c in cellJSON(g[r, c]) }) })
}

func snapshotJSON(_ s: Snapshot) -> JSON {
    .object([
        ("player", playerJSON(s.player)), ("turn", .int(s.turn)),
        ("ownedPrograms", .array(s.ownedPrograms.map { .int($0 + firstProgram) })),
        ("enemies", .array(s.enemies.map(enemyJSON))), ("transmissions", .array(s.transmissions.map(transmissionJSON))),
        ("cells", gridJSON(s.grid)), ("showFlag", .bool(s.showFlag)), ("calmFlag", .bool(s.calmFlag)),
        ("atkUsesThisStage", .int(s.atkUsesThisStage)),
    ])
}

/// Everything needed to rebuild the exact state elsewhere (`getFullState`).
/// The history list is included only when `includeHistory` is set.
public func fullStateJSON(_ s: GameState, includeHistory: Bool) -> JSON {
    var o: [(String, JSON)] = [
        ("stage", .int(s.stage)), ("turn", .int(s.turn)), ("taskInterval", .int(s.taskInterval)),
        ("nextTaskTurn", .int(s.nextTaskTurn)), ("pendingSiphonSpawns", .int(s.pendingSiphonSpawns)),
        ("showFlag", .bool(s.showFlag)), ("calmFlag", .bool(s.calmFlag)), ("stepFlag", .bool(s.stepFlag)),
        ("atkUsesThisStage", .int(s.atkUsesThisStage)), ("exitPos", posJSON(s.exitPos)),
        ("ownedPrograms", .array(s.ownedPrograms.map { .int($0 + firstProgram) })),
        ("player", playerJSON(s.player)), ("enemies", .array(s.enemies.map(enemyJSON))),
        ("transmissions", .array(s.transmissions.map(transmissionJSON))), ("cells", gridJSON(s.grid)),
        ("historyDepth", .int(s.history.count)),
    ]
    if includeHistory { o.append(("history", .array(s.history.map(snapshotJSON)))) }
    return .object(o)
}

func posFrom(_ f: Fields, _ rk: String, _ ck: String) throws -> Pos {
    let p = Pos(try f.int(rk), try f.int(ck))
    guard p.inBounds else { throw DecodeError(field: "\(f.path).\(rk)", problem: "position out of range") }
    return p
}

func kindFrom(_ f: Fields, _ k: String) throws -> EnemyKind {
    guard let kind = enemyKind(named: try f.string(k)) else {
        throw DecodeError(field: "\(f.path).\(k)", problem: "unknown enemy type")
    }
    return kind
}

func playerFrom(_ f: Fields) throws -> Player {
    var p = Player(pos: try posFrom(f, "row", "col"))
    p.hp = try f.int("hp")
    p.credits = try f.int("credits")
    p.energy = try f.int("energy")
    p.siphons = try f.int("dataSiphons")
    p.score = try f.int("score")
    p.attack = try f.int("attackDamage")
    return p
}

func enemiesFrom(_ items: [JSON], path: String) throws -> [Enemy] {
    try items.enumerated().map { k, item in
        let f = try Fields(item, path: "\(path)[\(k)]", bounded: true)
        return Enemy(
            kind: try kindFrom(f, "type"), pos: try posFrom(f, "row", "col"), hp: try f.int("hp"),
            disabled: try f.int("disabled"), stunned: try f.bool("stunned"),
            lastKnown: try posFrom(f, "lastKnownRow", "lastKnownCol"), fromTask: try f.bool("fromTask"),
            fromSiphon: try f.bool("fromSiphon"))
    }
}

func transmissionsFrom(_ items: [JSON], path: String) throws -> [Transmission] {
    try items.enumerated().map { k, item in
        let f = try Fields(item, path: "\(path)[\(k)]", bounded: true)
        return Transmission(
            pos: try posFrom(f, "row", "col"), countdown: try f.int("countdown"), kind: try kindFrom(f, "enemyType"),
            fromTask: try f.bool("fromTask"), fromSiphon: try f.bool("fromSiphon"))
    }
}

func ownedFrom(_ items: [JSON], path: String) throws -> [Int] {
    try items.enumerated().map { k, item in
        let a = try asInt(item, path: "\(path)[\(k)]")
        guard a >= firstProgram && a < numActions else {
            throw DecodeError(field: "\(path)[\(k)]", problem: "not a program action index (5..27)")
        }
        return a - firstProgram
    }
}

func gridFrom(_ items: [JSON], path: String) throws -> Grid {
    guard items.count == gridSize else { throw DecodeError(field: path, problem: "expected 6 rows") }
    var g = Grid()
    for (r, rowJ) in items.enumerated() {
        guard case .array(let row) = rowJ, row.count == gridSize else {
            throw DecodeError(field: "\(path)[\(r)]", problem: "expected 6 cells")
        }
        for (c, cj) in row.enumerated() {
            let f = try Fields(cj, path: "\(path)[\(r)][\(c)]", bounded: true)
            var cell = Cell()
            switch try f.string("content") {
            case "empty": cell.content = .empty
            case "dataSiphon": cell.content = .dataSiphon
            case "exit": cell.content = .exit
            case "block":
                let bf = try f.object("block")
                let q = try bf.bool("isQuestion")
                let spawn = try bf.int("spawnCount")
                switch try bf.string("kind") {
                case "data": cell.content = .block(.data(points: try bf.int("points"), spawn: spawn, question: q))
                case "program":
                    let a = try bf.int("program")
                    guard a >= firstProgram && a < numActions else {
                        throw DecodeError(field: "\(bf.path).program", problem: "not a program action index (5..27)")
                    }
                    cell.content = .block(.program(a - firstProgram, spawn: spawn, question: q))
                default: throw DecodeError(field: "\(bf.path).kind", problem: "expected data or program")
                }
            default: throw DecodeError(field: "\(f.path).content", problem: "expected empty, block, dataSiphon or exit")
            }
            switch try f.string("resource") {
            case "none": cell.resource = .none
            case "credits": cell.resource = .credits
            case "energy": cell.resource = .energy
            default: throw DecodeError(field: "\(f.path).resource", problem: "expected none, credits or energy")
            }
            cell.amount = try f.int("amount")
            if cell.resource == .none { cell.amount = 0 }
            cell.siphoned = try f.bool("siphoned")
            cell.centerMark = try f.bool("center")
            g[r, c] = cell
        }
    }
    return g
}

/// Inverse of `fullStateJSON` (`setFullState`). Every key is required except
/// `history` (absent or null: empty history) and `historyDepth` (ignored).
public func fullStateFromJSON(_ json: JSON) throws -> GameState {
    let f = try Fields(json, path: "state", bounded: true)
    var s = GameState(player: try playerFrom(try f.object("player")))
    s.stage = try f.int("stage")
    guard s.stage >= 1 else { throw DecodeError(field: "state.stage", problem: "must be >= 1") }
    s.turn = try f.int("turn")
    s.taskInterval = try f.int("taskInterval")
    s.nextTaskTurn = try f.int("nextTaskTurn")
    s.pendingSiphonSpawns = try f.int("pendingSiphonSpawns")
    s.showFlag = try f.bool("showFlag")
    s.calmFlag = try f.bool("calmFlag")
    s.stepFlag = try f.bool("stepFlag")
    s.atkUsesThisStage = try f.int("atkUsesThisStage")
    s.exitPos = try posFrom(try f.object("exitPos"), "row", "col")
    s.ownedPrograms = try ownedFrom(try f.array("ownedPrograms"), path: "state.ownedPrograms")
    s.enemies = try enemiesFrom(try f.array("enemies"), path: "state.enemies")
    s.transmissions = try transmissionsFrom(try f.array("transmissions"), path: "state.transmissions")
    s.grid = try gridFrom(try f.array("cells"), path: "state.cells")
    for (k, item) in (try f.optArray("history") ?? []).enumerated() {
        let h = try Fields(item, path: "state.history[\(k)]", bounded: true)
        s.history.append(
            Snapshot(
                player: try playerFrom(try h.object("player")), turn: try h.int("turn"),
                ownedPrograms: try ownedFrom(try h.array("ownedPrograms"), path: "\(h.path).ownedPrograms"),
                enemies: try enemiesFrom(try h.array("enemies"), path: "\(h.path).enemies"),
                transmissions: try transmissionsFrom(try h.array("transmissions"), path: "\(h.path).transmissions"),
                grid: try gridFrom(try h.array("cells"), path: "\(h.path).cells"), showFlag: try h.bool("showFlag"),
                calmFlag: try h.bool("calmFlag"), atkUsesThisStage: try h.int("atkUsesThisStage")))
    }
    return s
}
