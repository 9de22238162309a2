"""Deterministic test-image corpus, generated in the test session (nothing is downloaded).

Real photographs come from the sample files bundled in the scikit-image wheel; every other case
is built here: with Pillow where it can write the case, and with the small writers below (PNG
chunks, Adam7 interlacing, GIF LZW, BMP variants, EXIF blocks) where it cannot. Every function is
pure and seeded, so a case is byte-identical from run to run. `pillow_decode` is the reference
the decode kernels are compared against (Pillow doing the steps the decoders document).
"""

from __future__ import annotations

import io
import struct
import warnings
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import skimage.data
from PIL import Image, ImageOps

GENERATED = Path(__file__).parent / "_generated"  # git-ignored cache for the big photo
# The sample files ship inside the scikit-image wheel; they are read from there, never fetched.
SKIMAGE_DATA = Path(skimage.data.__file__).parent


# --------------------------------------------------------------------------- reference


def pillow_decode(data: bytes, alpha: str = "white", exif_orientation: bool = True) -> np.ndarray:
    """Pillow's answer: open, `exif_transpose`, then `convert("RGB")` ("drop") or, for images
    with an alpha band or a transparency entry, RGBA composited onto opaque white ("white")."""
    with warnings.catch_warnings():
        # Pillow warns about e.g. corrupt EXIF or bytes palette transparency; pixels count.
        warnings.simplefilter("ignore")
        im = Image.open(io.BytesIO(data))
        im.load()  # chunks after the image data (a late PNG tRNS) are part of the image
        if exif_orientation:
            im = ImageOps.exif_transpose(im)
        if alpha == "white" and im.has_transparency_data:
            rgba = im.convert("RGBA")
            white = Image.new("RGBA", rgba.size, (255, 255, 255))
            return np.asarray(Image.alpha_composite(white, rgba).convert("RGB"))
        return np.asarray(im.convert("RGB"))


# --------------------------------------------------------------------------- pixels


def sample_file(name: str) -> bytes:
    """The bytes of a sample file bundled with scikit-image (e.g. "rocket.jpg")."""
    return (SKIMAGE_DATA / name).read_bytes()


def photo(name: str = "astronaut") -> np.ndarray:
    """A bundled scikit-image photograph as uint8 RGB (gray ones replicated)."""
    with Image.open(SKIMAGE_DATA / f"{name}.png") as im:
        return np.asarray(im.convert("RGB"))


def noise(h: int, w: int, channels: int = 3, seed: int = 0) -> np.ndarray:
    """Uniform random uint8 pixels, (h, w) or (h, w, channels)."""
    rng = np.random.default_rng(seed)
    shape = (h, w) if channels == 1 else (h, w, channels)
    return rng.integers(0, 256, size=shape, dtype=np.uint8)


def gradient_rgba(h: int = 64, w: int = 96) -> np.ndarray:
    """A photo crop with an alpha ramp covering 0..255."""
    rgb = photo("coffee")[:h, :w]
    a = (np.arange(h * w).reshape(h, w) * 256 // (h * w)).astype(np.uint8)
    return np.dstack([rgb, a])


def save(image: Image.Image | np.ndarray, fmt: str, **params: object) -> bytes:
    """Encode with Pillow."""
    if isinstance(image, np.ndarray):
        image = Image.fromarray(image)
    buf = io.BytesIO()
    image.save(buf, fmt, **params)
    return buf.getvalue()


# --------------------------------------------------------------------------- PNG writer


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


_ADAM7 = [
    (0, 0, 8, 8),
    (4, 0, 8, 8),
    (0, 4, 4, 8),
    (2, 0, 4, 4),
    (0, 2, 2, 4),
    (1, 0, 2, 2),
    (0, 1, 1, 2),
]
_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


def _pack_row(samples: np.ndarray, bit_depth: int) -> bytes:
    """One scanline of samples (already flattened per pixel) at `bit_depth`."""
    if bit_depth == 16:
        return samples.astype(">u2").tobytes()
    if bit_depth == 8:
        return samples.astype(np.uint8).tobytes()
    per = 8 // bit_depth
    padded = np.zeros(-(-len(samples) // per) * per, dtype=np.uint8)
    padded[: len(samples)] = samples
    shifts = np.arange(per - 1, -1, -1) * bit_depth
    return (padded.reshape(-1, per) << shifts).sum(axis=1).astype(np.uint8).tobytes()


def _filter_row(raw: bytes, prev: bytes, bpp: int, kind: int) -> bytes:
    cur = np.frombuffer(raw, dtype=np.uint8).astype(np.int32)
    up = np.frombuffer(prev, dtype=np.uint8).astype(np.int32)
    left = np.concatenate([np.zeros(bpp, np.int32), cur[:-bpp]]) if len(cur) else cur
    upleft = np.concatenate([np.zeros(bpp, np.int32), up[:-bpp]]) if len(up) else up
    if kind == 0:
        pred = np.zeros_like(cur)
    elif kind == 1:
        pred = left
    elif kind == 2:
        pred = up
    elif kind == 3:
        pred = (left + up) // 2
    else:
        p = left + up - upleft
        pa, pb, pc = np.abs(p - left), np.abs(p - up), np.abs(p - upleft)
        pred = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, up, upleft))
    return bytes([kind]) + ((cur - pred) % 256).astype(np.uint8).tobytes()


def png_raw(
    samples: np.ndarray,
    color_type: int,
    bit_depth: int = 8,
    *,
    palette: np.ndarray | None = None,
    trns: bytes | None = None,
    interlace: bool = False,
    before_idat: tuple[bytes, ...] = (),
    after_idat: tuple[bytes, ...] = (),
    idat_parts: int = 1,
) -> bytes:
    """A PNG written chunk by chunk, for what Pillow cannot write (interlacing, 1/2/4-bit gray,
    16-bit, tRNS on any mode, extra chunks). `samples` is (h, w) or (h, w, channels) holding the
    raw sample values; rows cycle through the five filter types so all are exercised."""
    samples = np.asarray(samples)
    h, w = samples.shape[:2]
    flat = samples.reshape(h, w, -1)
    channels = _CHANNELS[color_type]
    assert flat.shape[2] == channels
    bits_pp = channels * bit_depth
    bpp = max(1, bits_pp // 8)

    def encode(block: np.ndarray) -> bytes:
        out = b""
        prev = bytes(-(-block.shape[1] * bits_pp // 8))
        for y in range(block.shape[0]):
            raw = _pack_row(block[y].reshape(-1), bit_depth)
            out += _filter_row(raw, prev, bpp, y % 5)
            prev = raw
        return out

    if interlace:
        stream = b""
        for x0, y0, dx, dy in _ADAM7:
            sub = flat[y0::dy, x0::dx]
            if sub.shape[0] and sub.shape[1]:
                stream += encode(sub)
    else:
        stream = encode(flat)
    body = zlib.compress(stream, 9)
    ihdr = struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0, int(interlace))
    chunks = [png_chunk(b"IHDR", ihdr), *before_idat]
    if palette is not None:
        chunks.append(png_chunk(b"PLTE", np.asarray(palette, dtype=np.uint8).tobytes()))
    if trns is not None:
        chunks.append(png_chunk(b"tRNS", trns))
    step = -(-len(body) // idat_parts)
    chunks += [png_chunk(b"IDAT", body[i : i + step]) for i in range(0, len(body), step)]
    chunks += [*after_idat, png_chunk(b"IEND", b"")]
    return b"\x89PNG\r\n\x1a\n" + b"".join(chunks)


# --------------------------------------------------------------------------- EXIF / XMP


def exif_tiff(orientation: int | None, *, big_endian: bool = False, typ: int = 3) -> bytes:
    """A TIFF-structured EXIF block whose IFD0 holds ImageWidth and (optionally) Orientation."""
    e = ">" if big_endian else "<"
    entries = [(0x0100, 3, 1, struct.pack(e + "HH", 640, 0))]
    if orientation is not None:
        value = (
            struct.pack(e + "HH", orientation, 0) if typ == 3 else struct.pack(e + "I", orientation)
        )
        entries.append((0x0112, typ, 1, value))
    out = (b"MM" if big_endian else b"II") + struct.pack(e + "HI", 42, 8)
    out += struct.pack(e + "H", len(entries))
    for tag, t, n, v in entries:
        out += struct.pack(e + "HHI", tag, t, n) + v
    return out + struct.pack(e + "I", 0)


def xmp_packet(orientation: int) -> bytes:
    return (
        b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><rdf:Description '
        b'xmlns:tiff="http://ns.adobe.com/tiff/1.0/" tiff:Orientation="%d"/></rdf:RDF>'
        b"</x:xmpmeta>" % orientation
    )


def jpeg_with_app1(jpeg: bytes, payload: bytes) -> bytes:
    """Insert an APP1 segment right after SOI."""
    return jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload + jpeg[2:]


def oriented(fmt: str, orientation: int, pixels: np.ndarray | None = None) -> bytes:
    """An image of a non-square photo crop carrying EXIF orientation `orientation`."""
    px = photo("chelsea")[:48, :80] if pixels is None else pixels
    exif = b"Exif\x00\x00" + exif_tiff(orientation, big_endian=orientation % 2 == 0)
    if fmt == "JPEG":
        return save(px, "JPEG", quality=92, exif=exif)
    if fmt == "WEBP":
        return save(px, "WEBP", lossless=True, exif=exif)
    if fmt == "PNG":
        return save(px, "PNG", exif=exif)
    raise ValueError(fmt)


# --------------------------------------------------------------------------- JPEG variants


def ycck_jpeg(pixels: np.ndarray) -> bytes:
    """A YCCK JPEG: Pillow writes 4-component CMYK with an Adobe APP14 marker (transform 0);
    flipping its transform byte to 2 makes decoders read the components as Y, Cb, Cr, K."""
    cmyk = save(Image.fromarray(pixels).convert("CMYK"), "JPEG", quality=90)
    i = cmyk.index(b"\xff\xee")
    assert cmyk[i + 4 : i + 9] == b"Adobe"
    n = struct.unpack(">H", cmyk[i + 2 : i + 4])[0]
    transform_at = i + 2 + n - 1
    assert cmyk[transform_at] == 0
    return cmyk[:transform_at] + b"\x02" + cmyk[transform_at + 1 :]


# --------------------------------------------------------------------------- GIF writer


def _lzw_uncompressed(indices: np.ndarray, bits: int) -> bytes:
    """Valid LZW that never grows the code table past its first size (a clear code every
    2**bits - 2 literals), packed into GIF sub-blocks."""
    clear, end = 1 << bits, (1 << bits) + 1
    size = bits + 1
    codes: list[int] = []
    for i, v in enumerate(indices.reshape(-1).tolist()):
        if i % ((1 << bits) - 2) == 0:
            codes.append(clear)
        codes.append(int(v))
    codes.append(end)
    acc = nbits = 0
    out = bytearray()
    for c in codes:
        acc |= c << nbits
        nbits += size
        while nbits >= 8:
            out.append(acc & 0xFF)
            acc >>= 8
            nbits -= 8
    if nbits:
        out.append(acc & 0xFF)
    blocks = b"".join(
        bytes([len(out[i : i + 255])]) + out[i : i + 255] for i in range(0, len(out), 255)
    )
    return blocks + b"\x00"


def gif_raw(
    indices: np.ndarray,
    *,
    screen: tuple[int, int] | None = None,
    offset: tuple[int, int] = (0, 0),
    global_palette: np.ndarray | None = None,
    local_palette: np.ndarray | None = None,
    transparency: int | None = None,
    bits: int = 8,
) -> bytes:
    """A one-frame GIF89a written by hand (frame offsets, local palettes, gray ramps)."""
    h, w = indices.shape
    sw, sh = screen or (w, h)

    def table(p: np.ndarray) -> tuple[int, bytes]:
        p = np.asarray(p, dtype=np.uint8).reshape(-1, 3)
        size = max(1, int(np.ceil(np.log2(max(2, len(p))))))
        full = np.zeros((1 << size, 3), np.uint8)
        full[: len(p)] = p
        return size - 1, full.tobytes()

    out = b"GIF89a" + struct.pack("<HH", sw, sh)
    if global_palette is not None:
        n, t = table(global_palette)
        out += bytes([0x80 | n, 0, 0]) + t
    else:
        out += bytes([0, 0, 0])
    if transparency is not None:
        out += b"!\xf9\x04" + bytes([1, 0, 0, transparency]) + b"\x00"
    out += b"," + struct.pack("<HHHH", offset[0], offset[1], w, h)
    if local_palette is not None:
        n, t = table(local_palette)
        out += bytes([0x80 | n]) + t
    else:
        out += b"\x00"
    return out + bytes([bits]) + _lzw_uncompressed(indices, bits) + b";"


# --------------------------------------------------------------------------- BMP writer


def bmp_rows(rows: list[bytes]) -> bytes:
    """Rows in file order, each padded to a multiple of 4 bytes."""
    return b"".join(r + b"\x00" * (-len(r) % 4) for r in rows)


def bmp_raw(
    pixel_data: bytes,
    width: int,
    height: int,
    bits: int,
    *,
    palette: np.ndarray | None = None,
    compression: int = 0,
    masks: tuple[int, ...] | None = None,
    top_down: bool = False,
    header_size: int = 40,
) -> bytes:
    """A BMP with a BITMAPINFOHEADER (or a longer one carrying `masks`) around `pixel_data`."""
    pal = b""
    if palette is not None:
        p = np.asarray(palette, dtype=np.uint8).reshape(-1, 3)
        pal = b"".join(bytes([b, g, r, 0]) for r, g, b in p.tolist())
    extra = b""
    if masks is not None and header_size == 40:
        extra = struct.pack("<III", *masks[:3])
    info = struct.pack(
        "<IiiHHIIiiII",
        header_size,
        width,
        -height if top_down else height,
        1,
        bits,
        compression,
        len(pixel_data),
        2835,
        2835,
        len(pal) // 4,
        0,
    )
    if header_size > 40:
        tail = struct.pack("<IIII", *(masks or (0, 0, 0, 0)))
        info += (tail + b"\x00" * header_size)[: header_size - 40]
    offset = 14 + len(info) + len(extra) + len(pal)
    head = b"BM" + struct.pack("<IHHI", offset + len(pixel_data), 0, 0, offset)
    return head + info + extra + pal + pixel_data


def rle8(indices: np.ndarray) -> bytes:
    """RLE8-encode rows bottom-up: runs, absolute runs and end-of-line / end-of-bitmap codes."""
    out = bytearray()
    for row in indices[::-1]:
        vals = row.tolist()
        i = 0
        while i < len(vals):
            j = i
            while j < len(vals) and vals[j] == vals[i] and j - i < 255:
                j += 1
            if j - i >= 3 or len(vals) - i < 3:
                out += bytes([j - i, vals[i]])
                i = j
            else:
                n = min(255, len(vals) - i)
                n = max(3, min(n, 40))
                out += bytes([0, n, *vals[i : i + n]]) + (b"\x00" if n % 2 else b"")
                i += n
        out += b"\x00\x00"
    return bytes(out + b"\x00\x01")


# --------------------------------------------------------------------------- cases


def _palette_image() -> Image.Image:
    return Image.fromarray(photo("coffee")[:60, :90]).convert(
        "P", palette=Image.Palette.ADAPTIVE, colors=40
    )


def parity_cases() -> dict[str, Callable[[], bytes]]:
    """Named generators of every case the decode kernels must match Pillow on."""
    astro = photo("astronaut")
    crop = astro[100:260, 150:370]
    gray = np.asarray(Image.fromarray(crop).convert("L"))
    rgba = gradient_rgba()
    rng = np.random.default_rng(7)
    pal16 = rng.integers(0, 256, (16, 3), dtype=np.uint8)
    idx16 = rng.integers(0, 16, (37, 53), dtype=np.uint8)
    gray_vals = (np.arange(37 * 53).reshape(37, 53) % 256).astype(np.uint8)
    cases: dict[str, Callable[[], bytes]] = {
        # real files as their encoders wrote them
        "file-rocket.jpg": lambda: sample_file("rocket.jpg"),
        "file-retina.jpg": lambda: sample_file("retina.jpg"),
        "file-hubble.jpg": lambda: sample_file("hubble_deep_field.jpg"),
        "file-logo.png": lambda: sample_file("logo.png"),
        "file-camera.png": lambda: sample_file("camera.png"),
        "file-anim.gif": lambda: sample_file("no_time_for_that_tiny.gif"),
        # JPEG
        "jpeg-444": lambda: save(astro, "JPEG", quality=92, subsampling=0),
        "jpeg-422": lambda: save(photo("coffee"), "JPEG", quality=80, subsampling=1),
        "jpeg-420": lambda: save(photo("chelsea"), "JPEG", quality=75, subsampling=2),
        "jpeg-progressive": lambda: save(astro, "JPEG", quality=85, progressive=True),
        "jpeg-optimized": lambda: save(crop, "JPEG", quality=60, optimize=True),
        "jpeg-gray": lambda: save(gray, "JPEG", quality=90),
        "jpeg-gray-progressive": lambda: save(gray, "JPEG", progressive=True),
        "jpeg-cmyk": lambda: save(Image.fromarray(crop).convert("CMYK"), "JPEG", quality=90),
        "jpeg-ycck": lambda: ycck_jpeg(crop),
        "jpeg-rgb-colorspace": lambda: save(crop, "JPEG", keep_rgb=True),
        "jpeg-odd-size-420": lambda: save(astro[:37, :51], "JPEG", subsampling=2),
        "jpeg-restart": lambda: save(crop, "JPEG", restart_marker_rows=2),
        "jpeg-mpo": lambda: save(
            Image.fromarray(crop),
            "MPO",
            save_all=True,
            append_images=[Image.fromarray(crop[::-1])],
            exif=b"Exif\x00\x00" + exif_tiff(6),
        ),
        # PNG written by Pillow
        "png-rgb": lambda: save(crop, "PNG"),
        "png-rgba": lambda: save(rgba, "PNG"),
        "png-l": lambda: save(gray, "PNG"),
        "png-la": lambda: save(Image.fromarray(rgba).convert("LA"), "PNG"),
        "png-p": lambda: save(_palette_image(), "PNG"),
        "png-p-trns-index": lambda: save(_palette_image(), "PNG", transparency=5),
        "png-1bit": lambda: save(Image.fromarray(gray).convert("1"), "PNG"),
        "png-l-trns": lambda: save(gray, "PNG", transparency=int(gray[5, 5])),
        "png-rgb-trns": lambda: save(crop, "PNG", transparency=tuple(int(v) for v in crop[3, 3])),
        # PNG written by hand
        "png-interlaced-rgb": lambda: png_raw(astro[:45, :67], 2, interlace=True),
        "png-interlaced-rgba": lambda: png_raw(rgba[:29, :33], 6, interlace=True),
        "png-interlaced-p4": lambda: png_raw(idx16, 3, 4, palette=pal16, interlace=True),
        "png-interlaced-g2": lambda: png_raw(gray_vals % 4, 0, 2, interlace=True),
        "png-interlaced-1x1": lambda: png_raw(np.array([[7]]), 0, 8, interlace=True),
        "png-gray-1bit": lambda: png_raw(gray_vals % 2, 0, 1),
        "png-gray-2bit": lambda: png_raw(gray_vals % 4, 0, 2),
        "png-gray-4bit": lambda: png_raw(gray_vals % 16, 0, 4),
        "png-gray-2bit-trns": lambda: png_raw(gray_vals % 4, 0, 2, trns=b"\x00\x00"),
        "png-gray-2bit-trns-raw": lambda: png_raw(gray_vals % 4, 0, 2, trns=b"\x00\x02"),
        "png-gray-1bit-trns": lambda: png_raw(gray_vals % 2, 0, 1, trns=b"\x00\x01"),
        "png-gray-trns-16bit-value": lambda: png_raw(gray_vals, 0, 8, trns=b"\x01\x07"),
        "png-p1": lambda: png_raw(idx16 % 2, 3, 1, palette=pal16[:2]),
        "png-p2": lambda: png_raw(idx16 % 4, 3, 2, palette=pal16[:4]),
        "png-p4": lambda: png_raw(idx16, 3, 4, palette=pal16),
        "png-p4-trns-bytes": lambda: png_raw(
            idx16, 3, 4, palette=pal16, trns=bytes(range(0, 250, 25))
        ),
        "png-p-short-palette": lambda: png_raw(idx16, 3, 8, palette=pal16[:5]),
        "png-p-trns-short-palette": lambda: png_raw(
            idx16, 3, 8, palette=pal16[:5], trns=b"\x80" * 12
        ),
        "png-rgb-trns-raw": lambda: png_raw(
            np.where(idx16[..., None] > 7, 200, 17).repeat(3, 2),
            2,
            trns=b"\x00\x11\x00\x11\x00\x11",
        ),
        "png-multi-idat": lambda: png_raw(astro[:40, :40], 2, idat_parts=7),
        "png-trns-after-idat": lambda: png_raw(
            idx16, 3, 8, palette=pal16, after_idat=(png_chunk(b"tRNS", b"\x00\x40\x80"),)
        ),
        # WebP
        "webp-lossy": lambda: save(astro, "WEBP", quality=80),
        "webp-lossless": lambda: save(crop, "WEBP", lossless=True),
        "webp-lossy-alpha": lambda: save(rgba, "WEBP", quality=70),
        "webp-lossless-alpha": lambda: save(rgba, "WEBP", lossless=True),
        "webp-animated": lambda: save(
            Image.fromarray(crop),
            "WEBP",
            save_all=True,
            append_images=[Image.fromarray(crop[::-1])],
            duration=100,
        ),
        # GIF
        "gif": lambda: save(_palette_image(), "GIF"),
        "gif-transparency": lambda: save(_palette_image(), "GIF", transparency=3),
        "gif-not-interlaced": lambda: save(_palette_image(), "GIF", interlace=False),
        "gif-l": lambda: save(gray, "GIF"),
        "gif-offset-frame": lambda: gif_raw(
            idx16, screen=(60, 50), offset=(5, 7), global_palette=pal16, bits=4
        ),
        "gif-frame-past-screen": lambda: gif_raw(
            idx16, screen=(20, 20), offset=(9, 3), global_palette=pal16, bits=4
        ),
        "gif-offset-transparent": lambda: gif_raw(
            idx16, screen=(60, 50), offset=(5, 7), global_palette=pal16, transparency=2, bits=4
        ),
        "gif-local-palette": lambda: gif_raw(
            idx16, global_palette=pal16[::-1], local_palette=pal16, bits=4
        ),
        "gif-gray-ramp-palette": lambda: gif_raw(
            idx16, global_palette=np.repeat(np.arange(16, dtype=np.uint8)[:, None], 3, 1), bits=4
        ),
        "gif-no-palette": lambda: gif_raw(idx16, bits=4),
        "gif-index-past-palette": lambda: gif_raw(idx16, global_palette=pal16[:4], bits=4),
        # BMP
        "bmp-24": lambda: save(crop, "BMP"),
        "bmp-32-from-rgba": lambda: save(rgba, "BMP"),
        "bmp-8-palette": lambda: save(_palette_image(), "BMP"),
        "bmp-8-gray": lambda: save(gray, "BMP"),
        "bmp-1": lambda: save(Image.fromarray(gray).convert("1"), "BMP"),
        "bmp-4": lambda: bmp_raw(
            bmp_rows([_pack_row(r, 4) for r in idx16[::-1]]), 53, 37, 4, palette=pal16
        ),
        "bmp-top-down": lambda: bmp_raw(
            bmp_rows([r.tobytes() for r in crop[:20, :30, ::-1]]), 30, 20, 24, top_down=True
        ),
        "bmp-16-555": lambda: bmp_raw(
            bmp_rows([struct.pack("<53H", *(int(v) * 977 % 32768 for v in r)) for r in gray_vals]),
            53,
            37,
            16,
        ),
        "bmp-16-565": lambda: bmp_raw(
            bmp_rows([struct.pack("<53H", *(int(v) * 2741 % 65536 for v in r)) for r in gray_vals]),
            53,
            37,
            16,
            compression=3,
            masks=(0xF800, 0x7E0, 0x1F),
        ),
        "bmp-32-bitfields-alpha": lambda: bmp_raw(
            bmp_rows(
                [np.column_stack([r[:, ::-1], rgba[0, :53, 3]]).tobytes() for r in crop[:37, :53]]
            ),
            53,
            37,
            32,
            compression=3,
            masks=(0xFF0000, 0xFF00, 0xFF, 0xFF000000),
            header_size=56,
        ),
        "bmp-rle8": lambda: bmp_raw(rle8(idx16), 53, 37, 8, palette=pal16, compression=1),
    }
    return cases


def _strip_app14(jpeg: bytes) -> bytes:
    """Remove the Adobe APP14 segment (Pillow still reads 4 components as inverted CMYK)."""
    i = jpeg.index(b"\xff\xee")
    n = struct.unpack(">H", jpeg[i + 2 : i + 4])[0]
    return jpeg[:i] + jpeg[i + 2 + n :]


def edge_cases() -> dict[str, bytes]:
    """Malformed-but-plausible files: Pillow either decodes them (and we must give the same
    pixels) or raises (and we must raise a DecodeError)."""
    px = photo("astronaut")[:40, :56]
    jpeg = save(px, "JPEG")
    prog = save(px, "JPEG", progressive=True)
    idx = (np.arange(20 * 30).reshape(20, 30) % 7).astype(np.uint8)
    pal = noise(7, 3, channels=1, seed=2)
    ihdr = struct.pack(">IIBBBBB", 30, 20, 8, 0, 0, 0, 0)
    rows5 = b"".join(b"\x00" + bytes(range(30)) for _ in range(5))
    rows20 = b"".join(b"\x00" + bytes(range(30)) for _ in range(20))
    sig = b"\x89PNG\r\n\x1a\n"
    iend = png_chunk(b"IEND", b"")
    gif = gif_raw(idx, global_palette=pal, bits=3)
    desc = gif.index(b",")
    pal16 = noise(16, 3, channels=1, seed=1)
    rle4 = bytes([6, 0x12, 0, 3, 0x34, 0x50, 0, 0, 5, 0xAB, 0, 0, 0, 2, 1, 0, 3, 0xCD, 0, 1])
    rle8_delta = bytes([3, 5, 0, 2, 1, 1, 2, 7, 0, 0, 6, 9, 0, 1])
    rows16 = bmp_rows([bytes(range(i * 50, i * 50 + 16)) for i in range(3)])
    os2 = (
        b"BM"
        + struct.pack("<IHHI", 0, 0, 0, 26)
        + struct.pack("<IHHHH", 12, 4, 2, 1, 24)
        + bmp_rows([bytes(range(12)), bytes(range(12, 24))])
    )
    return {
        "jpeg-no-eoi": jpeg[:-2],
        "jpeg-half-eoi": jpeg[:-1],
        "jpeg-no-eoi-zero-padding": jpeg[:-2] + bytes(100),
        "jpeg-trailing-junk": jpeg + b"junkjunk",
        "jpeg-progressive-no-eoi": prog[:-2],
        "jpeg-cmyk-without-adobe-marker": _strip_app14(
            save(Image.fromarray(px).convert("CMYK"), "JPEG")
        ),
        "jpeg-two-exif-segments": jpeg_with_app1(
            jpeg_with_app1(jpeg, b"Exif\x00\x00" + exif_tiff(6)), b"Exif\x00\x00" + exif_tiff(3)
        ),
        "png-p-without-plte": png_raw(idx, 3, 8),
        "png-p-empty-trns": png_raw(idx, 3, 8, palette=pal, trns=b""),
        "png-l-short-trns": png_raw(idx, 0, 8, trns=b"\x00"),
        "png-zlib-ends-after-5-rows": sig
        + png_chunk(b"IHDR", ihdr)
        + png_chunk(b"IDAT", zlib.compress(rows5))
        + iend,
        "png-junk-idat-after-image": sig
        + png_chunk(b"IHDR", ihdr)
        + png_chunk(b"IDAT", zlib.compress(rows20))
        + png_chunk(b"IDAT", b"garbage")
        + iend,
        "png-no-iend": sig + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", zlib.compress(rows20)),
        "png-no-adler": sig
        + png_chunk(b"IHDR", ihdr)
        + png_chunk(b"IDAT", zlib.compress(rows20)[:-4]),
        "png-bad-filter": sig
        + png_chunk(b"IHDR", ihdr)
        + png_chunk(b"IDAT", zlib.compress(b"\x07" + rows20[1:]))
        + iend,
        "png-trailing-chunk-cut": png_raw(idx, 0, 8)[:-12] + struct.pack(">I", 500) + b"tEXtabc",
        "png-trailing-short-gama": png_raw(idx, 0, 8, after_idat=(png_chunk(b"gAMA", b"\x00"),)),
        "png-ztxt-bad-method": png_raw(
            idx, 0, 8, before_idat=(png_chunk(b"zTXt", b"k\x00\x05abc"),)
        ),
        "png-rgb-trns-over-255": png_raw(
            np.full((4, 4, 3), 7, np.uint8), 2, trns=b"\x01\x07\x00\x07\x00\x07"
        ),
        "gif-empty-extension": gif[:desc] + b"!\x01\x00" + gif[desc:],
        "gif-comment": gif[:desc] + b"!\xfe\x03abc\x00" + gif[desc:],
        "gif-junk-before-descriptor": gif[:desc] + b"\x07\x07" + gif[desc:],
        "gif-no-trailer": gif[:-1],
        "bmp-rle4": bmp_raw(rle4, 6, 3, 4, palette=pal16, compression=2),
        "bmp-rle8-delta": bmp_raw(rle8_delta, 6, 3, 8, palette=pal16, compression=1),
        "bmp-8bit-black-white-palette": bmp_raw(
            bmp_rows([bytes(range(i, i + 16)) for i in range(5)]),
            16,
            5,
            8,
            palette=np.array([[0, 0, 0], [255, 255, 255]], np.uint8),
        ),
        "bmp-4bit-gray-palette": bmp_raw(
            bmp_rows([bytes([0x12] * 8)] * 5),
            16,
            5,
            4,
            palette=np.repeat(np.arange(16, dtype=np.uint8)[:, None], 3, 1),
        ),
        "bmp-os2-header": os2,
        "bmp-v5-header": bmp_raw(rows16, 4, 3, 32, header_size=124),
        "bmp-xbgr": bmp_raw(
            rows16, 4, 3, 32, compression=3, masks=(0xFF000000, 0xFF0000, 0xFF00, 0), header_size=56
        ),
        "bmp-bgar": bmp_raw(
            rows16,
            4,
            3,
            32,
            compression=3,
            masks=(0xFF000000, 0xFF00, 0xFF, 0xFF0000),
            header_size=56,
        ),
        "bmp-zero-masks": bmp_raw(
            rows16, 4, 3, 32, compression=3, masks=(0, 0, 0, 0), header_size=56
        ),
        "bmp-555-in-info-header": bmp_raw(
            bmp_rows([bytes(range(i, i + 8)) for i in range(3)]),
            4,
            3,
            16,
            compression=3,
            masks=(0x7C00, 0x3E0, 0x1F),
        ),
        "bmp-no-last-padding": save(px[:5, :5], "BMP")[:-1],
    }


def bad_inputs() -> dict[str, bytes]:
    """Inputs that must fail with a DecodeError (never a crash or a hang)."""
    jpeg = save(photo("astronaut")[:64, :64], "JPEG")
    png = save(photo("astronaut")[:64, :64], "PNG")
    rng = np.random.default_rng(11)
    return {
        "empty": b"",
        "random": rng.integers(0, 256, 4096, dtype=np.uint8).tobytes(),
        "text": b"this is not an image",
        "jpeg-header-only": jpeg[:20],
        "jpeg-truncated": jpeg[: len(jpeg) // 2],
        "jpeg-soi-only": b"\xff\xd8\xff",
        "png-signature-only": png[:8],
        "png-header-only": png[:33],
        "png-truncated": png[: len(png) // 2],
        "png-bad-crc": png[:29] + bytes([png[29] ^ 0xFF]) + png[30:],
        "gif-header-only": save(_palette_image(), "GIF")[:13],
        "gif-truncated": save(_palette_image(), "GIF")[:300],
        "bmp-header-only": save(photo("astronaut")[:8, :8], "BMP")[:54],
        "bmp-truncated": save(photo("astronaut")[:8, :8], "BMP")[:100],
        "webp-header-only": save(photo("astronaut")[:8, :8], "WEBP")[:30],
        "webp-truncated": save(photo("astronaut")[:64, :64], "WEBP")[:200],
        "tiff": save(photo("astronaut")[:8, :8], "TIFF"),
    }


def truncations(data: bytes, count: int = 40) -> Iterator[tuple[int, bytes]]:
    """Evenly spread prefixes of `data` plus the last few byte positions."""
    cuts = set(np.linspace(0, len(data) - 1, count, dtype=int).tolist())
    cuts |= set(range(max(0, len(data) - 6), len(data)))
    for cut in sorted(cuts):
        yield cut, data[:cut]


def large_photo_jpeg() -> bytes:
    """A ~12-megapixel JPEG photograph (astronaut upscaled to 4000x3000), built once and
    cached under tests/_generated/ (git-ignored)."""
    path = GENERATED / "astronaut_4000x3000_q90.jpg"
    if not path.exists():
        GENERATED.mkdir(exist_ok=True)
        big = Image.fromarray(photo("astronaut")).resize((4000, 3000), Image.Resampling.BICUBIC)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(save(big, "JPEG", quality=90))
        tmp.replace(path)
    return path.read_bytes()
