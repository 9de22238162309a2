//! `ImageOps.exif_transpose`: the EXIF orientation (1..=8) applied as Pillow's transposes.
//! Orientation commutes with the per-pixel colour conversion, so it runs on the RGB result.

use crate::image::RgbImage;

/// Whether `orientation` turns the image by a quarter (5..=8 swap width and height).
pub(crate) fn swaps_axes(orientation: u8) -> bool {
    matches!(orientation, 5..=8)
}

/// Apply orientation `o`; 1 and unknown values leave the image as it is.
pub(crate) fn apply(img: RgbImage, o: u8) -> RgbImage {
    match o {
        2 => flip_left_right(img),
        3 => rotate_180(img),
        4 => flip_top_bottom(img),
        5..=8 => quarter_turn(&img, o),
        _ => img,
    }
}

fn flip_left_right(mut img: RgbImage) -> RgbImage {
    let row = img.width * 3;
    if row > 0 {
        for line in img.data.chunks_exact_mut(row) {
            reverse_pixels(line);
        }
    }
    img
}

fn flip_top_bottom(mut img: RgbImage) -> RgbImage {
    let row = img.width * 3;
    let h = img.height;
    for y in 0..h / 2 {
        let (top, bottom) = img.data.split_at_mut((h - 1 - y) * row);
        top[y * row..(y + 1) * row].swap_with_slice(&mut bottom[..row]);
    }
    img
}

fn rotate_180(mut img: RgbImage) -> RgbImage {
    reverse_pixels(&mut img.data);
    img
}

/// Reverse the order of the 3-byte pixels in `line`.
fn reverse_pixels(line: &mut [u8]) {
    let n = line.len() / 3;
    for i in 0..n / 2 {
        let j = n - 1 - i;
        for c in 0..3 {
            line.swap(3 * i + c, 3 * j + c);
        }
    }
}

/// Orientations 5..=8 (Pillow's TRANSPOSE, ROTATE_270, TRANSVERSE, ROTATE_90): the output is
/// `h` wide and `w` high, and source pixel (sx, sy) lands on output row `sx` (or `w - 1 - sx`)
/// and column `sy` (or `h - 1 - sy`). Walks the source in tiles so both sides stay in cache.
fn quarter_turn(img: &RgbImage, o: u8) -> RgbImage {
    const TILE: usize = 64;
    let (w, h) = (img.width, img.height);
    let ow = h;
    let flip_rows = matches!(o, 7 | 8); // output row w - 1 - sx
    let flip_cols = matches!(o, 6 | 7); // output column h - 1 - sy
    let mut out = vec![0u8; img.data.len()];
    for ty in (0..h).step_by(TILE) {
        for tx in (0..w).step_by(TILE) {
            for sy in ty..(ty + TILE).min(h) {
                let col = if flip_cols { h - 1 - sy } else { sy };
                let src_row = &img.data[sy * w * 3..(sy + 1) * w * 3];
                for sx in tx..(tx + TILE).min(w) {
                    let row = if flip_rows { w - 1 - sx } else { sx };
                    let d = (row * ow + col) * 3;
                    out[d..d + 3].copy_from_slice(&src_row[sx * 3..sx * 3 + 3]);
                }
            }
        }
    }
    RgbImage {
        width: ow,
        height: w,
        data: out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 3x2 image whose pixel (x, y) holds [x, y, 0].
    fn sample() -> RgbImage {
        let mut data = Vec::new();
        for y in 0..2u8 {
            for x in 0..3u8 {
                data.extend_from_slice(&[x, y, 0]);
            }
        }
        RgbImage {
            width: 3,
            height: 2,
            data,
        }
    }

    fn at(img: &RgbImage, x: usize, y: usize) -> (u8, u8) {
        let i = (y * img.width + x) * 3;
        (img.data[i], img.data[i + 1])
    }

    #[test]
    fn the_eight_orientations() {
        // Where the source's top-left pixel (0, 0) and top-right pixel (2, 0) end up.
        type Case = (u8, (usize, usize), (usize, usize), (usize, usize));
        let cases: [Case; 8] = [
            (1, (3, 2), (0, 0), (2, 0)),
            (2, (3, 2), (2, 0), (0, 0)),
            (3, (3, 2), (2, 1), (0, 1)),
            (4, (3, 2), (0, 1), (2, 1)),
            (5, (2, 3), (0, 0), (0, 2)),
            (6, (2, 3), (1, 0), (1, 2)),
            (7, (2, 3), (1, 2), (1, 0)),
            (8, (2, 3), (0, 2), (0, 0)),
        ];
        for (o, dims, tl, tr) in cases {
            let out = apply(sample(), o);
            assert_eq!((out.width, out.height), dims, "orientation {o}");
            assert_eq!(at(&out, tl.0, tl.1), (0, 0), "orientation {o}: top-left");
            assert_eq!(at(&out, tr.0, tr.1), (2, 0), "orientation {o}: top-right");
        }
    }
}
