// The action mask (interface §2), built from the validity functions of the
// rule modules, so the mask and the step cannot drift apart. Mirror of mask.py.

/// bool[28]: directions (interface §2.2), siphon (§2.3), programs (§2.4).
public func actionMask(_ state: GameState) -> [Bool] {
    var mask = [Bool](repeating: false, count: numActions)
    for d in 0..<numDirections { mask[d] = canEnterOrHit(state, direction: d) }
    mask[Action.siphon.rawValue] = state.player.siphons > 0
    for p in 0..<numPrograms { mask[firstProgram + p] = canRunProgram(state, program: p) }
    return mask
}

/// The valid action indices, ascending (interface §2.1, `getValidActions`).
public func validActions(_ state: GameState) -> [Int] {
    actionMask(state).enumerated().compactMap { $0.element ? $0.offset : nil }
}
