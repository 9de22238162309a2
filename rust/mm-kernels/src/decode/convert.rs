//! Pillow's conversions of a decoded image to RGB, row by row.
//!
//! `Alpha::Drop` is `Image.convert("RGB")`: palettes looked up as stored, L/LA replicated,
//! alpha and transparency ignored. `Alpha::White` is HuggingFace's `convert_to_rgb` as the spec
//! states it for every image with an alpha band or a `transparency` entry: `convert("RGBA")`
//! (transparent colours become alpha 0, palette entries take their tRNS alpha), then
//! `Image.alpha_composite` onto opaque white with Pillow's integer arithmetic, then RGB.

use super::Alpha;

/// `Image.alpha_composite(opaque_white, src)` for one channel of `src` with alpha `a`
/// (Pillow's AlphaComposite.c: 7 extra bits of precision, rounded divisions by 255).
#[inline]
pub(crate) fn over_white(v: u8, a: u8) -> u8 {
    const PRECISION_BITS: u32 = 7;
    const DST: u32 = 255; // the background colour and alpha
    if a == 0 {
        return DST as u8;
    }
    let (v, a) = (u32::from(v), u32::from(a));
    let blend = DST * (255 - a);
    let outa255 = a * 255 + blend;
    let coef1 = a * 255 * 255 * (1 << PRECISION_BITS) / outa255;
    let coef2 = 255 * (1 << PRECISION_BITS) - coef1;
    let tmp = v * coef1 + DST * coef2 + (0x80 << PRECISION_BITS);
    // SHIFTFORDIV255(tmp) >> PRECISION_BITS; at most 255 by construction.
    ((((tmp >> 8) + tmp) >> 8) >> PRECISION_BITS) as u8
}

/// Index (or 8-bit sample) -> RGB, with the alpha mode and any transparency folded in. Serves
/// palettes and every single-band mode ("1", L and the scaled L;2 / L;4).
pub(crate) struct Lut(pub [[u8; 3]; 256]);

impl Lut {
    /// Gray values replicated; in `White` mode the value equal to the transparency colour
    /// becomes white (Pillow masks the colour to 8 bits when it builds the alpha band).
    pub fn gray(alpha: Alpha, transparent: Option<u32>) -> Box<Self> {
        let mut lut = Box::new(Self([[0; 3]; 256]));
        for (g, entry) in lut.0.iter_mut().enumerate() {
            let v = g as u8;
            *entry = [v; 3];
            if alpha == Alpha::White {
                if let Some(t) = transparent {
                    let a = if (t & 0xff) as usize == g { 0 } else { 255 };
                    *entry = [over_white(v, a); 3];
                }
            }
        }
        lut
    }
}

/// A palette as Pillow's core holds it: 256 RGBA entries, those not set opaque black.
pub(crate) struct Palette {
    pub rgba: [[u8; 4]; 256],
}

impl Palette {
    pub fn new() -> Self {
        Self {
            rgba: [[0, 0, 0, 255]; 256],
        }
    }

    /// Fill entries from packed colour data, `stride` bytes per entry with `order` giving the
    /// byte offsets of R, G and B (e.g. RGB: [0, 1, 2], BMP's BGRX: [2, 1, 0] with stride 4).
    pub fn set_colours(&mut self, data: &[u8], stride: usize, order: [usize; 3]) {
        for (entry, chunk) in self.rgba.iter_mut().zip(data.chunks_exact(stride)) {
            entry[0] = chunk[order[0]];
            entry[1] = chunk[order[1]];
            entry[2] = chunk[order[2]];
        }
    }

    /// The table for this palette: in `White` mode with transparency, each entry composited
    /// with its alpha; otherwise the stored colours.
    pub fn lut(&self, alpha: Alpha, has_transparency: bool) -> Box<Lut> {
        let mut lut = Box::new(Lut([[0; 3]; 256]));
        let composite = alpha == Alpha::White && has_transparency;
        for (out, &[r, g, b, a]) in lut.0.iter_mut().zip(self.rgba.iter()) {
            *out = if composite {
                [over_white(r, a), over_white(g, a), over_white(b, a)]
            } else {
                [r, g, b]
            };
        }
        lut
    }
}

/// The layout of one decoded row and how its pixels become RGB.
pub(crate) enum Source<'a> {
    /// One byte per pixel, looked up.
    Indexed(&'a Lut),
    /// L with alpha, two bytes per pixel.
    GrayAlpha,
    /// RGB, three bytes; `trns` is a PNG transparent colour (already masked to 8 bits).
    Rgb { trns: Option<[u8; 3]> },
    /// RGBA, four bytes.
    Rgba,
}

impl Source<'_> {
    /// Whether rows pass through unchanged (RGB without transparency handling).
    pub fn is_identity(&self, alpha: Alpha) -> bool {
        match self {
            Self::Rgb { trns } => alpha == Alpha::Drop || trns.is_none(),
            _ => false,
        }
    }
}

/// Convert `input` (pixels in `src` layout) into RGB `out` (`3 * pixels` bytes).
pub(crate) fn convert_row(src: &Source<'_>, alpha: Alpha, input: &[u8], out: &mut [u8]) {
    let white = alpha == Alpha::White;
    match src {
        Source::Indexed(lut) => {
            for (o, &i) in out.chunks_exact_mut(3).zip(input) {
                o.copy_from_slice(&lut.0[usize::from(i)]);
            }
        }
        Source::GrayAlpha => {
            for (o, p) in out.chunks_exact_mut(3).zip(input.chunks_exact(2)) {
                let v = if white { over_white(p[0], p[1]) } else { p[0] };
                o.fill(v);
            }
        }
        Source::Rgb { trns } => {
            out.copy_from_slice(&input[..out.len()]);
            if white {
                if let Some(t) = trns {
                    replace_transparent(out, *t);
                }
            }
        }
        Source::Rgba => {
            for (o, p) in out.chunks_exact_mut(3).zip(input.chunks_exact(4)) {
                if white {
                    o[0] = over_white(p[0], p[3]);
                    o[1] = over_white(p[1], p[3]);
                    o[2] = over_white(p[2], p[3]);
                } else {
                    o.copy_from_slice(&p[..3]);
                }
            }
        }
    }
}

/// `White` mode for RGB + a transparent colour, in place: that colour becomes white, every
/// other pixel goes through the composite at alpha 255.
pub(crate) fn replace_transparent(rgb: &mut [u8], t: [u8; 3]) {
    for p in rgb.chunks_exact_mut(3) {
        if p == t {
            p.fill(255);
        } else {
            for v in p.iter_mut() {
                *v = over_white(*v, 255);
            }
        }
    }
}

/// Rewrite `pixels` 4-byte pixels at the start of `buf` as 3-byte RGB with `f`, in place, and
/// drop the tail. Safe front to back: pixel `i` is read (bytes 4i..4i+4) before bytes
/// 3i..3i+3 are written, and later reads start at 4(i+1) > 3i+3.
pub(crate) fn compact4_in_place(buf: &mut Vec<u8>, pixels: usize, f: impl Fn([u8; 4]) -> [u8; 3]) {
    for i in 0..pixels {
        let s = 4 * i;
        let px = [buf[s], buf[s + 1], buf[s + 2], buf[s + 3]];
        let d = 3 * i;
        buf[d..d + 3].copy_from_slice(&f(px));
    }
    buf.truncate(3 * pixels);
    buf.shrink_to_fit();
}

/// RGBA -> RGB per `alpha`, for `compact4_in_place`.
pub(crate) fn rgba_to_rgb(alpha: Alpha) -> impl Fn([u8; 4]) -> [u8; 3] {
    move |[r, g, b, a]| {
        if alpha == Alpha::White {
            [over_white(r, a), over_white(g, a), over_white(b, a)]
        } else {
            [r, g, b]
        }
    }
}

/// libjpeg's CMYK output of an Adobe JPEG -> RGB: Pillow unpacks it as "CMYK;I" (every byte
/// inverted) and converts with `cmyk2rgb` (`nk - MULDIV255(c, nk)` with `nk = 255 - k`).
pub(crate) fn inverted_cmyk_to_rgb([c, m, y, k]: [u8; 4]) -> [u8; 3] {
    let nk = u32::from(k); // 255 - (255 - k)
    let f = |raw: u8| {
        let tmp = u32::from(255 - raw) * nk + 128;
        let muldiv = ((tmp >> 8) + tmp) >> 8;
        nk.saturating_sub(muldiv).min(255) as u8
    };
    [f(c), f(m), f(y)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_white_ends() {
        for v in 0..=255u8 {
            assert_eq!(over_white(v, 0), 255);
            assert_eq!(over_white(v, 255), v, "opaque pixels are unchanged");
        }
        assert_eq!(over_white(0, 128), 127);
    }

    #[test]
    fn compact_rewrites_in_place() {
        let mut buf: Vec<u8> = (0..16).collect();
        compact4_in_place(&mut buf, 4, |[r, g, b, _]| [r, g, b]);
        assert_eq!(buf, vec![0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14]);
    }

    #[test]
    fn cmyk_inverted_matches_the_formula() {
        // raw (inverted) k = 255 -> K = 0 ink: colour is 255 - C.
        assert_eq!(inverted_cmyk_to_rgb([255, 0, 128, 255]), [255, 0, 128]);
        // raw k = 0 -> full black.
        assert_eq!(inverted_cmyk_to_rgb([10, 20, 30, 0]), [0, 0, 0]);
    }
}
