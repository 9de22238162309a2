"""The transformers drop-in `Gemma4ImageProcessorSglangMm` against HF's own
``Gemma4ImageProcessorPil`` in the installed transformers (no torch): the same `BatchFeature`
(``pixel_values`` ``[batch, max_patches, 768]``, ``image_position_ids``,
``num_soft_tokens_per_image``) bit for bit on photos at every token budget, batches of
different sizes, every input form, per-call overrides; its refusals (videos and audio among
them); its serialization; its registration with ``AutoImageProcessor``; and ``accelerate`` on
a whole ``Gemma4Processor`` built from a local tokenizer."""

from __future__ import annotations

import functools
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import skimage.data
from _gemma4_refs import SHIPPED_PREPROCESSOR, hf_pil, noise, processor
from PIL import Image
from sglang_mm_gemma4 import SUPPORTED_SOFT_TOKENS
from sglang_mm_gemma4.hf_processor import Gemma4ImageProcessorSglangMm as Ours
from transformers import AutoImageProcessor
from transformers.models.gemma4.image_processing_pil_gemma4 import Gemma4ImageProcessorPil

import sglang_mm_core.hf as mmhf
from sglang_mm_core.conformance.hf import (
    assert_batch_features_equal,
    check_never_falls_back,
    check_registration,
    check_thread_safety,
    input_forms,
)
from sglang_mm_core.conformance.images import generated_image
from sglang_mm_core.errors import KernelArgumentError, SpecError, UnsupportedModalityError

# Gemma4ImageProcessor's settings as saved in a google/gemma-4-* checkpoint.
SHIPPED: dict[str, Any] = {**SHIPPED_PREPROCESSOR, "image_seq_length": 280}
CONFIG = {k: v for k, v in SHIPPED.items() if k != "image_processor_type"}
PHOTOS = ["astronaut", "chelsea", "coffee", "rocket"]


def _pair(**config: Any) -> tuple[Gemma4ImageProcessorPil, Ours]:
    return Gemma4ImageProcessorPil(**config), Ours(sglang_mm_resample="pil", **config)


def _both(ref: Any, ours: Any, ref_images: Any, our_images: Any = None, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = ref(ref_images, **kw)
        got = ours(ref_images if our_images is None else our_images, **kw)
    assert_batch_features_equal(got, want)
    return want


def photo(name: str) -> Image.Image:
    return Image.fromarray(np.ascontiguousarray(getattr(skimage.data, name)()[:, :, :3]))


@pytest.mark.parametrize("name", PHOTOS)
@pytest.mark.parametrize("tokens", SUPPORTED_SOFT_TOKENS)
def test_photos_at_every_token_budget_bit_exact(name: str, tokens: int) -> None:
    ref, ours = _pair(**(CONFIG | {"max_soft_tokens": tokens}))
    want = _both(ref, ours, photo(name), return_tensors="np")
    assert want["pixel_values"].shape == (1, tokens * 9, 768)
    assert want["pixel_values"].dtype == np.float32
    assert want["image_position_ids"].shape == (1, tokens * 9, 2)
    assert 0 < int(want["num_soft_tokens_per_image"][0]) <= tokens


def test_batch_of_different_sizes_in_both_containers() -> None:
    """Sizes around the patch-budget rule's edges in one batch: a side that floors to nothing,
    an image already on the grid (not resized), tiny, and a long strip."""
    ref, ours = _pair(**CONFIG)
    images = [photo("chelsea"), noise(97, 61, 1), noise(33, 400, 2), noise(1, 1, 3)]
    images += [noise(768, 768, 4), noise(3, 2000, 5), noise(864, 672, 6)]
    want = _both(ref, ours, images)
    assert isinstance(want["pixel_values"], np.ndarray)
    assert isinstance(want["num_soft_tokens_per_image"], list)
    assert want["pixel_values"].shape == (len(images), 2520, 768)
    _both(ref, ours, images, return_tensors="np")
    _both(ref, ours, images[1:2], return_tensors="np")
    _both(ref, ours, [images[:2], images[2:]])  # nested, one list per prompt


def test_every_input_form(tmp_path: Path) -> None:
    ref, ours = _pair(**(CONFIG | {"max_soft_tokens": 70}))
    names = []
    for form in input_forms(generated_image(131, 77), tmp_dir=tmp_path):
        _both(ref, ours, form.reference_image, form.image, **form.kwargs)
        names.append(form.name)
    assert {"pil_rgba", "pil_p_transparency", "pil_i16", "np_hwc_f32_unit", "png_bytes"} <= set(
        names
    )


def test_images_already_at_their_target_size() -> None:
    """HF skips the resize there: uint8 and integer-valued floats give the same answer; a
    [0, 1] float image keeps its unquantized floats in HF, and is refused."""
    ref, ours = _pair(**CONFIG)
    rgb = np.asarray(noise(768, 768, 7))
    _both(ref, ours, rgb)
    _both(ref, ours, rgb.astype(np.float32))
    small = np.asarray(noise(97, 61, 8)).astype(np.float32) / 255
    _both(ref, ours, small, do_rescale=False)  # resized: the uint8 round trip, in HF too
    with pytest.raises(KernelArgumentError, match=r"image 1: .* target size"):
        ours([small, rgb.astype(np.float32) / 255], do_rescale=False)


def test_per_call_overrides() -> None:
    ref, ours = _pair(**CONFIG)
    img = noise(900, 300, 8)
    for tokens in SUPPORTED_SOFT_TOKENS:
        _both(ref, ours, img, max_soft_tokens=tokens)
    _both(ref, ours, img, do_normalize=True, image_mean=[0.5, 0.4, 0.3], image_std=0.27)
    _both(ref, ours, img, rescale_factor=1 / 127.5)
    _both(ref, ours, img, do_normalize=True, image_mean=0.5, image_std=0.5, rescale_factor=1 / 100)
    _both(ref, ours, img, patch_size=14, pooling_kernel_size=2)
    # HF's Gemma 4 class ignores these keywords; so do we.
    _both(ref, ours, img, do_center_crop=True, crop_size=100, do_pad=True, size=224)


def test_class_defaults_equal_hf() -> None:
    ref, ours = Gemma4ImageProcessorPil(), Ours(resample="pil")
    want = _both(ref, ours, noise(300, 200, 9), return_tensors="np")
    assert want["pixel_values"].shape == (1, 2520, 768)
    assert ours.to_dict() | {"sglang_mm_resample": None} == ref.to_dict() | {
        "sglang_mm_resample": None
    }


def test_forms_hf_refuses_are_refused() -> None:
    """What HF raises on, ours raises on with a typed error. (The core's whole list,
    `check_refused_forms`, does not apply: with do_convert_rgb off, HF's Gemma 4 class answers
    a grey image with 1-channel patch vectors, which ours refuses instead.)"""
    ref, ours = _pair(**(CONFIG | {"max_soft_tokens": 70}))
    rgb = generated_image(40, 30)
    unit = rgb.astype(np.float32) / 255
    for image, kw, fault in [
        (unit * 300, {"do_rescale": False}, "range"),
        (rgb.astype(np.uint16) * 200, {}, "range"),
        ("not an image", {}, "not a file"),
        (rgb[None, None], {}, "dimensions"),
        (3, {}, "unsupported image type"),
    ]:
        with pytest.raises((ValueError, TypeError)):
            ref(image, **kw)
        with pytest.raises(KernelArgumentError, match=fault):
            ours(image, **kw)
    rgba = Image.fromarray(np.dstack([rgb, rgb[..., 0]]), "RGBA")
    grey = Image.fromarray(rgb[..., 0])
    with pytest.raises(ValueError):
        ref(rgba, do_convert_rgb=False)
    assert ref(grey, do_convert_rgb=False)["pixel_values"].shape == (1, 630, 256)
    for image in (rgba, grey):
        with pytest.raises(KernelArgumentError, match="do_convert_rgb"):
            ours(image, do_convert_rgb=False)
    with pytest.raises(KernelArgumentError, match="do_rescale"):
        ours(unit)  # HF rescales it twice
    with pytest.raises(ValueError):
        ref([])
    with pytest.raises(KernelArgumentError, match="no images"):
        ours([])


@pytest.mark.parametrize("key", ["videos", "audio"])
def test_videos_and_audio_are_refused_by_name(key: str) -> None:
    ours = Ours(sglang_mm_resample="pil", **CONFIG)
    frames = np.zeros((2, 32, 32, 3), np.uint8)
    other = frames if key == "videos" else np.zeros(16000, np.float32)
    with pytest.raises(UnsupportedModalityError, match=f"{key}= is not supported"):
        ours(noise(64, 48, 0), **{key: other})
    with pytest.raises(UnsupportedModalityError, match=key):
        ours.preprocess(None, **{key: [other]})


@pytest.mark.parametrize(
    ("kw", "key"),
    [
        ({"resample": 2}, "resample"),
        ({"do_resize": False}, "do_resize"),
        ({"do_convert_rgb": False}, "do_convert_rgb"),
        ({"do_center_crop": True}, "do_center_crop"),
        ({"do_pad": True}, "do_pad"),
        ({"mystery_knob": 1}, "mystery_knob"),
        ({"resample": "lanczos"}, "resample='lanczos'"),
        ({"sglang_mm_resample": "lanczos"}, "names no HF backend"),
    ],
)
def test_refusals_at_construction_name_the_key(kw: dict[str, Any], key: str) -> None:
    with pytest.raises(SpecError, match=key):
        Ours(**(CONFIG | kw))


def test_a_token_budget_hf_refuses_is_refused() -> None:
    with pytest.raises(ValueError, match="max_soft_tokens"):
        Gemma4ImageProcessorPil(max_soft_tokens=300)
    with pytest.raises(ValueError, match="max_soft_tokens"):
        Ours(max_soft_tokens=300)
    ref, ours = _pair(**CONFIG)
    with pytest.raises(ValueError, match="max_soft_tokens"):
        ref(noise(64, 48, 0), max_soft_tokens=300)
    with pytest.raises(SpecError, match="max_soft_tokens"):
        ours(noise(64, 48, 0), max_soft_tokens=300)


def test_refusals_per_call_name_the_key() -> None:
    ours = Ours(sglang_mm_resample="pil", **CONFIG)
    img = noise(64, 48, 0)
    for kw, key in [
        ({"resample": 2}, "resample"),
        ({"do_resize": False}, "do_resize"),
        ({"rescale_factor": 0.0}, "rescale_factor"),
        ({"do_normalize": True, "image_mean": [0.5, 0.5]}, "image_mean"),
    ]:
        with pytest.raises(SpecError, match=key):
            ours(img, **kw)
    with pytest.raises(KernelArgumentError, match="do_rescale"):
        ours(img, do_rescale=False)
    with pytest.raises(KernelArgumentError, match="do_convert_rgb"):
        ours(img.convert("L"), do_convert_rgb=False)


def test_attributes_match_hf() -> None:
    ref, ours = _pair(**CONFIG)
    for attr in (
        "model_input_names",
        "resample",
        "rescale_factor",
        "image_mean",
        "image_std",
        "do_normalize",
        "patch_size",
        "max_soft_tokens",
        "pooling_kernel_size",
        "do_convert_rgb",
        "backend",
    ):
        assert getattr(ours, attr) == getattr(ref, attr), attr
    assert ours.valid_kwargs is ref.valid_kwargs
    assert ours.model_input_names == [
        "pixel_values",
        "image_position_ids",
        "num_soft_tokens_per_image",
    ]
    assert ours.reference == "pil"
    assert Ours().reference == mmhf.default_reference() == "pil"  # no torchvision here


def test_serialization_round_trips(tmp_path: Path) -> None:
    ref, ours = _pair(**(CONFIG | {"max_soft_tokens": 560}))
    saved = json.loads(ours.to_json_string())
    assert saved["image_processor_type"] == "Gemma4ImageProcessor"
    assert saved.pop("sglang_mm_resample") == "pil"
    assert saved == json.loads(ref.to_json_string())
    ours.save_pretrained(tmp_path)
    again = Ours.from_pretrained(tmp_path)
    assert type(again) is Ours and again.to_dict() == ours.to_dict()
    plain = Gemma4ImageProcessorPil.from_pretrained(tmp_path)
    assert plain.to_dict().pop("sglang_mm_resample") == "pil"
    want = _both(plain, again, photo("coffee"), return_tensors="np")
    assert want["pixel_values"].shape == (1, 5040, 768)


def test_the_shipped_config_loads_in_both(tmp_path: Path) -> None:
    """The settings nested in processor_config.json, as google/gemma-4-* ships them."""
    proc = {"processor_class": "Gemma4Processor", "image_processor": SHIPPED}
    (tmp_path / "processor_config.json").write_text(json.dumps(proc))
    ref = Gemma4ImageProcessorPil.from_pretrained(tmp_path)
    ours = Ours.from_pretrained(tmp_path)
    assert ours.reference == "pil" and ours.max_soft_tokens == 280
    assert json.loads(ours.to_json_string()) == json.loads(ref.to_json_string())
    _both(ref, ours, photo("rocket"), return_tensors="np")


def test_auto_image_processor_backend(tmp_path: Path) -> None:
    check_registration(Ours, SHIPPED, tmp_path, expect=("gemma4",), unnamed=("gemma4",))
    d = tmp_path / "gemma4-named"
    ours = AutoImageProcessor.from_pretrained(d, backend="sglang_mm")  # type: ignore[no-untyped-call]
    ref = AutoImageProcessor.from_pretrained(d)  # type: ignore[no-untyped-call]
    assert type(ours) is Ours and type(ref) is Gemma4ImageProcessorPil
    _both(ref, ours, [photo("astronaut"), noise(120, 700, 10)], return_tensors="np")


def test_image_processor_never_falls_back(tmp_path: Path) -> None:
    check_never_falls_back(tmp_path, "SiglipImageProcessor")


def test_many_threads_one_instance_identical() -> None:
    ours = Ours(sglang_mm_resample="pil", **(CONFIG | {"max_soft_tokens": 70}))
    images = [noise(300 + 170 * i, 200 + 11 * i, i) for i in range(4)]
    calls = [functools.partial(ours, img) for img in images]
    calls.append(functools.partial(ours, images[0], max_soft_tokens=140))
    check_thread_safety(calls)


def test_accelerate_whole_processor() -> None:
    stock = processor(**CONFIG)
    fast = mmhf.accelerate(stock)
    assert type(fast.image_processor) is Ours and type(stock.image_processor) is not Ours
    assert fast.tokenizer is stock.tokenizer and fast.image_processor.reference == "pil"
    text = ["Describe <|image|>", "Compare <|image|> and <|image|> these"]
    images = [[photo("coffee")], [noise(200, 90, 7), noise(120, 700, 8)]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = stock(text=text, images=images, padding=True)
        got = fast(text=text, images=images, padding=True)
        assert {"input_ids", "attention_mask", "pixel_values", "image_position_ids"} <= set(want)
        assert_batch_features_equal(got, want)
        want = stock(text=text, images=images, padding=True, return_tensors="np")
        got = fast(text=text, images=images, padding=True, return_tensors="np")
    assert_batch_features_equal(got, want)
    assert want["pixel_values"].shape == (3, 2520, 768)
    assert mmhf.accelerate(fast) is fast


def test_the_reference_tokenizer_helper_is_the_stock_class() -> None:
    assert type(hf_pil()) is Gemma4ImageProcessorPil


def _sha256_of(a: np.ndarray) -> str:
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


_GOLDENS = json.loads((Path(__file__).parent / "fixtures" / "aten_goldens.json").read_text())


@pytest.mark.parametrize("case", _GOLDENS["cases"], ids=[c["id"] for c in _GOLDENS["cases"]])
def test_torchvision_reference_replays_the_goldens(case: dict[str, Any]) -> None:
    """``sglang_mm_resample="aten_u8"`` (what ``from_pretrained`` picks where torchvision is
    installed) against HF's torchvision ``Gemma4ImageProcessor``, replayed from the committed
    goldens (tests/gen_goldens.py): the drop-in's whole answer, fed a uint8 image."""
    from _gemma4_corpus import make_input

    arr = make_input(case["source"])
    assert _sha256_of(arr) == case["input_sha256"]
    ours = Ours(sglang_mm_resample="aten_u8", max_soft_tokens=case["max_soft_tokens"])
    assert ours.reference == "aten_u8"
    out = ours(Image.fromarray(arr), return_tensors="np")
    assert list(out["pixel_values"].shape[1:]) == case["pixel_values_shape"]
    assert list(out["num_soft_tokens_per_image"]) == case["num_soft_tokens_per_image"]
    assert _sha256_of(out["pixel_values"][0]) == case["pixel_values_sha256"]
    assert _sha256_of(out["image_position_ids"][0]) == case["image_position_ids_sha256"]
