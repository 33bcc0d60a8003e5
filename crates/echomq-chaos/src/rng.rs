//! A small seeded generator (xorshift64*, seeded through splitmix64): the
//! chaos schedule and the choice of victims come from `--seed`, so a run's
//! plan can be replayed. Nothing here needs cryptographic quality, and a
//! dozen lines beat a dependency.

/// A xorshift64* generator.
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`; any seed, 0 included, gives a good state.
    pub fn new(seed: u64) -> Rng {
        Rng(mix(seed) | 1)
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n`; `n` must not be 0.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A number in `low..high`, as a fraction.
    pub fn between(&mut self, low: f64, high: f64) -> f64 {
        let unit = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        low + (high - low) * unit
    }
}

/// splitmix64's finaliser: spreads any input over all 64 bits. Also what a
/// job's number is hashed with to pick its work (see `worker.rs`).
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_replays_its_sequence_and_seeds_differ() {
        let sequence = |seed| {
            let mut rng = Rng::new(seed);
            (0..8).map(|_| rng.next()).collect::<Vec<u64>>()
        };
        assert_eq!(sequence(7), sequence(7));
        assert_ne!(sequence(7), sequence(8));
        assert!(sequence(0).iter().all(|x| *x != 0), "seed 0 still moves");
    }

    #[test]
    fn ranges_hold_and_are_covered() {
        let mut rng = Rng::new(42);
        let mut seen = [false; 5];
        for _ in 0..1000 {
            let n = rng.below(5);
            seen[n as usize] = true;
            let x = rng.between(0.25, 0.5);
            assert!((0.25..0.5).contains(&x), "{x}");
        }
        assert!(seen.iter().all(|s| *s), "{seen:?}");
    }
}
