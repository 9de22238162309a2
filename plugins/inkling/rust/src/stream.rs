//! `decode_patchify` with the decode overlapped: while the calling thread decodes, the others
//! already resize and patch the top of the image, one patch row at a time, each as soon as the
//! input rows it reads are decoded; when the decode is done the calling thread joins them. The
//! resized rows of a patch row go straight into its patches (`features::hwc_patch_row`, the
//! core's `HwcPatches` writer for one row), so there is no whole resized image.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use mm_kernels::decode;
use mm_kernels::features::{alloc, hwc_patch_row, Bf16Values};
use mm_kernels::feed::RowReader;
use mm_kernels::resize::{ResizePlan, RowScratch};
use mm_kernels::{KernelError, Par, Result, RgbView};

use crate::kernel::{decode_options, table, Patches};
use crate::rules::{Args, Cut, RESIZE};

/// What every consumer shares: the job, the claim counter, the output slots.
struct Job<'a> {
    reader: RowReader<'a>,
    in_w: usize,
    cut: Cut,
    plan: Option<&'a ResizePlan>,
    enc: Bf16Values<'a>,
    /// One slot per patch row of the output; a claimed index is locked by its claimer only.
    slots: Vec<Mutex<&'a mut [MaybeUninit<u16>]>>,
    next: AtomicUsize,
    written: AtomicUsize,
    failure: Mutex<Option<KernelError>>,
}

/// The cut of a `in_w x in_h` image, its resize (`None` when the rule keeps the size) and an
/// empty buffer with room for its patches.
fn setup(in_w: usize, in_h: usize, args: &Args) -> Result<(Cut, Option<ResizePlan>, Vec<u16>)> {
    let cut = Cut::new(in_w, in_h, args)?;
    let plan = if (cut.width, cut.height) == (in_w, in_h) {
        None
    } else {
        let (r, o) = (RESIZE.resample, RESIZE.order);
        Some(ResizePlan::new(in_w, in_h, cut.width, cut.height, r, o)?)
    };
    let bits = alloc::reserve(cut.len(), "feature tensor")?;
    Ok((cut, plan, bits))
}

/// Encoded bytes to patches (the bits of [`crate::kernel::decode_patchify`]), decode overlapped.
pub fn decode_patchify(data: &[u8], args: &Args, par: &Par) -> Result<Patches> {
    let (mut feed, decode) = decode::decode_rgb_rows(data, &decode_options())?;
    let (in_w, in_h) = (decode.width(), decode.height());
    let setup = table().and_then(|t| setup(in_w, in_h, args).map(|s| (t, s)));
    let (table, (cut, plan, mut bits)) = match setup {
        Ok(s) => s,
        Err(e) => {
            // The whole-image path reports a broken scan before these: decode to find one.
            let (writer, _) = feed.split();
            decode.run(writer)?;
            return Err(e);
        }
    };
    let len = cut.len();
    let (writer, reader) = feed.split();
    let job = Job {
        reader,
        in_w,
        cut,
        plan: plan.as_ref(),
        enc: Bf16Values(table),
        slots: bits.spare_capacity_mut()[..len]
            .chunks_exact_mut(cut.row_len())
            .map(Mutex::new)
            .collect(),
        next: AtomicUsize::new(0),
        written: AtomicUsize::new(0),
        failure: Mutex::new(None),
    };
    par.pipeline(move || decode.run(writer), || job.consume())?;
    if let Some(e) = job.failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    if job.written.into_inner() != cut.nph {
        return Err(KernelError::InvalidArgument(
            "the decode ended before every patch row was written".into(),
        ));
    }
    // SAFETY: `len <= capacity` (reserved by `setup`), and all `nph` slots, which tile
    // `[..len]`, were written in full by `hwc_patch_row` (counted by `written`).
    unsafe { bits.set_len(len) };
    Ok(Patches { cut, bits })
}

impl Job<'_> {
    /// Claim patch rows in order until none is left or the decode has failed.
    fn consume(&self) {
        if let Err(e) = self.claim_all() {
            let mut failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
            failure.get_or_insert(e);
        }
    }

    fn claim_all(&self) -> Result<()> {
        let Cut {
            width,
            height,
            patch_size: ps,
            ..
        } = self.cut;
        let mut band = Vec::new();
        let mut scratch = RowScratch::default();
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(slot) = self.slots.get(i) else {
                return Ok(());
            };
            let y0 = i * ps;
            let y1 = (y0 + ps).min(height);
            let (lo, hi) = self.plan.map_or((y0, y1), |p| p.input_rows(y0, y1));
            let Some(rows) = self.reader.wait(hi) else {
                // The decode failed; its error is the call's.
                return Ok(());
            };
            let src = &rows[lo * self.in_w * 3..];
            let n = (y1 - y0) * width * 3;
            let view = match self.plan {
                None => RgbView::new(width, y1 - y0, src)?,
                Some(plan) => {
                    if band.len() < n {
                        band.resize(n, 0);
                    }
                    plan.run_rows(src, y0, y1, &mut band[..n], &mut scratch)?;
                    RgbView::new(width, y1 - y0, &band[..n])?
                }
            };
            let mut out = slot.lock().unwrap_or_else(|e| e.into_inner());
            hwc_patch_row(Some(view), ps, &mut out, &self.enc);
            self.written.fetch_add(1, Ordering::Relaxed);
        }
    }
}
