//! The five PNG row filters undone in place, with `ZipDecode.c`'s arithmetic (an unknown filter
//! byte fails the image, as it does there).

use super::F;
use crate::decode::bad;
use crate::error::Result;

/// Undo a PNG row filter in place, exactly as ZipDecode.c does.
pub(super) fn unfilter(kind: u8, row: &mut [u8], prev: &[u8], bpp: usize) -> Result<()> {
    let n = row.len();
    match kind {
        0 => {}
        1 => {
            for i in bpp..n {
                row[i] = row[i].wrapping_add(row[i - bpp]);
            }
        }
        2 => {
            for (r, &p) in row.iter_mut().zip(prev) {
                *r = r.wrapping_add(p);
            }
        }
        3 => {
            for i in 0..bpp.min(n) {
                row[i] = row[i].wrapping_add(prev[i] / 2);
            }
            for i in bpp..n {
                let avg = (u16::from(row[i - bpp]) + u16::from(prev[i])) / 2;
                row[i] = row[i].wrapping_add(avg as u8);
            }
        }
        4 => match bpp {
            3 => paeth::<3>(row, prev),
            4 => paeth::<4>(row, prev),
            2 => paeth::<2>(row, prev),
            _ => paeth::<1>(row, prev),
        },
        other => return Err(bad(F, format!("unknown filter type {other}"))),
    }
    Ok(())
}

fn paeth<const BPP: usize>(row: &mut [u8], prev: &[u8]) {
    let n = row.len();
    for i in 0..BPP.min(n) {
        row[i] = row[i].wrapping_add(prev[i]);
    }
    let mut i = BPP;
    while i + BPP <= n {
        for k in 0..BPP {
            let a = i16::from(row[i + k - BPP]);
            let b = i16::from(prev[i + k]);
            let c = i16::from(prev[i + k - BPP]);
            let pa = (b - c).abs();
            let pb = (a - c).abs();
            let pc = (a + b - 2 * c).abs();
            let pred = if pa <= pb && pa <= pc {
                a
            } else if pb <= pc {
                b
            } else {
                c
            };
            row[i + k] = row[i + k].wrapping_add(pred as u8);
        }
        i += BPP;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paeth_matches_the_reference_predictor() {
        let prev = [10u8, 200, 30, 40, 250, 60];
        let mut row = [1u8, 2, 3, 4, 5, 6];
        let mut expect = row;
        for i in 0..6 {
            let a = if i >= 3 { i16::from(expect[i - 3]) } else { 0 };
            let b = i16::from(prev[i]);
            let c = if i >= 3 { i16::from(prev[i - 3]) } else { 0 };
            let p = a + b - c;
            let (pa, pb, pc) = ((p - a).abs(), (p - b).abs(), (p - c).abs());
            let pred = if pa <= pb && pa <= pc {
                a
            } else if pb <= pc {
                b
            } else {
                c
            };
            expect[i] = expect[i].wrapping_add(pred as u8);
        }
        unfilter(4, &mut row, &prev, 3).unwrap();
        assert_eq!(row, expect);
    }
}
