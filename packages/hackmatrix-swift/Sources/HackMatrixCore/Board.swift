// Cell queries shared by the rule modules (mirror of board.py).

extension GameState {
    /// Index of the first enemy in list order on `p` (rules §2.7).
    public func enemyIndex(at p: Pos) -> Int? { enemies.firstIndex { $0.pos == p } }

    /// Index of the first transmission in list order on `p` (rules §2.7).
    public func transmissionIndex(at p: Pos) -> Int? { transmissions.firstIndex { $0.pos == p } }

    public func hasEnemy(at p: Pos) -> Bool { enemies.contains { $0.pos == p } }
    public func hasTransmission(at p: Pos) -> Bool { transmissions.contains { $0.pos == p } }

    /// The cell holds a block of any kind, siphoned or not (rules §2.4).
    public func hasBlock(at p: Pos) -> Bool { p.inBounds && grid[p].hasBlock }

    /// Empty for transmission placement: on board, not the player's cell, no enemy,
    /// no transmission, no block (rules §8).
    public func isEmptyForPlacement(_ p: Pos) -> Bool {
        p.inBounds && p != player.pos && !hasEnemy(at: p) && !hasTransmission(at: p) && !grid[p].hasBlock
    }

    /// In the player's line of fire for placement: same row or column and no enemy
    /// or block strictly between; transmissions do not shield (rules §8).
    public func isInPlacementLineOfFire(_ p: Pos) -> Bool {
        let pp = player.pos
        guard p.row == pp.row || p.col == pp.col else { return false }
        let dr = (p.row - pp.row).signum()
        let dc = (p.col - pp.col).signum()
        var q = Pos(pp.row + dr, pp.col + dc)
        while q != p {
            if hasEnemy(at: q) || grid[q].hasBlock { return false }
            q = Pos(q.row + dr, q.col + dc)
        }
        return true
    }

    /// Some cell of the grid is siphoned (HACK applicability, programs §4.23).
    public var anySiphonedCell: Bool { grid.cells.contains { $0.siphoned } }

    // MARK: Removal primitives (programs §1.4)

    /// HIT(e, n): damage, stun survivors.
    public mutating func hitEnemy(_ i: Int, _ n: Int) {
        enemies[i].hp = max(0, enemies[i].hp - n)
        if enemies[i].hp > 0 { enemies[i].stunned = true }
    }

    /// SWEEP(): remove enemies with hp <= 0, keep order; count non-scheduled ones.
    public mutating func sweepEnemies() -> Int {
        var kills = 0
        enemies.removeAll { e in
            if e.hp <= 0 {
                if !e.fromTask { kills += 1 }
                return true
            }
            return false
        }
        return kills
    }

    /// ERASE_ENEMIES_AT(P): remove all enemies on P, count 1 unless the first is scheduled.
    public mutating func eraseEnemies(at p: Pos) -> Int {
        guard let i = enemyIndex(at: p) else { return 0 }
        let counted = enemies[i].fromTask ? 0 : 1
        enemies.removeAll { $0.pos == p }
        return counted
    }

    /// ERASE_TRANSMISSIONS_AT(P): the same for transmissions.
    public mutating func eraseTransmissions(at p: Pos) -> Int {
        guard let i = transmissionIndex(at: p) else { return 0 }
        let counted = transmissions[i].fromTask ? 0 : 1
        transmissions.removeAll { $0.pos == p }
        return counted
    }
}
