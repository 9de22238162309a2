//! Helpers of the crate's unit tests.

/// `n` pseudo-random bytes from `seed` (a 64-bit LCG's top byte): deterministic test images.
pub(crate) fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 56) as u8
        })
        .collect()
}
