//! The two single-axis passes over interleaved RGB u8, in fixed point.
//!
//! Both passes reduce to one loop shape, `acc[lane] += weight * byte[lane]` in i32 over a run of
//! contiguous lanes that share a weight:
//! - vertical: the lanes are bytes of one row; every tap is another input row;
//! - horizontal: a band of [`BAND`] rows is first transposed into a column-major scratch (for each
//!   input column, the RGB of every row of the band side by side, one 64-byte slot per column),
//!   so that every tap is again one contiguous run of lanes and one weight covers the band.
//!
//! The arithmetic is exactly the references': `bias + sum(weight * byte)` in i32 (wrapping, as
//! the two's-complement C does), arithmetic shift right by the precision, clamp to 0..=255. It is
//! written once portably, once with AVX2 intrinsics and once with AVX-512 ones (the widest the
//! CPU runs is picked at run time on x86-64); a unit test holds all three bit-identical.

use super::coeffs::AxisCoeffs;
use crate::par::Par;

/// Rows per horizontal-pass band: 21 rows of RGB fill 63 of a column slot's 64 lanes, one
/// AVX-512 vector (16 rows left a quarter of it idle).
pub const BAND: usize = 21;
/// Lanes of a band's column slot in use (RGB of every row).
const LANES: usize = BAND * 3;
/// Bytes per column slot in the scratch (one cache line; the tail absorbs 4-byte stores).
const SLOT: usize = 64;

/// Pixels `x0..x0 + w` of rows `y0..y0 + h` of an image, stored in `data` from row `y0` on:
/// row `y` starts at byte `(y - y0) * stride + x0 * 3`. (A band of an image keeps the image's
/// row numbers, so coefficient tables index it directly.)
#[derive(Clone, Copy, Debug)]
pub struct Region<'a> {
    pub data: &'a [u8],
    /// Bytes per row of `data`.
    pub stride: usize,
    pub x0: usize,
    pub y0: usize,
    pub w: usize,
    pub h: usize,
}

impl<'a> Region<'a> {
    /// The whole of a tightly packed `w x h` RGB buffer.
    pub fn full(data: &'a [u8], w: usize, h: usize) -> Self {
        Self {
            data,
            stride: w * 3,
            x0: 0,
            y0: 0,
            w,
            h,
        }
    }

    fn row(&self, y: usize) -> &'a [u8] {
        &self.data[(y - self.y0) * self.stride + self.x0 * 3..][..self.w * 3]
    }
}

/// Which implementation of the inner loops runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// The fastest one the running CPU supports.
    Auto,
    /// Plain Rust, for every target: the reference the tests hold the SIMD versions to.
    #[cfg_attr(not(test), allow(dead_code))]
    Portable,
    /// The AVX2 kernels even where AVX-512 runs, so that tests hold both widths to the
    /// portable one (plain Rust where the CPU lacks AVX2).
    #[cfg_attr(not(test), allow(dead_code))]
    Avx2,
}

/// The vector width a kernel runs at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Simd {
    None,
    Avx2,
    Avx512,
}

impl Kernel {
    fn simd(self) -> Simd {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if self == Self::Auto
                && has!("avx512f")
                && has!("avx512bw")
                && has!("avx512vbmi")
                && has!("avx512vnni")
            {
                return Simd::Avx512;
            }
            if self != Self::Portable && has!("avx2") {
                return Simd::Avx2;
            }
        }
        Simd::None
    }
}

/// Resample the width of `src` (`c.in_size == src.w`) into a new `c.out_size x src.h` buffer.
pub fn horizontal(src: Region<'_>, c: &AxisCoeffs, par: &Par, kernel: Kernel) -> Vec<u8> {
    let row_bytes = c.out_size * 3;
    let mut out = vec![0u8; row_bytes * src.h];
    par.for_each_band(&mut out, row_bytes, |first, rows| {
        horizontal_rows(src, c, src.y0 + first, rows, &mut Vec::new(), kernel);
    });
    out
}

/// Resample the height of `src` (`c.in_size == src.h`) into a new `src.w x c.out_size` buffer.
pub fn vertical(src: Region<'_>, c: &AxisCoeffs, par: &Par, kernel: Kernel) -> Vec<u8> {
    let row_bytes = src.w * 3;
    let mut out = vec![0u8; row_bytes * c.out_size];
    par.for_each_band(&mut out, row_bytes, |first, rows| {
        vertical_rows(src, c, first, rows, kernel);
    });
    out
}

/// Rows `first..` of the horizontal pass (the same rows of `src`, resampled to `c.out_size`
/// pixels) into `out`, which holds whole output rows. `scratch` is reused across calls.
pub fn horizontal_rows(
    src: Region<'_>,
    c: &AxisCoeffs,
    first: usize,
    out: &mut [u8],
    scratch: &mut Vec<u8>,
    kernel: Kernel,
) {
    assert_eq!(
        c.in_size, src.w,
        "horizontal table does not match the input width"
    );
    let row_bytes = c.out_size * 3;
    scratch.resize(src.w * SLOT + SLOT, 0);
    let simd = kernel.simd();
    for (b, band) in out.chunks_mut(row_bytes * BAND).enumerate() {
        let n = band.len() / row_bytes;
        transpose_band(src, first + b * BAND, n, scratch);
        #[cfg(target_arch = "x86_64")]
        match simd {
            Simd::Avx512 => {
                // SAFETY: the CPU runs the kernel's instructions (checked by `Kernel::simd`);
                // the scratch holds `src.w` slots and every window of `c` lies in `0..src.w`.
                unsafe { avx512::horizontal_band(scratch, c, band, n) };
                continue;
            }
            Simd::Avx2 => {
                // SAFETY: as for AVX-512 just above.
                unsafe { avx2::horizontal_band(scratch, c, band, n) };
                continue;
            }
            Simd::None => {}
        }
        let _ = simd;
        horizontal_band_portable(scratch, c, band, n);
    }
}

/// Rows `first..` of the vertical pass (`c.in_size` is the image height `src` is a band of)
/// into `out`, which holds whole rows of `src.w` pixels.
pub fn vertical_rows(
    src: Region<'_>,
    c: &AxisCoeffs,
    first: usize,
    out: &mut [u8],
    kernel: Kernel,
) {
    let row_bytes = src.w * 3;
    let simd = kernel.simd();
    let mut lines: Vec<&[u8]> = Vec::new();
    for (r, dst) in out.chunks_exact_mut(row_bytes).enumerate() {
        let yo = first + r;
        let taps = c.taps(yo);
        lines.clear();
        lines.extend((0..taps.len()).map(|k| src.row(c.start[yo] + k)));
        let done = vertical_row_simd(simd, &lines, taps, c.precision, dst);
        vertical_row_portable(&lines, taps, c.precision, dst, done);
    }
}

/// The part of an output row of the vertical pass the SIMD kernel covers; returns its length.
fn vertical_row_simd(
    simd: Simd,
    lines: &[&[u8]],
    taps: &[i32],
    precision: u32,
    dst: &mut [u8],
) -> usize {
    #[cfg(target_arch = "x86_64")]
    match simd {
        // SAFETY: the CPU runs the kernel's instructions (checked by `Kernel::simd`); every
        // line is as long as `dst`.
        Simd::Avx512 => return unsafe { avx512::vertical_row(lines, taps, precision, dst) },
        // SAFETY: as for AVX-512 just above.
        Simd::Avx2 => return unsafe { avx2::vertical_row(lines, taps, precision, dst) },
        Simd::None => {}
    }
    let _ = (simd, lines, taps, precision, dst);
    0
}

/// Copy rows `y..y + n` of `src` into the column-major scratch: column `x`, row `r` at
/// `x * SLOT + r * 3`.
fn transpose_band(src: Region<'_>, y: usize, n: usize, scratch: &mut [u8]) {
    assert!(n <= BAND && scratch.len() >= src.w * SLOT);
    let lines: Vec<&[u8]> = (y..y + n).map(|r| src.row(r)).collect();
    if n == BAND && src.w > 1 {
        // The rows of a band are `stride` apart in `src.data`: one base pointer serves all.
        let base = &src.data[(y - src.y0) * src.stride + src.x0 * 3..];
        assert!(base.len() >= (BAND - 1) * src.stride + src.w * 3);
        // SAFETY: checked just above: rows `0..BAND` of `base`, `src.stride` bytes apart, each
        // hold `src.w * 3` bytes, and every read below stays within pixels `0..src.w` of them
        // (four bytes from pixel `x < src.w - 1`); every write stays within slot `x`.
        unsafe { transpose_full_band(base.as_ptr(), src.stride, src.w - 1, scratch.as_mut_ptr()) };
    } else {
        // Column by column, so the writes stream through the scratch. Four-byte moves: the
        // fourth byte lands on the next row's lanes (rewritten right after) or in the slot's
        // unused tail.
        for (x, slot) in scratch.chunks_exact_mut(SLOT).take(src.w - 1).enumerate() {
            for (r, line) in lines.iter().enumerate() {
                slot[r * 3..r * 3 + 4].copy_from_slice(&line[x * 3..x * 3 + 4]);
            }
        }
    }
    let last = (src.w - 1) * SLOT;
    for (r, line) in lines.iter().enumerate() {
        scratch[last + r * 3..last + r * 3 + 3].copy_from_slice(&line[line.len() - 3..]);
    }
}

/// Columns `0..cols` of a full band into their slots, four bytes at a time.
///
/// # Safety
/// `src` points at `BAND` rows `stride` bytes apart with at least `cols * 3 + 1` readable
/// bytes each; `dst` has `cols * SLOT` writable bytes.
#[inline]
unsafe fn transpose_full_band(src: *const u8, stride: usize, cols: usize, dst: *mut u8) {
    // SAFETY: the caller guarantees the extents stated in `# Safety`; every offset below stays inside them.
    unsafe {
        for x in 0..cols {
            let from = src.add(x * 3);
            let slot = dst.add(x * SLOT);
            for r in 0..BAND {
                let px = from.add(r * stride).cast::<u32>().read_unaligned();
                slot.add(r * 3).cast::<u32>().write_unaligned(px);
            }
        }
    }
}

#[inline(always)]
fn clip(acc: i32, shift: u32) -> u8 {
    (acc >> shift).clamp(0, 255) as u8
}

fn horizontal_band_portable(scratch: &[u8], c: &AxisCoeffs, band: &mut [u8], n: usize) {
    let row_bytes = c.out_size * 3;
    let bias = 1i32 << (c.precision - 1);
    for xo in 0..c.out_size {
        let base = c.start[xo] * SLOT;
        let mut acc = [bias; LANES];
        for (k, &w) in c.taps(xo).iter().enumerate() {
            let col = &scratch[base + k * SLOT..base + k * SLOT + LANES];
            for (a, &v) in acc.iter_mut().zip(col) {
                *a = a.wrapping_add(i32::from(v).wrapping_mul(w));
            }
        }
        for (r, px) in acc.chunks_exact(3).take(n).enumerate() {
            let at = r * row_bytes + xo * 3;
            for (d, &a) in band[at..at + 3].iter_mut().zip(px) {
                *d = clip(a, c.precision);
            }
        }
    }
}

/// Bytes `from..` of one output row of the vertical pass.
fn vertical_row_portable(
    lines: &[&[u8]],
    taps: &[i32],
    precision: u32,
    dst: &mut [u8],
    from: usize,
) {
    const CHUNK: usize = 64;
    let bias = 1i32 << (precision - 1);
    let mut j = from;
    while j < dst.len() {
        let len = CHUNK.min(dst.len() - j);
        let mut acc = [bias; CHUNK];
        for (line, &w) in lines.iter().zip(taps) {
            for (a, &v) in acc[..len].iter_mut().zip(&line[j..j + len]) {
                *a = a.wrapping_add(i32::from(v).wrapping_mul(w));
            }
        }
        for (d, &a) in dst[j..j + len].iter_mut().zip(&acc[..len]) {
            *d = clip(a, precision);
        }
        j += len;
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! Two kernels per pass. Tables whose weights all fit i16 (aten's) take two taps per
    //! 16-bit multiply-add (`pmaddwd`): the bytes of two taps interleaved into i16 pairs times
    //! the pair of their weights. Pillow's 22-bit weights take one 32-bit multiply (`pmulld`)
    //! per tap (splitting them for `pmaddwd` measured slower). Every product and sum is exact,
    //! and i32 additions wrap as the references' do, so both give the portable kernels' bits.
    use super::{AxisCoeffs, BAND, LANES, SLOT};
    use std::arch::x86_64::*;

    /// Weights `w0` (low i16) and `w1` (high i16) of one i32 lane (both fit i16).
    #[inline(always)]
    pub(super) fn pair(w0: i32, w1: i32) -> i32 {
        (w0 & 0xFFFF) | (w1 << 16)
    }

    /// `acc + pmaddwd(x, m)`: the AVX2 form of VNNI's `vpdpwssd`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn dot32(acc: __m256i, x: __m256i, m: __m256i) -> __m256i {
        _mm256_add_epi32(acc, _mm256_madd_epi16(x, m))
    }

    /// `bias + sum(w * byte)` over i16 `taps` for the lanes of one vector (32 or 16 bytes),
    /// `at(k)` pointing at tap `k`'s bytes, shifted right by `shift` and clamped to u8, in lane
    /// order; the same body at both widths, with that width's intrinsics. (`at` only computes
    /// addresses; the loads stay in the AVX2 function.) The bytes of two taps become i16 pairs
    /// `(a[i], b[i])`, four i32 lanes per vector (lanes `0..4 | 16..20`, `4..8 | 20..24`,
    /// `8..12 | 24..28`, `12..16 | 28..32` at 32 bytes), and saturating packs put them back in
    /// order.
    macro_rules! narrow_lanes {
        ($feature:literal, $name:ident, $v:ty, $load:ident, $set1:ident, $zero:ident,
         $unpacklo:ident, $unpackhi:ident, $dot:ident, $sra:ident, $packs:ident,
         $packus:ident) => {
            /// # Safety
            /// The CPU must run the width's instructions; `at(k)` must point at this width's readable bytes
            /// for every tap `k`.
            #[inline]
            #[target_feature(enable = $feature)]
            pub(super) unsafe fn $name(
                taps: &[i32],
                bias: i32,
                shift: __m128i,
                at: impl Fn(usize) -> *const u8,
            ) -> $v {
                let zero = $zero();
                let mut acc = [$set1(bias); 4];
                let n = taps.len();
                for k in (0..n).step_by(2) {
                    // An odd last tap pairs with itself under a zero weight.
                    let (k1, w1) = if k + 1 < n {
                        (k + 1, taps[k + 1])
                    } else {
                        (k, 0)
                    };
                    // SAFETY: the caller's contract: readable bytes at `at(k)` and `at(k1)`.
                    let (a, b) = unsafe { ($load(at(k).cast()), $load(at(k1).cast())) };
                    let (lo, hi) = ($unpacklo(a, b), $unpackhi(a, b));
                    let x = [
                        $unpacklo(lo, zero),
                        $unpackhi(lo, zero),
                        $unpacklo(hi, zero),
                        $unpackhi(hi, zero),
                    ];
                    let m = $set1(pair(taps[k], w1));
                    for i in 0..4 {
                        acc[i] = $dot(acc[i], x[i], m);
                    }
                }
                let out = acc.map(|v| $sra(v, shift));
                $packus($packs(out[0], out[1]), $packs(out[2], out[3]))
            }
        };
    }

    pub(super) use narrow_lanes;

    narrow_lanes!(
        "avx2",
        narrow32,
        __m256i,
        _mm256_loadu_si256,
        _mm256_set1_epi32,
        _mm256_setzero_si256,
        _mm256_unpacklo_epi8,
        _mm256_unpackhi_epi8,
        dot32,
        _mm256_sra_epi32,
        _mm256_packs_epi32,
        _mm256_packus_epi16
    );

    /// Output column `xo`'s lanes (the band's rows of RGB, in a 64-byte slot) into `tmp`,
    /// from the column-major scratch, for a table whose weights fit i16.
    ///
    /// # Safety
    /// AVX2 must be available; `scratch` holds the slots of every tap of `xo` (64 bytes each).
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn narrow_column(
        scratch: &[u8],
        c: &AxisCoeffs,
        xo: usize,
        shift: __m128i,
        tmp: &mut [u8; 64],
    ) {
        let taps = c.taps(xo);
        assert!((c.start[xo] + taps.len()) * SLOT <= scratch.len());
        let bias = 1 << (c.precision - 1);
        // SAFETY: slot `start + k` (64 bytes, inside `scratch`: asserted) holds tap `k`'s lanes,
        // bytes 0..32 and 32..64 of it; `tmp` has room for 64 bytes.
        unsafe {
            let p = scratch.as_ptr().add(c.start[xo] * SLOT);
            let head = narrow32(taps, bias, shift, |k| p.add(k * SLOT));
            let tail = narrow32(taps, bias, shift, |k| p.add(k * SLOT + 32));
            _mm256_storeu_si256(tmp.as_mut_ptr().cast(), head);
            _mm256_storeu_si256(tmp.as_mut_ptr().add(32).cast(), tail);
        }
    }

    /// Clamp eight pairs of i32 vectors to u8 in order: `(a, b)` -> 16 bytes of `a` then `b`...
    /// Returns 32 bytes: `a[0..8] b[0..8] c[0..8] d[0..8]`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn pack4(a: __m256i, b: __m256i, c: __m256i, d: __m256i) -> __m256i {
        // packs/packus work per 128-bit lane; the permute restores the order.
        let ab = _mm256_packs_epi32(a, b);
        let cd = _mm256_packs_epi32(c, d);
        let bytes = _mm256_packus_epi16(ab, cd);
        _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn sra(v: __m256i, shift: __m128i) -> __m256i {
        _mm256_sra_epi32(v, shift)
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn widen8(p: *const u8) -> __m256i {
        // SAFETY: the caller guarantees 8 readable bytes at `p`; AVX2 is enabled for this function.
        unsafe { _mm256_cvtepu8_epi32(_mm_loadl_epi64(p.cast())) }
    }

    /// Output column `xo`'s lanes into `tmp`, one 32-bit multiply per tap (any weights).
    ///
    /// # Safety
    /// AVX2 must be available; `scratch` holds the slots of every tap of `xo` (64 bytes each).
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn wide_column(
        scratch: &[u8],
        c: &AxisCoeffs,
        xo: usize,
        bias: __m256i,
        shift: __m128i,
        tmp: &mut [u8; 64],
    ) {
        // SAFETY: every slot read (64 bytes) lies inside `scratch` (asserted), and `tmp` holds
        // the 64 bytes written.
        unsafe {
            let taps = c.taps(xo);
            assert!((c.start[xo] + taps.len()) * SLOT <= scratch.len());
            let mut p = scratch.as_ptr().add(c.start[xo] * SLOT);
            let mut a = [bias; 8];
            for &w in taps {
                let w = _mm256_set1_epi32(w);
                for (i, acc) in a.iter_mut().enumerate() {
                    *acc = _mm256_add_epi32(*acc, _mm256_mullo_epi32(widen8(p.add(8 * i)), w));
                }
                p = p.add(SLOT);
            }
            let a = a.map(|v| sra(v, shift));
            let lo = pack4(a[0], a[1], a[2], a[3]);
            let hi = pack4(a[4], a[5], a[6], a[7]);
            _mm256_storeu_si256(tmp.as_mut_ptr().cast(), lo);
            _mm256_storeu_si256(tmp.as_mut_ptr().add(32).cast(), hi);
        }
    }

    /// One band of the horizontal pass from the column-major scratch.
    ///
    /// # Safety
    /// AVX2 must be available; `scratch` holds `c.in_size` slots of `SLOT` bytes, and `band`
    /// holds `n <= BAND` output rows of `c.out_size * 3` bytes.
    #[target_feature(enable = "avx2")]
    pub unsafe fn horizontal_band(scratch: &[u8], c: &AxisCoeffs, band: &mut [u8], n: usize) {
        // SAFETY: AVX2 is available (caller's contract); the asserts that open this block bound every pointer offset by the slice lengths.
        unsafe {
            const _: () = assert!(LANES <= 64 && SLOT == 64);
            let row_bytes = c.out_size * 3;
            assert!(scratch.len() >= c.in_size * SLOT && n <= BAND && band.len() >= n * row_bytes);
            let bias = _mm256_set1_epi32(1 << (c.precision - 1));
            let shift = _mm_cvtsi32_si128(c.precision as i32);
            let mut tmp = [0u8; 64];
            for xo in 0..c.out_size {
                if c.narrow {
                    narrow_column(scratch, c, xo, shift, &mut tmp);
                } else {
                    wide_column(scratch, c, xo, bias, shift, &mut tmp);
                }
                if xo + 1 < c.out_size {
                    // Four-byte stores: the fourth byte is the next pixel's, written right after.
                    let dst = band.as_mut_ptr().add(xo * 3);
                    for r in 0..n {
                        let px = tmp.as_ptr().add(r * 3).cast::<u32>().read_unaligned();
                        dst.add(r * row_bytes).cast::<u32>().write_unaligned(px);
                    }
                } else {
                    for r in 0..n {
                        let at = r * row_bytes + xo * 3;
                        band[at..at + 3].copy_from_slice(&tmp[r * 3..r * 3 + 3]);
                    }
                }
            }
        }
    }

    /// The first `32 * k` bytes of one output row of the vertical pass; returns how many.
    ///
    /// # Safety
    /// AVX2 must be available; every line is at least `dst.len()` bytes.
    #[target_feature(enable = "avx2")]
    pub unsafe fn vertical_row(
        lines: &[&[u8]],
        taps: &[i32],
        precision: u32,
        dst: &mut [u8],
    ) -> usize {
        assert!(lines.len() == taps.len() && lines.iter().all(|l| l.len() >= dst.len()));
        // SAFETY: AVX2 is available (caller's contract); every line holds `dst.len()` bytes.
        unsafe {
            if !taps.iter().all(|&w| i16::try_from(w).is_ok()) {
                return vertical_row_wide(lines, taps, precision, dst);
            }
            let bias = 1 << (precision - 1);
            let shift = _mm_cvtsi32_si128(precision as i32);
            let mut j = 0;
            while j + 32 <= dst.len() {
                let out = narrow32(taps, bias, shift, |k| lines[k].as_ptr().add(j));
                _mm256_storeu_si256(dst.as_mut_ptr().add(j).cast(), out);
                j += 32;
            }
            j
        }
    }

    /// [`vertical_row`] with one 32-bit multiply per tap, 64 bytes at a time.
    ///
    /// # Safety
    /// AVX2 must be available; every line is at least `dst.len()` bytes.
    #[target_feature(enable = "avx2")]
    unsafe fn vertical_row_wide(
        lines: &[&[u8]],
        taps: &[i32],
        precision: u32,
        dst: &mut [u8],
    ) -> usize {
        // SAFETY: AVX2 is available (caller's contract); the assert that opens this block makes every line at least `dst.len()` bytes, and `j + 64 <= dst.len()` bounds each load and store.
        unsafe {
            assert!(lines.len() == taps.len() && lines.iter().all(|l| l.len() >= dst.len()));
            let bias = _mm256_set1_epi32(1 << (precision - 1));
            let shift = _mm_cvtsi32_si128(precision as i32);
            let mut j = 0;
            while j + 64 <= dst.len() {
                let mut a = [bias; 8];
                for (line, &w) in lines.iter().zip(taps) {
                    let w = _mm256_set1_epi32(w);
                    let p = line.as_ptr().add(j);
                    a[0] = _mm256_add_epi32(a[0], _mm256_mullo_epi32(widen8(p), w));
                    a[1] = _mm256_add_epi32(a[1], _mm256_mullo_epi32(widen8(p.add(8)), w));
                    a[2] = _mm256_add_epi32(a[2], _mm256_mullo_epi32(widen8(p.add(16)), w));
                    a[3] = _mm256_add_epi32(a[3], _mm256_mullo_epi32(widen8(p.add(24)), w));
                    a[4] = _mm256_add_epi32(a[4], _mm256_mullo_epi32(widen8(p.add(32)), w));
                    a[5] = _mm256_add_epi32(a[5], _mm256_mullo_epi32(widen8(p.add(40)), w));
                    a[6] = _mm256_add_epi32(a[6], _mm256_mullo_epi32(widen8(p.add(48)), w));
                    a[7] = _mm256_add_epi32(a[7], _mm256_mullo_epi32(widen8(p.add(56)), w));
                }
                let lo = pack4(
                    sra(a[0], shift),
                    sra(a[1], shift),
                    sra(a[2], shift),
                    sra(a[3], shift),
                );
                let hi = pack4(
                    sra(a[4], shift),
                    sra(a[5], shift),
                    sra(a[6], shift),
                    sra(a[7], shift),
                );
                _mm256_storeu_si256(dst.as_mut_ptr().add(j).cast(), lo);
                _mm256_storeu_si256(dst.as_mut_ptr().add(j + 32).cast(), hi);
                j += 64;
            }
            j
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    //! The AVX2 kernels at twice the width: a horizontal column's lanes are one vector, and
    //! the vertical pass takes 64 bytes a step; VNNI's `vpdpwssd` is the multiply-add and the
    //! sum in one. Same arithmetic, same bits. (The tier needs F, BW, VBMI and VNNI: every
    //! CPU with VBMI, Ice Lake and Zen 4 on, has the rest.)
    use super::avx2::{narrow_lanes, pair};
    use super::{AxisCoeffs, BAND, LANES, SLOT};
    use std::arch::x86_64::*;

    narrow_lanes!(
        "avx512f,avx512bw,avx512vnni",
        narrow64,
        __m512i,
        _mm512_loadu_si512,
        _mm512_set1_epi32,
        _mm512_setzero_si512,
        _mm512_unpacklo_epi8,
        _mm512_unpackhi_epi8,
        _mm512_dpwssd_epi32,
        _mm512_sra_epi32,
        _mm512_packs_epi32,
        _mm512_packus_epi16
    );

    /// Sixteen i32 lanes shifted right by `shift` and clamped to u8, in order.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    fn clip16(v: __m512i, shift: __m128i) -> __m128i {
        // Negative lanes to 0 first: the unsigned narrowing saturates the rest at 255.
        _mm512_cvtusepi32_epi8(_mm512_max_epi32(
            _mm512_sra_epi32(v, shift),
            _mm512_setzero_si512(),
        ))
    }

    /// Bits of the low part of a split weight: `w = (w >> SPLIT) << SPLIT | low`, both parts
    /// fitting i16 for any weight below 2^30 (Pillow's are below 2^23).
    const SPLIT: i32 = 15;

    /// [`narrow64`] for weights that do not fit i16 (Pillow's 22-bit ones): each weight split
    /// into a high and a low i16 part, each part taking two taps per `pmaddwd`, and the sum
    /// put back together as `(high sum << SPLIT) + low sum`. That is the same integer modulo
    /// 2^32, and the references' i32 sums wrap, so the bits are theirs; it takes fewer
    /// instructions than a 32-bit multiply per tap.
    ///
    /// # Safety
    /// AVX-512 F, BW and VNNI must be available; 64 readable bytes at `at(k)` for every tap `k`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    unsafe fn split64(
        taps: &[i32],
        bias: i32,
        shift: __m128i,
        at: impl Fn(usize) -> *const u8,
    ) -> __m512i {
        let zero = _mm512_setzero_si512();
        let (mut low, mut high) = ([zero; 4], [zero; 4]);
        let n = taps.len();
        let parts = |w: i32| (w & ((1 << SPLIT) - 1), w >> SPLIT);
        for k in (0..n).step_by(2) {
            // An odd last tap pairs with itself under a zero weight.
            let (k1, w1) = if k + 1 < n {
                (k + 1, taps[k + 1])
            } else {
                (k, 0)
            };
            // SAFETY: the caller's contract: readable bytes at `at(k)` and `at(k1)`.
            let (a, b) = unsafe {
                (
                    _mm512_loadu_si512(at(k).cast()),
                    _mm512_loadu_si512(at(k1).cast()),
                )
            };
            let (lo, hi) = (_mm512_unpacklo_epi8(a, b), _mm512_unpackhi_epi8(a, b));
            let x = [
                _mm512_unpacklo_epi8(lo, zero),
                _mm512_unpackhi_epi8(lo, zero),
                _mm512_unpacklo_epi8(hi, zero),
                _mm512_unpackhi_epi8(hi, zero),
            ];
            let ((l0, h0), (l1, h1)) = (parts(taps[k]), parts(w1));
            let (ml, mh) = (
                _mm512_set1_epi32(pair(l0, l1)),
                _mm512_set1_epi32(pair(h0, h1)),
            );
            for i in 0..4 {
                low[i] = _mm512_dpwssd_epi32(low[i], x[i], ml);
                high[i] = _mm512_dpwssd_epi32(high[i], x[i], mh);
            }
        }
        let bias = _mm512_set1_epi32(bias);
        let out: [__m512i; 4] = std::array::from_fn(|i| {
            let sum = _mm512_add_epi32(_mm512_slli_epi32::<SPLIT_U>(high[i]), low[i]);
            _mm512_sra_epi32(_mm512_add_epi32(sum, bias), shift)
        });
        _mm512_packus_epi16(
            _mm512_packs_epi32(out[0], out[1]),
            _mm512_packs_epi32(out[2], out[3]),
        )
    }

    /// [`SPLIT`] as the shift intrinsic's immediate.
    const SPLIT_U: u32 = SPLIT as u32;

    /// `bias + sum(w * byte)` over any i32 `taps` for `16 * N` lanes, `at(k)` pointing at
    /// tap `k`'s bytes, one 32-bit multiply per tap and 16 lanes; each group of 16 clamped to
    /// u8 into `out`.
    ///
    /// # Safety
    /// AVX-512 F, BW and VNNI must be available; `16 * N` readable bytes at `at(k)` for every tap
    /// `k`, and as many writable at `out`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    unsafe fn wide<const N: usize>(
        taps: &[i32],
        bias: __m512i,
        shift: __m128i,
        at: impl Fn(usize) -> *const u8,
        out: *mut u8,
    ) {
        let mut acc = [bias; N];
        for (k, &w) in taps.iter().enumerate() {
            let w = _mm512_set1_epi32(w);
            let p = at(k);
            for (i, a) in acc.iter_mut().enumerate() {
                // SAFETY: the caller's contract.
                let bytes = unsafe { _mm_loadu_si128(p.add(16 * i).cast()) };
                *a = _mm512_add_epi32(*a, _mm512_mullo_epi32(_mm512_cvtepu8_epi32(bytes), w));
            }
        }
        for (i, a) in acc.into_iter().enumerate() {
            // SAFETY: the caller's contract.
            unsafe { _mm_storeu_si128(out.add(16 * i).cast(), clip16(a, shift)) };
        }
    }

    /// Output column `xo` of `n` rows of `band` from `tmp` (row `r`'s RGB at `3 * r`).
    /// Kept out of line: inlined into the AVX-512 kernel, its loop of four-byte stores is
    /// turned into a scatter, several times slower.
    #[inline(never)]
    fn column_out(tmp: &[u8; 64], band: &mut [u8], row_bytes: usize, xo: usize, n: usize) {
        assert!(n <= BAND && band.len() >= n * row_bytes && (xo + 1) * 3 <= row_bytes);
        if (xo + 1) * 3 < row_bytes {
            // Four-byte stores: the fourth byte is the next pixel's, written right after.
            for r in 0..n {
                let at = r * row_bytes + xo * 3;
                // SAFETY: `at + 4 <= (r + 1) * row_bytes <= band.len()` as the pixel is not
                // the row's last; `tmp` holds `r * 3 + 4 <= 64` bytes.
                unsafe {
                    let px = tmp.as_ptr().add(r * 3).cast::<u32>().read_unaligned();
                    band.as_mut_ptr().add(at).cast::<u32>().write_unaligned(px);
                }
            }
        } else {
            for r in 0..n {
                let at = r * row_bytes + xo * 3;
                band[at..at + 3].copy_from_slice(&tmp[r * 3..r * 3 + 3]);
            }
        }
    }

    /// One band of the horizontal pass from the column-major scratch.
    ///
    /// # Safety
    /// AVX-512 F, BW, VBMI and VNNI must be available; `scratch` holds `c.in_size` slots of `SLOT`
    /// bytes, and `band` holds `n <= BAND` output rows of `c.out_size * 3` bytes.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vnni")]
    pub unsafe fn horizontal_band(scratch: &[u8], c: &AxisCoeffs, band: &mut [u8], n: usize) {
        const _: () = assert!(LANES <= 64 && SLOT == 64);
        let row_bytes = c.out_size * 3;
        assert!(scratch.len() >= c.in_size * SLOT && n <= BAND && band.len() >= n * row_bytes);
        let bias = 1 << (c.precision - 1);
        let wide_bias = _mm512_set1_epi32(bias);
        let shift = _mm_cvtsi32_si128(c.precision as i32);
        // Whether every weight splits into two i16 halves ([`split64`]): one look at the table
        // rather than one per column.
        let split = c.weights.iter().all(|&w| w.unsigned_abs() < 1 << 30);
        let mut cols = [[0u8; 64]; GROUP];
        for xo in 0..c.out_size {
            let taps = c.taps(xo);
            assert!((c.start[xo] + taps.len()) * SLOT <= scratch.len());
            let tmp = &mut cols[xo % GROUP];
            // SAFETY: slot `start + k` (64 bytes, inside `scratch`: asserted) holds tap `k`'s
            // lanes; `tmp` holds 64 bytes.
            unsafe {
                let p = scratch.as_ptr().add(c.start[xo] * SLOT);
                if c.narrow {
                    let v = narrow64(taps, bias, shift, |k| p.add(k * SLOT));
                    _mm512_storeu_si512(tmp.as_mut_ptr().cast(), v);
                } else if split {
                    let v = split64(taps, bias, shift, |k| p.add(k * SLOT));
                    _mm512_storeu_si512(tmp.as_mut_ptr().cast(), v);
                } else {
                    wide::<4>(
                        taps,
                        wide_bias,
                        shift,
                        |k| p.add(k * SLOT),
                        tmp.as_mut_ptr(),
                    );
                }
            }
            if xo % GROUP == GROUP - 1 {
                let x0 = xo + 1 - GROUP;
                if x0 * 3 + 16 <= row_bytes {
                    // SAFETY: the CPU runs the group's instructions (this function's);
                    // checked just above: the group's 16-byte stores stay in each row.
                    unsafe { group_out(&cols, band, row_bytes, x0, n) };
                } else {
                    for (k, col) in cols.iter().enumerate() {
                        column_out(col, band, row_bytes, x0 + k, n);
                    }
                }
            }
        }
        let done = c.out_size / GROUP * GROUP;
        for xo in done..c.out_size {
            column_out(&cols[xo % GROUP], band, row_bytes, xo, n);
        }
    }

    /// Output columns written together by [`group_out`].
    const GROUP: usize = 4;

    /// `vpermt2b` indices putting rows `q * 4..q * 4 + 4` in the four 16-byte lanes of a
    /// vector, each lane the RGB of four columns: over columns 0 and 1 they place those two
    /// (bytes 0..6 of each lane), and over columns 2 and 3 the same indices place those
    /// (bytes 6..12); [`GROUP_HI`] blends the two.
    const fn group_index(q: usize) -> [u8; 64] {
        let mut idx = [0u8; 64];
        let mut b = 0;
        while b < 64 {
            let (row, j) = (q * 4 + b / 16, b % 16);
            // Rows past the band's are never stored.
            if j < 12 && row < BAND {
                let col = j / 3;
                // Columns 0 and 2 are the permute's first table, 1 and 3 its second.
                idx[b] = (3 * row + j % 3 + 64 * (col % 2)) as u8;
            }
            b += 1;
        }
        idx
    }

    /// Enough groups of four rows for a band.
    const GROUP_INDEX: [[u8; 64]; BAND.div_ceil(4)] = {
        let mut out = [[0u8; 64]; BAND.div_ceil(4)];
        let mut q = 0;
        while q < out.len() {
            out[q] = group_index(q);
            q += 1;
        }
        out
    };
    /// Bytes 6..12 of every 16-byte lane: columns 2 and 3.
    const GROUP_HI: u64 = 0x0FC0_0FC0_0FC0_0FC0;

    /// Columns `x0..x0 + 4` of `n` rows of `band`, each in `cols` as [`column_out`] takes it:
    /// the four columns' bytes of each row gathered into one 16-byte store (12 bytes of
    /// pixels, then 4 of the next pixel's, written right after).
    ///
    /// # Safety
    /// AVX-512 F, BW, VBMI and VNNI must be available; `x0 * 3 + 16 <= row_bytes` and `band` holds
    /// `n <= BAND` rows of `row_bytes`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vnni")]
    unsafe fn group_out(
        cols: &[[u8; 64]; GROUP],
        band: &mut [u8],
        row_bytes: usize,
        x0: usize,
        n: usize,
    ) {
        assert!(n <= BAND && band.len() >= n * row_bytes && x0 * 3 + 16 <= row_bytes);
        // SAFETY: each column is 64 readable bytes.
        let v = cols.map(|c| unsafe { _mm512_loadu_si512(c.as_ptr().cast()) });
        for (q, idx) in GROUP_INDEX.iter().enumerate() {
            if q * 4 >= n {
                break;
            }
            // SAFETY: the index is 64 readable bytes.
            let idx = unsafe { _mm512_loadu_si512(idx.as_ptr().cast()) };
            let lo = _mm512_permutex2var_epi8(v[0], idx, v[1]);
            let hi = _mm512_permutex2var_epi8(v[2], idx, v[3]);
            let rows = _mm512_mask_blend_epi8(GROUP_HI, lo, hi);
            let mut lanes = [0u8; 64];
            // SAFETY: `lanes` holds 64 bytes.
            unsafe { _mm512_storeu_si512(lanes.as_mut_ptr().cast(), rows) };
            for (k, lane) in lanes.chunks_exact(16).enumerate().take(n - q * 4) {
                let at = (q * 4 + k) * row_bytes + x0 * 3;
                band[at..at + 16].copy_from_slice(lane);
            }
        }
    }

    /// The first `64 * k` bytes of one output row of the vertical pass; returns how many.
    ///
    /// # Safety
    /// AVX-512 F, BW and VNNI must be available; every line is at least `dst.len()` bytes.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub unsafe fn vertical_row(
        lines: &[&[u8]],
        taps: &[i32],
        precision: u32,
        dst: &mut [u8],
    ) -> usize {
        assert!(lines.len() == taps.len() && lines.iter().all(|l| l.len() >= dst.len()));
        let bias = 1 << (precision - 1);
        let shift = _mm_cvtsi32_si128(precision as i32);
        let narrow = taps.iter().all(|&w| i16::try_from(w).is_ok());
        let split = taps.iter().all(|&w| w.unsigned_abs() < 1 << 30);
        let wide_bias = _mm512_set1_epi32(bias);
        let mut j = 0;
        while j + 64 <= dst.len() {
            // SAFETY: bytes `j..j + 64` of every line and of `dst` exist (asserted above).
            unsafe {
                let out = dst.as_mut_ptr().add(j);
                if narrow {
                    let v = narrow64(taps, bias, shift, |k| lines[k].as_ptr().add(j));
                    _mm512_storeu_si512(out.cast(), v);
                } else if split {
                    let v = split64(taps, bias, shift, |k| lines[k].as_ptr().add(j));
                    _mm512_storeu_si512(out.cast(), v);
                } else {
                    wide::<4>(taps, wide_bias, shift, |k| lines[k].as_ptr().add(j), out);
                }
            }
            j += 64;
        }
        j
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resize::coeffs::{AxisCoeffs, Filter};
    use crate::test_util::noise;

    #[test]
    fn simd_and_portable_kernels_agree() {
        let sizes = [
            (1, 1),
            (1, 40),
            (40, 1),
            (17, 33),
            (100, 37),
            (129, 70),
            (300, 91),
            (1000, 301),
        ];
        for (k, &(w, h)) in sizes.iter().enumerate() {
            let img = noise(w * h * 3, k as u64);
            let src = Region::full(&img, w, h);
            for &(ow, oh) in &[
                (1, 1),
                (w * 2 + 1, h * 3 + 2),
                ((w / 3).max(1), (h / 2).max(1)),
                ((w / 9).max(1), (h / 7).max(1)),
                (w + 3, h + 1),
            ] {
                // Pillow's 22-bit weights (split in the SIMD kernels) and aten's i16 ones, odd
                // and even tap counts, on both passes.
                type Table = fn(usize, usize) -> crate::error::Result<AxisCoeffs>;
                let tables: [(&str, Table); 5] = [
                    ("pil lanczos", |i, o| {
                        AxisCoeffs::pil(Filter::PilLanczos, i, o)
                    }),
                    ("pil bicubic", |i, o| {
                        AxisCoeffs::pil(Filter::PilBicubic, i, o)
                    }),
                    ("pil bilinear", |i, o| {
                        AxisCoeffs::pil(Filter::Triangle, i, o)
                    }),
                    ("aten bicubic", AxisCoeffs::aten_bicubic),
                    ("aten bilinear", AxisCoeffs::aten_bilinear),
                ];
                for (name, table) in tables {
                    let hc = table(w, ow).unwrap();
                    let vc = table(h, oh).unwrap();
                    let hb = horizontal(src, &hc, &Par::inline(), Kernel::Portable);
                    let vb = vertical(src, &vc, &Par::inline(), Kernel::Portable);
                    for kernel in [Kernel::Auto, Kernel::Avx2] {
                        let a = horizontal(src, &hc, &Par::new(2), kernel);
                        assert_eq!(a, hb, "{name} {kernel:?} horizontal {w}x{h} -> {ow}");
                        let a = vertical(src, &vc, &Par::new(3), kernel);
                        assert_eq!(a, vb, "{name} {kernel:?} vertical {w}x{h} -> {oh}");
                    }
                }
            }
        }
    }
}
