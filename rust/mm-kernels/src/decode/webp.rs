//! WebP through libwebp 1.6 (built from source by libwebp-sys), as Pillow 13's `_webp.c` does
//! it: the demuxer validates the container and provides the EXIF / XMP chunks; the mode is RGBA
//! when `WebPGetFeatures` reports alpha, else RGB. Still images are decoded by `WebPDecode`
//! straight into our buffer (the same call `WebPAnimDecoder` makes for a key frame covering the
//! canvas); animations go through `WebPAnimDecoder` for the composed first frame.

use std::ptr;

use libwebp_sys as webp;

use super::convert::{compact4_in_place, rgba_to_rgb};
use super::{bad, exif, limits, Alpha, DecodeOptions, Decoded, Format, Header};
use crate::error::Result;
use crate::image::RgbImage;

const F: Format = Format::WebP;

/// Container facts, read without decoding pixels.
struct Container {
    width: u32,
    height: u32,
    has_alpha: bool,
    animated: bool,
    orientation: u8,
    /// The first frame's bitstream size and dimensions, when it is lossy (VP8).
    lossy_first: Option<LossyFrame>,
}

/// A lossy (VP8) first frame: the bytes of its bitstream and the area they must fill.
struct LossyFrame {
    bytes: u64,
    width: u64,
    height: u64,
}

/// A demuxer over borrowed bytes, deleted on drop.
struct Demux(*mut webp::WebPDemuxer);

impl Demux {
    fn new(data: &[u8]) -> Result<Self> {
        let wd = webp::WebPData {
            bytes: data.as_ptr(),
            size: data.len(),
        };
        // SAFETY: `wd` points at `data`, which outlives the demuxer (it borrows, not copies).
        let d = unsafe {
            webp::WebPDemuxInternal(&wd, 0, ptr::null_mut(), webp::WEBP_DEMUX_ABI_VERSION as _)
        };
        if d.is_null() {
            return Err(bad(
                F,
                "invalid or truncated container (could not create decoder object)",
            ));
        }
        Ok(Self(d))
    }

    /// The first chunk with this fourcc (Pillow's `get_chunk`).
    fn chunk(&self, fourcc: &[u8; 4]) -> Option<Vec<u8>> {
        let mut name = [0 as std::ffi::c_char; 5];
        for (n, &c) in name.iter_mut().zip(fourcc) {
            *n = c as std::ffi::c_char;
        }
        // SAFETY: zeroed is a valid initial state for the iterator, which the call fills.
        let mut iter: webp::WebPChunkIterator = unsafe { std::mem::zeroed() };
        // SAFETY: the demuxer is live, `name` is NUL-terminated, `iter` is writable.
        let found = unsafe { webp::WebPDemuxGetChunk(self.0, name.as_ptr(), 1, &mut iter) };
        if found == 0 {
            return None;
        }
        // SAFETY: on success the iterator's chunk points into the demuxed data.
        let bytes =
            unsafe { std::slice::from_raw_parts(iter.chunk.bytes, iter.chunk.size) }.to_vec();
        // SAFETY: releasing the iterator returned above.
        unsafe { webp::WebPDemuxReleaseChunkIterator(&mut iter) };
        (!bytes.is_empty()).then_some(bytes)
    }

    /// The first frame's bitstream, if it is lossy.
    fn lossy_first(&self) -> Option<LossyFrame> {
        // SAFETY: zeroed is a valid initial state for the iterator, which the call fills.
        let mut iter: webp::WebPIterator = unsafe { std::mem::zeroed() };
        // SAFETY: the demuxer is live and `iter` is writable.
        if unsafe { webp::WebPDemuxGetFrame(self.0, 1, &mut iter) } == 0 {
            return None;
        }
        let frag = iter.fragment;
        // SAFETY: zeroed features are a valid out-parameter; the fragment points into the
        // demuxed data, `frag.size` bytes long.
        let mut features: webp::WebPBitstreamFeatures = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let status = unsafe { webp::WebPGetFeatures(frag.bytes, frag.size, &mut features) };
        let (width, height) = (iter.width, iter.height);
        // SAFETY: releasing the iterator filled above.
        unsafe { webp::WebPDemuxReleaseIterator(&mut iter) };
        (status == webp::VP8StatusCode::VP8_STATUS_OK && features.format == 1).then(|| LossyFrame {
            bytes: frag.size as u64,
            width: u64::try_from(width).unwrap_or(0),
            height: u64::try_from(height).unwrap_or(0),
        })
    }
}

/// The fewest bits a VP8 key frame spends on one 16x16 macroblock, rounded down: its luma
/// mode costs at least -log2(145/256) = 0.82 bits and its chroma mode -log2(142/256) = 0.85,
/// both with the format's fixed key-frame probabilities, and libwebp refuses a first
/// partition that ends before the last macroblock's modes. (libwebp's own encoder spends
/// 3.6 bits on a macroblock of a one-colour image.) Lossless WebP has no such bound: a prefix
/// code of one symbol takes no bits, so a tiny VP8L file can be a valid huge image; the pixel
/// limits bound those, as in Pillow.
const VP8_MIN_BITS_PER_MACROBLOCK: u64 = 1;

/// Refuse, before the output buffer is allocated, a lossy frame whose bitstream is too short
/// to code the modes of all its macroblocks: a 2 KB file declaring 8000x8000 fails at once
/// instead of after a 192 MB allocation and a partial decode.
fn check_compressed_size(frame: &LossyFrame) -> Result<()> {
    let macroblocks = frame
        .width
        .div_ceil(16)
        .saturating_mul(frame.height.div_ceil(16));
    let bits = frame.bytes.saturating_mul(8).saturating_add(1024);
    if bits < macroblocks.saturating_mul(VP8_MIN_BITS_PER_MACROBLOCK) {
        return Err(bad(
            F,
            format!(
                "image data truncated: {} compressed bytes cannot code the {macroblocks} \
                 macroblocks of a {}x{} lossy frame (at least \
                 {VP8_MIN_BITS_PER_MACROBLOCK} bit each)",
                frame.bytes, frame.width, frame.height
            ),
        ));
    }
    Ok(())
}

impl Drop for Demux {
    fn drop(&mut self) {
        // SAFETY: created by WebPDemuxInternal and deleted once.
        unsafe { webp::WebPDemuxDelete(self.0) };
    }
}

fn container(data: &[u8]) -> Result<Container> {
    // SAFETY: zeroed features are a valid out-parameter; the call reads at most `data.len()`.
    let mut features: webp::WebPBitstreamFeatures = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let status = unsafe { webp::WebPGetFeatures(data.as_ptr(), data.len(), &mut features) };
    let demux = Demux::new(data)?;
    // Pillow sniffs RGBA vs RGBX with WebPGetFeatures and defaults to RGBA if that fails.
    let has_alpha = status != webp::VP8StatusCode::VP8_STATUS_OK || features.has_alpha != 0;
    // SAFETY: the demuxer is live.
    let (width, height, frames) = unsafe {
        (
            webp::WebPDemuxGetI(demux.0, webp::WebPFormatFeature::WEBP_FF_CANVAS_WIDTH),
            webp::WebPDemuxGetI(demux.0, webp::WebPFormatFeature::WEBP_FF_CANVAS_HEIGHT),
            webp::WebPDemuxGetI(demux.0, webp::WebPFormatFeature::WEBP_FF_FRAME_COUNT),
        )
    };
    let exif_chunk = demux.chunk(b"EXIF");
    let xmp_chunk = demux.chunk(b"XMP ");
    let orientation = exif::orientation(exif_chunk.as_deref(), xmp_chunk.as_deref());
    // A file flagged as animated goes through the animation decoder even with one frame
    // (WebPDecode refuses animations), as Pillow always uses that decoder.
    let flagged = status == webp::VP8StatusCode::VP8_STATUS_OK && features.has_animation != 0;
    let animated = frames > 1 || flagged;
    let lossy_first = demux.lossy_first();
    Ok(Container {
        width,
        height,
        has_alpha,
        animated,
        orientation,
        lossy_first,
    })
}

pub(crate) fn probe(data: &[u8]) -> Result<Header> {
    let c = container(data)?;
    if c.width == 0 || c.height == 0 {
        return Err(bad(F, "image has zero size"));
    }
    Ok(Header {
        width: c.width,
        height: c.height,
        orientation: c.orientation,
    })
}

/// Pillow's mode: "RGBA" when `WebPGetFeatures` reports alpha (or fails), else "RGB".
pub(crate) fn source_mode(data: &[u8]) -> Result<super::SourceMode> {
    let mode = if container(data)?.has_alpha {
        "RGBA"
    } else {
        "RGB"
    };
    Ok(super::SourceMode::new(mode, false))
}

pub(crate) fn decode(data: &[u8], opts: &DecodeOptions) -> Result<Decoded> {
    let c = container(data)?;
    let (w, h) = (u64::from(c.width), u64::from(c.height));
    limits::check(F, w, h, opts)?;
    if let Some(frame) = &c.lossy_first {
        check_compressed_size(frame)?;
    }
    let pixels = limits::buffer_len(F, w, h, 1)?;
    // An RGBA image composites onto white; RGB (and "drop") just needs the colour channels.
    let composite = c.has_alpha && opts.alpha == Alpha::White;
    let data_out = if c.animated {
        let mut rgba = first_frame(data, pixels)?;
        compact4_in_place(
            &mut rgba,
            pixels,
            rgba_to_rgb(if composite { Alpha::White } else { Alpha::Drop }),
        );
        rgba
    } else if composite {
        first_rows_decode(&c, data)?;
        let mut rgba = decode_still(data, c.width, c.height, 4)?;
        compact4_in_place(&mut rgba, pixels, rgba_to_rgb(Alpha::White));
        rgba
    } else {
        first_rows_decode(&c, data)?;
        decode_still(data, c.width, c.height, 3)?
    };
    let image = RgbImage {
        width: c.width as usize,
        height: c.height as usize,
        data: data_out,
    };
    Ok(Decoded {
        image,
        orientation: c.orientation,
    })
}

/// Output buffers from this size on are only allocated once the image's first row decodes.
const PRECHECK_BYTES: u64 = 32 << 20;

/// Decode only the first row of a large lossless still, into a buffer of one row: a VP8L
/// stream has no bound on its ratio (a 40-byte file can be a valid 13000x13000 image), but a
/// broken one almost always fails in its headers or first row, and this finds that without
/// the full-size allocation (483 MB and 0.5 s for a 40-byte file that fails at once). Lossy
/// stills have `check_compressed_size`; small images and animations are not checked here.
fn first_rows_decode(c: &Container, data: &[u8]) -> Result<()> {
    let (w, h) = (u64::from(c.width), u64::from(c.height));
    if c.lossy_first.is_some() || w.saturating_mul(h).saturating_mul(3) < PRECHECK_BYTES {
        return Ok(());
    }
    let mut row = limits::alloc(c.width as usize * 4)?;
    // SAFETY: WebPDecoderConfig is plain data; WebPInitDecoderConfig fills the defaults.
    let mut config: webp::WebPDecoderConfig = unsafe { std::mem::zeroed() };
    // SAFETY: `config` is writable.
    if !unsafe { webp::WebPInitDecoderConfig(&mut config) } {
        return Err(bad(F, "libwebp version mismatch"));
    }
    config.options.use_cropping = 1;
    config.options.crop_left = 0;
    config.options.crop_top = 0;
    config.options.crop_width = c.width as i32;
    config.options.crop_height = 1;
    config.output.colorspace = webp::WEBP_CSP_MODE::MODE_RGBA;
    config.output.is_external_memory = 1;
    config.output.width = c.width as i32;
    config.output.height = 1;
    config.output.u.RGBA.rgba = row.as_mut_ptr();
    config.output.u.RGBA.stride = (c.width * 4) as i32;
    config.output.u.RGBA.size = row.len();
    // SAFETY: the external buffer holds one RGBA row of the cropped output, as declared.
    let status = unsafe { webp::WebPDecode(data.as_ptr(), data.len(), &mut config) };
    // SAFETY: frees nothing for external memory, but is the documented cleanup.
    unsafe { webp::WebPFreeDecBuffer(&mut config.output) };
    if status != webp::VP8StatusCode::VP8_STATUS_OK {
        return Err(bad(F, format!("failed to decode the image ({status:?})")));
    }
    Ok(())
}

/// `WebPDecode` into a fresh RGB (3) or RGBA (4) buffer.
fn decode_still(data: &[u8], width: u32, height: u32, channels: usize) -> Result<Vec<u8>> {
    let stride = width as usize * channels;
    let mut buf = limits::alloc(stride * height as usize)?;
    // SAFETY: WebPDecoderConfig is plain data; WebPInitDecoderConfig fills the defaults.
    let mut config: webp::WebPDecoderConfig = unsafe { std::mem::zeroed() };
    // SAFETY: `config` is writable.
    if !unsafe { webp::WebPInitDecoderConfig(&mut config) } {
        return Err(bad(F, "libwebp version mismatch"));
    }
    config.output.colorspace = if channels == 4 {
        webp::WEBP_CSP_MODE::MODE_RGBA
    } else {
        webp::WEBP_CSP_MODE::MODE_RGB
    };
    config.output.is_external_memory = 1;
    config.output.width = width as i32;
    config.output.height = height as i32;
    // The RGBA member of the output union, which the RGB modes use.
    config.output.u.RGBA.rgba = buf.as_mut_ptr();
    config.output.u.RGBA.stride = stride as i32;
    config.output.u.RGBA.size = buf.len();
    // SAFETY: the external buffer is `stride * height` bytes as declared; libwebp checks the
    // declared size against the image before writing.
    let status = unsafe { webp::WebPDecode(data.as_ptr(), data.len(), &mut config) };
    // SAFETY: frees nothing for external memory, but is the documented cleanup.
    unsafe { webp::WebPFreeDecBuffer(&mut config.output) };
    if status != webp::VP8StatusCode::VP8_STATUS_OK {
        return Err(bad(F, format!("failed to decode the image ({status:?})")));
    }
    Ok(buf)
}

/// The first frame of an animation composed on its canvas (RGBA), via WebPAnimDecoder.
fn first_frame(data: &[u8], pixels: usize) -> Result<Vec<u8>> {
    let wd = webp::WebPData {
        bytes: data.as_ptr(),
        size: data.len(),
    };
    // SAFETY: `wd` borrows `data`, which outlives the decoder; NULL options = MODE_RGBA.
    let dec = unsafe { webp::WebPAnimDecoderNew(&wd, ptr::null()) };
    if dec.is_null() {
        return Err(bad(F, "could not create the animation decoder"));
    }
    let mut buf: *mut u8 = ptr::null_mut();
    let mut timestamp = 0;
    // SAFETY: `dec` is live; on success `buf` points at canvas_width * 4 * canvas_height bytes.
    let ok = unsafe { webp::WebPAnimDecoderGetNext(dec, &mut buf, &mut timestamp) };
    let result = if ok == 0 || buf.is_null() {
        Err(bad(F, "failed to read the first frame"))
    } else {
        let mut out = limits::alloc(pixels * 4);
        if let Ok(out) = out.as_mut() {
            // SAFETY: the canvas holds `pixels * 4` bytes (same canvas size as the demuxer's).
            out.copy_from_slice(unsafe { std::slice::from_raw_parts(buf, pixels * 4) });
        }
        out
    };
    // SAFETY: deleting the decoder created above (this also frees its canvas).
    unsafe { webp::WebPAnimDecoderDelete(dec) };
    result
}
