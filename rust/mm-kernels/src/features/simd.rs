//! The SIMD paths of the writers, each giving the bits of its scalar form: the float32
//! normalize evaluated in AVX2 lanes (the very IEEE operations the table was built with), and
//! interleaved RGB split into channel planes with SSSE3 shuffles.

/// Whether the CPU runs AVX2 (std caches the answer).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// A byte buffer a plane can be split into: initialised (`[u8]`) or not (`[MaybeUninit<u8>]`).
pub(crate) trait Plane {
    /// Its length.
    fn len(&self) -> usize;
    /// Where its first byte goes.
    fn as_mut_u8_ptr(&mut self) -> *mut u8;
    /// Byte `i` set to `v`.
    fn set(&mut self, i: usize, v: u8);
}

impl Plane for [u8] {
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }
    fn as_mut_u8_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr()
    }
    fn set(&mut self, i: usize, v: u8) {
        self[i] = v;
    }
}

impl Plane for [std::mem::MaybeUninit<u8>] {
    fn len(&self) -> usize {
        <[std::mem::MaybeUninit<u8>]>::len(self)
    }
    fn as_mut_u8_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr().cast()
    }
    fn set(&mut self, i: usize, v: u8) {
        self[i].write(v);
    }
}

/// Interleaved RGB samples into the planes `red`, `green` and `blue` (each at least
/// `rgb.len() / 3` long): every one of their first `rgb.len() / 3` bytes is written.
pub(crate) fn split_planes<P: Plane + ?Sized>(
    rgb: &[u8],
    red: &mut P,
    green: &mut P,
    blue: &mut P,
) {
    let n = rgb.len() / 3;
    assert!(
        red.len() >= n && green.len() >= n && blue.len() >= n,
        "planes are too short"
    );
    #[allow(unused_mut)]
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("ssse3") {
        let planes = [
            red.as_mut_u8_ptr(),
            green.as_mut_u8_ptr(),
            blue.as_mut_u8_ptr(),
        ];
        // SAFETY: the CPU has SSSE3 (checked just above), and each plane holds at least `n`
        // bytes (asserted above), all the function writes.
        done = unsafe { ssse3::split_planes(rgb, planes, n) };
    }
    for i in done..n {
        red.set(i, rgb[3 * i]);
        green.set(i, rgb[3 * i + 1]);
        blue.set(i, rgb[3 * i + 2]);
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) use avx2::normalize_avx2;

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::super::encode::Scatter;
    use super::super::table::{Arith, Lanes};

    /// All `n = src.len() / 3` pixels, eight at a time (the last eight overlap when `n` is not
    /// a multiple of eight: those pixels are simply written twice), as `lanes` computes them.
    ///
    /// # Safety
    /// AVX2 must be available; `n >= 8`; `dst` is valid for writes at every float
    /// `s.offset + (c * s.copies + t) * s.spacing + k` with `c < 3`, `t < s.copies`, `k < n`.
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn normalize_avx2(lanes: &Lanes, src: &[u8], dst: *mut f32, s: Scatter) {
        let n = src.len() / 3;
        assert!(n >= 8);
        // Byte shuffles picking one channel of 8 pixels out of bytes 0..16 and 16..24.
        const Z: i8 = -1;
        let lo = [
            _mm_setr_epi8(0, 3, 6, 9, 12, 15, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z),
            _mm_setr_epi8(1, 4, 7, 10, 13, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z),
            _mm_setr_epi8(2, 5, 8, 11, 14, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z),
        ];
        let hi = [
            _mm_setr_epi8(Z, Z, Z, Z, Z, Z, 2, 5, Z, Z, Z, Z, Z, Z, Z, Z),
            _mm_setr_epi8(Z, Z, Z, Z, Z, 0, 3, 6, Z, Z, Z, Z, Z, Z, Z, Z),
            _mm_setr_epi8(Z, Z, Z, Z, Z, 1, 4, 7, Z, Z, Z, Z, Z, Z, Z, Z),
        ];
        let sub = lanes.sub.map(|v| _mm256_set1_ps(v));
        let div = lanes.div.map(|v| _mm256_set1_ps(v));
        let scale_pd = _mm256_set1_pd(lanes.scale);
        let scale_ps = _mm256_set1_ps(lanes.scale as f32);
        let arith = lanes.arith;
        let mut next = 0;
        while next < n {
            let k = next.min(n - 8);
            next = k + 8;
            // SAFETY: pixels k..k+8 are inside `src` (k + 8 <= n), so bytes 3k..3k+24 are.
            let p = unsafe { src.as_ptr().add(k * 3) };
            // SAFETY: 16 bytes from `p` and 8 from `p + 16` lie within those 24 bytes.
            let (a, c) = unsafe { (_mm_loadu_si128(p.cast()), _mm_loadl_epi64(p.add(16).cast())) };
            for ch in 0..3 {
                let bytes = _mm_or_si128(_mm_shuffle_epi8(a, lo[ch]), _mm_shuffle_epi8(c, hi[ch]));
                let ints = _mm256_cvtepu8_epi32(bytes);
                let x = match arith {
                    Arith::Numpy => {
                        let l = _mm256_mul_pd(
                            _mm256_cvtepi32_pd(_mm256_castsi256_si128(ints)),
                            scale_pd,
                        );
                        let h = _mm256_mul_pd(
                            _mm256_cvtepi32_pd(_mm256_extracti128_si256(ints, 1)),
                            scale_pd,
                        );
                        _mm256_set_m128(_mm256_cvtpd_ps(h), _mm256_cvtpd_ps(l))
                    }
                    Arith::Torchvision => _mm256_cvtepi32_ps(ints),
                    Arith::Float32 => _mm256_mul_ps(_mm256_cvtepi32_ps(ints), scale_ps),
                };
                let y = _mm256_div_ps(_mm256_sub_ps(x, sub[ch]), div[ch]);
                for t in 0..s.copies {
                    let at = s.offset + (ch * s.copies + t) * s.spacing + k;
                    // SAFETY: `at + 8 <= ` the run's end, inside `dst` (the caller's contract).
                    unsafe { _mm256_storeu_ps(dst.add(at), y) };
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod ssse3 {
    use std::arch::x86_64::{
        __m128i, _mm_loadu_si128, _mm_or_si128, _mm_shuffle_epi8, _mm_storeu_si128,
    };

    /// The `pshufb` mask that takes, from the `part`-th 16 bytes of 48 interleaved RGB bytes,
    /// the samples of `channel` (its lanes of the other parts are zeroed: 0x80).
    const fn mask(channel: usize, part: usize) -> [u8; 16] {
        let mut m = [0x80u8; 16];
        let mut i = 0;
        while i < 16 {
            let at = 3 * i + channel;
            if at >= 16 * part && at < 16 * (part + 1) {
                m[i] = (at - 16 * part) as u8;
            }
            i += 1;
        }
        m
    }

    const MASKS: [[[u8; 16]; 3]; 3] = {
        let mut out = [[[0u8; 16]; 3]; 3];
        let mut c = 0;
        while c < 3 {
            let mut p = 0;
            while p < 3 {
                out[c][p] = mask(c, p);
                p += 1;
            }
            c += 1;
        }
        out
    };

    /// Splits whole groups of 16 pixels (three shuffles per channel) of the first `n` pixels
    /// of `rgb`; returns the pixels done.
    ///
    /// # Safety
    /// The CPU must support SSSE3; each of `planes` must be valid for writing `n` bytes, and
    /// `3 * n <= rgb.len()`.
    #[target_feature(enable = "ssse3")]
    pub(crate) unsafe fn split_planes(rgb: &[u8], planes: [*mut u8; 3], n: usize) -> usize {
        let groups = (rgb.len() / 48).min(n / 16);
        // Each group reads rgb[48k..48k+48] and writes [16k..16k+16] of each plane, all
        // within the slices by the bound on `groups`; loads and stores are unaligned ones.
        // SAFETY: each mask is 16 readable bytes.
        let masks = MASKS.map(|per| per.map(|m| unsafe { _mm_loadu_si128(m.as_ptr().cast()) }));
        for k in 0..groups {
            // SAFETY: 48 * k + 48 <= rgb.len() (the bound on `groups`).
            let src = unsafe { rgb.as_ptr().add(48 * k) };
            let parts: [__m128i; 3] =
                // SAFETY: bytes src[o..o + 16] lie within the group's 48.
                [0, 16, 32].map(|o| unsafe { _mm_loadu_si128(src.add(o).cast()) });
            for (&plane, m) in planes.iter().zip(&masks) {
                let v = _mm_or_si128(
                    _mm_or_si128(
                        _mm_shuffle_epi8(parts[0], m[0]),
                        _mm_shuffle_epi8(parts[1], m[1]),
                    ),
                    _mm_shuffle_epi8(parts[2], m[2]),
                );
                // SAFETY: 16 * k + 16 <= n (the bound on `groups`): inside the plane.
                unsafe { _mm_storeu_si128(plane.add(16 * k).cast(), v) };
            }
        }
        groups * 16
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn planes_hold_each_channel_in_order() {
        for n in [0usize, 1, 15, 16, 17, 33, 100] {
            let rgb: Vec<u8> = (0..3 * n).map(|i| (i * 7 % 251) as u8).collect();
            let mut planes = vec![vec![0u8; n]; 3];
            let [r, g, b] = &mut planes[..] else {
                unreachable!()
            };
            super::split_planes(&rgb, &mut r[..], &mut g[..], &mut b[..]);
            for i in 0..n {
                for c in 0..3 {
                    assert_eq!(planes[c][i], rgb[3 * i + c], "n={n} i={i} c={c}");
                }
            }
        }
    }
}
