// The seeded PRNG (our extension, documented in Rng.swift).
import XCTest

@testable import HackMatrixCore

final class RngTests: XCTestCase {
    /// Reference values of SplitMix64 seeding + xoshiro256** (seed 0: the first
    /// SplitMix64 outputs are 0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, ...).
    func testSeedingMatchesSplitMix64() {
        // xoshiro256** first output = rotl(s1 * 5, 7) * 9 with s1 = 0x6E789E6AA1B965F4.
        let s1: UInt64 = 0x6E78_9E6A_A1B9_65F4
        let x = s1 &* 5
        let expected = ((x << 7) | (x >> 57)) &* 9
        var r = Rng(seed: 0)
        XCTAssertEqual(r.next(), expected)
    }

    func testUniformity() {
        var r = Rng(seed: 99)
        var counts = [Int](repeating: 0, count: 6)
        for _ in 0..<60_000 { counts[r.int(below: 6)] += 1 }
        for c in counts { XCTAssertEqual(Double(c), 10_000, accuracy: 400) }
        var heads = 0
        for _ in 0..<20_000 where r.coin() { heads += 1 }
        XCTAssertEqual(Double(heads), 10_000, accuracy: 400)
        for _ in 0..<1000 {
            let d = r.double()
            XCTAssertTrue(d >= 0 && d < 1)
        }
    }

    func testPermutation() {
        var r = Rng(seed: 1)
        var firsts = [Int](repeating: 0, count: 4)
        for _ in 0..<8000 {
            let p = r.permutation(4)
            XCTAssertEqual(p.sorted(), [0, 1, 2, 3])
            firsts[p[0]] += 1
        }
        for c in firsts { XCTAssertEqual(Double(c), 2000, accuracy: 200) }
        XCTAssertEqual(r.permutation(0), [])
    }

    /// Same seed -> same trajectory (whole games, random masked policy).
    func testDeterministicTrajectories() {
        func run(_ seed: UInt64) -> [Double] {
            var rng = Rng(seed: seed)
            var policy = Rng(seed: seed ^ 0xABCD)
            var s = resetGame(rng: &rng)
            var rewards: [Double] = []
            for _ in 0..<500 {
                let v = validActions(s)
                let r = stepGame(&s, action: v[policy.int(below: v.count)], rng: &rng)
                rewards.append(r.reward)
                if r.done { s = resetGame(rng: &rng) }
            }
            return rewards
        }
        XCTAssertEqual(run(5), run(5))
        XCTAssertNotEqual(run(5), run(6))
    }
}
