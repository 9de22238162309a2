//! The SIMD paths of the writers, each giving the bits of its scalar form: the float32
//! normalize evaluated in AVX-512 or AVX2 lanes (the very IEEE operations the table was built
//! with, or checked against), and interleaved RGB split into channel planes with SSSE3
//! shuffles.

use super::table::Lanes;

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

/// The first pixels of interleaved RGB `src` through `lanes` into three float32 planes, as
/// many as the CPU's vector lanes take (all of them with AVX-512, whole groups of eight with
/// AVX2 and FMA, none without); returns how many, for the caller to finish from the table.
///
/// # Safety
/// Each of `planes` must be valid for writing `src.len() / 3` floats.
#[allow(unused_variables)]
pub(crate) unsafe fn normalize_planes(lanes: &Lanes, src: &[u8], planes: [*mut f32; 3]) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the CPU has the features (just checked); the planes' contract is ours.
            unsafe { avx512::normalize_planes(lanes, src, planes) };
            return src.len() / 3;
        }
        if has_avx2() && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: as above.
            return unsafe { avx2::normalize_planes(lanes, src, planes) };
        }
    }
    0
}

/// Whether [`normalize_patch`] has a kernel for patches of side `ps` on this CPU.
pub(crate) fn has_patch_kernel(ps: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    if (1..=16).contains(&ps) {
        return has_avx512();
    }
    let _ = ps;
    false
}

/// One square patch of side `ps` (line `py`'s interleaved RGB pixels at byte `py * stride` of
/// `src`) through `lanes` into `dst` as planes: channel `c`, copy `t`, line `py` at
/// `((c * copies + t) * ps + py) * ps`, every one of those elements written.
///
/// # Safety
/// [`has_patch_kernel`]`(ps)` must hold, and `dst` be valid for writing `3 * copies * ps * ps`
/// floats.
pub(crate) unsafe fn normalize_patch(
    lanes: &Lanes,
    src: &[u8],
    stride: usize,
    ps: usize,
    copies: usize,
    dst: *mut f32,
) {
    assert!(
        has_patch_kernel(ps) && src.len() >= (ps - 1) * stride + 3 * ps,
        "the patch is not inside its band"
    );
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the CPU runs the kernel and `ps <= 16` (has_patch_kernel), `src` holds the
    // patch (asserted), and `dst` the output (the caller's contract).
    unsafe {
        avx512::normalize_patch(lanes, src, stride, ps, copies, dst)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (lanes, copies, dst);
}

/// Whether the CPU runs the AVX-512 subsets the byte permute needs (std caches the answers).
#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx512() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512dq")
        && std::arch::is_x86_feature_detected!("avx512vbmi")
}

/// `(x - sub) / div` of one lane type, by the reciprocal when the table kept one: the
/// sequence [`Lanes::recip`] describes, the very fused operations its check ran.
#[cfg(target_arch = "x86_64")]
macro_rules! quotient {
    ($d:expr, $div:expr, $recip:expr, $mul:ident, $fnmadd:ident, $fmadd:ident, $divide:ident) => {
        match $recip {
            Some(r) => {
                let q = $mul($d, r);
                $fmadd($fnmadd(q, $div, $d), r, q)
            }
            None => $divide($d, $div),
        }
    };
}

/// One channel's values of the samples `ints` (i32 lanes) through `lanes`' arithmetic, the
/// same at every width: `x` from the sample (`numpy` is the width's float64 rescale, for
/// tables without [`Lanes::x_recip`]), then the quotient. Each width passes its intrinsics.
#[cfg(target_arch = "x86_64")]
macro_rules! lane_value {
    ($ints:expr, $arith:expr, $x_recip:expr, $scale_ps:expr, $sub:expr, $div:expr, $recip:expr,
     numpy = $numpy:expr, $cvt:ident, $subtract:ident, $mul:ident, $fnmadd:ident,
     $fmadd:ident, $divide:ident) => {{
        let x = match ($arith, $x_recip) {
            (Arith::Numpy, Some((k, r))) => {
                quotient!($cvt($ints), k, Some(r), $mul, $fnmadd, $fmadd, $divide)
            }
            (Arith::Numpy, None) => $numpy,
            (Arith::Torchvision, _) => $cvt($ints),
            (Arith::Float32, _) => $mul($cvt($ints), $scale_ps),
        };
        quotient!(
            $subtract(x, $sub),
            $div,
            $recip,
            $mul,
            $fnmadd,
            $fmadd,
            $divide
        )
    }};
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::super::table::{Arith, Lanes};

    /// `vpermb` indices gathering 16 interleaved pixels' samples by channel: red in bytes
    /// 0..16, green in 16..32, blue in 32..48.
    const SPLIT: [u8; 64] = {
        let mut idx = [0u8; 64];
        let mut i = 0;
        while i < 48 {
            idx[i] = ((i % 16) * 3 + i / 16) as u8;
            i += 1;
        }
        idx
    };

    /// The lanes' constants, broadcast once per call.
    #[derive(Clone, Copy)]
    struct Consts {
        arith: Arith,
        split: __m512i,
        sub: [__m512; 3],
        div: [__m512; 3],
        recip: [Option<__m512>; 3],
        x_recip: Option<(__m512, __m512)>,
        scale_pd: __m512d,
        scale_ps: __m512,
    }

    impl Consts {
        #[inline]
        #[target_feature(enable = "avx512f")]
        fn new(lanes: &Lanes) -> Self {
            Self {
                arith: lanes.arith,
                // SAFETY: SPLIT is 64 readable bytes.
                split: unsafe { _mm512_loadu_si512(SPLIT.as_ptr().cast()) },
                sub: lanes.sub.map(|v| _mm512_set1_ps(v)),
                div: lanes.div.map(|v| _mm512_set1_ps(v)),
                recip: lanes.recip.map(|r| r.map(|v| _mm512_set1_ps(v))),
                x_recip: lanes
                    .x_recip
                    .map(|(k, r)| (_mm512_set1_ps(k), _mm512_set1_ps(r))),
                scale_pd: _mm512_set1_pd(lanes.scale),
                scale_ps: _mm512_set1_ps(lanes.scale as f32),
            }
        }
    }

    /// The three channels' values (`[__m512; 3]`) of the first `m <= 16` interleaved pixels
    /// at `p`, lanes past `m` unspecified, through `consts`. A macro so that it is always
    /// inlined into the kernels (as a function it was not, and passed its vectors through
    /// memory). Its caller's safety contract: `3 * m` bytes readable at `p` (the rest are
    /// masked off: neither read nor faulted on).
    macro_rules! channels {
        ($consts:expr, $p:expr, $m:expr) => {{
            let this: &Consts = $consts;
            let bytes: u64 = (1u64 << (3 * $m)) - 1;
            // SAFETY: the caller's contract.
            let v = unsafe { _mm512_maskz_loadu_epi8(bytes, $p.cast()) };
            let by_channel = _mm512_permutexvar_epi8(this.split, v);
            let samples = [
                _mm512_castsi512_si128(by_channel),
                _mm512_extracti32x4_epi32::<1>(by_channel),
                _mm512_extracti32x4_epi32::<2>(by_channel),
            ];
            let mut out = [_mm512_setzero_ps(); 3];
            for (c, (&s, o)) in samples.iter().zip(&mut out).enumerate() {
                let ints = _mm512_cvtepu8_epi32(s);
                *o = lane_value!(
                    ints,
                    this.arith,
                    this.x_recip,
                    this.scale_ps,
                    this.sub[c],
                    this.div[c],
                    this.recip[c],
                    numpy = {
                        let lo = _mm512_mul_pd(
                            _mm512_cvtepi32_pd(_mm512_castsi512_si256(ints)),
                            this.scale_pd,
                        );
                        let hi = _mm512_mul_pd(
                            _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64::<1>(ints)),
                            this.scale_pd,
                        );
                        _mm512_insertf32x8::<1>(
                            _mm512_castps256_ps512(_mm512_cvtpd_ps(lo)),
                            _mm512_cvtpd_ps(hi),
                        )
                    },
                    _mm512_cvtepi32_ps,
                    _mm512_sub_ps,
                    _mm512_mul_ps,
                    _mm512_fnmadd_ps,
                    _mm512_fmadd_ps,
                    _mm512_div_ps
                );
            }
            out
        }};
    }

    /// All `n = src.len() / 3` pixels, sixteen at a time, the last group masked (loads and
    /// stores alike, so nothing past either buffer is touched).
    ///
    /// # Safety
    /// AVX-512 F, BW, DQ and VBMI must be available; each plane valid for writing `n` floats.
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vbmi")]
    pub(super) unsafe fn normalize_planes(lanes: &Lanes, src: &[u8], planes: [*mut f32; 3]) {
        let n = src.len() / 3;
        let consts = Consts::new(lanes);
        let mut k = 0;
        while k < n {
            let m = (n - k).min(16);
            let keep: u16 = ((1u32 << m) - 1) as u16;
            // SAFETY: bytes 3k..3(k+m) are inside `src`.
            let ys = channels!(&consts, src.as_ptr().add(3 * k), m);
            for (&plane, y) in planes.iter().zip(ys) {
                // SAFETY: floats k..k+m of the plane are inside it (k + m <= n).
                unsafe { _mm512_mask_storeu_ps(plane.add(k), keep, y) };
            }
            k += m;
        }
    }

    /// One square patch of side `ps <= 16` (line `py`'s `ps` pixels at byte `py * stride` of
    /// `src`) into `dst`: channel `c`, copy `t`, line `py` at `((c * copies + t) * ps + py) *
    /// ps`.
    ///
    /// # Safety
    /// AVX-512 F, BW, DQ and VBMI must be available; `ps <= 16`; `src` holds
    /// `(ps - 1) * stride + 3 * ps` bytes and `dst` is valid for writing `3 * copies * ps * ps`
    /// floats.
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vbmi")]
    pub(super) unsafe fn normalize_patch(
        lanes: &Lanes,
        src: &[u8],
        stride: usize,
        ps: usize,
        copies: usize,
        dst: *mut f32,
    ) {
        let consts = Consts::new(lanes);
        let keep: u16 = ((1u32 << ps) - 1) as u16;
        for py in 0..ps {
            // SAFETY: line `py`'s 3 * ps bytes are inside `src` (the caller's contract).
            let ys = channels!(&consts, src.as_ptr().add(py * stride), ps);
            for (c, y) in ys.into_iter().enumerate() {
                for t in 0..copies {
                    // SAFETY: the line's `ps` floats are inside `dst` (the caller's contract).
                    unsafe {
                        _mm512_mask_storeu_ps(dst.add(((c * copies + t) * ps + py) * ps), keep, y)
                    };
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::super::table::{Arith, Lanes};

    /// The first `8 * (n / 8)` of the `n = src.len() / 3` pixels, eight at a time; returns
    /// how many.
    ///
    /// # Safety
    /// AVX2 and FMA must be available; each plane valid for writing `n` floats.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn normalize_planes(
        lanes: &Lanes,
        src: &[u8],
        planes: [*mut f32; 3],
    ) -> usize {
        let n = src.len() / 3;
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
        let recip = lanes.recip.map(|r| r.map(|v| _mm256_set1_ps(v)));
        let x_recip = lanes
            .x_recip
            .map(|(k, r)| (_mm256_set1_ps(k), _mm256_set1_ps(r)));
        let scale_pd = _mm256_set1_pd(lanes.scale);
        let scale_ps = _mm256_set1_ps(lanes.scale as f32);
        let groups = n / 8;
        for g in 0..groups {
            let k = 8 * g;
            // SAFETY: pixels k..k+8 are inside `src` (k + 8 <= n), so bytes 3k..3k+24 are;
            // 16 bytes from `p` and 8 from `p + 16` lie within those 24.
            let (a, b) = unsafe {
                let p = src.as_ptr().add(3 * k);
                (_mm_loadu_si128(p.cast()), _mm_loadl_epi64(p.add(16).cast()))
            };
            for c in 0..3 {
                let bytes = _mm_or_si128(_mm_shuffle_epi8(a, lo[c]), _mm_shuffle_epi8(b, hi[c]));
                let ints = _mm256_cvtepu8_epi32(bytes);
                let y = lane_value!(
                    ints,
                    lanes.arith,
                    x_recip,
                    scale_ps,
                    sub[c],
                    div[c],
                    recip[c],
                    numpy = {
                        let l = _mm256_mul_pd(
                            _mm256_cvtepi32_pd(_mm256_castsi256_si128(ints)),
                            scale_pd,
                        );
                        let h = _mm256_mul_pd(
                            _mm256_cvtepi32_pd(_mm256_extracti128_si256::<1>(ints)),
                            scale_pd,
                        );
                        _mm256_set_m128(_mm256_cvtpd_ps(h), _mm256_cvtpd_ps(l))
                    },
                    _mm256_cvtepi32_ps,
                    _mm256_sub_ps,
                    _mm256_mul_ps,
                    _mm256_fnmadd_ps,
                    _mm256_fmadd_ps,
                    _mm256_div_ps
                );
                // SAFETY: floats k..k+8 of the plane are inside it (k + 8 <= n).
                unsafe { _mm256_storeu_ps(planes[c].add(k), y) };
            }
        }
        8 * groups
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
    /// Each width's lanes, called directly (the dispatch picks only the widest), against the
    /// table: every arithmetic, with and without the reciprocals, every tail length.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_width_gives_the_table() {
        use super::super::table::{Arith, Table};
        let mean = [0.48145466, 0.4578275, 0.40821073];
        let src: Vec<u8> = (0..=255u8)
            .flat_map(|v| [v, v.wrapping_mul(7), 255 - v])
            .collect();
        for arith in [Arith::Numpy, Arith::Torchvision, Arith::Float32] {
            for std in [[0.26862954, 0.26130258, 0.27577711], [0.5, 1e-40, 0.5]] {
                let t = Table::new(mean, std, 1.0 / 255.0, arith).unwrap();
                for n in [0, 1, 7, 8, 15, 16, 17, 100, 256] {
                    let px = &src[..3 * n];
                    let mut widths: Vec<(&str, Vec<Vec<f32>>, usize)> = Vec::new();
                    if super::has_avx2() && std::arch::is_x86_feature_detected!("fma") {
                        let mut p = vec![vec![f32::NAN; n]; 3];
                        let ptrs = [0, 1, 2].map(|c| p[c].as_mut_ptr());
                        // SAFETY: the CPU runs AVX2 and FMA; each plane holds `n` floats.
                        let done = unsafe { super::avx2::normalize_planes(t.lanes(), px, ptrs) };
                        widths.push(("avx2", p, done));
                    }
                    if super::has_avx512() {
                        let mut p = vec![vec![f32::NAN; n]; 3];
                        let ptrs = [0, 1, 2].map(|c| p[c].as_mut_ptr());
                        // SAFETY: the CPU runs the AVX-512 subsets; each plane holds `n` floats.
                        unsafe { super::avx512::normalize_planes(t.lanes(), px, ptrs) };
                        widths.push(("avx512", p, n));
                    }
                    for (name, planes, done) in widths {
                        for (c, plane) in planes.iter().enumerate() {
                            for i in 0..done {
                                let want = t.values()[c][usize::from(px[3 * i + c])];
                                assert_eq!(
                                    plane[i].to_bits(),
                                    want.to_bits(),
                                    "{name} {arith:?} {std:?} n {n} c {c} i {i}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

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
