//! Differential test of the hand-written PNG and GIF readers against the `png` and `gif` crates
//! on valid files, where every correct decoder must give the same pixels.
//!
//! Our readers exist to fail where Pillow fails on malformed input (that is checked against
//! Pillow from Python); on well-formed input there is no room for taste, so a second, unrelated
//! decoder is a fair reference. The images are written here: by the crates' own encoders (every
//! row filter the `png` encoder offers), and for Adam7 PNGs and interlaced GIFs, which those
//! encoders do not lay out, by the small writers below. Each file is checked twice: the crate
//! must give back the pixels we meant to write, and our reader must give the crate's pixels,
//! with the alpha dropped (`convert("RGB")`) and composited onto white (Pillow's integer
//! `alpha_composite`, restated below from Pillow's AlphaComposite.c).

use std::borrow::Cow;
use std::io::{Cursor, Write};

use mm_kernels::decode::{decode_rgb, image_dimensions, Alpha, DecodeOptions};

/// A deterministic byte source (xorshift64).
struct Rng(u64);

impl Rng {
    fn byte(&mut self) -> u8 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 24) as u8
    }

    fn below(&mut self, n: usize) -> u8 {
        (usize::from(self.byte()) % n) as u8
    }
}

/// Sizes that exercise 1-pixel images, empty Adam7 passes and rows that are not whole bytes.
const SIZES: [(u32, u32); 5] = [(1, 1), (3, 2), (7, 5), (13, 9), (33, 17)];

/// Pillow's `alpha_composite(opaque_white, (v, a))` for one channel (AlphaComposite.c, with
/// the destination fixed to 255 in every channel and in alpha).
fn pillow_over_white(v: u8, a: u8) -> u8 {
    if a == 0 {
        return 255;
    }
    let (v, a) = (u32::from(v), u32::from(a));
    let blend = 255 * (255 - a);
    let outa255 = a * 255 + blend;
    let coef1 = a * 255 * 255 * 128 / outa255;
    let coef2 = 255 * 128 - coef1;
    let tmp = v * coef1 + 255 * coef2 + (0x80 << 7);
    ((((tmp >> 8) + tmp) >> 8) >> 7) as u8
}

/// The reference pixels as RGBA plus whether the image carries transparency at all (Pillow
/// composites only images with an alpha band or a transparency entry).
struct Reference {
    width: u32,
    height: u32,
    rgba: Vec<[u8; 4]>,
    has_alpha: bool,
}

impl Reference {
    fn expected(&self, alpha: Alpha) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.rgba.len() * 3);
        for &[r, g, b, a] in &self.rgba {
            if alpha == Alpha::White && self.has_alpha {
                out.extend([r, g, b].map(|v| pillow_over_white(v, a)));
            } else {
                out.extend([r, g, b]);
            }
        }
        out
    }
}

/// Our reader against the reference, in both alpha modes; also the header probe.
fn check_ours(name: &str, file: &[u8], reference: &Reference) {
    for alpha in [Alpha::Drop, Alpha::White] {
        let opts = DecodeOptions {
            alpha,
            exif_orientation: false,
            ..DecodeOptions::default()
        };
        let ours = decode_rgb(file, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            (ours.width, ours.height),
            (reference.width as usize, reference.height as usize),
            "{name}"
        );
        assert!(
            ours.data == reference.expected(alpha),
            "{name}: pixels differ from the reference decoder ({alpha:?})"
        );
    }
    let dims = image_dimensions(file, false).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(dims, (reference.width, reference.height), "{name}");
}

// ------------------------------------------------------------------------------------ PNG

#[derive(Clone, Copy, Debug)]
enum Kind {
    Gray,
    Rgb,
    Indexed,
    GrayAlpha,
    Rgba,
}

impl Kind {
    fn channels(self) -> usize {
        match self {
            Self::Gray | Self::Indexed => 1,
            Self::GrayAlpha => 2,
            Self::Rgb => 3,
            Self::Rgba => 4,
        }
    }

    fn png(self) -> png::ColorType {
        match self {
            Self::Gray => png::ColorType::Grayscale,
            Self::Rgb => png::ColorType::Rgb,
            Self::Indexed => png::ColorType::Indexed,
            Self::GrayAlpha => png::ColorType::GrayscaleAlpha,
            Self::Rgba => png::ColorType::Rgba,
        }
    }
}

/// What one test PNG holds: samples one per byte (sub-byte ones not yet packed), and the
/// optional PLTE and tRNS payloads.
struct PngCase {
    name: String,
    kind: Kind,
    depth: u8,
    width: u32,
    height: u32,
    samples: Vec<u8>,
    palette: Option<Vec<u8>>,
    trns: Option<Vec<u8>>,
}

impl PngCase {
    fn new(kind: Kind, depth: u8, (width, height): (u32, u32), trns: bool, rng: &mut Rng) -> Self {
        let n = (width * height) as usize * kind.channels();
        let max = 1usize << depth;
        let mut palette = None;
        let mut samples: Vec<u8> = match kind {
            Kind::Indexed => {
                // Fewer entries than the depth allows, as encoders often write.
                let entries = (max - max / 4).max(2).min(max);
                palette = Some((0..entries * 3).map(|_| rng.byte()).collect::<Vec<_>>());
                (0..n).map(|_| rng.below(entries)).collect()
            }
            _ => (0..n).map(|_| rng.below(max)).collect(),
        };
        let trns = trns.then(|| match kind {
            Kind::Indexed => {
                // Alphas for the first entries only; the rest stay opaque.
                let entries = palette.as_ref().map_or(0, |p| p.len() / 3);
                (0..entries.div_ceil(2)).map(|_| rng.byte()).collect()
            }
            Kind::Gray => {
                // A value the image really holds, so the transparency shows.
                samples[0] = (max - 1) as u8;
                vec![0, (max - 1) as u8]
            }
            Kind::Rgb => {
                let [r, g, b] = [samples[0], samples[1], samples[2]];
                vec![0, r, 0, g, 0, b]
            }
            Kind::GrayAlpha | Kind::Rgba => unreachable!("no tRNS with an alpha band"),
        });
        if matches!(kind, Kind::GrayAlpha | Kind::Rgba) {
            // Make sure the extremes of alpha appear.
            let c = kind.channels();
            samples[c - 1] = 0;
            if samples.len() >= 2 * c {
                samples[2 * c - 1] = 255;
            }
        }
        let name = format!(
            "{kind:?} {depth}-bit {width}x{height}{}",
            if trns.is_some() { " +tRNS" } else { "" }
        );
        Self {
            name,
            kind,
            depth,
            width,
            height,
            samples,
            palette,
            trns,
        }
    }

    /// One raw (unfiltered) row of pixels `x0, x0 + step, ...` of row `y`, packed to the depth.
    fn raw_row(&self, y: usize, x0: usize, step: usize) -> Vec<u8> {
        let c = self.kind.channels();
        let w = self.width as usize;
        let mut bits = Vec::new();
        for x in (x0..w).step_by(step) {
            bits.extend_from_slice(&self.samples[(y * w + x) * c..(y * w + x + 1) * c]);
        }
        pack(&bits, self.depth)
    }

    /// The intended pixels as RGBA, as any PNG decoder must read them.
    fn intended(&self) -> Reference {
        let scale = |v: u8| match self.depth {
            1 => v * 255,
            2 => v * 0x55,
            4 => v * 0x11,
            _ => v,
        };
        let trns = self.trns.as_deref();
        let rgba = self
            .samples
            .chunks_exact(self.kind.channels())
            .map(|s| match self.kind {
                Kind::Gray => {
                    let transparent = trns.is_some_and(|t| t[1] == s[0]);
                    let v = scale(s[0]);
                    [v, v, v, if transparent { 0 } else { 255 }]
                }
                Kind::Rgb => {
                    let transparent =
                        trns.is_some_and(|t| [t[1], t[3], t[5]] == [s[0], s[1], s[2]]);
                    [s[0], s[1], s[2], if transparent { 0 } else { 255 }]
                }
                Kind::Indexed => {
                    let i = usize::from(s[0]);
                    let p = self.palette.as_deref().unwrap_or_default();
                    let a = trns.and_then(|t| t.get(i)).copied().unwrap_or(255);
                    [p[3 * i], p[3 * i + 1], p[3 * i + 2], a]
                }
                Kind::GrayAlpha => [s[0], s[0], s[0], s[1]],
                Kind::Rgba => [s[0], s[1], s[2], s[3]],
            })
            .collect();
        Reference {
            width: self.width,
            height: self.height,
            rgba,
            has_alpha: trns.is_some() || matches!(self.kind, Kind::GrayAlpha | Kind::Rgba),
        }
    }

    /// A non-interlaced file from the `png` crate's encoder with the given filter.
    fn encode_with_crate(&self, filter: png::Filter) -> Vec<u8> {
        let mut file = Vec::new();
        let mut enc = png::Encoder::new(&mut file, self.width, self.height);
        enc.set_color(self.kind.png());
        enc.set_depth(match self.depth {
            1 => png::BitDepth::One,
            2 => png::BitDepth::Two,
            4 => png::BitDepth::Four,
            _ => png::BitDepth::Eight,
        });
        enc.set_filter(filter);
        if let Some(p) = &self.palette {
            enc.set_palette(p.clone());
        }
        if let Some(t) = &self.trns {
            enc.set_trns(t.clone());
        }
        let mut writer = enc.write_header().expect("png header");
        let data: Vec<u8> = (0..self.height as usize)
            .flat_map(|y| self.raw_row(y, 0, 1))
            .collect();
        writer.write_image_data(&data).expect("png data");
        writer.finish().expect("png end");
        file
    }

    /// An Adam7 file written here, cycling through the five row filters.
    fn encode_adam7(&self) -> Vec<u8> {
        const PASSES: [(usize, usize, usize, usize); 7] = [
            (0, 0, 8, 8),
            (4, 0, 8, 8),
            (0, 4, 4, 8),
            (2, 0, 4, 4),
            (0, 2, 2, 4),
            (1, 0, 2, 2),
            (0, 1, 1, 2),
        ];
        let bpp = (usize::from(self.depth) * self.kind.channels()).div_ceil(8);
        let mut stream = Vec::new();
        let mut filter = 0u8;
        for (x0, y0, dx, dy) in PASSES {
            if x0 >= self.width as usize {
                continue;
            }
            let mut prev: Option<Vec<u8>> = None;
            for y in (y0..self.height as usize).step_by(dy) {
                let raw = self.raw_row(y, x0, dx);
                let up = prev.clone().unwrap_or_else(|| vec![0; raw.len()]);
                stream.push(filter);
                stream.extend(filter_row(filter, &raw, &up, bpp));
                filter = (filter + 1) % 5;
                prev = Some(raw);
            }
        }
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&stream).expect("deflate");
        let idat = z.finish().expect("deflate");

        let mut ihdr = Vec::new();
        ihdr.extend(self.width.to_be_bytes());
        ihdr.extend(self.height.to_be_bytes());
        ihdr.extend([self.depth, self.kind.png() as u8, 0, 0, 1]);
        let mut file = b"\x89PNG\r\n\x1a\n".to_vec();
        file.extend(chunk(b"IHDR", &ihdr));
        if let Some(p) = &self.palette {
            file.extend(chunk(b"PLTE", p));
        }
        if let Some(t) = &self.trns {
            file.extend(chunk(b"tRNS", t));
        }
        file.extend(chunk(b"IDAT", &idat));
        file.extend(chunk(b"IEND", b""));
        file
    }
}

/// Samples (one per byte) packed most significant bits first at `depth` bits each.
fn pack(samples: &[u8], depth: u8) -> Vec<u8> {
    if depth == 8 {
        return samples.to_vec();
    }
    let per_byte = usize::from(8 / depth);
    samples
        .chunks(per_byte)
        .map(|group| {
            group.iter().enumerate().fold(0u8, |byte, (i, &s)| {
                byte | (s << (8 - depth as usize * (i + 1)))
            })
        })
        .collect()
}

/// The PNG filter `kind` applied to `raw` with the previous raw row `up`.
fn filter_row(kind: u8, raw: &[u8], up: &[u8], bpp: usize) -> Vec<u8> {
    (0..raw.len())
        .map(|i| {
            let a = if i >= bpp { raw[i - bpp] } else { 0 };
            let b = up[i];
            let c = if i >= bpp { up[i - bpp] } else { 0 };
            let pred = match kind {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
                _ => {
                    let p = i16::from(a) + i16::from(b) - i16::from(c);
                    let (pa, pb, pc) = (
                        (p - i16::from(a)).abs(),
                        (p - i16::from(b)).abs(),
                        (p - i16::from(c)).abs(),
                    );
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
            };
            raw[i].wrapping_sub(pred)
        })
        .collect()
}

fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut crc = flate2::Crc::new();
    crc.update(kind);
    crc.update(data);
    let mut out = (data.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    out.extend(crc.sum().to_be_bytes());
    out
}

/// The `png` crate's reading of `file`, expanded to 8-bit RGBA.
fn png_crate_decode(file: &[u8]) -> Vec<[u8; 4]> {
    let mut decoder = png::Decoder::new(Cursor::new(file));
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info().expect("png crate: header");
    let mut buf = vec![0; reader.output_buffer_size().expect("png crate: size")];
    let frame = reader.next_frame(&mut buf).expect("png crate: pixels");
    let (color, depth) = reader.output_color_type();
    assert_eq!(depth, png::BitDepth::Eight);
    let data = &buf[..frame.buffer_size()];
    match color {
        png::ColorType::Grayscale => data.iter().map(|&v| [v, v, v, 255]).collect(),
        png::ColorType::GrayscaleAlpha => data
            .chunks_exact(2)
            .map(|p| [p[0], p[0], p[0], p[1]])
            .collect(),
        png::ColorType::Rgb => data
            .chunks_exact(3)
            .map(|p| [p[0], p[1], p[2], 255])
            .collect(),
        png::ColorType::Rgba => data
            .chunks_exact(4)
            .map(|p| [p[0], p[1], p[2], p[3]])
            .collect(),
        png::ColorType::Indexed => panic!("EXPAND leaves no palette"),
    }
}

/// Every (colour type, bit depth) Pillow reads at 8 bits or less, with and without tRNS where
/// the type allows one.
fn png_cases() -> Vec<PngCase> {
    let layouts: [(Kind, &[u8]); 5] = [
        (Kind::Gray, &[1, 2, 4, 8]),
        (Kind::Rgb, &[8]),
        (Kind::Indexed, &[1, 2, 4, 8]),
        (Kind::GrayAlpha, &[8]),
        (Kind::Rgba, &[8]),
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut cases = Vec::new();
    for (kind, depths) in layouts {
        for &depth in depths {
            // Pillow compares a 2- or 4-bit gray tRNS value with the sample scaled to 8 bits,
            // not with the stored sample, so those two are no case for a differential test.
            let trns_options: &[bool] = match (kind, depth) {
                (Kind::GrayAlpha | Kind::Rgba, _) | (Kind::Gray, 2 | 4) => &[false],
                _ => &[false, true],
            };
            for &trns in trns_options {
                for size in SIZES {
                    cases.push(PngCase::new(kind, depth, size, trns, &mut rng));
                }
            }
        }
    }
    cases
}

#[test]
fn png_matches_the_png_crate_on_valid_files() {
    let filters = [
        png::Filter::NoFilter,
        png::Filter::Sub,
        png::Filter::Up,
        png::Filter::Avg,
        png::Filter::Paeth,
        png::Filter::Adaptive,
    ];
    let mut checked = 0;
    for (i, case) in png_cases().iter().enumerate() {
        let filter = filters[i % filters.len()];
        let files = [
            (
                format!("{} {filter:?}", case.name),
                case.encode_with_crate(filter),
            ),
            (format!("{} Adam7", case.name), case.encode_adam7()),
        ];
        for (name, file) in files {
            let intended = case.intended();
            let theirs = png_crate_decode(&file);
            assert!(
                theirs == intended.rgba,
                "{name}: the png crate reads another image"
            );
            let reference = Reference {
                rgba: theirs,
                ..intended
            };
            check_ours(&name, &file, &reference);
            checked += 1;
        }
    }
    // 18 layouts: gray 1/8-bit and RGB and the four palette depths with and without tRNS,
    // gray 2/4-bit, LA and RGBA without; each in every size, by the crate and as Adam7.
    assert_eq!(checked, 18 * SIZES.len() * 2);
}

// ------------------------------------------------------------------------------------ GIF

struct GifCase {
    name: String,
    width: u16,
    height: u16,
    /// Row-major indices.
    indices: Vec<u8>,
    palette: Vec<u8>,
    local: bool,
    transparent: Option<u8>,
    interlaced: bool,
}

impl GifCase {
    fn encode(&self) -> Vec<u8> {
        let mut file = Vec::new();
        let global: &[u8] = if self.local { &[] } else { &self.palette };
        let mut enc = gif::Encoder::new(&mut file, self.width, self.height, global).expect("gif");
        let (w, h) = (usize::from(self.width), usize::from(self.height));
        let order: Vec<usize> = if self.interlaced {
            [(0, 8), (4, 8), (2, 4), (1, 2)]
                .iter()
                .flat_map(|&(y0, dy)| (y0..h).step_by(dy))
                .collect()
        } else {
            (0..h).collect()
        };
        let buffer: Vec<u8> = order
            .iter()
            .flat_map(|&y| self.indices[y * w..(y + 1) * w].iter().copied())
            .collect();
        let frame = gif::Frame {
            width: self.width,
            height: self.height,
            buffer: Cow::Owned(buffer),
            palette: self.local.then(|| self.palette.clone()),
            transparent: self.transparent,
            interlaced: self.interlaced,
            ..gif::Frame::default()
        };
        enc.write_frame(&frame).expect("gif frame");
        drop(enc);
        file
    }
}

/// The `gif` crate's reading of the first frame, looked up in its palette as RGBA (the
/// transparent index keeps its colour and gets alpha 0).
fn gif_crate_decode(file: &[u8]) -> (u32, u32, Vec<[u8; 4]>) {
    let mut options = gif::DecodeOptions::new();
    options.set_color_output(gif::ColorOutput::Indexed);
    let mut decoder = options
        .read_info(Cursor::new(file))
        .expect("gif crate: header");
    let global = decoder.global_palette().map(<[u8]>::to_vec);
    let frame = decoder
        .read_next_frame()
        .expect("gif crate: frame")
        .expect("gif crate: no frame");
    assert_eq!((frame.left, frame.top), (0, 0), "the cases fill the screen");
    let palette = frame
        .palette
        .clone()
        .or(global)
        .expect("gif crate: palette");
    let rgba = frame
        .buffer
        .iter()
        .map(|&i| {
            let p = &palette[3 * usize::from(i)..3 * usize::from(i) + 3];
            let a = if frame.transparent == Some(i) { 0 } else { 255 };
            [p[0], p[1], p[2], a]
        })
        .collect();
    (u32::from(frame.width), u32::from(frame.height), rgba)
}

fn gif_cases() -> Vec<GifCase> {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let mut cases = Vec::new();
    for (w, h) in SIZES {
        for entries in [2usize, 5, 16, 256] {
            for (local, transparent, interlaced, gray) in [
                (false, false, false, false),
                (true, false, true, false),
                (false, true, true, false),
                (true, true, false, false),
                // An identity gray ramp: Pillow opens that as mode L.
                (false, false, false, true),
            ] {
                let palette: Vec<u8> = if gray {
                    (0..entries).flat_map(|i| [i as u8; 3]).collect()
                } else {
                    (0..entries * 3).map(|_| rng.byte()).collect()
                };
                let indices: Vec<u8> = (0..w * h).map(|_| rng.below(entries)).collect();
                let transparent = transparent.then(|| indices[0]);
                let name = format!(
                    "GIF {w}x{h} {entries} colours local={local} transparent={transparent:?} \
                     interlaced={interlaced} gray={gray}"
                );
                cases.push(GifCase {
                    name,
                    width: w as u16,
                    height: h as u16,
                    indices,
                    palette,
                    local,
                    transparent,
                    interlaced,
                });
            }
        }
    }
    cases
}

#[test]
fn gif_matches_the_gif_crate_on_valid_files() {
    let cases = gif_cases();
    for case in &cases {
        let file = case.encode();
        let (width, height, rgba) = gif_crate_decode(&file);
        let intended: Vec<[u8; 4]> = case
            .indices
            .iter()
            .map(|&i| {
                let p = &case.palette[3 * usize::from(i)..3 * usize::from(i) + 3];
                [
                    p[0],
                    p[1],
                    p[2],
                    if case.transparent == Some(i) { 0 } else { 255 },
                ]
            })
            .collect();
        assert!(
            rgba == intended,
            "{}: the gif crate reads another image",
            case.name
        );
        let reference = Reference {
            width,
            height,
            rgba,
            has_alpha: case.transparent.is_some(),
        };
        check_ours(&case.name, &file, &reference);
    }
    assert_eq!(cases.len(), SIZES.len() * 4 * 5);
}
