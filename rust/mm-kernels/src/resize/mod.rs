//! Separable fixed-point resize, bit-exact with Pillow 13's `Image.resize` (`pil_lanczos`,
//! `pil_bicubic`, `pil_bilinear`) and with torchvision's uint8 antialiased resize (`aten_u8`,
//! bicubic; `aten_u8_bilinear`). Every resampler shares one geometry (Pillow's
//! `precompute_coeffs`) and the same two passes; they differ in the filter and the fixed-point
//! precision of the weights. Beside them, torchvision's float antialiased bicubic of a uint8
//! image cast to float32 (`aten_f32`, `aten_f32_nofma`; module `float`): the same geometry
//! with float32 weights and a float32 intermediate, rounded back to uint8.
//!
//! A resize is planned once per (input size, output size, resampler, pass order) — coefficient
//! tables and pass order — and then run; [`ResizePlan`] lets a caller reuse one plan across many
//! images of the same size; [`ResizePlan::run_rows`] drives it band by band for a caller that
//! streams its rows. The coefficient tables (`coeffs`) and the passes (`passes`, which fan out
//! by output rows through the `par` seam) are private: the public surface is [`Resample`],
//! [`PassOrder`], [`ResizePlan`], [`RowScratch`], [`resize_rgb`] and the caps.

mod coeffs;
mod float;
mod passes;

use std::sync::{Arc, Mutex};

use crate::error::{KernelError, Result};
use crate::image::{RgbImage, RgbView};
use crate::limits::{MAX_IMAGE_PIXELS, MAX_IMAGE_SIDE};
use crate::par::Par;
use coeffs::{AxisCoeffs, Filter};
use float::{FloatAxis, FloatScratch, FloatSteps, Fma};
use passes::{Kernel, Region};

/// Largest output (and intermediate) image, in pixels: Pillow's decompression-bomb threshold.
pub const MAX_RESIZE_PIXELS: u64 = MAX_IMAGE_PIXELS;
/// Largest output side.
pub const MAX_RESIZE_SIDE: usize = MAX_IMAGE_SIDE as usize;

/// Which reference the resampler reproduces. Parity: every variant is bit-exact with its
/// reference on RGB uint8, for every size the caps allow (tested against live Pillow and
/// against committed torchvision goldens).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resample {
    /// Pillow's `Image.resize(..., LANCZOS)`: support 3, 22-bit weights; bit-exact with Pillow 13
    /// (and older Pillow with [`PassOrder::Pillow12`]).
    PilLanczos,
    /// Pillow's `Image.resize(..., BICUBIC)`: a = -0.5, support 2, 22-bit weights.
    PilBicubic,
    /// Pillow's `Image.resize(..., BILINEAR)`: the triangle filter, support 1, 22-bit weights.
    PilBilinear,
    /// torchvision's `resize(uint8, BICUBIC, antialias=True)` on the CPU: int16 weights,
    /// horizontal first; bit-exact.
    AtenU8,
    /// torchvision's `resize(uint8, BILINEAR, antialias=True)`: the triangle with aten's int16
    /// weights, horizontal first.
    AtenU8Bilinear,
    /// torchvision's v1 `transforms.functional.resize(uint8, BICUBIC, antialias=True)` on the
    /// CPU, as qwen-vl-utils resizes video frames: the image cast to float32, aten's float
    /// antialiased bicubic (float32 weights and intermediate, horizontal first), then
    /// `clamp(0, 255)`, round half to even and cast to uint8; bit-exact with aten's AVX2 build
    /// (its fused multiply-adds), what x86-64 servers run.
    AtenF32,
    /// [`Resample::AtenF32`] as aten's portable build computes it (`ATEN_CPU_CAPABILITY=default`:
    /// no fused multiply-add); it differs from the AVX2 build on about one sample in 50,000.
    AtenF32NoFma,
}

/// Pass order of the Pillow resamplers (the `aten_*` ones are always horizontal first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PassOrder {
    /// Pillow >= 13: vertical first when `(h - h') > 0` and `(h - h') > 2 * (w - w')`.
    #[default]
    Pillow13,
    /// Older Pillow: always horizontal first.
    Pillow12,
}

impl Resample {
    /// The resampler named `pil_lanczos`, `pil_bicubic` or `aten_u8`.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "pil_lanczos" => Ok(Self::PilLanczos),
            "pil_bicubic" => Ok(Self::PilBicubic),
            "pil_bilinear" => Ok(Self::PilBilinear),
            "aten_u8" => Ok(Self::AtenU8),
            "aten_u8_bilinear" => Ok(Self::AtenU8Bilinear),
            "aten_f32" => Ok(Self::AtenF32),
            "aten_f32_nofma" => Ok(Self::AtenF32NoFma),
            other => Err(KernelError::InvalidArgument(format!(
                "unknown resample {other:?} (expected pil_lanczos, pil_bicubic, pil_bilinear, \
                 aten_u8, aten_u8_bilinear, aten_f32 or aten_f32_nofma)"
            ))),
        }
    }

    /// The resampler's name, as [`Resample::parse`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            Self::PilLanczos => "pil_lanczos",
            Self::PilBicubic => "pil_bicubic",
            Self::PilBilinear => "pil_bilinear",
            Self::AtenU8 => "aten_u8",
            Self::AtenU8Bilinear => "aten_u8_bilinear",
            Self::AtenF32 => "aten_f32",
            Self::AtenF32NoFma => "aten_f32_nofma",
        }
    }

    /// The float build a float resampler reproduces (`None` for the fixed-point ones).
    fn float(self) -> Option<Fma> {
        match self {
            Self::AtenF32 => Some(Fma::Aten),
            Self::AtenF32NoFma => Some(Fma::None),
            _ => None,
        }
    }

    /// The coefficient table of one axis for this resampler, shared with the plans that
    /// resampled the same sizes lately ([`RECENT_TABLES`]).
    pub(crate) fn axis(self, in_size: usize, out_size: usize) -> Result<Arc<AxisCoeffs>> {
        let key = (self, in_size, out_size);
        let recent = || RECENT_TABLES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, c)) = recent().iter().find(|(k, _)| *k == key) {
            return Ok(Arc::clone(c));
        }
        let c = Arc::new(self.build_axis(in_size, out_size)?);
        if c.weights.len() <= RECENT_TABLE_WEIGHTS {
            let mut kept = recent();
            if !kept.iter().any(|(k, _)| *k == key) {
                if kept.len() == RECENT_TABLES_KEPT {
                    kept.remove(0);
                }
                kept.push((key, Arc::clone(&c)));
            }
        }
        Ok(c)
    }

    fn build_axis(self, in_size: usize, out_size: usize) -> Result<AxisCoeffs> {
        match self {
            Self::PilLanczos => AxisCoeffs::pil(Filter::PilLanczos, in_size, out_size),
            Self::PilBicubic => AxisCoeffs::pil(Filter::PilBicubic, in_size, out_size),
            Self::PilBilinear => AxisCoeffs::pil(Filter::Triangle, in_size, out_size),
            Self::AtenU8 => AxisCoeffs::aten_bicubic(in_size, out_size),
            Self::AtenU8Bilinear => AxisCoeffs::aten_bilinear(in_size, out_size),
            Self::AtenF32 | Self::AtenF32NoFma => Err(KernelError::InvalidArgument(format!(
                "{} has float weights, not a fixed-point table",
                self.name()
            ))),
        }
    }
}

impl PassOrder {
    /// The order named `pillow13` or `pillow12`.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "pillow13" => Ok(Self::Pillow13),
            "pillow12" => Ok(Self::Pillow12),
            other => Err(KernelError::InvalidArgument(format!(
                "unknown pass order {other:?} (expected pillow13 or pillow12)"
            ))),
        }
    }
}

/// Which passes run, in which order, each with its table. When both run they are fused per
/// band of output rows: the first pass only produces the intermediate rows that band reads
/// (kept in a small rolling buffer), so the intermediate image never exists whole. A
/// vertical-first resize reads only the columns the horizontal table uses, as Pillow does; that
/// table is shifted to match.
#[derive(Clone, Debug)]
enum Steps {
    Copy,
    Horizontal(Arc<AxisCoeffs>),
    Vertical(Arc<AxisCoeffs>),
    HorizontalThenVertical {
        h: Arc<AxisCoeffs>,
        v: Arc<AxisCoeffs>,
    },
    VerticalThenHorizontal {
        v: Arc<AxisCoeffs>,
        h: Arc<AxisCoeffs>,
        cols: (usize, usize),
    },
    /// A float resampler: its passes (horizontal first), fused per band in the same way.
    Float(FloatSteps),
}

/// Tables built lately, by resampler and sizes: building one takes tens of microseconds (a
/// few percent of a small image), and a server sees the same sizes over and over. At most
/// [`RECENT_TABLES_KEPT`] tables of at most [`RECENT_TABLE_WEIGHTS`] weights each (16 MiB in
/// all), the oldest making room.
#[allow(clippy::type_complexity)]
static RECENT_TABLES: Mutex<Vec<((Resample, usize, usize), Arc<AxisCoeffs>)>> =
    Mutex::new(Vec::new());
const RECENT_TABLES_KEPT: usize = 32;
const RECENT_TABLE_WEIGHTS: usize = 1 << 17;

/// Output rows per step of a fused resize (bounds the rolling intermediate buffer).
const CHUNK_ROWS: usize = 64;

/// A planned resize from `in_w x in_h` to `out_w x out_h`, reusable across images of that size.
#[derive(Clone, Debug)]
pub struct ResizePlan {
    /// Input width.
    pub in_w: usize,
    /// Input height.
    pub in_h: usize,
    /// Output width.
    pub out_w: usize,
    /// Output height.
    pub out_h: usize,
    steps: Steps,
}

impl ResizePlan {
    /// Plan a resize; refused for an empty input or an output over [`MAX_RESIZE_PIXELS`] /
    /// [`MAX_RESIZE_SIDE`]. The plan's output is bit-exact with the reference of `resample`.
    pub fn new(
        in_w: usize,
        in_h: usize,
        out_w: usize,
        out_h: usize,
        resample: Resample,
        order: PassOrder,
    ) -> Result<Self> {
        if in_w == 0 || in_h == 0 {
            return Err(KernelError::InvalidArgument(format!(
                "cannot resize an empty {in_w}x{in_h} image"
            )));
        }
        check_size("output", out_w, out_h)?;
        let need_h = out_w != in_w;
        let need_v = out_h != in_h;
        if let Some(fma) = resample.float() {
            let axis = |n, m| FloatAxis::aten_bicubic(n, m, fma);
            let steps = if need_h || need_v {
                let h = if need_h {
                    Some(axis(in_w, out_w)?)
                } else {
                    None
                };
                let v = if need_v {
                    Some(axis(in_h, out_h)?)
                } else {
                    None
                };
                Steps::Float(FloatSteps {
                    h,
                    v,
                    one_column: out_w == 1,
                })
            } else {
                Steps::Copy
            };
            return Ok(Self {
                in_w,
                in_h,
                out_w,
                out_h,
                steps,
            });
        }
        let vertical_first = match (resample, order) {
            (
                Resample::AtenU8
                | Resample::AtenU8Bilinear
                | Resample::AtenF32
                | Resample::AtenF32NoFma,
                _,
            )
            | (_, PassOrder::Pillow12) => false,
            // Pillow >= 13 (`ImagingResampleInner`), compared in signed arithmetic.
            (_, PassOrder::Pillow13) => {
                let dh = in_h as i128 - out_h as i128;
                let dw = in_w as i128 - out_w as i128;
                dh > 0 && dh > 2 * dw
            }
        };
        let steps = match (need_h, need_v) {
            (false, false) => Steps::Copy,
            (true, false) => Steps::Horizontal(resample.axis(in_w, out_w)?),
            (false, true) => Steps::Vertical(resample.axis(in_h, out_h)?),
            (true, true) if vertical_first => {
                // The intermediate only ever holds `CHUNK_ROWS` rows per thread.
                let h = resample.axis(in_w, out_w)?;
                let cols = h.used_range();
                let v = resample.axis(in_h, out_h)?;
                Steps::VerticalThenHorizontal {
                    v,
                    h: Arc::new(h.shifted(cols.0)),
                    cols,
                }
            }
            (true, true) => {
                let v = resample.axis(in_h, out_h)?;
                let rows = v.used_range();
                // The rolling buffer's worst case: one output row reads every input row.
                let pixels = out_w as u128 * (rows.1 - rows.0) as u128;
                if pixels > u128::from(MAX_RESIZE_PIXELS) {
                    return Err(KernelError::InvalidArgument(format!(
                        "resizing {in_w}x{in_h} to {out_w}x{out_h} horizontally first needs an \
                         intermediate of {out_w}x{} pixels, over the cap of {MAX_RESIZE_PIXELS}",
                        rows.1 - rows.0
                    )));
                }
                let h = resample.axis(in_w, out_w)?;
                Steps::HorizontalThenVertical { h, v }
            }
        };
        Ok(Self {
            in_w,
            in_h,
            out_w,
            out_h,
            steps,
        })
    }

    /// Resize `src`, which must be `in_w x in_h`.
    pub fn run(&self, src: RgbView<'_>, par: &Par) -> Result<RgbImage> {
        if (src.width, src.height) != (self.in_w, self.in_h) {
            return Err(KernelError::InvalidArgument(format!(
                "resize plan is for {}x{} input, got {}x{}",
                self.in_w, self.in_h, src.width, src.height
            )));
        }
        let full = Region::full(src.data, src.width, src.height);
        let k = Kernel::Auto;
        let data = match &self.steps {
            Steps::Copy => src.data.to_vec(),
            Steps::Horizontal(h) => passes::horizontal(full, h, par, k),
            Steps::Vertical(v) => passes::vertical(full, v, par, k),
            Steps::HorizontalThenVertical { h, v } => {
                let row_bytes = self.out_w * 3;
                let mut out = vec![0u8; row_bytes * self.out_h];
                par.for_each_band(&mut out, row_bytes, |first, band| {
                    let mut tmp = Rolling::new(row_bytes);
                    let mut scratch = Vec::new();
                    for (i, chunk) in band.chunks_mut(row_bytes * CHUNK_ROWS).enumerate() {
                        let y = first + i * CHUNK_ROWS;
                        let rows = v.window_union(y, y + chunk.len() / row_bytes);
                        tmp.ensure(rows, |r, dst| {
                            passes::horizontal_rows(full, h, r, dst, &mut scratch, k);
                        });
                        passes::vertical_rows(tmp.region(self.out_w), v, y, chunk, k);
                    }
                });
                out
            }
            Steps::VerticalThenHorizontal { v, h, cols } => {
                let row_bytes = self.out_w * 3;
                let cols_w = cols.1 - cols.0;
                let cropped = Region {
                    x0: cols.0,
                    w: cols_w,
                    ..full
                };
                let mut out = vec![0u8; row_bytes * self.out_h];
                par.for_each_band(&mut out, row_bytes, |first, band| {
                    let mut tmp = vec![0u8; cols_w * 3 * CHUNK_ROWS];
                    let mut scratch = Vec::new();
                    for (i, chunk) in band.chunks_mut(row_bytes * CHUNK_ROWS).enumerate() {
                        let y = first + i * CHUNK_ROWS;
                        let n = chunk.len() / row_bytes;
                        let tmp = &mut tmp[..n * cols_w * 3];
                        passes::vertical_rows(cropped, v, y, tmp, k);
                        let rows = Region {
                            y0: y,
                            h: n,
                            ..Region::full(tmp, cols_w, n)
                        };
                        passes::horizontal_rows(rows, h, y, chunk, &mut scratch, k);
                    }
                });
                out
            }
            Steps::Float(steps) => {
                let row_bytes = self.out_w * 3;
                let mut out = vec![0u8; row_bytes * self.out_h];
                par.for_each_band(&mut out, row_bytes, |first, band| {
                    let mut scratch = FloatScratch::default();
                    for (i, chunk) in band.chunks_mut(row_bytes * CHUNK_ROWS).enumerate() {
                        steps.rows(full, first + i * CHUNK_ROWS, chunk, &mut scratch, k);
                    }
                });
                out
            }
        };
        RgbImage::new(self.out_w, self.out_h, data)
    }
}

/// Buffers of [`ResizePlan::run_rows`] for the bands of one image on one thread. It keeps the
/// intermediate rows of the last band, so that the next band down reuses the ones they share:
/// make a new one for every image (it must not outlive the source rows it was fed).
pub struct RowScratch {
    tmp: Vec<u8>,
    transpose: Vec<u8>,
    mid: Rolling,
    float: FloatScratch,
}

impl Default for RowScratch {
    fn default() -> Self {
        Self {
            tmp: Vec::new(),
            transpose: Vec::new(),
            mid: Rolling::new(0),
            float: FloatScratch::default(),
        }
    }
}

impl ResizePlan {
    /// The half-open range of input rows that output rows `y0..y1` read.
    pub fn input_rows(&self, y0: usize, y1: usize) -> (usize, usize) {
        match &self.steps {
            Steps::Copy | Steps::Horizontal(_) => (y0, y1),
            Steps::Vertical(v)
            | Steps::HorizontalThenVertical { v, .. }
            | Steps::VerticalThenHorizontal { v, .. } => v.window_union(y0, y1),
            Steps::Float(steps) => steps.input_rows(y0, y1),
        }
    }

    /// Output rows `y0..y1` into `out` from `src`, which holds input rows `lo..hi` as
    /// [`Self::input_rows`] gives them (whole, tightly packed rows): the bytes `run` writes
    /// there, so a caller can resize bands as their input rows arrive.
    pub fn run_rows(
        &self,
        src: &[u8],
        y0: usize,
        y1: usize,
        out: &mut [u8],
        scratch: &mut RowScratch,
    ) -> Result<()> {
        let in_row = self.in_w * 3;
        let out_row = self.out_w * 3;
        if y0 >= y1 || y1 > self.out_h || out.len() != (y1 - y0) * out_row {
            return Err(KernelError::InvalidArgument(format!(
                "output rows {y0}..{y1} of a {}-row resize do not fit {} bytes",
                self.out_h,
                out.len()
            )));
        }
        let (lo, hi) = self.input_rows(y0, y1);
        if src.len() != (hi - lo) * in_row {
            return Err(KernelError::InvalidArgument(format!(
                "output rows {y0}..{y1} read input rows {lo}..{hi}, got {} bytes",
                src.len()
            )));
        }
        let region = Region {
            y0: lo,
            h: hi - lo,
            ..Region::full(src, self.in_w, hi - lo)
        };
        let k = Kernel::Auto;
        let RowScratch {
            tmp,
            transpose,
            mid,
            float,
        } = scratch;
        match &self.steps {
            Steps::Copy => out.copy_from_slice(src),
            Steps::Horizontal(h) => passes::horizontal_rows(region, h, y0, out, transpose, k),
            Steps::Vertical(v) => passes::vertical_rows(region, v, y0, out, k),
            Steps::HorizontalThenVertical { h, v } => {
                if mid.row_bytes != out_row {
                    *mid = Rolling::new(out_row);
                }
                mid.ensure((lo, hi), |r, dst| {
                    passes::horizontal_rows(region, h, r, dst, transpose, k);
                });
                passes::vertical_rows(mid.region(self.out_w), v, y0, out, k);
            }
            Steps::VerticalThenHorizontal { v, h, cols } => {
                let cols_w = cols.1 - cols.0;
                let n = y1 - y0;
                let tmp = grown(tmp, n * cols_w * 3);
                let cropped = Region {
                    x0: cols.0,
                    w: cols_w,
                    ..region
                };
                passes::vertical_rows(cropped, v, y0, tmp, k);
                let mid = Region {
                    y0,
                    h: n,
                    ..Region::full(tmp, cols_w, n)
                };
                passes::horizontal_rows(mid, h, y0, out, transpose, k);
            }
            Steps::Float(steps) => steps.rows(region, y0, out, float, k),
        }
        Ok(())
    }
}

/// The first `len` bytes of `buf`, grown (never shrunk) to hold them; every caller overwrites
/// them all, so their old contents do not matter.
fn grown(buf: &mut Vec<u8>, len: usize) -> &mut [u8] {
    if buf.len() < len {
        buf.resize(len, 0);
    }
    &mut buf[..len]
}

/// A window of consecutive intermediate rows `first..first + rows`, slid forward as the output
/// rows that read it advance (their windows only ever move forward).
struct Rolling {
    buf: Vec<u8>,
    row_bytes: usize,
    first: usize,
    rows: usize,
}

impl Rolling {
    fn new(row_bytes: usize) -> Self {
        Self {
            buf: Vec::new(),
            row_bytes,
            first: 0,
            rows: 0,
        }
    }

    /// Hold rows `lo..hi`: keep the ones already computed, `fill(first_row, dst)` the rest.
    fn ensure(&mut self, (lo, hi): (usize, usize), mut fill: impl FnMut(usize, &mut [u8])) {
        let rb = self.row_bytes;
        if lo < self.first || lo >= self.first + self.rows {
            self.first = lo;
            self.rows = 0;
        } else {
            let drop = lo - self.first;
            self.buf.copy_within(drop * rb..self.rows * rb, 0);
            self.first = lo;
            self.rows -= drop;
        }
        let have = self.first + self.rows;
        if hi > have {
            self.buf.resize((hi - self.first) * rb, 0);
            fill(
                have,
                &mut self.buf[(have - self.first) * rb..(hi - self.first) * rb],
            );
            self.rows = hi - self.first;
        }
    }

    fn region(&self, w: usize) -> Region<'_> {
        let data = &self.buf[..self.rows * self.row_bytes];
        Region {
            y0: self.first,
            h: self.rows,
            ..Region::full(data, w, self.rows)
        }
    }
}

fn check_size(what: &str, w: usize, h: usize) -> Result<()> {
    if w == 0 || h == 0 {
        return Err(KernelError::InvalidArgument(format!(
            "resize {what} size must be at least 1x1, got {w}x{h}"
        )));
    }
    let pixels = (w as u128) * (h as u128);
    if w > MAX_RESIZE_SIDE || h > MAX_RESIZE_SIDE || pixels > u128::from(MAX_RESIZE_PIXELS) {
        return Err(KernelError::InvalidArgument(format!(
            "resize {what} size {w}x{h} exceeds the cap ({MAX_RESIZE_SIDE} per side, \
             {MAX_RESIZE_PIXELS} pixels)"
        )));
    }
    Ok(())
}

/// Resize `src` to `out_w x out_h`.
pub fn resize_rgb(
    src: RgbView<'_>,
    out_w: usize,
    out_h: usize,
    resample: Resample,
    order: PassOrder,
    par: &Par,
) -> Result<RgbImage> {
    ResizePlan::new(src.width, src.height, out_w, out_h, resample, order)?.run(src, par)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table asked for again is the one built before, equal to a fresh build; other sizes
    /// or resamplers get their own, and past the bound the oldest ones go.
    #[test]
    fn recent_tables_are_shared_and_bounded() {
        let r = Resample::PilBicubic;
        let a = r.axis(640, 644).unwrap();
        let b = r.axis(640, 644).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(*a, r.build_axis(640, 644).unwrap());
        assert!(!Arc::ptr_eq(&a, &r.axis(640, 645).unwrap()));
        assert!(!Arc::ptr_eq(&a, &Resample::AtenU8.axis(640, 644).unwrap()));
        // A table too large to keep is built every time.
        let big = r.axis(1 << 20, 1).unwrap();
        assert!(big.weights.len() > RECENT_TABLE_WEIGHTS);
        assert!(!Arc::ptr_eq(&big, &r.axis(1 << 20, 1).unwrap()));
        for k in 0..RECENT_TABLES_KEPT {
            r.axis(1000 + k, 7).unwrap();
        }
        let kept = RECENT_TABLES.lock().unwrap();
        assert!(kept.len() <= RECENT_TABLES_KEPT);
        assert!(kept
            .iter()
            .all(|(_, c)| c.weights.len() <= RECENT_TABLE_WEIGHTS));
    }

    const ALL: [Resample; 7] = [
        Resample::PilLanczos,
        Resample::PilBicubic,
        Resample::PilBilinear,
        Resample::AtenU8,
        Resample::AtenU8Bilinear,
        Resample::AtenF32,
        Resample::AtenF32NoFma,
    ];

    fn gradient(w: usize, h: usize) -> RgbImage {
        let data = (0..w * h * 3).map(|i| (i * 7 % 251) as u8).collect();
        RgbImage::new(w, h, data).unwrap()
    }

    #[test]
    fn identity_is_a_copy() {
        let img = gradient(13, 7);
        for r in ALL {
            let out = resize_rgb(img.view(), 13, 7, r, PassOrder::Pillow13, &Par::inline());
            assert_eq!(out.unwrap(), img);
        }
    }

    #[test]
    fn constant_image_stays_constant() {
        let img = RgbImage::new(31, 17, [10u8, 200, 99].repeat(31 * 17)).unwrap();
        for r in ALL {
            for (w, h) in [(7, 40), (64, 3), (1, 1), (31, 5), (100, 17)] {
                let out = resize_rgb(img.view(), w, h, r, PassOrder::Pillow13, &Par::new(3));
                let out = out.unwrap();
                assert!(
                    out.data.chunks(3).all(|p| p == [10, 200, 99]),
                    "{r:?} {w}x{h}"
                );
            }
        }
    }

    #[test]
    fn bad_sizes_are_argument_errors() {
        let img = gradient(4, 4);
        for (w, h) in [(0, 4), (4, 0), (MAX_RESIZE_SIDE + 1, 1), (60_000, 60_000)] {
            let err = resize_rgb(
                img.view(),
                w,
                h,
                Resample::PilBicubic,
                PassOrder::Pillow13,
                &Par::inline(),
            );
            assert!(
                matches!(err, Err(KernelError::InvalidArgument(_))),
                "{w}x{h}"
            );
        }
        let empty = RgbView::new(0, 5, &[]).unwrap();
        let err = resize_rgb(
            empty,
            3,
            3,
            Resample::AtenU8,
            PassOrder::Pillow13,
            &Par::inline(),
        );
        assert!(matches!(err, Err(KernelError::InvalidArgument(_))));
    }

    #[test]
    fn bands_of_rows_equal_the_whole_resize() {
        let img = gradient(37, 29);
        for r in ALL {
            for (w, h) in [
                (37, 29),
                (50, 29),
                (37, 61),
                (80, 70),
                (20, 11),
                (30, 5),
                (45, 13),
            ] {
                let plan = ResizePlan::new(37, 29, w, h, r, PassOrder::Pillow13).unwrap();
                let whole = plan.run(img.view(), &Par::inline()).unwrap();
                let mut got = vec![0u8; w * h * 3];
                let mut scratch = RowScratch::default();
                for step in [1, 3, 7, h] {
                    for y0 in (0..h).step_by(step) {
                        let y1 = (y0 + step).min(h);
                        let (lo, hi) = plan.input_rows(y0, y1);
                        let src = &img.data[lo * 37 * 3..hi * 37 * 3];
                        let out = &mut got[y0 * w * 3..y1 * w * 3];
                        plan.run_rows(src, y0, y1, out, &mut scratch).unwrap();
                    }
                    assert_eq!(got, whole.data, "{r:?} {w}x{h} in bands of {step}");
                }
                let err = plan.run_rows(&img.data, 0, h + 1, &mut got, &mut scratch);
                assert!(matches!(err, Err(KernelError::InvalidArgument(_))));
            }
        }
    }

    #[test]
    fn a_plan_serves_every_image_of_its_size() {
        let plan = ResizePlan::new(13, 7, 5, 9, Resample::PilBicubic, PassOrder::Pillow13);
        let plan = plan.unwrap();
        for img in [
            gradient(13, 7),
            RgbImage::new(13, 7, vec![77; 13 * 7 * 3]).unwrap(),
        ] {
            let once = resize_rgb(
                img.view(),
                5,
                9,
                Resample::PilBicubic,
                PassOrder::Pillow13,
                &Par::inline(),
            );
            assert_eq!(plan.run(img.view(), &Par::new(2)).unwrap(), once.unwrap());
        }
        let other = gradient(7, 13);
        assert!(matches!(
            plan.run(other.view(), &Par::inline()),
            Err(KernelError::InvalidArgument(_))
        ));
    }

    #[test]
    fn huge_intermediate_is_refused_not_allocated() {
        // Pillow 12 order widens 1 column to 60000 before shrinking 60000 rows to 1.
        let tall = vec![0u8; 60_000 * 3];
        let src = RgbView::new(1, 60_000, &tall).unwrap();
        let err = resize_rgb(
            src,
            60_000,
            1,
            Resample::PilBicubic,
            PassOrder::Pillow12,
            &Par::inline(),
        );
        assert!(matches!(err, Err(KernelError::InvalidArgument(_))));
        // Pillow 13 goes vertical first here and needs no large buffer.
        let ok = resize_rgb(
            src,
            60_000,
            1,
            Resample::PilBicubic,
            PassOrder::Pillow13,
            &Par::inline(),
        );
        assert_eq!(ok.unwrap().data.len(), 60_000 * 3);
    }
}
