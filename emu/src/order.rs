//! The order in which a launch's workgroups are handed to the worker threads:
//! a bijection of `0..total` chosen per launch from the emulator's seed, so
//! that inter-workgroup atomics (atomic split-K) meet in a different order on
//! each launch, as on a GPU, and code that relies on one order is caught.
//!
//! Orders are last-first (reversed) or an affine permutation
//! `i -> (a i + b) mod total` with `gcd(a, total) = 1`; both cost O(1) per
//! workgroup and nothing per launch beyond a few `gcd`s.

/// SplitMix64 finaliser: a well-mixed 64-bit hash of `x`.
pub(crate) fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// One launch's workgroup order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Order {
    total: u64,
    a: u64,
    b: u64,
    reversed: bool,
}

impl Order {
    /// The order of `total` workgroups for the launch seed `seed`: reversed
    /// for one seed in four, else affine with a random multiplier and offset.
    pub fn new(seed: u64, total: u64) -> Order {
        let total = total.max(1);
        let h = mix(seed);
        let reversed = h.is_multiple_of(4);
        let mut a = 1 + mix(h) % total;
        let mut tries = 0;
        while gcd(a % total, total) != 1 && tries < 64 {
            a = 1 + mix(a ^ h) % total;
            tries += 1;
        }
        if gcd(a % total, total) != 1 {
            a = 1;
        }
        Order { total, a: a % total, b: mix(h ^ 1) % total, reversed }
    }

    /// Linear workgroup index dispatched at position `pos` (`pos < total`).
    #[inline]
    pub fn at(&self, pos: u64) -> u64 {
        if self.reversed {
            self.total - 1 - pos
        } else {
            ((self.a as u128 * pos as u128 + self.b as u128) % self.total as u128) as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_order_is_a_permutation_and_orders_vary() {
        let mut reversed = 0;
        let mut firsts = std::collections::HashSet::new();
        for seed in 0..200u64 {
            for total in [1u64, 2, 3, 12, 60, 97, 1024] {
                let o = Order::new(seed, total);
                let mut seen = vec![false; total as usize];
                for p in 0..total {
                    let i = o.at(p) as usize;
                    assert!(!seen[i], "seed {seed} total {total}: {i} twice");
                    seen[i] = true;
                }
                if total == 60 {
                    reversed += o.reversed as u32;
                    firsts.insert(o.at(0));
                }
            }
        }
        assert!((20..80).contains(&reversed), "{reversed} of 200 orders reversed");
        assert!(firsts.len() > 30, "only {} different first workgroups", firsts.len());
    }
}
