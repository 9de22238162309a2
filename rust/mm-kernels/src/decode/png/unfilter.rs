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
            1 => paeth::<1>(row, prev),
            2 => paeth::<2>(row, prev),
            3 => paeth::<3>(row, prev),
            4 => paeth::<4>(row, prev),
            // 16-bit RGB and RGBA.
            6 => paeth::<6>(row, prev),
            8 => paeth::<8>(row, prev),
            other => return Err(bad(F, format!("no Paeth filter for {other}-byte pixels"))),
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
        // Every pixel size a PNG has: 1-4 bytes, and 6 / 8 for 16-bit RGB / RGBA.
        for bpp in [1usize, 2, 3, 4, 6, 8] {
            let n = 3 * bpp;
            let prev: Vec<u8> = (0..n).map(|i| (i * 97 + 10) as u8).collect();
            let mut row: Vec<u8> = (0..n).map(|i| (i * 31 + 1) as u8).collect();
            let mut expect = row.clone();
            for i in 0..n {
                let a = if i >= bpp {
                    i16::from(expect[i - bpp])
                } else {
                    0
                };
                let b = i16::from(prev[i]);
                let c = if i >= bpp {
                    i16::from(prev[i - bpp])
                } else {
                    0
                };
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
            unfilter(4, &mut row, &prev, bpp).unwrap();
            assert_eq!(row, expect, "bpp {bpp}");
        }
    }
}
