// The UNDO history: push a snapshot, pop and restore (rules §11). Mirror of history.py.
// The stack is unbounded, as in the spec.

extension GameState {
    /// The snapshot of rules §11.1 (provenance flags cleared, they are not saved).
    public func makeSnapshot() -> Snapshot {
        Snapshot(
            player: player, turn: turn, ownedPrograms: ownedPrograms,
            enemies: enemies.map { e in
                var s = e
                s.fromTask = false
                s.fromSiphon = false
                return s
            },
            transmissions: transmissions.map { t in
                var s = t
                s.fromTask = false
                s.fromSiphon = false
                return s
            },
            grid: grid, showFlag: showFlag, calmFlag: calmFlag, atkUsesThisStage: atkUsesThisStage)
    }

    /// Push a snapshot (rules §11.2: end of every real enemy phase only).
    public mutating func pushHistory() { history.append(makeSnapshot()) }

    /// Overwrite the fields of rules §11.1 with `s`; everything else keeps its value.
    public mutating func restore(_ s: Snapshot) {
        player = s.player
        turn = s.turn
        ownedPrograms = s.ownedPrograms
        enemies = s.enemies
        transmissions = s.transmissions
        grid = s.grid
        showFlag = s.showFlag
        calmFlag = s.calmFlag
        atkUsesThisStage = s.atkUsesThisStage
    }

    /// Pop the top snapshot and restore it (rules §11.3). False if empty.
    @discardableResult
    public mutating func popHistory() -> Bool {
        guard let s = history.popLast() else { return false }
        restore(s)
        return true
    }
}
