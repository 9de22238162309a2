//! Per-channel bfloat16 lookup tables: a channel has only 256 input values plus the pad value,
//! so normalising once per value and rounding to bf16 is exact and leaves one load per sample.

/// The OpenAI CLIP normalisation constants (float32).
pub const MEAN: [f32; 3] = [0.481_454_66, 0.457_827_5, 0.408_210_73];
pub const STD: [f32; 3] = [0.268_629_54, 0.261_302_6, 0.275_777_1];

/// Index of the pad value in a table (after the 256 pixel values).
pub const PAD: usize = 256;

/// One table per channel: entries 0..=255 for pixel values, entry [`PAD`] for padding.
pub type Tables = [[u16; 257]; 3];

/// Round a float32 to bfloat16 bits, round-to-nearest-even (as `torch.Tensor.to(bfloat16)`).
pub fn bf16_rne(x: f32) -> u16 {
    if x.is_nan() {
        // Quiet NaN with the sign kept; never produced by the tables, kept total for safety.
        return ((x.to_bits() >> 16) as u16) | 0x0040;
    }
    let bits = x.to_bits();
    let rounded = bits.wrapping_add(0x7fff + ((bits >> 16) & 1));
    (rounded >> 16) as u16
}

/// `(raw - MEAN[c]) / STD[c]` in IEEE float32, each operation rounded on its own (Rust never
/// contracts into a fused multiply-add unless asked to).
fn normalise(raw: f32, c: usize) -> f32 {
    (raw - MEAN[c]) / STD[c]
}

/// Build the three tables: value `v` maps from `f32(v) * f32(1/255)`, padding from
/// `f32(-1/255)`.
pub fn tables() -> Tables {
    let inv = (1.0f64 / 255.0) as f32;
    let mut out = [[0u16; 257]; 3];
    for (c, table) in out.iter_mut().enumerate() {
        for (v, slot) in table.iter_mut().take(256).enumerate() {
            *slot = bf16_rne(normalise(v as f32 * inv, c));
        }
        table[PAD] = bf16_rne(normalise(-inv, c));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rne_ties_go_to_even() {
        // 1 + 2^-8 is exactly halfway between bf16 1.0 and the next value: goes down to even.
        assert_eq!(bf16_rne(f32::from_bits(0x3f80_8000)), 0x3f80);
        // 1 + 3 * 2^-8 is halfway with an odd lower neighbour: goes up.
        assert_eq!(bf16_rne(f32::from_bits(0x3f81_8000)), 0x3f82);
        assert_eq!(bf16_rne(f32::from_bits(0x3f80_8001)), 0x3f81);
        assert_eq!(bf16_rne(-2.0), 0xc000);
    }

    #[test]
    fn one_over_255_is_the_same_either_way() {
        assert_eq!((1.0f64 / 255.0) as f32, 1.0f32 / 255.0f32);
    }
}
