"""End to end through the core's pipeline: encoded bytes in, features, ids, offsets and MRoPE
out, against HF's processor fed the same bytes the way HF opens them (Pillow, EXIF transpose;
the processor composites alpha onto white). Bad input fails with typed errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from _qwen_refs import QWEN2, QWEN3, as_bits, hf_pil_processor, hf_reference, noise
from PIL import Image, ImageOps

from sglang_mm_core import MmInput, pipeline_from_spec
from sglang_mm_core.common import content_hash
from sglang_mm_core.errors import LayoutError, MmRequestError, SpecError

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
IMG, VS, VE = 151655, 151652, 151653


def _bytes(path: Path) -> bytes:
    return path.read_bytes()


def _exif_rotated_jpeg() -> bytes:
    im = noise(90, 60, seed=4).resize((180, 120))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display upright
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=92, exif=exif)
    return buf.getvalue()


CORPUS = {
    "rocket.jpg": lambda: _bytes(EXAMPLES / "qwen2_vl" / "rocket.jpg"),
    "coffee.jpg": lambda: _bytes(EXAMPLES / "qwen2_vl" / "coffee.jpg"),
    "chelsea.png": lambda: _bytes(EXAMPLES / "images" / "chelsea.png"),
    "coffee.webp": lambda: _bytes(EXAMPLES / "images" / "coffee.webp"),
    "logo_rgba.png": lambda: _bytes(EXAMPLES / "images" / "logo_rgba.png"),
    "exif6.jpg": _exif_rotated_jpeg,
}


def hf_open(data: bytes) -> Image.Image:
    """HF's ``load_image`` minus its final convert: the processor's own ``convert_to_rgb`` then
    composites any alpha onto white (the family's decode default)."""
    im = Image.open(io.BytesIO(data))
    im.load()
    return ImageOps.exif_transpose(im)


def mrope_reference(ids: np.ndarray, offsets, grids) -> tuple[np.ndarray, int]:
    """The spec's MRoPE algorithm, token by token (independent of the vectorised one)."""
    pos = np.zeros((3, len(ids)), dtype=np.int64)
    starts = {s: (e, g) for (s, e), g in zip(offsets, grids, strict=True)}
    nxt, i = 0, 0
    while i < len(ids):
        if i in starts:
            e, (t, h, w) = starts[i]
            for ti in range(t):
                for hi in range(h):
                    for wi in range(w):
                        pos[:, i + (ti * h + hi) * w + wi] = (nxt + ti, nxt + hi, nxt + wi)
            nxt += max(t, h, w)
            i = e + 1
        else:
            pos[:, i] = nxt
            nxt += 1
            i += 1
    return pos, int(pos.max()) + 1 - len(ids)


def spec(params: dict, **extra) -> dict:
    doc = {
        "family": "qwen_vl",
        "params": {
            **params,
            "image_mean": list(params["image_mean"]),
            "image_std": list(params["image_std"]),
        },
    }
    doc["params"].update(extra.pop("p", {}))
    return {**doc, **extra}


@pytest.mark.parametrize("threads", [0, 2])
@pytest.mark.parametrize("which", ["qwen2", "qwen3"])
def test_request_matches_hf(which, threads):
    params = QWEN2 if which == "qwen2" else QWEN3
    names = sorted(CORPUS)
    data = [CORPUS[n]() for n in names]
    prompt = [11, 12] + [t for _ in data for t in (VS, IMG, VE, 13)]
    with pipeline_from_spec(spec(params, p={"resample": "pil"}, threads=threads)) as pipe:
        out = pipe.process(MmInput(input_ids=prompt, images=data))
    ref = hf_pil_processor(params)
    expanded: list[int] = []
    grids = []
    for item, raw, name in zip(out.items, data, names, strict=True):
        want_pv, want_grid = hf_reference(ref, hf_open(raw))
        np.testing.assert_array_equal(as_bits(item.feature.array), as_bits(want_pv), name)
        np.testing.assert_array_equal(item.aux["image_grid_thw"].array, want_grid)
        assert item.hash == content_hash(raw)
        t, gh, gw = (int(x) for x in want_grid[0])
        assert item.tokens == t * gh * gw // 4
        grids.append((t, gh // 2, gw // 2))
    # the prompt expands as HF's processor expands it: each placeholder -> tokens copies
    it = iter(out.items)
    for tok in prompt:
        expanded += [IMG] * next(it).tokens if tok == IMG else [tok]
    np.testing.assert_array_equal(out.input_ids, np.array(expanded, dtype=np.int64))
    where = np.flatnonzero(out.input_ids == IMG)
    assert out.offsets[0][0] == where[0] and out.offsets[-1][1] == where[-1]
    want_pos, want_delta = mrope_reference(out.input_ids, out.offsets, grids)
    np.testing.assert_array_equal(out.positions.positions, want_pos)
    assert out.positions.delta == want_delta
    with pipeline_from_spec(spec(params, threads=0)) as pipe:
        assert pipe.count_tokens(MmInput(input_ids=prompt, images=data)).length == len(expanded)


def test_bundled_example_runs():
    doc = json.loads((EXAMPLES / "qwen2_vl" / "request.json").read_text())
    images = [(EXAMPLES / "qwen2_vl" / p).read_bytes() for p in doc["images"]]
    with pipeline_from_spec(EXAMPLES / "qwen2_vl" / "spec.json") as pipe:
        out = pipe.process(MmInput(input_ids=doc["input_ids"], images=images))
    assert len(out.items) == 2 and out.family == "qwen_vl"
    for d in ("qwen2_5_vl", "qwen3_vl", "qwen3_5"):
        with pipeline_from_spec(EXAMPLES / d / "spec.json") as pipe:
            fam = pipe.family
            ids = fam.example_prompt(1)
            assert len(pipe.process(MmInput(input_ids=ids, images=images[:1])).items) == 1


def _png(w: int, h: int) -> bytes:
    buf = io.BytesIO()
    noise(w, h, seed=1).save(buf, "PNG")
    return buf.getvalue()


def test_aspect_ratio_over_200_fails_the_request_naming_it():
    ids = [1, VS, IMG, VE, VS, IMG, VE]
    with pipeline_from_spec(spec(QWEN2, threads=0)) as pipe:
        with pytest.raises(MmRequestError, match=r"image 1 \(bytes\).*402x2.*aspect ratio 201"):
            pipe.process(MmInput(input_ids=ids, images=[_png(40, 40), _png(402, 2)]))
        ok = pipe.process(MmInput(input_ids=ids, images=[_png(40, 40), _png(400, 2)]))
        assert len(ok.items) == 2


def test_layout_errors_through_the_pipeline():
    with pipeline_from_spec(spec(QWEN2, threads=0)) as pipe:
        with pytest.raises(LayoutError, match=r"prompt has 1 media placeholder\(s\) but 2"):
            pipe.process(MmInput(input_ids=[VS, IMG, VE], images=[_png(30, 30)] * 2))
        with pytest.raises(LayoutError, match=r"media placeholder 0 .* not directly between"):
            pipe.process(MmInput(input_ids=[5, IMG, VE], images=[_png(30, 30)]))
        # counting refuses what processing refuses, before any image is decoded
        with pytest.raises(LayoutError, match=r"ids 151652 and 151653"):
            pipe.count_tokens(MmInput(input_ids=[5, IMG, VE], images=[_png(30, 30)]))
        with pytest.raises(LayoutError, match=r"media placeholder 1 .* not directly between"):
            pipe.check_prompt([VS, IMG, VE, IMG], 2)
    with pipeline_from_spec(spec(QWEN2, threads=0, p={"strict_layout": False})) as relaxed:
        relaxed.check_prompt([VS, IMG, VE, IMG], 2)
        req = MmInput(input_ids=[5, IMG], images=[_png(30, 30)])
        assert relaxed.count_tokens(req).length == len(relaxed.process(req).input_ids)


def test_zero_side_is_refused_by_the_kernel():
    from sglang_mm_qwen_vl import QwenVLFamily

    with pytest.raises(MmRequestError, match="zero side"):
        QwenVLFamily().process_item(np.zeros((0, 5, 3), dtype=np.uint8))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"image_std": [0.5, 0.0, 0.5]}, r"image_std\[1\] is 0.0"),
        ({"min_pixels": 4000, "max_pixels": 3000}, r"min_pixels \(4000\) must not exceed"),
    ],
)
def test_bad_specs_are_spec_errors(params, message):
    with pytest.raises(SpecError, match=message):
        pipeline_from_spec({"family": "qwen_vl", "params": params})
