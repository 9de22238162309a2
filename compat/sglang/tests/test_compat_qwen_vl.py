"""`compat.sglang.qwen_vl` against the core's `Pipeline` with the equivalent spec (the same
bits through both APIs) and against the extension: equal on lossless inputs; where the
extension departs from Pillow 13 (its JPEG decoder, its Pillow 12 resize pass order) ours
equals HuggingFace's `Qwen2VLImageProcessorPil` on Pillow's decode."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from _qwen_refs import QWEN2, QWEN3, as_bits, hf_pil_processor, hf_reference
from compat_helpers import encode, lossless, photo, pillow_rgb
from numpy.testing import assert_array_equal
from PIL import Image
from sglang_mm_qwen_vl import smart_resize
from sglang_mm_sglang import qwen_vl

from sglang_mm_core import MmInput, pipeline_from_spec
from sglang_mm_core.errors import LayoutError, SpecError

IMG, VS, VE = 151655, 151652, 151653
PARAMS = {"qwen2": QWEN2, "qwen3": QWEN3}


def spec(params: dict[str, Any] = QWEN2, resample: str = "aten_u8", **over: Any) -> str:
    """The JSON SGLang's ``RustMmSpec.rust_json()`` writes."""
    doc = {
        "family": "qwen_vl",
        "feature_shm": False,
        "image_token_id": IMG,
        **params,
        "image_mean": list(params["image_mean"]),
        "image_std": list(params["image_std"]),
        "resample": resample,
        **over,
    }
    return json.dumps(doc)


def ours_pipeline(params: dict[str, Any], resample: str, pass_order: str = "pillow13") -> Any:
    """Our pipeline written out independently: SGLang's smart_resize, no marker check, the
    extension's decode."""
    return pipeline_from_spec(
        {
            "family": "qwen_vl",
            "params": {
                **params,
                "resample": resample,
                "smart_resize": "sglang",
                "pil_pass_order": pass_order,
                "strict_layout": False,
            },
            "decode": {"alpha": "drop", "exif_orientation": False},
            "threads": 1,
        }
    )


def pipeline_values(pipe: Any, data: bytes) -> tuple[np.ndarray, tuple[int, ...]]:
    item = pipe.process(MmInput(input_ids=[IMG], images=[data])).items[0]
    return item.feature.array.reshape(-1), tuple(
        int(v) for v in item.aux["image_grid_thw"].array[0]
    )


IMAGES = {
    **lossless(photo(61, 97, 1)),
    "png_big": lossless(photo(310, 433, 2))["png"],
    "rgba_png": encode(np.dstack([photo(50, 70, 3), photo(50, 70, 4)[:, :, 0]]), "PNG"),
}


@pytest.mark.parametrize("name", sorted(IMAGES))
@pytest.mark.parametrize("resample", ["aten_u8", "pil"])
@pytest.mark.parametrize("gen", sorted(PARAMS))
def test_preprocess_equals_theirs_and_pipeline(
    ext: ModuleType, name: str, resample: str, gen: str
) -> None:
    data, params = IMAGES[name], PARAMS[gen]
    s = spec(params, resample)
    pv, grid = qwen_vl.preprocess(data, s)
    assert pv.dtype == np.float32 and pv.ndim == 1 and isinstance(grid, tuple)
    tpv, tgrid = ext.qwen_vl.preprocess(data, s)
    assert grid == tuple(tgrid)
    assert_array_equal(as_bits(pv), as_bits(tpv))
    with ours_pipeline(params, resample) as pipe:
        want, want_grid = pipeline_values(pipe, data)
    assert grid == want_grid
    assert_array_equal(as_bits(pv), as_bits(want))


def test_pil_resize_keeps_pillow13_where_theirs_keeps_pillow12(ext: ModuleType) -> None:
    """A tall image shrunk mostly in height: Pillow 13 runs the vertical pass first, the
    extension the horizontal one (Pillow 12). Ours equals HF's PIL processor on Pillow 13."""
    params = {**QWEN2, "max_pixels": 28 * 28 * 8}
    data = lossless(photo(600, 90, 5))["png"]
    s = spec(params, "pil")
    pv, grid = qwen_vl.preprocess(data, s)
    want, want_grid = hf_reference(hf_pil_processor(params), Image.fromarray(pillow_rgb(data)))
    assert grid == tuple(want_grid[0]) == (1, 14, 2)
    assert_array_equal(as_bits(pv), as_bits(want.reshape(-1)))
    tpv, _ = ext.qwen_vl.preprocess(data, s)
    assert not np.array_equal(as_bits(tpv), as_bits(pv))
    with ours_pipeline(params, "pil", "pillow12") as old:
        assert_array_equal(as_bits(tpv), as_bits(pipeline_values(old, data)[0]))


def test_jpeg_equals_hf_on_pillow_decode_where_theirs_does_not(ext: ModuleType) -> None:
    data = encode(photo(180, 260, 6), "JPEG", quality=90)
    for params in PARAMS.values():
        pv, grid = qwen_vl.preprocess(data, spec(params, "pil"))
        want, want_grid = hf_reference(hf_pil_processor(params), Image.fromarray(pillow_rgb(data)))
        assert grid == tuple(want_grid[0])
        assert_array_equal(as_bits(pv), as_bits(want.reshape(-1)))
        tpv, tgrid = ext.qwen_vl.preprocess(data, spec(params, "pil"))
        assert tuple(tgrid) == grid and not np.array_equal(as_bits(tpv), as_bits(pv))
        # aten_u8: the same bits as the pipeline (torchvision's resampler on Pillow's decode).
        pv_aten, _ = qwen_vl.preprocess(data, spec(params, "aten_u8"))
        with ours_pipeline(params, "aten_u8") as pipe:
            assert_array_equal(as_bits(pv_aten), as_bits(pipeline_values(pipe, data)[0]))


PROMPTS = {
    "markers": [1, 2, VS, IMG, VE, 5, VS, IMG, VE, 7],
    "bare": [1, IMG, 2, IMG],
    "adjacent": [IMG, IMG, 9],
    "first": [IMG, 3, 4, 5, IMG, 6, VS, IMG, VE],
}


def _same_mm(a: tuple, b: tuple) -> None:  # type: ignore[type-arg]
    assert len(a) == len(b) == 7
    assert isinstance(a[0], list) and a[0] == list(b[0])
    assert a[1].dtype == np.float32 and a[1].ndim == 1
    assert_array_equal(as_bits(a[1]), as_bits(b[1]))
    assert a[2] == [tuple(g) for g in b[2]]
    assert a[3] == list(b[3])
    assert a[4] == [tuple(o) for o in b[4]]
    assert a[5].dtype == np.int64 and a[5].ndim == 1
    assert_array_equal(a[5], b[5])
    assert a[6] == b[6] and isinstance(a[6], int)


@pytest.mark.parametrize("prompt", sorted(PROMPTS))
def test_process_mm_equals_theirs_and_pipeline(ext: ModuleType, prompt: str) -> None:
    ids = PROMPTS[prompt]
    n = ids.count(IMG)
    images = [IMAGES[k] for k in ("png", "webp", "bmp")][:n]
    s = spec(QWEN2, "aten_u8")
    got = qwen_vl.process_mm(ids, images, s)
    _same_mm(got, ext.qwen_vl.process_mm(ids, images, s))
    with ours_pipeline(QWEN2, "aten_u8") as pipe:
        out = pipe.process(MmInput(input_ids=ids, images=images))
    assert got[0] == out.input_ids.tolist() and got[4] == out.offsets
    assert_array_equal(got[5], out.positions.positions.reshape(-1))
    assert got[6] == out.positions.delta
    assert got[3] == [item.hash for item in out.items]
    assert_array_equal(got[1], np.concatenate([i.feature.array.reshape(-1) for i in out.items]))


def test_process_mm_sources_as_the_extension_reads_them(ext: ModuleType, tmp_path: Path) -> None:
    data = IMAGES["png"]
    path = tmp_path / "a.png"
    path.write_bytes(data)
    b64 = base64.b64encode(data).decode()
    s = spec()
    want = qwen_vl.process_mm([IMG], [data], s)
    for source in (
        bytearray(data),
        memoryview(data),
        str(path),
        path.as_uri(),
        "data:image/png;base64," + b64,
        b64,
    ):
        got = qwen_vl.process_mm(np.array([IMG]), (source,), s)
        _same_mm(got, want)
        _same_mm(got, ext.qwen_vl.process_mm([IMG], [source], s))


@pytest.mark.parametrize(
    ("ids", "images"),
    [
        ([1, IMG, 2], ["png", "webp"]),
        ([1, 2], []),
        ([], []),
        ([IMG], ["junk"]),
        ([IMG, IMG], ["png"]),
    ],
)
def test_process_mm_errors_are_value_errors_as_theirs(
    ext: ModuleType, ids: list[int], images: list[str]
) -> None:
    srcs = [IMAGES.get(k, b"junk") for k in images]
    with pytest.raises(ValueError):
        ext.qwen_vl.process_mm(ids, srcs, spec())
    with pytest.raises(ValueError) as info:
        qwen_vl.process_mm(ids, srcs, spec())
    assert info.type.__mro__[1].__module__ == "sglang_mm_core.errors"  # also our typed error


@pytest.mark.parametrize(
    "over",
    [
        {"patch_size": 0},
        {"merge_size": 0},
        {"patch_size": -1},
        {"patch_size": 1.5},
        {"patch_size": True},
        {"resample": "lanczos"},
        {"image_mean": [0.5, 0.5]},
        {"min_pixels": 1, "max_pixels": 10},
    ],
)
def test_bad_specs_are_value_errors_as_theirs(ext: ModuleType, over: dict[str, Any]) -> None:
    s = json.dumps({**json.loads(spec()), **over})
    with pytest.raises(ValueError):
        ext.qwen_vl.preprocess(IMAGES["png"], s)
    with pytest.raises(ValueError) as info:
        qwen_vl.preprocess(IMAGES["png"], s)
    # A spec error, except the image SGLang's smart_resize makes empty: a request error.
    assert isinstance(info.value, SpecError) != ("max_pixels" in over)


def test_missing_field_is_named_as_by_theirs(ext: ModuleType) -> None:
    doc = json.loads(spec())
    del doc["min_pixels"]
    with pytest.raises(ValueError, match="min_pixels"):
        ext.qwen_vl.preprocess(IMAGES["png"], json.dumps(doc))
    with pytest.raises(SpecError, match="qwen_vl spec: min_pixels: Field required"):
        qwen_vl.preprocess(IMAGES["png"], json.dumps(doc))


def test_spec_fields_the_extension_ignores() -> None:
    """``family`` and ``resample`` may be left out (``aten_u8``), ``feature_shm`` is SGLang's
    transport choice; an unknown field or another family is refused rather than ignored."""
    doc = json.loads(spec())
    lean = {k: v for k, v in doc.items() if k not in ("family", "resample", "feature_shm")}
    assert_array_equal(
        qwen_vl.preprocess(IMAGES["png"], json.dumps(lean))[0],
        qwen_vl.preprocess(IMAGES["png"], spec())[0],
    )
    for over in ({"bogus": 1}, {"family": "inkling"}):
        with pytest.raises(SpecError, match="qwen_vl spec: "):
            qwen_vl.preprocess(IMAGES["png"], json.dumps({**doc, **over}))
    with pytest.raises(TypeError, match="encoded image bytes"):
        qwen_vl.preprocess("a/path.png", spec())  # type: ignore[arg-type]


def _sweep() -> list[tuple[int, int]]:
    sides = [1, 2, 13, 14, 15, 27, 28, 29, 42, 55, 56, 57, 100, 479, 480, 1080, 1920, 5000]
    pairs = [(h, w) for h in sides for w in sides]
    rng = np.random.default_rng(11)
    return pairs + [tuple(int(v) for v in rng.integers(1, 9000, 2)) for _ in range(300)]


@pytest.mark.parametrize(
    "bounds", [(28, 3136, 12845056), (32, 65536, 16777216), (28, 56 * 56, 28 * 28 * 4)]
)
def test_smart_resize_equals_theirs(ext: ModuleType, bounds: tuple[int, int, int]) -> None:
    refused = 0
    for h, w in _sweep():
        try:
            want = ext.qwen_vl.smart_resize_py(h, w, *bounds)
        except ValueError:
            refused += 1
            with pytest.raises(ValueError):
                qwen_vl.smart_resize_py(h, w, *bounds)
            continue
        got = qwen_vl.smart_resize_py(h, w, *bounds)
        assert got == tuple(want) == smart_resize(h, w, *bounds, "sglang"), (h, w)
    assert refused > 0


def test_mrope_equals_theirs_and_the_pipeline(ext: ModuleType) -> None:
    rng = np.random.default_rng(5)
    for _ in range(60):
        n = int(rng.integers(0, 4))
        items, cursor = [], int(rng.integers(0, 5))
        for _ in range(n):
            t, h, w = (
                int(rng.integers(1, 3)),
                2 * int(rng.integers(1, 6)),
                2 * int(rng.integers(1, 6)),
            )
            tokens = t * h * w // 4
            items.append((cursor, cursor + tokens - 1, t, h, w))
            cursor += tokens + int(rng.integers(0, 4))
        length = cursor + int(rng.integers(0, 3))
        pos, delta = qwen_vl.mrope_image_only_py(length, items, 2)
        tpos, tdelta = ext.qwen_vl.mrope_image_only_py(length, items, 2)
        assert pos.dtype == np.int64 and pos.shape == (3 * length,)
        assert_array_equal(pos, tpos)
        assert delta == tdelta
    # The positions process_mm returns are those of its offsets and grids.
    got = qwen_vl.process_mm(PROMPTS["first"], [IMAGES["png"]] * 3, spec())
    items = [(s, e, *g) for (s, e), g in zip(got[4], got[2], strict=True)]
    pos, delta = qwen_vl.mrope_image_only_py(len(got[0]), items, 2)
    assert_array_equal(pos, got[5])
    assert delta == got[6]


def test_mrope_span_that_does_not_fit_is_a_value_error(ext: ModuleType) -> None:
    for items in ([(0, 2, 1, 4, 4)], [(0, 3, 1, 3, 4)]):
        for fn in (qwen_vl.mrope_image_only_py, ext.qwen_vl.mrope_image_only_py):
            with pytest.raises(ValueError):
                fn(10, items, 2)
    with pytest.raises(LayoutError):
        qwen_vl.mrope_image_only_py(10, [(0, 2, 1, 4, 4)], 2)
