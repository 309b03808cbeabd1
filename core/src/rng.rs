//! The allocation random generator: small, seeded, serialisable.
//!
//! Kubernetes picks a random start offset for each dynamic allocation. Here
//! the generator is SplitMix64, seeded from configuration, and its state is
//! part of snapshots, so the same seed gives the same ClusterIPs everywhere.

use serde::{Deserialize, Serialize};

/// A deterministic SplitMix64 generator.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n`; `n` must be at least 1 (0 is returned for `n == 0`).
    ///
    /// Uses a 128-bit draw reduced modulo `n`: the bias is below 2^-64 for
    /// every range the allocators use, and the result is deterministic.
    pub fn below(&mut self, n: u128) -> u128 {
        if n == 0 {
            return 0;
        }
        let hi = u128::from(self.next_u64());
        let lo = u128::from(self.next_u64());
        ((hi << 64) | lo) % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = Rng::new(7);
        for n in [1u128, 2, 3, 16, 1 << 20, u128::from(u64::MAX) + 5] {
            for _ in 0..50 {
                assert!(r.below(n) < n);
            }
        }
        assert_eq!(r.below(0), 0);
    }
}
