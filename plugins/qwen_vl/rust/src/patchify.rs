//! Normalize + patchify in one pass, written straight into HuggingFace's `pixel_values` layout
//! (no 9-D intermediate): row `r` is the patch at merge block `(bh, bw)`, in-block `(mh, mw)`,
//! `r = ((bh * (gw/m) + bw) * m + mh) * m + mw`; column `k = ((c * tps + tt) * ps + py) * ps + px`.
//!
//! The rows of one merge-block row (`ps * m` image rows) are a contiguous run of the output, so
//! the work is cut into block rows: [`block_rows`] turns a band of image rows into theirs, which
//! lets [`crate::fused`] feed it resized bands straight from the resize passes.

use std::mem::MaybeUninit;

use mm_kernels::{KernelError, Par, Result, RgbView};

use crate::normalize::{Normalizer, Scatter};

/// The patch geometry of the vision tower.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Patching {
    pub patch_size: usize,
    pub merge_size: usize,
    pub temporal_patch_size: usize,
}

impl Patching {
    /// Floats per output row: `3 * tps * ps * ps`.
    pub fn row_len(&self) -> Result<usize> {
        self.patch_size
            .checked_mul(self.patch_size)
            .and_then(|p| p.checked_mul(self.temporal_patch_size))
            .and_then(|p| p.checked_mul(3))
            .ok_or_else(|| KernelError::InvalidArgument("patch geometry overflows".into()))
    }
}

/// The checked output geometry of one image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    pub gh: usize,
    pub gw: usize,
    /// Image rows (and columns) per merge block: `ps * m`.
    pub unit: usize,
    pub row_len: usize,
    /// Floats per merge-block row of the output: `gw * m * row_len`.
    pub block_row_len: usize,
    pub total: usize,
}

impl Grid {
    /// The grid of a `width x height` image, whose sides must be multiples of `ps * m`.
    pub fn new(width: usize, height: usize, p: Patching) -> Result<Self> {
        let (ps, m, tps) = (p.patch_size, p.merge_size, p.temporal_patch_size);
        let unit = ps
            .checked_mul(m)
            .filter(|&u| u > 0 && tps > 0)
            .ok_or_else(|| {
                KernelError::InvalidArgument(format!(
                    "patch_size ({ps}), merge_size ({m}) and temporal_patch_size ({tps}) must be \
                     positive"
                ))
            })?;
        let fits = |side: usize| side > 0 && side.is_multiple_of(unit);
        if !fits(height) || !fits(width) {
            return Err(KernelError::InvalidArgument(format!(
                "image of {width}x{height} pixels is not a non-empty multiple of {unit} on each side"
            )));
        }
        let (gh, gw) = (height / ps, width / ps);
        let row_len = p.row_len()?;
        let overflow = || KernelError::Limit("patch tensor size overflows".into());
        let block_row_len = (gw * m).checked_mul(row_len).ok_or_else(overflow)?;
        let total = (gh / m).checked_mul(block_row_len).ok_or_else(overflow)?;
        Ok(Self {
            gh,
            gw,
            unit,
            row_len,
            block_row_len,
            total,
        })
    }

    /// Reserve the output, uninitialised (a failed reservation is an error, not an abort), and
    /// let `fill(first_block_row, chunk, store)` write it, chunk by chunk (whole block rows
    /// each). `store` says how: a kept buffer is streamed to, fresh pages are not.
    ///
    /// # Safety
    /// `fill` must initialise every element of every chunk it is given.
    pub unsafe fn build<F>(&self, par: &Par, fill: F) -> Result<Vec<f32>>
    where
        F: Fn(usize, &mut [MaybeUninit<f32>], Store) + Sync,
    {
        let total = self.total;
        let (mut out, store) = match crate::pool::take(total) {
            Some(kept) => (kept, Store::Streamed),
            None => (Vec::new(), Store::Cached),
        };
        out.try_reserve_exact(total).map_err(|_| {
            KernelError::Limit(format!(
                "patch tensor of {total} floats ({}x{} patches) cannot be allocated",
                self.gh, self.gw
            ))
        })?;
        let spare = &mut out.spare_capacity_mut()[..total];
        crate::hugepages::advise(spare);
        par.for_each_band(spare, self.block_row_len, |first, chunk| {
            fill(first, chunk, store)
        });
        // SAFETY: `spare` covered exactly `total` elements; `for_each_band` hands every whole
        // block row to `fill` exactly once, and `fill` writes each element of what it is given
        // (the contract of `block_rows`, its only writer).
        unsafe { out.set_len(total) };
        Ok(out)
    }
}

/// How output rows reach memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    /// Plain stores, for fresh pages: the kernel has just zeroed them, so their lines are
    /// mostly in cache already.
    Cached,
    /// Non-temporal stores: a reused buffer is cold, and streaming skips reading each line in
    /// first. (On fresh pages they are slower: the zeroed lines must be evicted first.)
    Streamed,
}

/// Block rows of the output from `band`, the image rows they cover (`unit` rows per block row,
/// `width` pixels each, tightly packed), into `out`, which holds whole block rows. Every element
/// of `out` is written.
#[allow(clippy::too_many_arguments)]
pub fn block_rows(
    band: &[u8],
    width: usize,
    norm: &Normalizer,
    p: Patching,
    g: &Grid,
    out: &mut [MaybeUninit<f32>],
    store: Store,
) {
    let (ps, m, tps) = (p.patch_size, p.merge_size, p.temporal_patch_size);
    let plane = ps * ps;
    let stride = width * 3;
    let n_blocks = out.len() / g.block_row_len;
    assert!(
        band.len() >= n_blocks * g.unit * stride && g.gw * ps == width,
        "band does not cover the block rows"
    );
    // Each output row is built in L1 (every patch line normalized straight into its `tps`
    // places), then copied out whole.
    let mut frame = vec![0f32; g.row_len];
    for (b, block_row) in out.chunks_exact_mut(g.block_row_len).enumerate() {
        let rows = &band[b * g.unit * stride..(b + 1) * g.unit * stride];
        for (j, row) in block_row.chunks_exact_mut(g.row_len).enumerate() {
            let (mw, mh, bw) = (j % m, (j / m) % m, j / (m * m));
            let (y0, x0) = (mh * ps, (bw * m + mw) * ps);
            for py in 0..ps {
                let at = (y0 + py) * stride + x0 * 3;
                let scatter = Scatter {
                    copies: tps,
                    spacing: plane,
                    offset: py * ps,
                };
                norm.pixels(&rows[at..at + ps * 3], &mut frame, scatter);
            }
            match store {
                Store::Streamed => stream::copy(row, &frame),
                Store::Cached => {
                    row.write_copy_of_slice(&frame);
                }
            }
        }
    }
    stream::fence();
}

/// The compact form of [`block_rows`]: the same rows with the uint8 samples themselves (the
/// table indices) in place of their normalized values, and each frame once, so a row is
/// `3 * ps * ps` codes `k = (c * ps + py) * ps + px`. Every element of `out` is written.
///
/// Each block row's band is first split into three channel planes (`planes`, reused across
/// calls), a stride-3 loop the compiler vectorizes; every patch line is then three copies of
/// `ps` bytes rather than `3 * ps` single-byte stores.
pub fn block_codes(
    band: &[u8],
    width: usize,
    p: Patching,
    g: &Grid,
    out: &mut [MaybeUninit<u8>],
    planes: &mut Vec<u8>,
) {
    let (ps, m) = (p.patch_size, p.merge_size);
    let plane = ps * ps;
    let code_row = 3 * plane;
    let stride = width * 3;
    let block_len = g.gw * m * code_row;
    let n_blocks = out.len() / block_len;
    assert!(
        band.len() >= n_blocks * g.unit * stride && g.gw * ps == width,
        "band does not cover the block rows"
    );
    let area = g.unit * width; // samples of one channel in one block row's band
    planes.resize(3 * area, 0);
    for (b, block_row) in out.chunks_exact_mut(block_len).enumerate() {
        split_planes(
            &band[b * g.unit * stride..(b + 1) * g.unit * stride],
            planes,
        );
        let (red, rest) = planes.split_at(area);
        let (green, blue) = rest.split_at(area);
        for (j, row) in block_row.chunks_exact_mut(code_row).enumerate() {
            let (mw, mh, bw) = (j % m, (j / m) % m, j / (m * m));
            let (y0, x0) = (mh * ps, (bw * m + mw) * ps);
            for (c, src) in [red, green, blue].into_iter().enumerate() {
                let dst = &mut row[c * plane..(c + 1) * plane];
                let at = y0 * width + x0;
                // The patch sizes of the shipped checkpoints get constant-size line copies.
                match ps {
                    14 => patch_lines::<14>(dst, &src[at..], width),
                    16 => patch_lines::<16>(dst, &src[at..], width),
                    _ => {
                        for (py, line) in dst.chunks_exact_mut(ps).enumerate() {
                            let from = at + py * width;
                            line.write_copy_of_slice(&src[from..from + ps]);
                        }
                    }
                }
            }
        }
    }
}

/// `PS` lines of `PS` samples, `stride` apart in `src`, into `dst` back to back.
fn patch_lines<const PS: usize>(dst: &mut [MaybeUninit<u8>], src: &[u8], stride: usize) {
    for (py, line) in dst.chunks_exact_mut(PS).enumerate() {
        let at = py * stride;
        line.write_copy_of_slice(&src[at..at + PS]);
    }
}

/// Interleaved RGB samples into three planes laid end to end in `planes` (each
/// `rgb.len() / 3` long).
fn split_planes(rgb: &[u8], planes: &mut [u8]) {
    let n = rgb.len() / 3;
    let (red, rest) = planes.split_at_mut(n);
    let (green, blue) = rest.split_at_mut(n);
    #[allow(unused_mut)]
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("ssse3") {
        // SAFETY: the CPU has SSSE3, checked just above.
        done = unsafe { ssse3::split_planes(rgb, red, green, blue) };
    }
    for i in done..n {
        red[i] = rgb[3 * i];
        green[i] = rgb[3 * i + 1];
        blue[i] = rgb[3 * i + 2];
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

    /// Splits whole groups of 16 pixels (three shuffles per channel); returns the pixels done.
    ///
    /// # Safety
    /// The CPU must support SSSE3.
    #[target_feature(enable = "ssse3")]
    pub unsafe fn split_planes(rgb: &[u8], r: &mut [u8], g: &mut [u8], b: &mut [u8]) -> usize {
        let groups = (rgb.len() / 48)
            .min(r.len() / 16)
            .min(g.len() / 16)
            .min(b.len() / 16);
        // SAFETY (all below): each group reads rgb[48k..48k+48] and writes [16k..16k+16] of
        // each plane, all within the slices by the bound on `groups`; loads and stores are
        // unaligned ones.
        let masks = MASKS.map(|per| per.map(|m| unsafe { _mm_loadu_si128(m.as_ptr().cast()) }));
        for k in 0..groups {
            let src = unsafe { rgb.as_ptr().add(48 * k) };
            let parts: [__m128i; 3] =
                [0, 16, 32].map(|o| unsafe { _mm_loadu_si128(src.add(o).cast()) });
            for (plane, m) in [&mut *r, &mut *g, &mut *b].into_iter().zip(&masks) {
                let v = _mm_or_si128(
                    _mm_or_si128(
                        _mm_shuffle_epi8(parts[0], m[0]),
                        _mm_shuffle_epi8(parts[1], m[1]),
                    ),
                    _mm_shuffle_epi8(parts[2], m[2]),
                );
                unsafe { _mm_storeu_si128(plane.as_mut_ptr().add(16 * k).cast(), v) };
            }
        }
        groups * 16
    }
}

#[cfg(test)]
mod split_tests {
    #[test]
    fn planes_hold_each_channel_in_order() {
        for n in [0usize, 1, 15, 16, 17, 33, 100] {
            let rgb: Vec<u8> = (0..3 * n).map(|i| (i * 7 % 251) as u8).collect();
            let mut planes = vec![0u8; 3 * n];
            super::split_planes(&rgb, &mut planes);
            for i in 0..n {
                for c in 0..3 {
                    assert_eq!(planes[c * n + i], rgb[3 * i + c], "n={n} i={i} c={c}");
                }
            }
        }
    }
}

/// `[gh * gw, 3 * ps * ps]` codes of a `grid`, written by `fill(first_block_row, chunk)` in
/// parallel by block rows (the compact counterpart of [`Grid::build`]).
///
/// # Safety
/// `fill` must initialise every element of every chunk it is given.
pub unsafe fn build_codes<F>(g: &Grid, p: Patching, par: &Par, fill: F) -> Result<Vec<u8>>
where
    F: Fn(usize, &mut [MaybeUninit<u8>]) + Sync,
{
    let block_len = g.gw * p.merge_size * 3 * p.patch_size * p.patch_size;
    let total = (g.gh / p.merge_size)
        .checked_mul(block_len)
        .ok_or_else(|| KernelError::Limit("code tensor size overflows".into()))?;
    let mut out: Vec<u8> = Vec::new();
    out.try_reserve_exact(total).map_err(|_| {
        KernelError::Limit(format!("code tensor of {total} bytes cannot be allocated"))
    })?;
    par.for_each_band(&mut out.spare_capacity_mut()[..total], block_len, fill);
    // SAFETY: the bands tile `[..total]` in whole block rows, each handed to `fill` once,
    // which writes every element (the caller's contract).
    unsafe { out.set_len(total) };
    Ok(out)
}

/// Copies into the output that bypass the cache: the tensor is far larger than any cache and
/// is not read again here, so non-temporal stores save the read-for-ownership of every line.
mod stream {
    use std::mem::MaybeUninit;

    /// `dst = src` (same length).
    #[inline]
    pub fn copy(dst: &mut [MaybeUninit<f32>], src: &[f32]) {
        assert_eq!(dst.len(), src.len());
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_loadu_ps, _mm_stream_ps};
            // Plain stores up to the first 16-byte boundary, streamed ones after it.
            // In floats (`usize::MAX`, i.e. no streaming, should it be impossible).
            let head = dst.as_ptr().align_offset(16).min(dst.len());
            if head < 4 {
                let (d0, d1) = dst.split_at_mut(head);
                let (s0, s1) = src.split_at(head);
                d0.write_copy_of_slice(s0);
                let mut d = d1.chunks_exact_mut(4);
                let mut s = s1.chunks_exact(4);
                for (dc, sc) in (&mut d).zip(&mut s) {
                    // SAFETY: SSE is part of x86-64; `dc` starts on a 16-byte boundary (`d1`
                    // does, and every chunk is 16 bytes further) and holds four floats, as
                    // does `sc`.
                    unsafe { _mm_stream_ps(dc.as_mut_ptr().cast(), _mm_loadu_ps(sc.as_ptr())) };
                }
                d.into_remainder().write_copy_of_slice(s.remainder());
                return;
            }
        }
        dst.write_copy_of_slice(src);
    }

    /// Order the streamed stores before anything that follows (e.g. handing the band over).
    #[inline]
    pub fn fence() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE is part of x86-64; a store fence has no other effect.
        unsafe {
            std::arch::x86_64::_mm_sfence()
        };
    }
}

/// `[gh * gw, 3 * tps * ps * ps]` float32 for an image whose sides are multiples of `ps * m`.
/// Returns the values and the patch grid `(gh, gw)`.
pub fn patchify(
    img: RgbView<'_>,
    norm: &Normalizer,
    p: Patching,
    par: &Par,
) -> Result<(Vec<f32>, usize, usize)> {
    let g = Grid::new(img.width, img.height, p)?;
    let rows_bytes = g.unit * img.width * 3;
    // SAFETY: `block_rows` writes every element of each chunk it is given.
    let out = unsafe {
        g.build(par, |first, chunk, store| {
            let band = &img.data[first * rows_bytes..];
            block_rows(band, img.width, norm, p, &g, chunk, store);
        })
    }?;
    Ok((out, g.gh, g.gw))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize::{Mode, Normalizer};

    /// The spec's index formulas, evaluated per output element.
    #[test]
    fn layout_matches_index_formulas() {
        let (w, h) = (8usize, 12usize);
        let data: Vec<u8> = (0..w * h * 3).map(|i| (i * 7 % 251) as u8).collect();
        let img = RgbView::new(w, h, &data).unwrap();
        let t = Normalizer::new([0.0; 3], [1.0; 3], Mode::AtenU8).unwrap();
        let p = Patching {
            patch_size: 2,
            merge_size: 2,
            temporal_patch_size: 2,
        };
        for threads in [1, 3] {
            let (out, gh, gw) = patchify(img, &t, p, &Par::new(threads)).unwrap();
            assert_eq!((gh, gw), (6, 4));
            let row_len = 3 * 2 * 2 * 2;
            for pr in 0..gh {
                for pc in 0..gw {
                    let r = ((pr / 2 * (gw / 2) + pc / 2) * 2 + pr % 2) * 2 + pc % 2;
                    for c in 0..3 {
                        for tt in 0..2 {
                            for py in 0..2 {
                                for px in 0..2 {
                                    let k = ((c * 2 + tt) * 2 + py) * 2 + px;
                                    let v = data[((pr * 2 + py) * w + pc * 2 + px) * 3 + c];
                                    assert_eq!(out[r * row_len + k], f32::from(v) / 255.0);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Streamed copies at every alignment and length land exactly where plain ones do.
    #[test]
    fn streamed_copy_at_any_alignment() {
        let src: Vec<f32> = (0..40).map(|v| v as f32).collect();
        for off in 0..5 {
            for len in [0, 1, 3, 4, 5, 17, 35] {
                let mut buf = [MaybeUninit::new(-1f32); 41];
                stream::copy(&mut buf[off..off + len], &src[..len]);
                stream::fence();
                let got: Vec<f32> = buf.iter().map(|v| unsafe { v.assume_init() }).collect();
                let mut want = vec![-1f32; 41];
                want[off..off + len].copy_from_slice(&src[..len]);
                assert_eq!(got, want, "offset {off} len {len}");
            }
        }
    }

    /// Both ways of storing rows give the same tensor (Qwen2 geometry: SIMD lines of 14).
    #[test]
    fn streamed_and_cached_rows_agree() {
        let p = Patching {
            patch_size: 14,
            merge_size: 2,
            temporal_patch_size: 2,
        };
        let (w, h) = (56usize, 84usize);
        let data: Vec<u8> = (0..w * h * 3).map(|i| (i * 31 % 253) as u8).collect();
        let g = Grid::new(w, h, p).unwrap();
        let t = Normalizer::new([0.4; 3], [0.3; 3], Mode::Pil).unwrap();
        let run = |store| {
            let mut out = vec![MaybeUninit::new(0f32); g.total];
            block_rows(&data, w, &t, p, &g, &mut out, store);
            out.iter()
                .map(|v| unsafe { v.assume_init() }.to_bits())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(Store::Streamed), run(Store::Cached));
        let (want, _, _) =
            patchify(RgbView::new(w, h, &data).unwrap(), &t, p, &Par::inline()).unwrap();
        assert_eq!(
            run(Store::Cached),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn sides_must_be_multiples() {
        let data = vec![0u8; 6 * 4 * 3];
        let img = RgbView::new(6, 4, &data).unwrap();
        let t = Normalizer::new([0.0; 3], [1.0; 3], Mode::Pil).unwrap();
        let p = Patching {
            patch_size: 2,
            merge_size: 2,
            temporal_patch_size: 1,
        };
        assert!(patchify(img, &t, p, &Par::inline()).is_err());
    }
}
