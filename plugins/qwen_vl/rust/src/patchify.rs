//! Normalize + patchify in one pass, written straight into HuggingFace's `pixel_values` layout
//! (no 9-D intermediate): row `r` is the patch at merge block `(bh, bw)`, in-block `(mh, mw)`,
//! `r = ((bh * (gw/m) + bw) * m + mh) * m + mw`; column `k = ((c * tps + tt) * ps + py) * ps + px`.

use mm_kernels::{KernelError, Par, Result, RgbView};

use crate::normalize::Table;

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

/// `[gh * gw, 3 * tps * ps * ps]` float32 for an image whose sides are multiples of `ps * m`.
/// Returns the values and the patch grid `(gh, gw)`.
pub fn patchify(
    img: RgbView<'_>,
    table: &Table,
    p: Patching,
    par: &Par,
) -> Result<(Vec<f32>, usize, usize)> {
    let (ps, m, tps) = (p.patch_size, p.merge_size, p.temporal_patch_size);
    let unit = ps
        .checked_mul(m)
        .filter(|&u| u > 0 && tps > 0)
        .ok_or_else(|| {
            KernelError::InvalidArgument(format!(
            "patch_size ({ps}), merge_size ({m}) and temporal_patch_size ({tps}) must be positive"
        ))
        })?;
    let fits = |side: usize| side > 0 && side.is_multiple_of(unit);
    if !fits(img.height) || !fits(img.width) {
        return Err(KernelError::InvalidArgument(format!(
            "image of {}x{} pixels is not a non-empty multiple of {unit} on each side",
            img.width, img.height
        )));
    }
    let (gh, gw) = (img.height / ps, img.width / ps);
    let row_len = p.row_len()?;
    let total = gh
        .checked_mul(gw)
        .and_then(|n| n.checked_mul(row_len))
        .ok_or_else(|| KernelError::Limit("patch tensor size overflows".into()))?;
    // Reserved, not zeroed: fresh pages come zeroed from the kernel anyway, and every element
    // is written below. A failed reservation is an error, not an abort.
    let mut out: Vec<f32> = Vec::new();
    out.try_reserve_exact(total).map_err(|_| {
        KernelError::Limit(format!(
            "patch tensor of {total} floats ({gh}x{gw} patches) cannot be allocated"
        ))
    })?;
    let spare = &mut out.spare_capacity_mut()[..total];
    crate::hugepages::advise(spare);
    let blocks_per_row = gw / m;
    let plane = ps * ps;
    let stride = img.width * 3;
    par.for_each_band(spare, row_len, |first, band| {
        for (k, row) in band.chunks_exact_mut(row_len).enumerate() {
            let r = first + k;
            let (mw, mh, block) = (r % m, (r / m) % m, r / (m * m));
            let (bh, bw) = (block / blocks_per_row, block % blocks_per_row);
            let (pr, pc) = (bh * m + mh, bw * m + mw);
            let (c0, rest) = row.split_at_mut(tps * plane);
            let (c1, c2) = rest.split_at_mut(tps * plane);
            for py in 0..ps {
                let start = (pr * ps + py) * stride + pc * ps * 3;
                let src = &img.data[start..start + ps * 3];
                let d = py * ps..py * ps + ps;
                let lanes = c0[d.clone()]
                    .iter_mut()
                    .zip(&mut c1[d.clone()])
                    .zip(&mut c2[d]);
                for (px, ((o0, o1), o2)) in src.chunks_exact(3).zip(lanes) {
                    o0.write(table[0][usize::from(px[0])]);
                    o1.write(table[1][usize::from(px[1])]);
                    o2.write(table[2][usize::from(px[2])]);
                }
            }
            // A still image is its own every frame: copy frame 0 into frames 1..tps.
            for ch in [c0, c1, c2] {
                for tt in 1..tps {
                    ch.copy_within(0..plane, tt * plane);
                }
            }
        }
    });
    // SAFETY: `spare` covered exactly `total` elements, cut into whole rows of `row_len`; each
    // row's three channel blocks get frame 0 written in full (`ps` rows of `ps` pixels, the
    // source slice holding exactly `ps` pixels) and frames 1..tps copied from it, so every
    // element in 0..total is initialised.
    unsafe { out.set_len(total) };
    Ok((out, gh, gw))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize::{table, Mode};

    /// The spec's index formulas, evaluated per output element.
    #[test]
    fn layout_matches_index_formulas() {
        let (w, h) = (8usize, 12usize);
        let data: Vec<u8> = (0..w * h * 3).map(|i| (i * 7 % 251) as u8).collect();
        let img = RgbView::new(w, h, &data).unwrap();
        let t = table([0.0; 3], [1.0; 3], Mode::AtenU8).unwrap();
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

    #[test]
    fn sides_must_be_multiples() {
        let data = vec![0u8; 6 * 4 * 3];
        let img = RgbView::new(6, 4, &data).unwrap();
        let t = table([0.0; 3], [1.0; 3], Mode::Pil).unwrap();
        let p = Patching {
            patch_size: 2,
            merge_size: 2,
            temporal_patch_size: 1,
        };
        assert!(patchify(img, &t, p, &Par::inline()).is_err());
    }
}
