// Host-side text rendering, for logs and debugging (mirror of render.py).
// Never used by the game logic.

/// A text picture of the board, row 5 at the top (rules §1.1).
///   @ player, V/D/G/C enemy (lowercase when stunned), T transmission,
///   # data block, P program block, ? question block ($ if siphoned),
///   E exit, S data-siphon pickup, . empty.
public func renderText(_ state: GameState) -> String {
    var lines: [String] = []
    let pl = state.player
    lines.append(
        "stage \(state.stage) turn \(state.turn) hp \(pl.hp) C \(pl.credits) E \(pl.energy) "
            + "siphons \(pl.siphons) score \(pl.score) atk \(pl.attack) history \(state.history.count)")
    for r in stride(from: gridSize - 1, through: 0, by: -1) {
        var line = "\(r) "
        for c in 0..<gridSize {
            let p = Pos(r, c)
            let cell = state.grid[p]
            var ch: Character = "."
            switch cell.content {
            case .exit: ch = "E"
            case .dataSiphon: ch = "S"
            case .block(let b): ch = cell.siphoned ? "$" : (b.isQuestion ? "?" : (b.kind == .data ? "#" : "P"))
            case .empty: break
            }
            if state.hasTransmission(at: p) { ch = "T" }
            if let i = state.enemyIndex(at: p) {
                let e = state.enemies[i]
                let letter = ["V", "D", "G", "C"][e.kind.rawValue]
                ch = Character(e.stunned ? letter.lowercased() : letter)
            }
            if pl.pos == p { ch = "@" }
            line.append(ch)
            line.append(" ")
        }
        lines.append(line)
    }
    lines.append("  0 1 2 3 4 5")
    return lines.joined(separator: "\n")
}
