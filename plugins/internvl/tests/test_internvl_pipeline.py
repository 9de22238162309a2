"""End to end through the core's pipeline: encoded bytes in, features, ids and offsets out,
against HF's `InternVLProcessor` fed the same bytes the way HF opens them (Pillow, EXIF
transpose; the processor composites alpha onto white); the header-only count agrees; the
bundled examples run; bad input fails with typed errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from _internvl_refs import TOKENS_3, as_bits, internvl_processor, noise
from PIL import Image, ImageOps

from sglang_mm_core import MmInput, pipeline_from_spec
from sglang_mm_core.errors import LayoutError, MmRequestError, SpecError

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
CTX, START, END = TOKENS_3["<IMG_CONTEXT>"], TOKENS_3["<img>"], TOKENS_3["</img>"]


def _png(w: int, h: int, mode: str = "RGB") -> bytes:
    buf = io.BytesIO()
    im = noise(w, h, seed=w + h)
    if mode == "RGBA":
        im = im.convert("RGBA")
        im.putalpha(Image.linear_gradient("L").resize((w, h)))
    im.save(buf, "PNG")
    return buf.getvalue()


def _exif_rotated_jpeg() -> bytes:
    im = noise(90, 60, seed=4).resize((900, 600))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display upright
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=92, exif=exif)
    return buf.getvalue()


def _spec(**params) -> dict:
    doc = json.loads((EXAMPLES / "internvl3" / "spec.json").read_text())
    doc["params"].update(params)
    return doc


@pytest.mark.parametrize("threads", [0, 2])
def test_request_matches_internvl_processor(threads):
    data = [
        (EXAMPLES / "internvl3" / "rocket.jpg").read_bytes(),
        _png(300, 200, "RGBA"),
        _exif_rotated_jpeg(),
    ]
    text = "w1 <IMG_CONTEXT> w2 <IMG_CONTEXT> <IMG_CONTEXT> w3"
    proc = internvl_processor(TOKENS_3)
    prompt = list(proc.tokenizer(text)["input_ids"])
    spec = {**_spec(resample="pil"), "threads": threads}
    with pipeline_from_spec(spec) as pipe:
        out = pipe.process(MmInput(input_ids=prompt, images=data))
        counted = pipe.count_tokens(MmInput(input_ids=prompt, images=data))
    images = [ImageOps.exif_transpose(Image.open(io.BytesIO(d))) for d in data]
    hf = proc(text=[text], images=images, return_tensors="np")
    np.testing.assert_array_equal(out.input_ids, np.asarray(hf["input_ids"][0], dtype=np.int64))
    ours = np.concatenate([it.feature.array for it in out.items])
    np.testing.assert_array_equal(as_bits(ours), as_bits(np.asarray(hf["pixel_values"])))
    for (s, e), item in zip(out.offsets, out.items, strict=True):
        assert out.input_ids[s - 1] == START and out.input_ids[e + 1] == END
        assert np.all(out.input_ids[s : e + 1] == CTX) and item.tokens == e - s + 1
    assert counted.length == len(out.input_ids)


def test_bundled_examples_run():
    for d in ("internvl3", "internvl3_5"):
        doc = json.loads((EXAMPLES / d / "request.json").read_text())
        images = [(EXAMPLES / d / p).read_bytes() for p in doc["images"]]
        with pipeline_from_spec(EXAMPLES / d / "spec.json") as pipe:
            out = pipe.process(MmInput(input_ids=doc["input_ids"], images=images))
        assert out.family == "internvl" and len(out.items) == len(images)
    # rocket 427x640 is a 2x3 grid plus the thumbnail; chelsea 451x300 a 3x2 grid plus it
    assert [it.feature.shape[0] for it in out.items] == [7]


def test_layout_errors_through_the_pipeline():
    with pipeline_from_spec(_spec()) as pipe:
        with pytest.raises(LayoutError, match=r"prompt has 1 media placeholder\(s\) but 2"):
            pipe.process(MmInput(input_ids=[1, CTX, 2], images=[_png(30, 30)] * 2))
        # said before any image is fetched: by check_prompt, and when counting from headers
        with pytest.raises(LayoutError, match=r"prompt has 2 media placeholder\(s\) but 1"):
            pipe.check_prompt(np.asarray([1, CTX, CTX], dtype=np.int64), 1)
        with pytest.raises(LayoutError, match=r"prompt has 2 media placeholder\(s\) but 1"):
            pipe.count_tokens(MmInput(input_ids=[1, CTX, CTX], images=[_png(30, 30)]))


def test_zero_side_is_refused():
    from sglang_mm_internvl import InternVLFamily

    with pytest.raises(MmRequestError, match="zero side"):
        InternVLFamily().process_item(np.zeros((0, 5, 3), dtype=np.uint8))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"image_std": [0.5, 0.0, 0.5]}, r"image_std\[1\] is 0.0"),
        ({"min_patches": 5, "max_patches": 4}, r"min_patches \(5\) must not exceed"),
        ({"max_patches": 65}, r"max_patches"),
        ({"tile_size": 4096, "max_patches": 12}, r"over the cap of 1073741824"),
        ({"tiling": "model_card"}, r"needs resample 'pil'"),
        ({"image_token_id": 151665}, r"token ids must differ"),
        ({"use_thumbnail": False}, r"use_thumbnail"),
    ],
)
def test_bad_specs_are_spec_errors(params, message):
    with pytest.raises(SpecError, match=message):
        pipeline_from_spec({"family": "internvl", "params": params})
