"""The driver's fused path: an image whose rows stream (a JPEG, not CMYK, or a PNG that is not
interlaced; no orientation to apply) is planned from its header and decoded straight into the
core's composition (`FeatureRecipe.run_encoded`), its row bands starting while the rest
decodes. Everything it
returns or raises must be what the two-step path (decode whole, then `process_item`) gives:
the same bits for every bundled family that composes its feature, both forms and every pool
size; for the formats and orientations that do not stream, the two-step path itself. Broken
scans, refused sizes and limits fail as before, with nothing returned (cancellation:
test_kernel_cancel.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from corpus import (
    exif_tiff,
    jpeg_with_app1,
    photo,
    png_chunk,
    png_raw,
    save,
    truncations,
    ycck_jpeg,
)
from PIL import Image
from test_cache import TableToy

from sglang_mm_core import MmInput, Registry, _native, pipeline_from_spec
from sglang_mm_core.errors import (
    DecodeError,
    KernelArgumentError,
    LimitError,
)
from sglang_mm_core.plugin import Plan

PAS = {"do_pan_and_scan": True, "pan_and_scan_prefix_ids": [1], "pan_and_scan_infix_ids": [1]}
# Every bundled family whose feature the core composes, with a resampler of each kind.
SPECS: dict[str, dict[str, Any]] = {
    "qwen_vl pil": {"family": "qwen_vl", "params": {"resample": "pil"}},
    "qwen_vl aten_u8": {"family": "qwen_vl", "params": {"resample": "aten_u8"}},
    "internvl": {"family": "internvl", "params": {"max_patches": 6}},
    "gemma3 pan and scan": {"family": "gemma3", "params": {"size": 224, **PAS}},
    "pixtral aten_u8": {"family": "pixtral", "params": {"resample": "aten_u8"}},
    "gemma4": {"family": "gemma4", "params": {"max_soft_tokens": 280}},
    "glm4v pil": {"family": "glm4v", "params": {"resample": "pil"}},
    "kimi pil (a canvas)": {"family": "kimi", "params": {"resample": "pil"}},
    "kimi aten_u8": {"family": "kimi", "params": {"resample": "aten_u8"}},
    "inkling": {"family": "inkling"},
    "deepseek_v41": {"family": "deepseek_v41"},
}


def _pixels(w: int, h: int) -> np.ndarray:
    """A photo crop resized to ``w x h``: real detail in every band."""
    return np.asarray(Image.fromarray(photo("astronaut")).resize((w, h), Image.Resampling.BILINEAR))


def _rotated(orientation: int) -> bytes:
    exif = b"Exif\x00\x00" + exif_tiff(orientation, big_endian=False)
    return jpeg_with_app1(save(_pixels(331, 217), "JPEG", quality=90), exif)


def _rotated_png(orientation: int) -> bytes:
    """An orientation in a chunk after the image data, where a header read must look too."""
    exif = png_chunk(b"eXIf", exif_tiff(orientation, big_endian=False))
    return png_raw(_pixels(331, 217), 2, after_idat=(exif,))


def _cases() -> dict[str, tuple[bytes, bool]]:
    """``name: (bytes, streams)``; ``streams`` under the default decode options."""
    px = _pixels(331, 217)
    gray = np.asarray(Image.fromarray(px).convert("L"))
    rgba = np.dstack([px, np.linspace(0, 255, px.shape[1], dtype=np.uint8)[None].repeat(217, 0)])
    return {
        "jpeg 4:2:0": (save(px, "JPEG", quality=90), True),
        "jpeg 4:4:4": (save(px, "JPEG", quality=95, subsampling=0), True),
        "jpeg progressive": (save(px, "JPEG", quality=85, progressive=True), True),
        "jpeg gray": (save(gray, "JPEG", quality=90), True),
        "jpeg exif 1": (_rotated(1), True),
        "jpeg exif 6": (_rotated(6), False),
        "jpeg cmyk": (save(Image.fromarray(px).convert("CMYK"), "JPEG", quality=90), False),
        "jpeg ycck": (ycck_jpeg(px[:120, :160]), False),
        "png rgba": (save(rgba, "PNG"), True),
        "png palette": (save(Image.fromarray(px).convert("P"), "PNG"), True),
        "png 16-bit gray, tRNS after the image": (
            png_raw(
                gray.astype(np.uint16) * 257,
                0,
                16,
                after_idat=(png_chunk(b"tRNS", bytes([0, int(gray[0, 0])])),),
            ),
            True,
        ),
        "png interlaced": (png_raw(px, 2, interlace=True), False),
        "png exif 8 after the image": (_rotated_png(8), False),
        "webp": (save(px, "WEBP", quality=80), False),
        "gif": (save(Image.fromarray(px).convert("P"), "GIF"), False),
        "bmp": (save(px, "BMP"), False),
    }


CASES = _cases()
DECODES: dict[str, dict[str, Any]] = {
    "defaults": {},
    "drop, upright as stored": {"alpha": "drop", "exif_orientation": False},
}


def _request(pipe: Any, data: bytes) -> MmInput:
    return MmInput(input_ids=pipe.family.example_prompt(1), images=[data])


def _two_step(pipe: Any, data: bytes, compact: bool) -> np.ndarray:
    """The reference: the whole image decoded with the pipeline's options, then the family's
    `process_item` (the recipe's `run` on the decoded array)."""
    image = _native.image_decode_rgb(data, **pipe._decode_kw)
    feature = pipe.family.process_item(image, compact=compact).feature
    return np.asarray(feature.codes if compact else feature.array)


def test_which_images_stream() -> None:
    """The fused path is taken for exactly the images that stream (so the parity below is
    not the two-step path compared with itself)."""
    for name, (data, streams) in CASES.items():
        assert (_native.image_stream_size(data) is not None) == streams, name
    for name in ("jpeg exif 6", "png exif 8 after the image"):
        data = CASES[name][0]
        assert _native.image_stream_size(data) is None
        assert _native.image_stream_size(data, exif_orientation=False) == (331, 217)


@pytest.mark.parametrize("decode", sorted(DECODES))
@pytest.mark.parametrize("spec", sorted(SPECS))
def test_every_family_gets_the_two_step_bits(spec: str, decode: str) -> None:
    for threads in (0, 1, 2, 3):
        full = {**SPECS[spec], "threads": threads, "decode": DECODES[decode]}
        with pipeline_from_spec(full) as pipe:
            for name, (data, _) in CASES.items():
                req = _request(pipe, data)
                for compact in (False, True):
                    got = pipe.process(req, compact=compact).items[0].feature
                    arr = np.asarray(got.codes if compact else got.array)
                    want = _two_step(pipe, data, compact)
                    assert arr.dtype == want.dtype and arr.shape == want.shape, name
                    assert arr.tobytes() == want.tobytes(), f"{name}, {threads} threads"


def _big_jpeg() -> bytes:
    """1280x960: enough rows that bands run while the scan is still being decoded."""
    return save(_pixels(1280, 960), "JPEG", quality=90)


@pytest.mark.parametrize("threads", [0, 2, 3])
def test_a_broken_scan_fails_as_its_decode(threads: int) -> None:
    data = _big_jpeg()
    junk = bytearray(data)
    junk[len(data) // 2 :] = b"\xff" * (len(data) - len(data) // 2)
    cases = [d for _, d in truncations(data, 12)] + [bytes(junk)]
    with pipeline_from_spec({**SPECS["qwen_vl pil"], "threads": threads}) as pipe:
        for case in cases:
            try:
                want: Exception | None = None
                _native.image_decode_rgb(case, **pipe._decode_kw)
            except DecodeError as e:
                want = e
            req = _request(pipe, case)
            if want is None:  # the cut left every scanline: a whole image
                assert pipe.process(req).items[0].feature.array.size > 0
                continue
            with pytest.raises(DecodeError) as info:
                pipe.process(req)
            got = info.value
            assert got.message == f"image 0 (bytes): {want}", len(case)
            assert (got.format, got.item) == (want.format, 0)


class RefusesWide(TableToy):
    """A composed feature whose plan refuses images wider than 300 pixels by design."""

    name = "refuses_wide"

    def plan(self, width: int, height: int) -> Plan:
        if width > 300:
            raise KernelArgumentError(f"a {width}x{height} image is wider than 300 pixels")
        return super().plan(width, height)


@pytest.mark.parametrize("threads", [0, 2])
def test_a_broken_scan_is_reported_before_a_refused_size(threads: int) -> None:
    reg = Registry()
    reg.register_family(RefusesWide)
    data = CASES["jpeg 4:2:0"][0]
    with pipeline_from_spec({"family": "refuses_wide", "threads": threads}, registry=reg) as pipe:
        with pytest.raises(KernelArgumentError, match="wider than 300"):
            pipe.process(MmInput([9, 5, 9], [data]))
        with pytest.raises(DecodeError, match="truncated"):
            pipe.process(MmInput([9, 5, 9], [data[: len(data) * 2 // 3]]))
        narrow = save(_pixels(200, 300), "JPEG", quality=90)
        out = pipe.process(MmInput([9, 5, 9], [narrow]))
        assert out.items[0].feature.shape == (3, 300, 200)


@pytest.mark.parametrize("threads", [0, 2])
def test_over_the_limit_is_refused_from_the_header(threads: int) -> None:
    data = CASES["jpeg 4:2:0"][0]
    spec = {**SPECS["qwen_vl pil"], "threads": threads, "limits": {"max_image_pixels": 70_000}}
    with pipeline_from_spec(spec) as pipe, pytest.raises(LimitError) as info:
        pipe.process(_request(pipe, data))
    assert info.value.limit == "max_image_pixels" and info.value.value == 331 * 217
    with pytest.raises(LimitError) as raw:
        _native.image_decode_rgb(data, max_pixels=70_000)
    assert info.value.message == f"image 0 (bytes): {raw.value}"


def _rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise KeyError("VmRSS")


def test_failed_streams_leave_nothing_behind() -> None:
    """Each failure drops the decode's rows and the half-written feature: 40 broken 1280x960
    requests (6 MB of rows and 30 MB of output each) leave the process about where it was."""
    data = _big_jpeg()
    cut = data[: len(data) * 3 // 5]
    with pipeline_from_spec({**SPECS["qwen_vl pil"], "threads": 2}) as pipe:
        req = _request(pipe, cut)
        for _ in range(3):
            with pytest.raises(DecodeError):
                pipe.process(req)
        before = _rss()
        for _ in range(40):
            with pytest.raises(DecodeError):
                pipe.process(req)
        assert _rss() - before < 200 << 20


def test_a_memoryview_and_a_bytearray_stream_too() -> None:
    data = CASES["jpeg 4:2:0"][0]
    with pipeline_from_spec({**SPECS["qwen_vl aten_u8"], "threads": 2}) as pipe:
        want = pipe.process(_request(pipe, data)).items[0].feature.array
        for form in (bytearray(data), memoryview(data)):
            got = pipe.process(_request(pipe, form)).items[0].feature.array  # type: ignore[arg-type]
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
