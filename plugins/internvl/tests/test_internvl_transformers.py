"""The transformers drop-in `GotOcr2ImageProcessorSglangMm` against HF's own
``GotOcr2ImageProcessorPil`` in the installed transformers (no torch): the same `BatchFeature`
bit for bit on the photo corpus with each shipped example spec, the tiling edge cases, every
input form, per-call overrides and batches; its refusals; its serialization; its registration
with ``AutoImageProcessor``; the torchvision reference replayed from the family's goldens; and
``accelerate`` on a whole ``InternVLProcessor``."""

from __future__ import annotations

import functools
import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _internvl_refs import (
    MEAN,
    PHOTOS,
    STD,
    TOKENS_3,
    TOKENS_3_5,
    gradient,
    internvl_processor,
    noise,
    photo,
)
from sglang_mm_internvl.hf_processor import GotOcr2ImageProcessorSglangMm as Ours
from transformers import GotOcr2ImageProcessorPil, TensorType

import sglang_mm_core.hf as mmhf
from sglang_mm_core.conformance.hf import (
    assert_batch_features_equal,
    check_never_falls_back,
    check_refused_forms,
    check_registration,
    check_thread_safety,
    input_forms,
)
from sglang_mm_core.errors import SpecError

ROOT = Path(__file__).resolve().parents[3]
SPECS = {
    name: json.loads((ROOT / "examples" / name / "spec.json").read_text())["params"]
    for name in ("internvl3", "internvl3_5")
}
FIXTURES = Path(__file__).parent / "fixtures"


def _config(params: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``preprocessor_config.json`` settings of a family params set (as the ``-hf``
    checkpoints ship them)."""
    p = {
        "tile_size": 448,
        "crop_to_patches": True,
        "min_patches": 1,
        "max_patches": 12,
        "image_mean": MEAN,
        "image_std": STD,
        **(params or {}),
    }
    return {
        "size": {"height": p["tile_size"], "width": p["tile_size"]},
        "crop_to_patches": p["crop_to_patches"],
        "min_patches": p["min_patches"],
        "max_patches": p["max_patches"],
        "image_mean": list(p["image_mean"]),
        "image_std": list(p["image_std"]),
    }


def _pair(params: dict[str, Any] | None = None) -> tuple[Any, Ours]:
    cfg = _config(params)
    return GotOcr2ImageProcessorPil(**cfg), Ours(resample="pil", **cfg)


def _both(ref: Any, ours: Any, ref_images: Any, our_images: Any = None, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = ref(ref_images, **kw)
        got = ours(ref_images if our_images is None else our_images, **kw)
    assert_batch_features_equal(got, want)
    return got


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("name", PHOTOS)
def test_corpus_photo_bit_exact_per_example_spec(name: str, spec: str) -> None:
    ref, ours = _pair(SPECS[spec])
    got = _both(ref, ours, photo(name))
    assert isinstance(got["pixel_values"], list) and isinstance(got["num_patches"], list)


# (width, height, settings): grid-choice ties both ways, a tile's size and smaller, extreme
# aspect ratios, min_patches above 1, max_patches 1 (one tile, no thumbnail).
EDGES = [
    (1, 1, {}),
    (633, 633, {}),
    (634, 634, {}),
    (1267, 633, {}),
    (634, 1268, {}),
    (546, 364, {"max_patches": 4}),
    (549, 366, {"max_patches": 4}),
    (1, 2000, {}),
    (640, 480, {"max_patches": 1}),
    (640, 480, {"min_patches": 3}),
    (300, 300, {"min_patches": 4, "max_patches": 6}),
    (230, 75, {"tile_size": 28, "max_patches": 9}),
    (75, 230, {"tile_size": 56, "min_patches": 2, "max_patches": 5}),
]


@pytest.mark.parametrize(("w", "h", "kw"), EDGES, ids=[f"{w}x{h}-{kw}" for w, h, kw in EDGES])
def test_tiling_edge_cases(w: int, h: int, kw: dict[str, Any]) -> None:
    ref, ours = _pair(kw)
    image = gradient(w, h) if (w * h) % 2 else noise(w, h, seed=w + h)
    _both(ref, ours, image, return_tensors="np")


def test_batch_of_different_sizes_and_return_tensors() -> None:
    ref, ours = _pair()
    images = [photo("chelsea.png"), noise(97, 61, 1), noise(33, 400, 2), photo("camera.png")]
    got = _both(ref, ours, images)
    assert len(got["num_patches"]) == 4 and len(set(got["num_patches"])) > 1
    got = _both(ref, ours, images, return_tensors="np")
    assert got["pixel_values"].shape[0] == int(got["num_patches"].sum())
    assert got["num_patches"].dtype == np.int64
    _both(ref, ours, [[images[0]], [images[1], images[2]], [images[3]]], return_tensors="np")
    _both(ref, ours, images[1], return_tensors=TensorType.NUMPY)


def test_every_input_form(tmp_path: Path) -> None:
    ref, ours = _pair({"tile_size": 56})
    names = []
    for form in input_forms(np.asarray(gradient(131, 77)), tmp_dir=tmp_path):
        _both(ref, ours, form.reference_image, form.image, **form.kwargs)
        names.append(form.name)
    assert {
        "pil_rgba",
        "pil_p_transparency",
        "pil_i16",
        "pil_cmyk",
        "np_chw_u8",
        "np_hwc_f32_unit",
        "np_batch_4d",
        "nested_list",
        "png_bytes",
        "png_path",
    } <= set(names)
    _both(ref, ours, np.asarray(gradient(131, 77)) > 100)  # a bool array, as HF takes it


def test_forms_hf_refuses_are_refused() -> None:
    """Where HF raises, ours raises a typed error; where HF silently rescales a [0, 1] float
    image twice (do_rescale on), ours refuses rather than guess."""
    ref, ours = _pair({"tile_size": 56})
    check_refused_forms(ref, ours, np.asarray(gradient(97, 61)))
    # No image at all: HF answers empty lists, and so does ours.
    assert ref([]).data == {"pixel_values": [], "num_patches": []}
    assert ours([]).data == {"pixel_values": [], "num_patches": []}


def test_per_call_overrides() -> None:
    ref, ours = _pair()
    img = photo("astronaut.png")
    wide = noise(700, 260, 5)
    _both(ref, ours, wide, crop_to_patches=False)
    _both(ref, ours, wide, max_patches=4)
    _both(ref, ours, wide, min_patches=3, max_patches=8)
    _both(ref, ours, wide, min_patches=0)
    _both(ref, ours, wide, max_patches=1)
    _both(ref, ours, wide, min_patches=9, max_patches=4)  # no grid: HF's 1x1 fallback
    _both(ref, ours, wide, max_patches=0)
    _both(ref, ours, wide, do_resize=False)  # ignored by HF's tiling branch
    _both(ref, ours, img, size={"height": 224, "width": 224})
    _both(ref, ours, img, size=112, crop_to_patches=False)
    _both(ref, ours, img, image_mean=[0.5, 0.5, 0.5], image_std=0.5)
    _both(ref, ours, img, do_convert_rgb=False)
    _both(ref, ours, [img, wide], max_patches=6, return_tensors="np")
    # the configured values again after the overrides
    _both(ref, ours, wide)


def test_class_defaults_as_got_ocr2_ships_them() -> None:
    """No settings: HF's class defaults (GOT-OCR 2: 384-pixel tiles, CLIP mean and std,
    untiled unless a call asks for tiles, as ``GotOcr2Processor`` does)."""
    ref, ours = GotOcr2ImageProcessorPil(), Ours(resample="pil")
    img = photo("coffee.png")
    got = _both(ref, ours, img, return_tensors="np")
    assert got["pixel_values"].shape == (1, 3, 384, 384)
    got = _both(ref, ours, img, crop_to_patches=True, max_patches=6, return_tensors="np")
    assert got["pixel_values"].shape[0] > 1


def test_refusals_at_construction_name_the_key() -> None:
    refused = {
        "do_center_crop": {"do_center_crop": True},
        "do_pad": {"do_pad": True},
        "do_normalize": {"do_normalize": False},
        "do_resize": {"do_resize": False},
        "do_rescale": {"do_rescale": False},
        "resample": {"resample": 2},
        "rescale_factor": {"rescale_factor": 0.5},
        "mystery_knob": {"mystery_knob": 1},
        "size": {"size": {"height": 448, "width": 224}},
        "max_patches": {"crop_to_patches": True, "max_patches": 100},
        "names no HF backend": {"sglang_mm_resample": "lanczos"},
        "resample='lanczos'": {"resample": "lanczos"},
    }
    for key, kw in refused.items():
        with pytest.raises(SpecError, match=key):
            Ours(**kw)


def test_refusals_per_call_name_the_key() -> None:
    ref, ours = _pair()
    img = noise(300, 200)
    refused = {
        "size": {"size": {"height": 448, "width": 224}},
        "resample": {"resample": 2},
        "do_normalize": {"do_normalize": False},
        "rescale_factor": {"rescale_factor": 0.5},
        "max_patches": {"max_patches": 65},
        "do_resize": {"do_resize": False, "crop_to_patches": False},
    }
    for key, kw in refused.items():
        ref(img, **kw)  # HF answers these
        with pytest.raises(SpecError, match=key):
            ours(img, **kw)
    _both(ref, ours, img)  # the instance is unchanged by the refused calls


def test_attributes_and_helpers_match_hf() -> None:
    ref, ours = _pair()
    for attr in ("model_input_names", "size", "crop_to_patches", "min_patches", "max_patches"):
        assert getattr(ours, attr) == getattr(ref, attr), attr
    assert ours.valid_kwargs is ref.valid_kwargs
    assert ours._valid_kwargs_names == ref._valid_kwargs_names
    overrides = (
        None,
        {"max_patches": 4},
        {"crop_to_patches": False},
        {"min_patches": 3, "max_patches": 6},
        {"patch_size": {"height": 224, "width": 224}},
    )
    for h, w in ((480, 640), (1080, 1920), (31, 5000), (448, 448), (1, 1)):
        for kw in overrides:
            n = ours.get_number_of_image_patches(h, w, kw)
            assert n == ref.get_number_of_image_patches(h, w, kw), (h, w, kw)
    for w, h in ((640, 480), (90, 700)):
        out = ours(noise(w, h))
        assert out["num_patches"] == [ours.get_number_of_image_patches(h, w)]
    assert ours.reference == "pil"
    assert Ours().reference == mmhf.default_reference() == "pil"  # no torchvision here


def test_serialization_round_trips(tmp_path: Path) -> None:
    ref, ours = _pair(SPECS["internvl3_5"])
    saved = json.loads(ours.to_json_string())
    assert saved["image_processor_type"] == "GotOcr2ImageProcessor"
    assert saved.pop("sglang_mm_resample") == "pil"
    stock = json.loads(ref.to_json_string())
    assert stock.pop("image_processor_type").startswith("GotOcr2ImageProcessor")
    saved.pop("image_processor_type")
    assert saved == stock
    ours.save_pretrained(tmp_path)
    again = Ours.from_pretrained(tmp_path)
    assert type(again) is Ours and again.to_dict() == ours.to_dict()
    assert again.reference == "pil"
    img = photo("coffee.png")
    _both(ref, again, img)
    plain = GotOcr2ImageProcessorPil.from_pretrained(tmp_path)
    assert type(plain) is GotOcr2ImageProcessorPil
    for key in ("size", "crop_to_patches", "min_patches", "max_patches", "image_mean"):
        assert getattr(plain, key) == getattr(ref, key), key
    _both(plain, again, img)


def test_auto_image_processor_backend_for_every_model_type(tmp_path: Path) -> None:
    types = check_registration(
        Ours,
        _config(),
        tmp_path,
        expect=("internvl", "got_ocr2", "aya_vision"),
        unnamed=("internvl",),
    )
    assert types == mmhf.model_types(Ours)  # every listed model type's config class imports
    img = noise(500, 300)
    mine = mmhf.image_processor(tmp_path / "internvl-named")
    assert_batch_features_equal(mine(img), GotOcr2ImageProcessorPil(**_config())(img))


def test_image_processor_never_falls_back(tmp_path: Path) -> None:
    check_never_falls_back(tmp_path, "CLIPImageProcessor")


def test_torchvision_reference_replays_the_goldens() -> None:
    """``resample="aten_u8"`` (HF's torchvision backend) through the drop-in: the
    family's goldens captured from ``GotOcr2ImageProcessor`` (torch, outside CI)."""
    goldens = json.loads((FIXTURES / "aten_goldens.json").read_text())
    cases = [c for c in goldens["cases"] if "photo" in c["source"]][:3]
    assert len(cases) == 3
    for case in cases:
        ours = Ours(resample="aten_u8", **_config(goldens["params"][case["params"]]))
        assert ours.reference == "aten_u8"
        out = ours(photo(case["source"]["photo"]), return_tensors="np")
        pv = out["pixel_values"]
        assert pv.dtype == np.float32 and list(pv.shape) == case["pixel_values_shape"]
        assert hashlib.sha256(pv.tobytes()).hexdigest() == case["pixel_values_sha256"]
        assert out["num_patches"].tolist() == case["num_patches"]


def test_many_threads_one_instance_identical() -> None:
    ours = Ours(resample="pil", **_config())
    images = [noise(300 + 97 * i, 200 + 41 * i, i) for i in range(4)]
    check_thread_safety(
        [functools.partial(ours, img, max_patches=4 + i) for i, img in enumerate(images)]
    )


@pytest.mark.parametrize("tokens", [TOKENS_3, TOKENS_3_5], ids=["internvl3", "internvl3_5"])
def test_accelerate_whole_processor(tokens: dict[str, int]) -> None:
    """``InternVLProcessor`` insists on a video processor, whose class needs torchvision; CI
    has none, so the stock processor is HF's class with only its attribute list narrowed to
    the image processor and the tokenizer (``_internvl_refs.internvl_processor``, on a local
    tokenizer with the real special-token ids). Everything the call runs is HF's own code."""
    stock = internvl_processor(tokens)
    stock.tokenizer.pad_token = "[UNK]"  # so that a batch of prompts pads (attention_mask)
    fast = mmhf.accelerate(stock)
    assert type(fast.image_processor) is Ours and type(stock.image_processor) is not Ours
    assert fast.tokenizer is stock.tokenizer
    assert fast.image_processor.reference == "pil"
    text = [
        "w1 <IMG_CONTEXT> w2",
        "w3 <IMG_CONTEXT> w4 <IMG_CONTEXT>",
    ]
    images = [[photo("rocket.jpg")], [noise(200, 90), photo("logo.png")]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kw in ({}, {"return_tensors": "np", "padding": True}):
            want = stock(text=text, images=images, **kw)
            got = fast(text=text, images=images, **kw)
            assert {"input_ids", "attention_mask", "pixel_values"} <= set(want)
            assert_batch_features_equal(got, want)
    assert mmhf.accelerate(fast) is fast
