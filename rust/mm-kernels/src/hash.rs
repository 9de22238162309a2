//! Content hash of the encoded source bytes: identical bytes, identical hash, whatever the
//! source form, so a cache can key on it before any pixel is decoded.

/// The first 8 bytes of the BLAKE3 digest, read big-endian.
pub fn content_hash(data: &[u8]) -> u64 {
    let digest = blake3::hash(data);
    let mut head = [0u8; 8];
    head.copy_from_slice(&digest.as_bytes()[..8]);
    u64::from_be_bytes(head)
}

/// The full hex BLAKE3 digest (used for spec fingerprints).
pub fn blake3_hex(data: &[u8]) -> String {
    blake3::hash(data).to_hex().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_input_matches_blake3_reference_vector() {
        // BLAKE3("") = af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262
        assert_eq!(content_hash(b""), 0xaf13_49b9_f5f9_a1a6);
    }
}
