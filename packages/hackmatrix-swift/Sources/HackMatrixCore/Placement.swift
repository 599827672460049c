// The standard transmission placement procedure (rules §8), literal:
// up to 100 preferred draws, then up to 100 fallback draws. Mirror of placement.py.

/// Find a cell for one transmission: <= 100 draws for an empty cell out of the
/// player's line of fire, then <= 100 draws for any empty cell (rules §8).
func drawPlacementCell(_ state: GameState, rng: inout Rng) -> Pos? {
    for _ in 0..<placementTries {
        let r = rng.int(below: gridSize)
        let c = rng.int(below: gridSize)
        let p = Pos(r, c)
        if state.isEmptyForPlacement(p) && !state.isInPlacementLineOfFire(p) { return p }
    }
    for _ in 0..<placementTries {
        let r = rng.int(below: gridSize)
        let c = rng.int(below: gridSize)
        let p = Pos(r, c)
        if state.isEmptyForPlacement(p) { return p }
    }
    return nil
}

/// Some cell is empty for placement (rules §8).
func hasEmptyCell(_ state: GameState) -> Bool {
    for r in 0..<gridSize {
        for c in 0..<gridSize where state.isEmptyForPlacement(Pos(r, c)) { return true }
    }
    return false
}

/// Place `n` transmissions one after another with countdown 1 and the given
/// provenance; the type is drawn after the cell is found (rules §8, §12.1 #10–11).
/// Returns how many were placed.
@discardableResult
public func placeTransmissions(
    _ state: inout GameState, count n: Int, fromTask: Bool, fromSiphon: Bool, rng: inout Rng
) -> Int {
    var placed = 0
    for _ in 0..<max(0, n) {
        // Shortcut (changes only our generator's stream, never an outcome): with no
        // empty cell left, every further try fails, so stop drawing.
        if !hasEmptyCell(state) { break }
        guard let p = drawPlacementCell(state, rng: &rng) else { continue }
        let kind = EnemyKind(rawValue: rng.int(below: numEnemyKinds))!
        state.transmissions.append(
            Transmission(pos: p, countdown: 1, kind: kind, fromTask: fromTask, fromSiphon: fromSiphon))
        placed += 1
    }
    return placed
}
