//! Pixel patches, channels last (HWC inside each patch): a part's extent cut into `ps x ps`
//! patches in row-major patch order, `[rows * cols, ps, ps, 3]`, with the encoder's pad value
//! wherever the extent reaches past the kept pixels (Inkling's grid, one column wider than
//! the image). Written by patch rows (contiguous in the output) through the `par` seam.

use std::mem::MaybeUninit;
use std::sync::OnceLock;

use super::encode::Encode;
use super::fed;
use super::parts::{Band, Rows, Source};
use crate::error::{KernelError, Result};
use crate::image::RgbView;
use crate::par::Par;

/// `(rows, cols)` of the patch grid of `src`, whose extent must be a whole number of patches.
pub(crate) fn grid(src: &Source<'_>, ps: usize) -> Result<(usize, usize)> {
    let (w, h) = src.extent;
    if ps == 0 || w % ps != 0 || h % ps != 0 {
        return Err(KernelError::InvalidArgument(format!(
            "a {w}x{h} part is not a whole number of {ps}x{ps} patches"
        )));
    }
    Ok((h / ps, w / ps))
}

/// Elements of the patches of `src`.
pub(crate) fn len(src: &Source<'_>, ps: usize) -> Result<usize> {
    grid(src, ps)?;
    let (w, h) = src.extent;
    w.checked_mul(h)
        .and_then(|p| p.checked_mul(3))
        .ok_or_else(|| KernelError::Limit("the feature's size overflows".into()))
}

/// Write the patches of `src` into `out` (exactly [`len`] elements); every element written.
pub(crate) fn write<E: Encode>(
    src: &Source<'_>,
    ps: usize,
    enc: &E,
    par: &Par,
    out: &mut [MaybeUninit<E::Out>],
) -> Result<()> {
    let (_, cols) = grid(src, ps)?;
    let row_len = cols * ps * ps * 3;
    let failed = OnceLock::<KernelError>::new();
    par.for_each_band(out, row_len, |first, chunk| {
        let mut band = Band::default();
        for (k, patch_row) in chunk.chunks_exact_mut(row_len).enumerate() {
            if let Err(e) = patch_row_into(src, ps, first + k, patch_row, enc, &mut band) {
                let _ = failed.set(e);
                return;
            }
        }
    });
    match failed.into_inner() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// [`write`] while the image's rows are still arriving: one job per patch row, run through
/// [`fed::run`] alongside `produce` in the order their rows arrive.
pub(crate) fn write_streamed<E: Encode, P: FnOnce() -> Result<()>>(
    src: &Source<'_>,
    ps: usize,
    enc: &E,
    par: &Par,
    out: &mut [MaybeUninit<E::Out>],
    produce: P,
) -> Result<()> {
    let (_, cols) = grid(src, ps)?;
    let row_len = cols * ps * ps * 3;
    let kh = src.kept().1;
    let jobs: Vec<(usize, fed::Run<'_, E::Out>)> = out
        .chunks_exact_mut(row_len)
        .enumerate()
        .map(|(i, patch_row)| {
            let (y0, y1) = (i * ps, ((i + 1) * ps).min(kh));
            let need = if y0 < y1 { src.need(y0, y1) } else { 0 };
            (need, (i, patch_row))
        })
        .collect();
    fed::run(par, produce, jobs, Band::default, |band, (i, patch_row)| {
        patch_row_into(src, ps, i, patch_row, enc, band)
    })
}

/// The `cols` patches of patch row `i`; every element of `out` is written.
fn patch_row_into<E: Encode>(
    src: &Source<'_>,
    ps: usize,
    i: usize,
    out: &mut [MaybeUninit<E::Out>],
    enc: &E,
    band: &mut Band,
) -> Result<()> {
    let (kw, kh) = src.kept();
    let y0 = i * ps;
    let inside_rows = kh.saturating_sub(y0).min(ps);
    let rows = if inside_rows > 0 {
        Some(src.rows(y0, y0 + inside_rows, band)?)
    } else {
        None
    };
    write_row(rows.as_ref(), kw, ps, out, enc);
    Ok(())
}

/// One patch row of [`super::Writer::HwcPatches`] from `band`, the kept pixels of its image
/// rows (at most `ps` of them; fewer, or none, at the bottom of a padded extent): `out` holds
/// `out.len() / (ps * ps * 3)` patches, each sample through `enc`, the encoder's pad value
/// wherever the band has no pixel. Every element of `out` is written. For a family kernel that
/// produces the band itself (e.g. from rows still being decoded).
pub fn hwc_patch_row<E: Encode>(
    band: Option<RgbView<'_>>,
    ps: usize,
    out: &mut [MaybeUninit<E::Out>],
    enc: &E,
) {
    let width = band.map_or(0, |b| b.width);
    let rows = band.map(|b| Rows {
        data: b.data,
        stride: b.width * 3,
        x0: 0,
        width: b.width,
        height: b.height.min(ps),
    });
    write_row(rows.as_ref(), width, ps, out, enc);
}

fn write_row<E: Encode>(
    rows: Option<&Rows<'_>>,
    kw: usize,
    ps: usize,
    out: &mut [MaybeUninit<E::Out>],
    enc: &E,
) {
    let pad = [enc.pad(0), enc.pad(1), enc.pad(2)];
    let inside_rows = rows.map_or(0, |r| r.height);
    let line_len = ps * 3;
    for (j, patch) in out.chunks_exact_mut(ps * line_len).enumerate() {
        let x0 = j * ps;
        // Source columns of this patch that fall inside the kept pixels (possibly none).
        let inside = kw.saturating_sub(x0).min(ps);
        for (y, line) in patch.chunks_exact_mut(line_len).enumerate() {
            let n = match rows {
                Some(r) if y < inside_rows => {
                    let px = &r.row(y)[x0 * 3..(x0 + inside) * 3];
                    enc.encode_pixels(px, &mut line[..inside * 3]);
                    inside * 3
                }
                _ => 0,
            };
            for d in line[n..].chunks_exact_mut(3) {
                d[0].write(pad[0]);
                d[1].write(pad[1]);
                d[2].write(pad[2]);
            }
        }
    }
}
