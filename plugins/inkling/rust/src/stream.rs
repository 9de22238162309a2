//! `decode_patchify` with the decode overlapped: while the calling thread decodes, the others
//! already resize and patch the top of the image, one patch row at a time, each as soon as the
//! input rows it reads are decoded; when the decode is done the calling thread joins them. The
//! resized rows of a patch row go straight into its patches (no whole resized image).

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use mm_kernels::decode;
use mm_kernels::feed::RowReader;
use mm_kernels::resize::{ResizePlan, RowScratch};
use mm_kernels::{KernelError, Par, Result, RgbView};

use crate::kernel::{decode_options, plan_for, Args};
use crate::lut::Tables;
use crate::patchify::{alloc_grid, write_patch_row, Patches};

/// What every consumer shares: the job, the claim counter, the output slots.
struct Job<'a> {
    reader: RowReader<'a>,
    in_w: usize,
    width: usize,
    height: usize,
    ps: usize,
    plan: Option<&'a ResizePlan>,
    tables: &'a Tables,
    /// One slot per patch row of the output; a claimed index is locked by its claimer only.
    slots: Vec<Mutex<&'a mut [MaybeUninit<u16>]>>,
    next: AtomicUsize,
    written: AtomicUsize,
    failure: Mutex<Option<KernelError>>,
}

/// Encoded bytes to patches (the bits of [`crate::kernel::decode_patchify`]), decode overlapped.
pub fn decode_patchify(data: &[u8], args: &Args, tables: &Tables, par: &Par) -> Result<Patches> {
    let (mut feed, decode) = decode::decode_rgb_rows(data, &decode_options())?;
    let (in_w, in_h) = (decode.width(), decode.height());
    let ps = args.patch_size;
    let setup = plan_for(in_w, in_h, args)
        .and_then(|(w, h, plan)| alloc_grid(w, h, ps).map(|grid| (w, h, plan, grid)));
    let (width, height, plan, (nph, npw, mut bits)) = match setup {
        Ok(s) => s,
        Err(e) => {
            // The whole-image path reports a broken scan before these: decode to find one.
            let (writer, _) = feed.split();
            decode.run(writer)?;
            return Err(e);
        }
    };
    let band_len = npw * ps * ps * 3;
    let len = nph * band_len;
    let (writer, reader) = feed.split();
    let job = Job {
        reader,
        in_w,
        width,
        height,
        ps,
        plan: plan.as_ref(),
        tables,
        slots: bits.spare_capacity_mut()[..len]
            .chunks_exact_mut(band_len)
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
    if job.written.into_inner() != nph {
        return Err(KernelError::InvalidArgument(
            "the decode ended before every patch row was written".into(),
        ));
    }
    // SAFETY: `len <= capacity` (`alloc_grid`), and all `nph` slots, which tile `[..len]`,
    // were written in full by `write_patch_row` (counted by `written`).
    unsafe { bits.set_len(len) };
    Ok(Patches {
        height,
        width,
        nph,
        npw,
        bits,
    })
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
        let mut band = Vec::new();
        let mut scratch = RowScratch::default();
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(slot) = self.slots.get(i) else {
                return Ok(());
            };
            let y0 = i * self.ps;
            let y1 = (y0 + self.ps).min(self.height);
            let (lo, hi) = self.plan.map_or((y0, y1), |p| p.input_rows(y0, y1));
            let Some(rows) = self.reader.wait(hi) else {
                // The decode failed; its error is the call's.
                return Ok(());
            };
            let src = &rows[lo * self.in_w * 3..];
            let n = (y1 - y0) * self.width * 3;
            let view = match self.plan {
                None => RgbView::new(self.width, y1 - y0, src)?,
                Some(plan) => {
                    if band.len() < n {
                        band.resize(n, 0);
                    }
                    plan.run_rows(src, y0, y1, &mut band[..n], &mut scratch)?;
                    RgbView::new(self.width, y1 - y0, &band[..n])?
                }
            };
            let mut out = slot.lock().unwrap_or_else(|e| e.into_inner());
            write_patch_row(view, self.ps, 0, &mut out, self.tables);
            self.written.fetch_add(1, Ordering::Relaxed);
        }
    }
}
