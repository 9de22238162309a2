//! Adam7: the seven passes of an interlaced image, each a smaller image of its own in the IDAT
//! stream, scattered back into the full-size unpacked image.

use super::chunks::Mode;
use super::inflate::{reduce16, sample, Geometry};

pub(super) const STARTING_ROW: [usize; 7] = [0, 0, 4, 0, 2, 0, 1];
const STARTING_COL: [usize; 7] = [0, 4, 0, 2, 0, 1, 0];
pub(super) const ROW_INCREMENT: [usize; 7] = [8, 8, 8, 4, 4, 2, 2];
const COL_INCREMENT: [usize; 7] = [8, 8, 4, 4, 2, 2, 1];

impl Geometry {
    /// Columns in Adam7 pass `p`, and its raw row length in bytes.
    pub(super) fn pass_row(&self, p: usize) -> (usize, usize) {
        let cols = (self.width + (COL_INCREMENT[p] - 1 - STARTING_COL[p])) / COL_INCREMENT[p];
        (cols, (cols as u64 * self.bits).div_ceil(8) as usize)
    }

    /// Place the pixels of one interlaced row into the unpacked full image.
    pub(super) fn scatter(
        &self,
        mode: Mode,
        pass: usize,
        y: usize,
        raw: &[u8],
        unpacked: &mut [u8],
    ) {
        let (cols, _) = self.pass_row(pass);
        let n = mode.unpacked_bytes();
        let raw_n = (self.bits / 8) as usize; // bytes per raw pixel, for 8 bits or more
        let row = &mut unpacked[y * self.width * n..(y + 1) * self.width * n];
        let mut x = STARTING_COL[pass];
        for i in 0..cols {
            let px = &mut row[x * n..x * n + n];
            if mode.is_deep() {
                reduce16(mode, &raw[i * raw_n..(i + 1) * raw_n], px);
            } else if self.bits >= 8 {
                px.copy_from_slice(&raw[i * n..i * n + n]);
            } else {
                px[0] = sample(mode, raw, i);
            }
            x += COL_INCREMENT[pass];
        }
    }
}
