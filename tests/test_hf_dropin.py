"""`sglang_mm_core.hf`, the parts every family's drop-in shares: the sources beyond HF's
(bytes, base64, data: URLs, paths) decoded by our decoder and equal to what HF's
``load_image`` makes of the same file, the input errors, the torchvision reference's input
rule, and the registry hook. Run on the installed qwen_vl drop-in against HF's PIL class."""

from __future__ import annotations

import base64
import io
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from transformers import Qwen2VLImageProcessorPil

import sglang_mm_core.hf as mmhf
from sglang_mm_core import Registry
from sglang_mm_core.conformance.hf import assert_batch_features_equal
from sglang_mm_core.conformance.images import generated_image
from sglang_mm_core.errors import DecodeError, KernelArgumentError, PluginError, SpecError
from sglang_mm_core.plugin import hookimpl

OURS = mmhf.class_for("Qwen2VLImageProcessorPil")


def _png(rgba: bool = False, exif_rotate: bool = False) -> bytes:
    rgb = generated_image(90, 50)
    img = Image.fromarray(np.dstack([rgb, rgb[..., 0]]) if rgba else rgb)
    buf = io.BytesIO()
    if exif_rotate:
        exif = Image.Exif()
        exif[0x0112] = 6
        img.convert("RGB").save(buf, "JPEG", quality=95, exif=exif)
    else:
        img.save(buf, "PNG")
    return buf.getvalue()


def _hf(source: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Qwen2VLImageProcessorPil()(source)


@pytest.mark.parametrize(
    ("rgba", "exif"), [(False, False), (True, False), (False, True)], ids=["png", "rgba", "exif6"]
)
def test_sources_equal_hf_on_the_same_file(tmp_path: Path, rgba: bool, exif: bool) -> None:
    """HF opens a path with ``load_image``: EXIF applied, alpha dropped; ours decodes it (and
    the same bytes, base64 and data: URL forms) the same way without PIL."""
    data = _png(rgba=rgba, exif_rotate=exif)
    path = tmp_path / "img"
    path.write_bytes(data)
    want = _hf(str(path))
    b64 = base64.b64encode(data).decode()
    ours = OURS(resample="pil")
    for source in (str(path), path, data, bytearray(data), b64, f"data:image/png;base64,{b64}"):
        assert_batch_features_equal(ours(source), want)


def test_input_errors_are_typed(tmp_path: Path) -> None:
    ours = OURS(resample="pil")
    with pytest.raises(KernelArgumentError, match="unsupported image type"):
        ours(42)
    with pytest.raises(KernelArgumentError, match="no images"):
        ours([])
    with pytest.raises(KernelArgumentError, match="dimensions"):
        ours(np.zeros((1, 1, 4, 4, 3), np.uint8))
    with pytest.raises(KernelArgumentError, match="not a file"):
        ours(str(tmp_path / "missing.png"))
    with pytest.raises(DecodeError):
        ours(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    with pytest.raises(KernelArgumentError, match="channel"):
        ours(generated_image(20, 20)[..., :1].copy(), do_convert_rgb=False)
    with pytest.raises(KernelArgumentError, match="do_convert_rgb"):
        ours(Image.new("RGBA", (20, 20)), do_convert_rgb=False)


def test_data_format_is_ignored_as_hf_ignores_it() -> None:
    """HF's classes for these families write channels-first whatever ``data_format`` says."""
    ours = OURS(resample="pil")
    img = generated_image(60, 40)
    want = _hf(img)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf_last = Qwen2VLImageProcessorPil()(img, data_format="channels_last")
    assert_batch_features_equal(hf_last, want)
    assert_batch_features_equal(ours(img, data_format="channels_last"), want)
    assert ours.backend == "pil" and mmhf.BACKEND == "sglang_mm"
    assert OURS(resample="aten_u8").backend == "torchvision"


def test_sixteen_bit_png_path_and_bytes_equal_hf(tmp_path: Path) -> None:
    """A 16-bit grey PNG (Pillow's I;16): HF opens the path with Pillow and converts it; our
    decoder reads the same file with Pillow's clamp, without PIL."""
    rng = np.random.default_rng(7)
    deep = rng.integers(0, 65536, (45, 70), dtype=np.uint16)
    deep[:5] = rng.integers(0, 300, (5, 70), dtype=np.uint16)
    path = tmp_path / "deep.png"
    Image.frombytes("I;16", (70, 45), deep.astype("<u2").tobytes()).save(path)
    assert Image.open(path).mode == "I;16"
    want = _hf(str(path))
    ours = OURS(resample="pil")
    assert_batch_features_equal(ours(str(path)), want)
    assert_batch_features_equal(ours(path.read_bytes()), want)
    assert_batch_features_equal(ours(Image.open(path)), _hf(Image.open(path)))


def test_error_names_the_item() -> None:
    ours = OURS(resample="pil")
    good = generated_image(40, 40)
    with pytest.raises(KernelArgumentError, match="image 1"):
        ours([good, generated_image(1000, 4)])


def test_torchvision_reference_takes_uint8_rgb_only() -> None:
    ours = OURS(sglang_mm_resample="aten_u8")
    rgb = generated_image(64, 48)
    hwc = ours(rgb, return_tensors="np")
    chw = ours(np.ascontiguousarray(rgb.transpose(2, 0, 1)), return_tensors="np")
    pil = ours(Image.fromarray(rgb), return_tensors="np")
    assert_batch_features_equal(chw, hwc)
    assert_batch_features_equal(pil, hwc)
    with pytest.raises(KernelArgumentError, match="floating point"):
        ours(rgb.astype(np.float32) / 255, do_rescale=False)
    with pytest.raises(KernelArgumentError, match="uint8 RGB or grey"):
        ours(np.dstack([rgb, rgb[..., :1]]))


def test_processor_classes_and_class_for() -> None:
    classes = mmhf.processor_classes()
    assert OURS in classes
    assert all(issubclass(c, mmhf.ImageProcessor) for c in classes)
    for name in ("Qwen2VLImageProcessor", "Qwen2VLImageProcessorPil", "Qwen2VLImageProcessorFast"):
        assert mmhf.class_for(name) is OURS
    with pytest.raises(PluginError, match="installed replacements"):
        mmhf.class_for("SiglipImageProcessor")


class _Broken:
    @hookimpl
    def sglang_mm_hf_image_processors(self) -> list[type]:
        raise RuntimeError("no transformers here")


class _NotAList:
    @hookimpl
    def sglang_mm_hf_image_processors(self) -> Any:
        return "Qwen2VLImageProcessorSglangMm"


def test_registry_hook_failures_name_the_plugin() -> None:
    reg = Registry()
    reg.register(_Broken(), name="broken-hf")
    with pytest.raises(PluginError, match=r"broken-hf.*no transformers here"):
        reg.hf_image_processors()
    reg = Registry()
    reg.register(_NotAList(), name="odd-hf")
    with pytest.raises(PluginError, match=r"odd-hf.*list of classes"):
        reg.hf_image_processors()


def test_answers_are_fresh_writable_arrays() -> None:
    """One image's pixel_values is the kernel's own fresh array (not copied again); a caller
    may still write into it, as into HF's."""
    ours = OURS(resample="pil")
    img = generated_image(64, 48)
    a, b = ours(img), ours(img)
    assert a["pixel_values"].flags.writeable and a["image_grid_thw"].flags.writeable
    a["pixel_values"][:] = 0
    assert b["pixel_values"].any()


def test_large_pil_image_spanning_pillow_blocks() -> None:
    """A PIL image larger than Pillow's 16 MiB allocation block (so stored in several
    blocks) is read whole and right: the same answer as HF's, which copies it with
    ``np.asarray``."""
    rng = np.random.default_rng(3)
    img = Image.fromarray(rng.integers(0, 256, (2200, 2600, 3), dtype=np.uint8))
    assert 2200 * 2600 * 4 > 16 * 2**20
    assert_batch_features_equal(OURS(resample="pil")(img), _hf(img))


def test_patch_rows_base_serves_the_qwen_style_drop_ins() -> None:
    """`PatchRowsImageProcessor` is the base of every Qwen2-VL-style drop-in installed (its
    reading of HF's settings and its answer are proven bit for bit by their plugins' tests);
    a ``size`` without its pixel bounds is refused naming them."""
    styled = [c for c in mmhf.processor_classes() if issubclass(c, mmhf.PatchRowsImageProcessor)]
    assert OURS in styled
    ours = OURS(resample="pil")
    out = ours(generated_image(64, 48), return_tensors="np")
    assert set(out) == {"pixel_values", "image_grid_thw"}
    with pytest.raises(SpecError, match="shortest_edge and longest_edge"):
        ours(generated_image(64, 48), size={"height": 64, "width": 64})
