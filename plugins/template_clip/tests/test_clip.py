"""The template's tests: the conformance suite, and bit-exact parity with HF's real
``CLIPImageProcessorPil`` inside a ``LlavaProcessor`` (pixels, expanded ids and offsets) on
photos and on odd sizes, both fed the same decoded RGB pixels."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from numpy.testing import assert_array_equal
from PIL import Image
from sglang_mm_clip import ClipFamily
from skimage import data
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import CLIPImageProcessorPil, LlavaProcessor, PreTrainedTokenizerFast

import sglang_mm_core as mm
from sglang_mm_core.conformance import ConformanceTarget, parametrize_with_checks

IMAGE = 32000  # LLaVA 1.5's <image>
WORDS = {"<unk>": 0, "hello": 100, "world": 101, "<image>": IMAGE}
# LLaVA 1.5 (the defaults), CLIP ViT-L/14 at 224, and a crop smaller than the resize with
# other constants.
CONFIGS: dict[str, dict[str, Any]] = {
    "llava-1.5": {},
    "clip-224": {"shortest_edge": 224, "crop_size": 224},
    "crop-in-256": {
        "shortest_edge": 256,
        "crop_size": 224,
        "patch_size": 16,
        "image_mean": (0.5, 0.5, 0.5),
        "image_std": (0.5, 0.5, 0.5),
    },
}
PHOTOS = {"astronaut": data.astronaut, "coffee": data.coffee, "chelsea": data.chelsea}
# (400, 1000) shrinks its height over twice as much as its width: Pillow 13 resizes it
# vertically first.
ODD_SIZES = [(1, 1), (2, 1), (17, 300), (300, 17), (336, 336), (337, 335), (641, 479)]
ODD_SIZES += [(400, 1000), (1000, 7)]

CLIP_224 = ConformanceTarget.from_family(ClipFamily, CONFIGS["clip-224"])
CLIP_224.id = "clip[224]"


@parametrize_with_checks([ClipFamily, CLIP_224])
def test_conformance(target, check):  # type: ignore[no-untyped-def]
    check(target)


def hf_llava(params: dict[str, Any]) -> Any:
    """LLaVA 1.5's processor with HF's CLIP image processor (PIL backend) for ``params``, over
    a word-level tokenizer holding the real ``<image>`` id (nothing downloaded)."""
    p = ClipFamily(params).params
    tok = Tokenizer(models.WordLevel(WORDS, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    image_processor = CLIPImageProcessorPil(
        size={"shortest_edge": p.shortest_edge},
        crop_size={"height": p.crop_size, "width": p.crop_size},
        image_mean=list(p.image_mean),
        image_std=list(p.image_std),
    )
    return LlavaProcessor(
        image_processor=image_processor,
        tokenizer=PreTrainedTokenizerFast(
            tokenizer_object=tok, unk_token="<unk>", additional_special_tokens=["<image>"]
        ),
        patch_size=p.patch_size,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
    )


def png(pixels: npt.NDArray[np.uint8]) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "PNG")
    return buf.getvalue()


def assert_matches_hf(pixels: npt.NDArray[np.uint8], params: dict[str, Any]) -> None:
    """The pipeline on the PNG of ``pixels`` against HF's processor on ``pixels``: the feature
    bit for bit, the expanded ids, and offsets spanning HF's run of image tokens."""
    ref = hf_llava(params)(
        text="hello <image> world",
        images=[pixels],
        return_tensors="np",
        images_kwargs={"input_data_format": "channels_last"},  # a 1x1 or 3-row image is HWC
    )
    want_ids = ref["input_ids"][0]
    where = np.flatnonzero(want_ids == IMAGE)
    with mm.pipeline_from_spec({"family": "clip", "params": params}) as pipe:
        out = pipe.process(mm.MmInput(input_ids=[100, IMAGE, 101], images=[png(pixels)]))
    feature = out.items[0].feature.array
    assert feature.dtype == np.float32
    assert_array_equal(feature.view(np.uint32), ref["pixel_values"][0].view(np.uint32))
    assert_array_equal(out.input_ids, want_ids)
    assert out.offsets == [(int(where[0]), int(where[-1]))]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("photo", PHOTOS)
def test_photos_match_hf(photo: str, config: str) -> None:
    assert_matches_hf(PHOTOS[photo](), CONFIGS[config])


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize(("w", "h"), ODD_SIZES)
def test_odd_sizes_match_hf(w: int, h: int, config: str) -> None:
    pixels = np.random.default_rng(w * 1000 + h).integers(0, 256, (h, w, 3), dtype=np.uint8)
    assert_matches_hf(pixels, CONFIGS[config])


@pytest.mark.parametrize(("w", "h"), [(1000, 3), (3, 1000)])
def test_a_resize_past_the_cap_is_refused_naming_the_size(w: int, h: int) -> None:
    """HF resizes a 1000x3 image to 112000x336 before it crops; the core's resize stops at
    65535 a side, so the plan refuses the size, for a count from headers and for the item
    alike (no nearby approximation)."""
    request = mm.MmInput(input_ids=[100, IMAGE, 101], images=[png(np.zeros((h, w, 3), np.uint8))])
    with mm.pipeline_from_spec({"family": "clip"}) as pipe:
        with pytest.raises(mm.KernelArgumentError, match=f"a {w}x{h} image resizes to"):
            pipe.process(request)
        with pytest.raises(mm.KernelArgumentError, match=f"a {w}x{h} image"):
            pipe.count_tokens(request)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"shortest_edge": 224, "crop_size": 336}, "crop_size 336 exceeds shortest_edge 224"),
        ({"crop_size": 330}, "crop_size 330 is no multiple of patch_size 14"),
        ({"image_std": (0.5, 0.0, 0.5)}, "must not be zero"),
    ],
)
def test_params_are_checked_when_the_spec_loads(params: dict[str, Any], message: str) -> None:
    with pytest.raises(mm.SpecError, match=message):
        mm.pipeline_from_spec({"family": "clip", "params": params})
