// hackmatrix-headless: the JSON-lines command loop of interface §5 (the only
// IO in the package, with Protocol.swift). stdout carries only protocol
// lines; logs go to stderr.
//
// Flags: --debug, --info, --headless-cli (ignored), --dev-mode --programs=a,b,
// --seed N, and the non-protocol modes --bench N (in-process steps/s of a
// random masked policy) and --dump-constants (tables as JSON).

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import HackMatrixCore

/// Write all bytes of `s` to a file descriptor.
func writeAll(_ fd: Int32, _ s: String) {
    var s = s
    s.withUTF8 { buf in
        var off = 0
        while off < buf.count {
            let n = write(fd, buf.baseAddress! + off, buf.count - off)
            if n <= 0 { return }
            off += n
        }
    }
}

func logStderr(_ msg: String) { writeAll(2, "[hackmatrix] " + msg + "\n") }

// MARK: - Arguments

var logLevel = LogLevel.quiet
var devMode = false
var programList: [String]? = nil
var seedArg: UInt64? = nil
var benchSteps: Int? = nil
var dumpConstants = false
var args = Array(CommandLine.arguments.dropFirst())
var k = 0
while k < args.count {
    let a = args[k]
    switch a {
    case "--debug": logLevel = .debug
    case "--info": if logLevel == .quiet { logLevel = .info }
    case "--dev-mode": devMode = true
    case "--dump-constants": dumpConstants = true
    case "--seed", "--bench":
        guard k + 1 < args.count, let v = Int64(args[k + 1]) else {
            logStderr("\(a) needs an integer argument")
            exit(2)
        }
        if a == "--seed" { seedArg = UInt64(bitPattern: v) } else { benchSteps = Int(v) }
        k += 1
    default:
        if a.hasPrefix("--programs=") {
            programList = a.dropFirst("--programs=".count).split(separator: ",").map(String.init)
        } else if a.hasPrefix("--seed=") {
            guard let v = Int64(a.dropFirst("--seed=".count)) else {
                logStderr("--seed needs an integer argument")
                exit(2)
            }
            seedArg = UInt64(bitPattern: v)
        }
        // Any other argument (e.g. --headless-cli, --debug-scenario) is ignored.
    }
    k += 1
}

var params = GameParams()
if devMode, let names = programList {
    let pool = Set(names.compactMap { programIndex(named: $0.trimmingCharacters()) })
    if !pool.isEmpty { params.programPool = pool.sorted() }
}
var systemRng = SystemRandomNumberGenerator()
let seed = seedArg ?? systemRng.next()

extension String {
    func trimmingCharacters() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " { s.removeFirst() }
        while let l = s.last, l == " " { s.removeLast() }
        return String(s)
    }
}

// MARK: - Non-protocol modes

/// `siphPlus` -> `SIPH_PLUS` (Swift case name -> Python IntEnum member name).
func snakeUpper(_ name: String) -> String {
    var out = ""
    for ch in name {
        if ch.isUppercase { out += "_" }
        out += ch.uppercased()
    }
    return out
}

func enumNames<E: CaseIterable & RawRepresentable>(_ t: E.Type) -> JSON where E.RawValue == Int {
    .array(t.allCases.map { c in .array([.string(snakeUpper(String(describing: c))), .int(c.rawValue)]) })
}

if dumpConstants {
    let j = JSON.object([
        ("ENUM_Action", enumNames(Action.self)), ("ENUM_Program", enumNames(Program.self)),
        ("ENUM_EnemyKind", enumNames(EnemyKind.self)), ("ENUM_BlockKind", enumNames(BlockKind.self)),
        ("ENUM_Resource", enumNames(Resource.self)), ("ENUM_ActionKind", enumNames(ActionKind.self)),
        ("GRID_SIZE", .int(gridSize)), ("NUM_ACTIONS", .int(numActions)), ("FIRST_PROGRAM", .int(firstProgram)),
        ("NUM_PROGRAMS", .int(numPrograms)), ("ENEMY_NAMES", .array(enemyNames.map { .string($0) })),
        ("ENEMY_MAX_HP", .array(enemyMaxHp.map { .int($0) })), ("ENEMY_SPEED", .array(enemySpeed.map { .int($0) })),
        ("PROGRAM_NAMES", .array(programNames.map { .string($0) })),
        ("PROGRAM_ALIASES", .object(programAliases.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })),
        ("PROGRAM_COST", .array(programCost.map { .array($0.map { .int($0) }) })),
        ("PROGRAM_SPAWN", .array(programSpawn.map { .int($0) })),
        ("DIR_OFFSETS", .array(dirOffsets.map { .array([.int($0.0), .int($0.1)]) })),
        ("CROSS_OFFSETS", .array(crossOffsets.map { .array([.int($0.0), .int($0.1)]) })),
        ("NEIGHBOUR8_OFFSETS", .array(neighbour8Offsets.map { .array([.int($0.0), .int($0.1)]) })),
        ("CORNERS", .array(corners.map { .array([.int($0.row), .int($0.col)]) })),
        ("ATK_PLUS_USES_PER_STAGE", .int(atkPlusUsesPerStage)), ("NUM_STAGES", .int(numStages)),
        ("INITIAL_TASK_INTERVAL", .int(initialTaskInterval)), ("MIN_TASK_INTERVAL", .int(minTaskInterval)),
        ("SIPHON_TASK_DELAY", .int(siphonTaskDelay)), ("STAGE_INTERVAL_BASE", .int(stageIntervalBase)),
        ("MAX_HP", .int(maxHp)), ("START_CREDITS_BONUS", .int(startCreditsBonus)),
        ("START_ENERGY_BONUS", .int(startEnergyBonus)), ("START_SIPHON_BONUS", .int(startSiphonBonus)),
        ("BLOCK_COUNT_MIN", .int(blockCountMin)), ("BLOCK_COUNT_MAX", .int(blockCountMax)),
        ("LAYOUT_ATTEMPTS", .int(layoutAttempts)), ("PLACEMENT_TRIES", .int(placementTries)),
        ("QUESTION_PROBABILITY", .double(questionProbability)), ("DATA_POINTS_MAX", .int(dataPointsMax)),
        (
            "RESOURCE_AMOUNT_THRESHOLDS",
            .array([.double(resourceAmountThresholds.0), .double(resourceAmountThresholds.1)])
        ),
        ("DELAY_TURNS", .int(delayTurns)), ("SETSTATE_DATA_POINTS", .int(setstateDataPoints)),
        ("SETSTATE_PROGRAM_SPAWN", .int(setstateProgramSpawn)),
        ("SETSTATE_EXIT", .array([.int(setstateExit.row), .int(setstateExit.col)])),
        ("STAGE_REWARD", .array(stageReward.map { .double($0) })), ("STEP_PENALTY", .double(stepPenalty)),
        ("SCORE_COEF", .double(scoreCoef)), ("KILL_COEF", .double(killCoef)),
        ("DATA_SIPHON_REWARD", .double(dataSiphonReward)), ("DISTANCE_COEF", .double(distanceCoef)),
        ("VICTORY_BASE", .double(victoryBase)), ("VICTORY_SCORE_COEF", .double(victoryScoreCoef)),
        ("DEATH_COEF", .double(deathCoef)), ("RESOURCE_COEF", .double(resourceCoef)),
        ("HOLDING_COEF", .double(holdingCoef)), ("DAMAGE_COEF", .double(damageCoef)),
        ("RECOVERY_COEF", .double(recoveryCoef)), ("SIPHON_QUALITY_COEF", .double(siphonQualityCoef)),
        ("PROGRAM_WASTE_PENALTY", .double(programWastePenalty)),
        ("SIPHON_DEATH_PENALTY", .double(siphonDeathPenalty)),
        ("REWARD_COMPONENTS", .array(rewardComponents.map { .string($0) })),
        ("SWIFT_BREAKDOWN_KEYS", .object(swiftBreakdownKeys.map { ($0.0, .string($0.1)) })),
        ("PLAYER_FEATURES", .int(playerFeatures)), ("GRID_CHANNELS", .int(gridChannels)),
        ("FLAT_OBS_SIZE", .int(flatObsSize)),
    ])
    writeAll(1, j.text + "\n")
    exit(0)
}

if let n = benchSteps {
    // In-process game loop: random masked policy, reset on done.
    var rng = Rng(seed: seed)
    var policy = Rng(seed: seed &+ 0x5DEE_CE66)
    var state = resetGame(rng: &rng, params: params)
    var episodes = 0
    var clock = timespec()
    clock_gettime(CLOCK_MONOTONIC, &clock)
    let t0 = Double(clock.tv_sec) + Double(clock.tv_nsec) * 1e-9
    for _ in 0..<max(0, n) {
        let valid = validActions(state)
        let a = valid.isEmpty ? 0 : valid[policy.int(below: valid.count)]
        let r = stepGame(&state, action: a, rng: &rng, params: params)
        if r.done {
            episodes += 1
            state = resetGame(rng: &rng, params: params)
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &clock)
    let secs = Double(clock.tv_sec) + Double(clock.tv_nsec) * 1e-9 - t0
    let j = JSON.object([
        ("mode", .string("in-process")), ("steps", .int(n)), ("episodes", .int(episodes)),
        ("seconds", .double(secs)), ("stepsPerSecond", .double(Double(n) / max(secs, 1e-9))),
    ])
    writeAll(1, j.text + "\n")
    exit(0)
}

// MARK: - Protocol loop

// Keep a private handle on the real stdout and route fd 1 (print) to stderr,
// so nothing but protocol lines can reach the client (interface §5.2).
let protocolFd = dup(1)
dup2(2, 1)
if logLevel.rawValue >= LogLevel.info.rawValue { logStderr("hackmatrix-headless \(binaryVersion) seed \(seed)") }

var server = Server(seed: seed, params: params, logLevel: logLevel, log: logStderr)
while let line = readLine(strippingNewline: true) {
    let response = server.handle(line)
    writeAll(protocolFd, response + "\n")
}
