//! Standard-alphabet base64, with the decoded size known before decoding so budgets can be
//! enforced without allocating.

use base64::Engine as _;

use crate::error::{KernelError, Result};

/// Upper bound of the decoded size of `text` (whitespace-trimmed, padding ignored).
pub fn decoded_len(text: &[u8]) -> usize {
    let t = text.trim_ascii();
    let pad = t.iter().rev().take_while(|&&c| c == b'=').count();
    let n = t.len() - pad;
    n / 4 * 3 + (n % 4 * 3) / 4
}

/// Decode standard base64 (padding optional, surrounding whitespace trimmed).
pub fn base64_decode(text: &[u8]) -> Result<Vec<u8>> {
    let t = text.trim_ascii();
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    engine
        .decode(t)
        .map_err(|e| KernelError::InvalidArgument(format!("invalid base64: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_length() {
        assert_eq!(base64_decode(b"  aGVsbG8=\n").unwrap(), b"hello");
        assert_eq!(base64_decode(b"aGVsbG8").unwrap(), b"hello");
        assert_eq!(decoded_len(b"aGVsbG8="), 5);
        assert!(base64_decode(b"a$b").is_err());
    }
}
