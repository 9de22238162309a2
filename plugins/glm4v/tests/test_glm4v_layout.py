"""The prompt side of images: the expanded ids and offsets against HF's ``Glm4vProcessor`` and
``Glm46VProcessor`` (live, PIL image processor, a local tokenizer with each model type's ids),
``mm_token_type_ids`` too; the positions against each model's ``get_rope_index`` (goldens from
gen_goldens.py); header-only token counts against the pipeline on the parity corpora; and the
placeholder rules."""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _glm4v_corpus import make_input
from _glm4v_refs import PHOTOS, SKIMAGE_DATA, encode, noise, processor
from _glm4v_tokenizer import hf_tokenizer
from PIL import Image, ImageOps
from sglang_mm_glm4v import GLM4V, GLM4V_MOE, GLM46V, Glm4vFamily, Glm4vParams, mm_token_type_ids

import sglang_mm_core as mm

PRESETS = {"glm4v": GLM4V, "glm4v_moe": GLM4V_MOE, "glm46v": GLM46V}
ROPE = json.loads((Path(__file__).parent / "fixtures" / "rope_goldens.json").read_text())
I = "<|begin_of_image|><|image|><|end_of_image|>"  # noqa: E741


def _spec(model_type: str, **params: Any) -> dict[str, Any]:
    return {"family": "glm4v", "params": {**PRESETS[model_type], **params}}


def _hf(model_type: str, text: str, images: list[Image.Image]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return processor(model_type)(text=[text], images=images or None, return_tensors="np")


@pytest.mark.parametrize("model_type", ["glm4v", "glm4v_moe", "glm46v"])
@pytest.mark.parametrize(
    "text",
    [
        f"[gMASK]<sop><|user|>\n{I}Describe this<|assistant|>",
        f"{I}",
        f"compare {I} and {I}{I} with this",
    ],
    ids=["chat", "alone", "three"],
)
def test_expansion_matches_the_processor(model_type: str, text: str) -> None:
    n = text.count("<|image|>")
    images = [noise(700, 500, 1), noise(20, 900, 2), noise(300, 300, 3)][:n]
    want = _hf(model_type, text, images)
    prompt = hf_tokenizer(model_type)(text)["input_ids"]
    with mm.pipeline_from_spec(_spec(model_type, resample="pil")) as pipe:
        out = pipe.process(mm.MmInput(input_ids=prompt, images=[encode(i) for i in images]))
    ids = want["input_ids"][0]
    assert out.input_ids.tolist() == ids.tolist()
    p = Glm4vParams(**PRESETS[model_type])
    np.testing.assert_array_equal(mm_token_type_ids(out.input_ids, p), want["mm_token_type_ids"][0])
    # Each item's offsets are its run of <|image|>, inside <|begin_of_image|> ... <|end_of_image|>
    image = np.flatnonzero(ids == p.image_token_id)
    counts = np.asarray(want["image_grid_thw"]).prod(axis=1) // 4
    bounds = np.cumsum([0, *counts])
    for k, (s, e) in enumerate(out.offsets):
        assert (s, e) == (image[bounds[k]], image[bounds[k + 1] - 1])
        assert ids[s - 1] == p.image_start_token_id and ids[e + 1] == p.image_end_token_id
    np.testing.assert_array_equal(
        np.concatenate([it.feature.array for it in out.items]), want["pixel_values"]
    )


@pytest.mark.parametrize("case", ROPE["cases"], ids=[c["id"] for c in ROPE["cases"]])
def test_positions_match_get_rope_index(case: dict[str, Any]) -> None:
    """``get_rope_index`` of the case's model class on HF's own expansion (the goldens), and the
    pipeline on the same prompt and images (torchvision backend, as the goldens' processor)."""
    model_type = case["model_type"]
    assert hf_tokenizer(model_type)(case["prompt"])["input_ids"] == case["prompt_ids"]
    images = [encode(Image.fromarray(make_input(s))) for s in case["images"]]
    with mm.pipeline_from_spec(_spec(model_type)) as pipe:
        out = pipe.process(mm.MmInput(input_ids=case["prompt_ids"], images=images))
    assert out.input_ids.tolist() == case["input_ids"]
    p = Glm4vParams(**PRESETS[model_type])
    assert mm_token_type_ids(out.input_ids, p).tolist() == case["mm_token_type_ids"]
    grids = [it.aux["image_grid_thw"].array[0].tolist() for it in out.items]
    assert grids == case["image_grid_thw"]
    positions = out.positions
    assert isinstance(positions, mm.MRope)
    if case["positions"] is None:  # no media: the model's positions are 0..L-1 on each row
        want = np.broadcast_to(np.arange(len(case["input_ids"])), (3, len(case["input_ids"])))
        np.testing.assert_array_equal(positions.positions, want)
        assert positions.delta == 0
        return
    np.testing.assert_array_equal(positions.positions, np.asarray(case["positions"]))
    assert positions.delta == case["delta"]


def test_the_rope_goldens_record_their_reference() -> None:
    assert ROPE["transformers"] == "5.23.0" and ROPE["torch"].startswith("2.")
    assert {c["model"] for c in ROPE["cases"]} == {"Glm4vModel", "Glm4vMoeModel", "Glm46VModel"}


def test_counts_from_headers_agree_with_the_pipeline() -> None:
    """`count_tokens` reads only the headers (the plan of each upright size); `process`
    decodes: the prompt length and each item's span agree, and each equals the processor's
    ``_get_num_multimodal_tokens`` for the decoded size. The photo corpus (PNG, JPEG, gray,
    alpha), EXIF-rotated JPEGs, tiny, huge and extreme aspect ratios."""
    exif = Image.Exif()
    exif[0x0112] = 6  # rotated: the header's upright size is h x w
    images = [(SKIMAGE_DATA / name).read_bytes() for name in PHOTOS]
    images += [
        encode(noise(90, 40, 1), "JPEG", exif=exif.tobytes()),
        encode(noise(1, 1, 2)),
        encode(noise(1, 200, 3)),
        encode(noise(5000, 27, 4)),
        encode(noise(4032, 3024, 5), "JPEG"),
        encode(noise(3, 17, 6).convert("LA")),
    ]
    prompt = [tok for _ in images for tok in (151339, 151343, 151340, 101)]
    with mm.pipeline_from_spec(_spec("glm4v")) as pipe:
        req = mm.MmInput(input_ids=prompt, images=images)
        count = pipe.count_tokens(req)
        out = pipe.process(req)
    assert count.length == len(out.input_ids)
    assert count.per_item == [e - s + 1 for s, e in out.offsets]
    sizes = [(it.geometry.height, it.geometry.width) for it in out.items]
    assert len(set(sizes)) > 5
    upright = [ImageOps.exif_transpose(Image.open(io.BytesIO(b))).size for b in images]
    hf = processor("glm4v")._get_num_multimodal_tokens(image_sizes=[(h, w) for w, h in upright])
    assert count.per_item == hf["num_image_tokens"]


def test_placeholders_must_sit_between_their_markers() -> None:
    png = encode(noise(30, 30, 0))
    with mm.pipeline_from_spec(_spec("glm4v")) as pipe:
        with pytest.raises(mm.LayoutError, match="151339 and 151340"):
            pipe.process(mm.MmInput(input_ids=[5, 151343, 151340], images=[png]))
        with pytest.raises(mm.LayoutError, match="placeholder"):
            pipe.process(mm.MmInput(input_ids=[5, 6], images=[png]))
    with mm.pipeline_from_spec(_spec("glm4v", strict_layout=False)) as relaxed:
        req = mm.MmInput(input_ids=[5, 151343], images=[png])
        assert relaxed.count_tokens(req).length == len(relaxed.process(req).input_ids)


def test_an_aspect_ratio_over_200_after_the_upscale_is_refused() -> None:
    """1x201 becomes 28x5628 before the check (HF raises ValueError there)."""
    with mm.pipeline_from_spec(_spec("glm4v")) as pipe:
        ids = [151339, 151343, 151340]
        with pytest.raises(mm.MmRequestError, match=r"image 0 .*1x201 .*aspect ratio 201"):
            pipe.process(mm.MmInput(input_ids=ids, images=[encode(noise(1, 201, 0))]))
        with pytest.raises(mm.MmRequestError, match="aspect ratio"):
            pipe.count_tokens(mm.MmInput(input_ids=ids, images=[encode(noise(5700, 28, 0))]))
    with pytest.raises(ValueError, match="aspect ratio"):
        processor("glm4v")(text=[I], images=[noise(1, 201, 0)])


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"image_std": [0.5, 0.0, 0.5]}, r"image_std\[1\] is 0.0"),
        ({"min_pixels": 4000, "max_pixels": 3000}, r"min_pixels \(4000\) must not exceed"),
        ({"video_token_id": 151343}, "must all differ"),
        ({"resample": "lanczos"}, "resample"),
        ({"tokenizer": "/nonexistent/tokenizer.json"}, "tokenizer"),
    ],
)
def test_bad_specs_are_spec_errors(params: dict[str, Any], message: str) -> None:
    with pytest.raises(mm.SpecError, match=message):
        mm.pipeline_from_spec({"family": "glm4v", "params": params})


def test_family_defaults_are_the_checkpoints() -> None:
    p = Glm4vFamily().params
    assert (p.min_pixels, p.max_pixels, p.image_token_id) == (12544, 9633792, 151343)
    assert Glm4vParams(**GLM4V_MOE).image_token_id == 151363
    assert Glm4vParams(**GLM46V).video_start_token_id == 151361
