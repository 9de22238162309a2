//! The encoders: what one resized uint8 sample becomes in the output. The full form writes
//! the table's value (float32, or bfloat16 bits); the compact form writes the sample itself
//! (its code), to be looked up later by whoever holds the table. A writer is generic over the
//! encoder, so both forms come from one walk over the pixels and agree by construction.

use std::mem::MaybeUninit;

use super::alloc::{stream, Store};
use super::simd::split_planes;
use super::table::{Bf16Table, Table};

/// How a run of pixels is spread over the output: channel `c`, copy `t` of a run of `n`
/// pixels starts at `offset + (c * copies + t) * spacing` (copies are repeated frames).
#[derive(Clone, Copy, Debug)]
pub struct Scatter {
    /// Copies of each channel's run (a still image's temporal repeat).
    pub copies: usize,
    /// Elements between the starts of consecutive copies (and channels).
    pub spacing: usize,
    /// Where the first copy of channel 0 starts.
    pub offset: usize,
}

/// One sample of channel `c` to its output element, and the pad value of channel `c`.
pub trait Encode: Sync {
    /// The output element: `f32` values, `u16` bfloat16 bits, or `u8` codes.
    type Out: Copy + Send + Sync + Default + 'static;

    /// Sample `v` of channel `c` (0, 1 or 2).
    fn encode(&self, c: usize, v: u8) -> Self::Out;

    /// The value written outside the image where a writer pads (the table's pad value; a
    /// code of 0 in the compact form, whose pad rule marks those places).
    fn pad(&self, c: usize) -> Self::Out;

    /// Whether this encoder writes codes (the compact form).
    fn is_codes(&self) -> bool {
        false
    }

    /// Encode the interleaved RGB pixels `src` into `dst` as `s` says, every element of each
    /// run written (and nothing else). Writers call this per patch line, into a row buffer or
    /// straight into the output; [`Values`] overrides it with SIMD lanes.
    #[inline]
    fn scatter(&self, src: &[u8], dst: &mut [MaybeUninit<Self::Out>], s: Scatter) {
        let n = src.len() / 3;
        for c in 0..3 {
            for t in 0..s.copies {
                let at = s.offset + (c * s.copies + t) * s.spacing;
                for (d, px) in dst[at..at + n].iter_mut().zip(src.chunks_exact(3)) {
                    d.write(self.encode(c, px[c]));
                }
            }
        }
    }

    /// Encode interleaved RGB pixels `src` into interleaved `dst` (same length), every element
    /// written; [`Codes`] copies them.
    #[inline]
    fn encode_pixels(&self, src: &[u8], dst: &mut [MaybeUninit<Self::Out>]) {
        for (d, s) in dst.chunks_exact_mut(3).zip(src.chunks_exact(3)) {
            d[0].write(self.encode(0, s[0]));
            d[1].write(self.encode(1, s[1]));
            d[2].write(self.encode(2, s[2]));
        }
    }

    /// Encode interleaved RGB pixels `src` into three planes (each `src.len() / 3` long),
    /// every element written; [`Codes`] splits them with SIMD shuffles.
    #[inline]
    fn encode_planes(&self, src: &[u8], planes: [&mut [MaybeUninit<Self::Out>]; 3]) {
        let [p0, p1, p2] = planes;
        let lanes = p0.iter_mut().zip(p1.iter_mut()).zip(p2.iter_mut());
        for (((d0, d1), d2), p) in lanes.zip(src.chunks_exact(3)) {
            d0.write(self.encode(0, p[0]));
            d1.write(self.encode(1, p[1]));
            d2.write(self.encode(2, p[2]));
        }
    }

    /// Copy a finished run of output into place; [`Values`] streams it past the cache when
    /// the buffer is a reused, cold one.
    #[inline]
    fn store(dst: &mut [MaybeUninit<Self::Out>], src: &[Self::Out], _store: Store) {
        dst.write_copy_of_slice(src);
    }
}

/// The full form: the table's float32 values.
#[derive(Clone, Copy, Debug)]
pub struct Values<'a>(pub &'a Table);

impl Encode for Values<'_> {
    type Out = f32;

    #[inline(always)]
    fn encode(&self, c: usize, v: u8) -> f32 {
        self.0.values()[c][usize::from(v)]
    }

    #[inline]
    fn pad(&self, c: usize) -> f32 {
        self.0.pad().map_or(0.0, |p| p[c])
    }

    #[inline]
    fn store(dst: &mut [MaybeUninit<f32>], src: &[f32], store: Store) {
        match store {
            Store::Streamed => stream::copy(dst, src),
            Store::Cached => {
                dst.write_copy_of_slice(src);
            }
        }
    }

    #[inline]
    fn scatter(&self, src: &[u8], dst: &mut [MaybeUninit<f32>], s: Scatter) {
        let n = src.len() / 3;
        let last = (3 * s.copies)
            .checked_sub(1)
            .map(|k| k * s.spacing + s.offset + n);
        assert!(
            last.is_some_and(|end| end <= dst.len()) && (s.copies == 1 || n <= s.spacing),
            "scatter does not fit the destination"
        );
        #[cfg(target_arch = "x86_64")]
        if n >= 8 && super::simd::has_avx2() {
            // SAFETY: AVX2 is available (just checked); `n >= 8`, and every store lands in
            // `dst` (checked just above).
            unsafe { super::simd::normalize_avx2(self.0.lanes(), src, dst.as_mut_ptr().cast(), s) };
            return;
        }
        let values = self.0.values();
        for (c, row) in values.iter().enumerate() {
            for t in 0..s.copies {
                let at = s.offset + (c * s.copies + t) * s.spacing;
                for (d, px) in dst[at..at + n].iter_mut().zip(src.chunks_exact(3)) {
                    d.write(row[usize::from(px[c])]);
                }
            }
        }
    }
}

/// The full form in bfloat16: the table's values rounded to bfloat16 bits.
#[derive(Clone, Copy, Debug)]
pub struct Bf16Values<'a>(pub &'a Bf16Table);

impl Encode for Bf16Values<'_> {
    type Out = u16;

    #[inline(always)]
    fn encode(&self, c: usize, v: u8) -> u16 {
        self.0.values()[c][usize::from(v)]
    }

    #[inline]
    fn pad(&self, c: usize) -> u16 {
        self.0.pad().map_or(0, |p| p[c])
    }
}

/// The compact form: every sample is its own code (the table is applied later).
#[derive(Clone, Copy, Debug, Default)]
pub struct Codes;

impl Encode for Codes {
    type Out = u8;

    #[inline(always)]
    fn encode(&self, _c: usize, v: u8) -> u8 {
        v
    }

    #[inline]
    fn pad(&self, _c: usize) -> u8 {
        0
    }

    fn is_codes(&self) -> bool {
        true
    }

    #[inline]
    fn encode_pixels(&self, src: &[u8], dst: &mut [MaybeUninit<u8>]) {
        dst.write_copy_of_slice(src);
    }

    #[inline]
    fn encode_planes(&self, src: &[u8], planes: [&mut [MaybeUninit<u8>]; 3]) {
        let [p0, p1, p2] = planes;
        split_planes(src, p0, p1, p2);
    }
}

#[cfg(test)]
mod tests {
    use super::super::table::{Arith, Table};
    use super::*;

    /// Every value of every channel, through the SIMD lanes (with and without an overlapping
    /// tail) and the scalar path alike, each copy in its place, for every arithmetic.
    #[test]
    fn value_scatter_equals_the_table() {
        let mean = [0.48145466, 0.4578275, 0.40821073];
        let std = [0.26862954, 0.26130258, 0.27577711];
        for arith in [Arith::Numpy, Arith::Torchvision, Arith::Float32] {
            for rescale in [1.0 / 255.0, 1.0 / 127.0] {
                let t = Table::new(mean, std, rescale, arith).unwrap();
                let src: Vec<u8> = (0..=255u8)
                    .flat_map(|v| [v, v.wrapping_mul(7), 255 - v])
                    .collect();
                for n in [1, 7, 8, 9, 14, 16, 256] {
                    for shift in [0, 256 - n] {
                        let px = &src[shift * 3..(shift + n) * 3];
                        let s = Scatter {
                            copies: 2,
                            spacing: n + 1,
                            offset: 1,
                        };
                        let mut dst = vec![MaybeUninit::new(-1f32); 6 * (n + 1) + 1];
                        Values(&t).scatter(px, &mut dst, s);
                        // SAFETY: every element was initialised to -1 above.
                        let got: Vec<u32> = dst
                            .iter()
                            .map(|v| unsafe { v.assume_init() }.to_bits())
                            .collect();
                        let mut want = vec![(-1f32).to_bits(); dst.len()];
                        for c in 0..3 {
                            for k in 0..2 {
                                for (i, p) in px.chunks_exact(3).enumerate() {
                                    let v = t.values()[c][usize::from(p[c])];
                                    want[1 + (c * 2 + k) * (n + 1) + i] = v.to_bits();
                                }
                            }
                        }
                        assert_eq!(got, want, "{arith:?} n {n} shift {shift}");
                    }
                }
            }
        }
    }
}
