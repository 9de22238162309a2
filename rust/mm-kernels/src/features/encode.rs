//! The encoders: what one resized uint8 sample becomes in the output. The full form writes
//! the table's value (float32, or bfloat16 bits); the compact form writes the sample itself
//! (its code), to be looked up later by whoever holds the table. A writer is generic over the
//! encoder, so both forms come from one walk over the pixels and agree by construction.

use std::mem::MaybeUninit;

use super::alloc::{stream, Store};
use super::simd::split_planes;
use super::table::{Bf16Table, Table};

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
    /// every element written. Writers call this a whole image row at a time; [`Values`]
    /// computes with SIMD lanes and [`Codes`] splits with SIMD shuffles.
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

    /// Whether [`Encode::encode_patch`] is faster than going through
    /// [`Encode::encode_planes`] for patches of side `ps` on this CPU (writers then take it).
    fn has_patch_kernel(&self, _ps: usize) -> bool {
        false
    }

    /// Encode one square patch of side `ps`, line `py`'s interleaved RGB pixels at byte
    /// `py * stride` of `src`, into `dst` as planes: channel `c`, copy `t`, line `py` at
    /// `((c * copies + t) * ps + py) * ps`, every one of those elements written (and nothing
    /// else). [`Values`] overrides it with SIMD lanes.
    fn encode_patch(
        &self,
        src: &[u8],
        stride: usize,
        ps: usize,
        copies: usize,
        dst: &mut [MaybeUninit<Self::Out>],
    ) {
        patch_by_sample(self, src, stride, ps, copies, dst);
    }

    /// Copy a finished run of output into place; [`Values`] streams it past the cache when
    /// the buffer is a reused, cold one.
    #[inline]
    fn store(dst: &mut [MaybeUninit<Self::Out>], src: &[Self::Out], _store: Store) {
        dst.write_copy_of_slice(src);
    }
}

/// [`Encode::encode_patch`] a sample at a time.
fn patch_by_sample<E: Encode + ?Sized>(
    enc: &E,
    src: &[u8],
    stride: usize,
    ps: usize,
    copies: usize,
    dst: &mut [MaybeUninit<E::Out>],
) {
    for py in 0..ps {
        let line = &src[py * stride..py * stride + 3 * ps];
        for (px, p) in line.chunks_exact(3).enumerate() {
            for (c, &sample) in p.iter().enumerate() {
                let v = enc.encode(c, sample);
                for t in 0..copies {
                    dst[((c * copies + t) * ps + py) * ps + px].write(v);
                }
            }
        }
    }
}

/// The full form: the table's float32 values.
#[derive(Clone, Copy, Debug)]
pub struct Values<'a>(pub &'a Table);

impl Encode for Values<'_> {
    type Out = f32;

    fn has_patch_kernel(&self, ps: usize) -> bool {
        super::simd::has_patch_kernel(ps)
    }

    fn encode_patch(
        &self,
        src: &[u8],
        stride: usize,
        ps: usize,
        copies: usize,
        dst: &mut [MaybeUninit<f32>],
    ) {
        if !super::simd::has_patch_kernel(ps) {
            return patch_by_sample(self, src, stride, ps, copies, dst);
        }
        assert!(
            dst.len() >= 3 * copies * ps * ps,
            "the patch does not fit the destination"
        );
        // SAFETY: the kernel runs here (just checked) and `dst` holds the patch (asserted).
        unsafe {
            super::simd::normalize_patch(
                self.0.lanes(),
                src,
                stride,
                ps,
                copies,
                dst.as_mut_ptr().cast(),
            )
        };
    }

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
    fn encode_planes(&self, src: &[u8], planes: [&mut [MaybeUninit<f32>]; 3]) {
        let n = src.len() / 3;
        assert!(
            planes.iter().all(|p| p.len() == n),
            "planes must hold one element per pixel"
        );
        let [p0, p1, p2] = planes;
        let ptrs = [p0.as_mut_ptr(), p1.as_mut_ptr(), p2.as_mut_ptr()].map(|p| p.cast::<f32>());
        // SAFETY: each plane holds `n` floats (asserted above), all the lanes write.
        let done = unsafe { super::simd::normalize_planes(self.0.lanes(), src, ptrs) };
        let values = self.0.values();
        for (i, px) in src.chunks_exact(3).enumerate().skip(done) {
            p0[i].write(values[0][usize::from(px[0])]);
            p1[i].write(values[1][usize::from(px[1])]);
            p2[i].write(values[2][usize::from(px[2])]);
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

    /// Every value of every channel, through the SIMD lanes (every length, so each vector
    /// width and tail is taken) and the scalar tail alike, for every arithmetic, with and
    /// without the reciprocal.
    #[test]
    fn value_planes_equal_the_table() {
        let mean = [0.48145466, 0.4578275, 0.40821073];
        // The second: a std whose lanes must divide (no reciprocal is exact).
        let stds = [[0.26862954, 0.26130258, 0.27577711], [0.5, 1e-40, 0.5]];
        for arith in [Arith::Numpy, Arith::Torchvision, Arith::Float32] {
            for (rescale, std) in [1.0 / 255.0, 1.0 / 127.0, 1.0 / 127.5]
                .into_iter()
                .flat_map(|r| stds.map(|s| (r, s)))
            {
                let t = Table::new(mean, std, rescale, arith).unwrap();
                let mut src: Vec<u8> = (0..=255u8)
                    .flat_map(|v| [v, v.wrapping_mul(7), 255 - v])
                    .collect();
                src.extend(src.clone());
                for n in (0..40).chain([255, 256, 512]) {
                    for shift in [0, (512 - n).min(1), 512 - n] {
                        let px = &src[shift * 3..(shift + n) * 3];
                        let mut planes = vec![vec![MaybeUninit::new(-1f32); n]; 3];
                        let [a, b, c] = &mut planes[..] else {
                            unreachable!()
                        };
                        Values(&t).encode_planes(px, [a, b, c]);
                        for (c, plane) in planes.iter().enumerate() {
                            for (i, p) in px.chunks_exact(3).enumerate() {
                                // SAFETY: every element was initialised to -1 above.
                                let got = unsafe { plane[i].assume_init() };
                                let want = t.values()[c][usize::from(p[c])];
                                assert_eq!(
                                    got.to_bits(),
                                    want.to_bits(),
                                    "{arith:?} n {n} c {c} i {i}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// Patches through the kernel give the bits of the sample-at-a-time encoding, for every
    /// side up to 16, every copy count and arithmetic, at the end of the band too.
    #[test]
    fn value_patches_equal_the_samples() {
        let mean = [0.48145466, 0.4578275, 0.40821073];
        let std = [0.26862954, 0.26130258, 0.27577711];
        for arith in [Arith::Numpy, Arith::Torchvision, Arith::Float32] {
            let t = Table::new(mean, std, 1.0 / 255.0, arith).unwrap();
            for ps in 1..=17 {
                let stride = 3 * ps + 5;
                let src: Vec<u8> = (0..(ps - 1) * stride + 3 * ps)
                    .map(|i| (i * 37 % 256) as u8)
                    .collect();
                for copies in 1..=3 {
                    let n = 3 * copies * ps * ps;
                    let mut got = vec![MaybeUninit::new(-1f32); n + 1];
                    let mut want = vec![MaybeUninit::new(-1f32); n + 1];
                    Values(&t).encode_patch(&src, stride, ps, copies, &mut got[..n]);
                    patch_by_sample(&Values(&t), &src, stride, ps, copies, &mut want[..n]);
                    let bits = |v: &[MaybeUninit<f32>]| -> Vec<u32> {
                        let mut out = Vec::new();
                        for x in v {
                            // SAFETY: every element was initialised to -1 above.
                            out.push(unsafe { x.assume_init() }.to_bits());
                        }
                        out
                    };
                    assert_eq!(bits(&got), bits(&want), "{arith:?} ps {ps} copies {copies}");
                    // SAFETY: as above.
                    let first = unsafe { want[0].assume_init() };
                    assert_eq!(first, t.values()[0][usize::from(src[0])]);
                }
            }
        }
    }
}
