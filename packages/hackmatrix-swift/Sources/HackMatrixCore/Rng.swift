// Seeded PRNG (our extension; the reference is unseeded, interface §5.8).
//
// Generator: xoshiro256** (Blackman & Vigna), state seeded from a 64-bit seed
// with four SplitMix64 outputs. Primitive draws, each consuming u64 outputs:
//   * `int(below: n)`  one u64 x, redrawn while x < (2^64 mod n); returns x mod n
//                      (unbiased; a redraw happens with probability < n / 2^64).
//   * `int(_ a, _ b)`  a + int(below: b - a + 1).
//   * `double()`       one u64: (x >> 11) * 2^-53, uniform in [0, 1).
//   * `coin()`         one u64: true iff its top bit is 1 ("heads").
//   * `shuffle(n)`     Fisher–Yates: for i = n-1 down to 1, j = int(below: i+1), swap(i, j);
//                      n-1 draws (none for n <= 1).
//
// Draw order follows rules §12.1 exactly (each site names its row):
//   reset:        #1 corner int(below: 4) -> corners[i]; #2 bonus int(below: 3)
//                 (0 credits, 1 energy, 2 siphon); then stage generation.
//   stage gen:    #3 exit int(below: candidates); #4 N = int(5, 11) (once);
//                 per attempt (<= 100): per block, #5 row int(below: 6), col int(below: 6)
//                 (redrawn on rejection), #6 coin() is_data, double() < 0.1 is_question,
//                 #7 points int(1, 9) or program pool[int(below: unused count)];
//                 #9 per eligible cell row-major: double() amount, coin() credits;
//                 #10/#11 stage transmissions.
//   placement:    #10 <= 100 preferred tries then <= 100 fallback tries, each
//                 row int(below: 6) then col int(below: 6); #11 kind int(below: 4)
//                 only when a cell was accepted.
//   enemy phase:  #12 shuffle(enemy count) for sub-step 0, again for sub-step 1
//                 (if any); then #10/#11 scheduled spawn, then owed siphon spawns.
//   programs:     #13 WARP int(below: enemies + transmissions);
//                 POLY int(below: 3) per enemy in list order.

/// xoshiro256** seeded by SplitMix64.
public struct Rng: Sendable {
    private var s: (UInt64, UInt64, UInt64, UInt64)

    public init(seed: UInt64) {
        var sm = seed
        func splitmix(_ x: inout UInt64) -> UInt64 {
            x &+= 0x9E37_79B9_7F4A_7C15
            var z = x
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        s = (splitmix(&sm), splitmix(&sm), splitmix(&sm), splitmix(&sm))
    }

    @inline(__always)
    private static func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }

    /// Next raw 64-bit output.
    public mutating func next() -> UInt64 {
        let result = Rng.rotl(s.1 &* 5, 7) &* 9
        let t = s.1 << 17
        s.2 ^= s.0
        s.3 ^= s.1
        s.1 ^= s.2
        s.0 ^= s.3
        s.2 ^= t
        s.3 = Rng.rotl(s.3, 45)
        return result
    }

    /// Uniform integer in 0..<n (n >= 1), unbiased by rejection.
    public mutating func int(below n: Int) -> Int {
        precondition(n >= 1, "int(below:) needs n >= 1")
        let un = UInt64(n)
        let threshold = (0 &- un) % un
        while true {
            let x = next()
            if x >= threshold { return Int(x % un) }
        }
    }

    /// Uniform integer in a...b.
    public mutating func int(_ a: Int, _ b: Int) -> Int { a + int(below: b - a + 1) }

    /// Uniform double in [0, 1).
    public mutating func double() -> Double { Double(next() >> 11) * 0x1p-53 }

    /// Fair coin ("heads" = true).
    public mutating func coin() -> Bool { next() >> 63 == 1 }

    /// Uniform permutation of 0..<n (Fisher–Yates).
    public mutating func permutation(_ n: Int) -> [Int] {
        var p = Array(0..<n)
        var i = n - 1
        while i >= 1 {
            let j = int(below: i + 1)
            p.swapAt(i, j)
            i -= 1
        }
        return p
    }
}
