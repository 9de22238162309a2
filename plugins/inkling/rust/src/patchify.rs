//! The patch grid and the one pass that writes it: every output sample is a table load, either
//! of the source pixel or of the pad value, written patch by patch in row-major patch order.

use std::mem::MaybeUninit;

use mm_kernels::{KernelError, Par, Result, RgbView};

use crate::lut::{Tables, PAD};

/// Most padded grid pixels (`nph * ps * npw * ps`) one image may produce: twice Pillow's bomb
/// threshold, so the largest decodable image still fits while a giant `patch_size` is refused
/// before anything is allocated.
pub const MAX_GRID_PIXELS: u64 = 2 * mm_kernels::MAX_IMAGE_PIXELS;

/// The patch grid of an `h x w` image: `ceil(h / ps)` rows and `floor(w / ps) + 1` columns
/// (the model always sees one more column than `w / ps`, a full pad column when `ps` divides
/// `w`).
pub fn grid(height: usize, width: usize, ps: usize) -> (usize, usize) {
    (height.div_ceil(ps), width / ps + 1)
}

/// Flat single-frame bf16 bits `[nph * npw, ps, ps, 3]` plus the grid they were cut on.
#[derive(Debug)]
pub struct Patches {
    pub height: usize,
    pub width: usize,
    pub nph: usize,
    pub npw: usize,
    pub bits: Vec<u16>,
}

/// Cut `img` into `ps x ps` patches and normalise every sample through `tables`, in parallel by
/// patch rows.
pub fn patchify(img: RgbView<'_>, ps: usize, tables: &Tables, par: &Par) -> Result<Patches> {
    let (nph, npw, mut bits) = alloc_grid(img.width, img.height, ps)?;
    let band_len = npw * ps * ps * 3;
    let len = nph * band_len;
    // Written straight into the reserved capacity: no zero-fill pass over the largest buffer.
    par.for_each_band(
        &mut bits.spare_capacity_mut()[..len],
        band_len,
        |first, band| {
            for (k, patch_row) in band.chunks_exact_mut(band_len).enumerate() {
                write_patch_row(img, ps, first + k, patch_row, tables);
            }
        },
    );
    // SAFETY: `len <= capacity`, and the bands cover `[..len]` exactly (`len` is `nph` whole
    // bands), each of whose samples `write_patch_row` writes once, as a pixel or as padding.
    unsafe { bits.set_len(len) };
    Ok(Patches {
        height: img.height,
        width: img.width,
        nph,
        npw,
        bits,
    })
}

/// The grid of a `width x height` image and an empty buffer with capacity for its
/// `nph * npw * ps * ps * 3` samples, after the size checks.
pub fn alloc_grid(width: usize, height: usize, ps: usize) -> Result<(usize, usize, Vec<u16>)> {
    let (nph, npw, len) = checked_grid(width, height, ps)?;
    let mut bits: Vec<u16> = Vec::new();
    bits.try_reserve_exact(len)
        .map_err(|_| KernelError::Limit(format!("cannot allocate {} output pixels", len / 3)))?;
    Ok((nph, npw, bits))
}

/// `(nph, npw, samples)` of a `width x height` image, after the size checks.
fn checked_grid(width: usize, height: usize, ps: usize) -> Result<(usize, usize, usize)> {
    if ps == 0 {
        return Err(KernelError::InvalidArgument(
            "patch_size must be greater than zero".into(),
        ));
    }
    if width == 0 || height == 0 {
        return Err(KernelError::InvalidArgument(format!(
            "cannot cut patches from an empty {width}x{height} image"
        )));
    }
    let (nph, npw) = grid(height, width, ps);
    let grid_pixels = (nph as u64)
        .checked_mul(npw as u64)
        .and_then(|n| n.checked_mul(ps as u64))
        .and_then(|n| n.checked_mul(ps as u64));
    match grid_pixels {
        Some(n) if n <= MAX_GRID_PIXELS => Ok((nph, npw, n as usize * 3)),
        _ => Err(KernelError::Limit(format!(
            "a {nph}x{npw} grid of {ps}x{ps} patches exceeds the limit of {MAX_GRID_PIXELS} \
             output pixels"
        ))),
    }
}

/// The compact form of [`patchify`]: the same samples as uint8 codes, the pixel values the
/// tables index (0 where [`patchify`] writes the pad value: the pad rule of the carrier marks
/// those), so `bits[k] == t[k % 3][codes[k]]` inside the image. `(nph, npw, codes)`.
pub fn patchify_codes(img: RgbView<'_>, ps: usize, par: &Par) -> Result<(usize, usize, Vec<u8>)> {
    let (nph, npw, len) = checked_grid(img.width, img.height, ps)?;
    let mut codes: Vec<u8> = Vec::new();
    codes
        .try_reserve_exact(len)
        .map_err(|_| KernelError::Limit(format!("cannot allocate {len} output codes")))?;
    let band_len = npw * ps * ps * 3;
    par.for_each_band(
        &mut codes.spare_capacity_mut()[..len],
        band_len,
        |first, band| {
            for (k, patch_row) in band.chunks_exact_mut(band_len).enumerate() {
                write_code_row(img, ps, first + k, patch_row);
            }
        },
    );
    // SAFETY: `len <= capacity`, and the bands cover `[..len]` exactly, each of whose bytes
    // `write_code_row` writes once.
    unsafe { codes.set_len(len) };
    Ok((nph, npw, codes))
}

/// [`write_patch_row`] with the pixel values themselves, and 0 for padding.
fn write_code_row(img: RgbView<'_>, ps: usize, i: usize, out: &mut [MaybeUninit<u8>]) {
    let line_len = ps * 3;
    for (j, patch) in out.chunks_exact_mut(ps * line_len).enumerate() {
        let x0 = j * ps;
        let inside = img.width.saturating_sub(x0).min(ps);
        for (y, line) in patch.chunks_exact_mut(line_len).enumerate() {
            let row = i * ps + y;
            let n = if row < img.height { inside * 3 } else { 0 };
            let (pixels, padding) = line.split_at_mut(n);
            if n > 0 {
                let start = (row * img.width + x0) * 3;
                pixels.write_copy_of_slice(&img.data[start..start + n]);
            }
            for d in padding {
                d.write(0);
            }
        }
    }
}

/// `dst[k] = t[k % 3][src[k]]` for whole RGB pixels. (Packing four samples per 8-byte store
/// measured no faster: the pass is bound by memory traffic, not by the table loads.)
fn map_pixels(dst: &mut [MaybeUninit<u16>], src: &[u8], t: &Tables) {
    for (d, s) in dst.chunks_exact_mut(3).zip(src.chunks_exact(3)) {
        d[0].write(t[0][usize::from(s[0])]);
        d[1].write(t[1][usize::from(s[1])]);
        d[2].write(t[2][usize::from(s[2])]);
    }
}

/// Write the `npw` patches of patch row `i` into `out` (`npw * ps * ps * 3` samples).
pub(crate) fn write_patch_row(
    img: RgbView<'_>,
    ps: usize,
    i: usize,
    out: &mut [MaybeUninit<u16>],
    t: &Tables,
) {
    let pad = [t[0][PAD], t[1][PAD], t[2][PAD]];
    let patch_len = ps * ps * 3;
    let line_len = ps * 3;
    for (j, patch) in out.chunks_exact_mut(patch_len).enumerate() {
        let x0 = j * ps;
        // Source columns of this patch that fall inside the image (possibly none).
        let inside = img.width.saturating_sub(x0).min(ps);
        for (y, line) in patch.chunks_exact_mut(line_len).enumerate() {
            let row = i * ps + y;
            let (pixels, padding) = if row < img.height {
                line.split_at_mut(inside * 3)
            } else {
                line.split_at_mut(0)
            };
            if !pixels.is_empty() {
                let start = (row * img.width + x0) * 3;
                map_pixels(pixels, &img.data[start..start + inside * 3], t);
            }
            for d in padding.chunks_exact_mut(3) {
                d[0].write(pad[0]);
                d[1].write(pad[1]);
                d[2].write(pad[2]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lut::tables;

    #[test]
    fn grid_has_one_extra_column() {
        assert_eq!(grid(1, 1, 40), (1, 1));
        assert_eq!(grid(40, 40, 40), (1, 2));
        assert_eq!(grid(41, 39, 40), (2, 1));
        assert_eq!(grid(80, 120, 40), (2, 4));
    }

    #[test]
    fn every_thread_count_writes_the_same_bits() {
        let (w, h, ps) = (37, 23, 5);
        let data: Vec<u8> = (0..w * h * 3).map(|i| (i * 7 % 251) as u8).collect();
        let img = RgbView::new(w, h, &data).unwrap();
        let t = tables();
        let one = patchify(img, ps, &t, &Par::inline()).unwrap();
        assert_eq!((one.nph, one.npw), (5, 8));
        assert_eq!(one.bits.len(), 5 * 8 * ps * ps * 3);
        for threads in 2..6 {
            assert_eq!(
                patchify(img, ps, &t, &Par::new(threads)).unwrap().bits,
                one.bits
            );
        }
        // Patch (1, 2), pixel (3, 4): source pixel (8, 14).
        let k = ((8 + 2) * ps * ps + 3 * ps + 4) * 3;
        let s = (8 * w + 14) * 3;
        assert_eq!(
            one.bits[k..k + 3],
            [
                t[0][data[s] as usize],
                t[1][data[s + 1] as usize],
                t[2][data[s + 2] as usize]
            ]
        );
        // The last column (x0 = 35) has two pixels, then padding.
        let last = ((7 * ps) * ps + 2) * 3;
        assert_eq!(one.bits[last..last + 3], [t[0][PAD], t[1][PAD], t[2][PAD]]);
    }

    /// The codes index the tables to the very bits of `patchify`, pad where the image ends.
    #[test]
    fn codes_expand_to_the_bits() {
        let (w, h, ps) = (37, 23, 5);
        let data: Vec<u8> = (0..w * h * 3).map(|i| (i * 7 % 251) as u8).collect();
        let img = RgbView::new(w, h, &data).unwrap();
        let t = tables();
        let want = patchify(img, ps, &t, &Par::inline()).unwrap();
        for threads in [1, 3] {
            let (nph, npw, codes) = patchify_codes(img, ps, &Par::new(threads)).unwrap();
            assert_eq!((nph, npw), (want.nph, want.npw));
            let got: Vec<u16> = codes
                .iter()
                .enumerate()
                .map(|(k, &v)| {
                    let (c, px) = (k % 3, k / 3);
                    let (patch, y, x) = (px / (ps * ps), px / ps % ps, px % ps);
                    let (row, col) = (patch / npw * ps + y, patch % npw * ps + x);
                    let v = if row < h && col < w {
                        usize::from(v)
                    } else {
                        PAD
                    };
                    t[c][v]
                })
                .collect();
            assert_eq!(got, want.bits);
        }
    }

    #[test]
    fn refuses_empty_images_and_giant_grids() {
        let t = tables();
        let empty = RgbView::new(0, 3, &[]).unwrap();
        assert!(matches!(
            patchify(empty, 4, &t, &Par::inline()),
            Err(KernelError::InvalidArgument(_))
        ));
        let one = [0u8; 3];
        let img = RgbView::new(1, 1, &one).unwrap();
        assert!(matches!(
            patchify(img, 1 << 20, &t, &Par::inline()),
            Err(KernelError::Limit(_))
        ));
    }
}
