"""The transformers drop-in `Gemma3ImageProcessorSglangMm` against HF's own
``Gemma3ImageProcessorPil`` in the installed transformers (no torch): the same `BatchFeature`
bit for bit on the photo corpus with the shipped example spec and with pan and scan, the
pan-and-scan edge cases, every input form, per-call overrides and batches; its refusals; its
serialization; its registration with ``AutoImageProcessor``; the torchvision reference replayed
from the family's goldens; and ``accelerate`` on a whole ``Gemma3Processor`` (which has no
video processor, so the stock one is built as it is, from a local tokenizer)."""

from __future__ import annotations

import functools
import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import skimage.data
from _gemma3_corpus import make_input
from _gemma3_refs import hf_pil, noise, processor, tokenizer
from PIL import Image
from sglang_mm_gemma3.hf_processor import Gemma3ImageProcessorSglangMm as Ours
from test_gemma3_pil_parity import PAS_CASES, PHOTOS
from transformers import Gemma3ImageProcessorPil, Gemma3Processor

import sglang_mm_core.hf as mmhf
from sglang_mm_core.conformance.hf import (
    assert_batch_features_equal,
    check_never_falls_back,
    check_refused_forms,
    check_registration,
    check_thread_safety,
    input_forms,
)
from sglang_mm_core.conformance.images import generated_image
from sglang_mm_core.errors import KernelArgumentError, SpecError

ROOT = Path(__file__).resolve().parents[3]
SPEC = json.loads((ROOT / "examples" / "gemma3" / "spec.json").read_text())["params"]
GOLDENS = json.loads((Path(__file__).parent / "fixtures" / "aten_goldens.json").read_text())
PAS = {
    "do_pan_and_scan": True,
    "pan_and_scan_min_crop_size": 256,
    "pan_and_scan_max_num_crops": 4,
    "pan_and_scan_min_ratio_to_activate": 1.2,
}
# google/gemma-3-4b-it's preprocessor_config.json as shipped (nulls are HF's defaults).
SHIPPED = {
    "do_convert_rgb": None,
    "do_normalize": True,
    "do_pan_and_scan": None,
    "do_rescale": True,
    "do_resize": True,
    "image_mean": [0.5, 0.5, 0.5],
    "image_processor_type": "Gemma3ImageProcessor",
    "image_seq_length": 256,
    "image_std": [0.5, 0.5, 0.5],
    "pan_and_scan_max_num_crops": None,
    "pan_and_scan_min_crop_size": None,
    "pan_and_scan_min_ratio_to_activate": None,
    "processor_class": "Gemma3Processor",
    "resample": 2,
    "rescale_factor": 0.00392156862745098,
    "size": {"height": 896, "width": 896},
}


def _config(params: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """The ``preprocessor_config.json`` settings of a family params set."""
    return {
        "size": {"height": params["size"], "width": params["size"]},
        "resample": 2,
        "rescale_factor": params["rescale_factor"],
        "image_mean": list(params["image_mean"]),
        "image_std": list(params["image_std"]),
        "do_pan_and_scan": params["do_pan_and_scan"],
        **extra,
    }


CONFIGS = {"example": _config(SPEC), "pan_and_scan": _config(SPEC, **PAS)}


def _pair(config: dict[str, Any]) -> tuple[Gemma3ImageProcessorPil, Ours]:
    return Gemma3ImageProcessorPil(**config), Ours(sglang_mm_resample="pil", **config)


def _both(ref: Any, ours: Any, ref_images: Any, our_images: Any = None, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = ref(ref_images, **kw)
        got = ours(ref_images if our_images is None else our_images, **kw)
    assert_batch_features_equal(got, want)
    return want


def photo(name: str) -> Image.Image:
    return Image.fromarray(np.ascontiguousarray(getattr(skimage.data, name)()[:, :, :3]))


def test_the_example_spec_is_what_the_configs_hold() -> None:
    assert SPEC["resample"] == "pil" and SPEC["do_pan_and_scan"] is False
    assert CONFIGS["example"]["size"] == {"height": 896, "width": 896}
    # The same settings as the family's parity references (tests/_gemma3_refs.py).
    for config, pas in (("example", False), ("pan_and_scan", True)):
        stock = Gemma3ImageProcessorPil(**CONFIGS[config]).to_dict()
        assert {k: v for k, v in stock.items() if not k.startswith("pan_")} == {
            k: v for k, v in hf_pil(pas).to_dict().items() if not k.startswith("pan_")
        }
    assert Gemma3ImageProcessorPil(**CONFIGS["pan_and_scan"]).to_dict() == hf_pil(True).to_dict()


@pytest.mark.parametrize("name", PHOTOS)
@pytest.mark.parametrize("config", CONFIGS, ids=list(CONFIGS))
def test_corpus_photo_bit_exact(name: str, config: str) -> None:
    ref, ours = _pair(CONFIGS[config])
    want = _both(ref, ours, photo(name), return_tensors="np")
    crops = int(want["num_crops"][0])
    assert want["pixel_values"].shape == (1 + crops, 3, 896, 896)
    if config == "pan_and_scan" and name in ("coffee", "rocket"):
        assert crops == 2  # landscape photos past the 1.2 ratio: the crops are compared too


def test_pan_and_scan_edge_cases_in_one_batch() -> None:
    """The family's pan-and-scan cases (both sides of the ratio, portrait, the crop cap,
    crops under the minimum), as one batch of different sizes, in both containers."""
    ref, ours = _pair(CONFIGS["pan_and_scan"] | {"size": {"height": 224, "width": 224}})
    images = [noise(w, h, seed=w + h) for w, h, _ in PAS_CASES]
    want = _both(ref, ours, images)
    assert want["num_crops"] == [crops for _, _, crops in PAS_CASES]
    assert len(want["pixel_values"]) == len(images) + sum(want["num_crops"])
    _both(ref, ours, images, return_tensors="np")


def test_batch_of_different_sizes_and_return_tensors() -> None:
    ref, ours = _pair(CONFIGS["example"])
    images = [photo("chelsea"), noise(97, 61, 1), noise(33, 400, 2), noise(1, 1, 3)]
    want = _both(ref, ours, images)
    assert isinstance(want["pixel_values"], list) and want["num_crops"] == [0, 0, 0, 0]
    _both(ref, ours, images, return_tensors="np")
    _both(ref, ours, images[1:2], return_tensors="np")


@pytest.mark.parametrize("pan_and_scan", [False, True], ids=["plain", "pan_and_scan"])
def test_every_input_form(pan_and_scan: bool, tmp_path: Path) -> None:
    """Every form of a 131x77 image (with pan and scan: two 66x77 crops, each cut from the
    form's own samples, floats and all)."""
    extra = PAS | {"pan_and_scan_min_crop_size": 32} if pan_and_scan else {}
    ref, ours = _pair(_config(SPEC, **extra) | {"size": {"height": 112, "width": 112}})
    names = []
    for form in input_forms(generated_image(131, 77), tmp_dir=tmp_path):
        want = _both(ref, ours, form.reference_image, form.image, **form.kwargs)
        assert set(want["num_crops"]) == {2 if pan_and_scan else 0}, form.name
        names.append(form.name)
    assert {"pil_rgba", "pil_p_transparency", "pil_i16", "np_hwc_f32_unit", "png_bytes"} <= set(
        names
    )
    assert "png_path" in names


def test_forms_hf_refuses_are_refused() -> None:
    """A [0, 1] float image with do_rescale on (HF rescales it twice) and an out-of-range
    float image are errors, not silently different pixels."""
    ref, ours = _pair(CONFIGS["example"] | {"size": {"height": 64, "width": 64}})
    check_refused_forms(ref, ours, generated_image(40, 30))
    with pytest.raises(ValueError):
        ref(np.zeros((2, 3, 4, 5, 3), np.uint8))
    with pytest.raises(KernelArgumentError, match="dimensions"):
        ours(np.zeros((2, 3, 4, 5, 3), np.uint8))


def test_per_call_overrides() -> None:
    ref, ours = _pair(CONFIGS["example"] | {k: v for k, v in PAS.items() if k != "do_pan_and_scan"})
    img = noise(900, 300, 4)
    _both(ref, ours, img, size={"height": 448, "width": 448})
    _both(ref, ours, img, size=336)
    want = _both(ref, ours, img, do_pan_and_scan=True, size=224)
    assert want["num_crops"] == [3]
    want = _both(
        ref,
        ours,
        img,
        do_pan_and_scan=True,
        pan_and_scan_max_num_crops=2,
        pan_and_scan_min_crop_size=100,
        pan_and_scan_min_ratio_to_activate=2.5,
        size=224,
    )
    assert want["num_crops"] == [2]
    want = _both(ref, ours, img, do_pan_and_scan=True, pan_and_scan_min_ratio_to_activate=3.5)
    assert want["num_crops"] == [0]
    _both(ref, ours, img, image_mean=[0.48145466, 0.4578275, 0.40821073], image_std=0.27)
    _both(ref, ours, img, rescale_factor=1 / 127.5, size=224)
    # HF ignores these keywords in this class; so do we.
    _both(ref, ours, img, do_center_crop=True, crop_size=100, do_pad=True, size=224)
    # A per-call do_pan_and_scan=False wins over a configured True.
    ref_pas, ours_pas = _pair(CONFIGS["pan_and_scan"])
    want = _both(ref_pas, ours_pas, img, do_pan_and_scan=False, size=224)
    assert want["num_crops"] == [0]


def test_pan_and_scan_without_its_settings_is_an_error_in_both() -> None:
    """The stock class leaves the pan-and-scan numbers unset (``Gemma3Processor`` fills them
    in): HF then fails comparing with None, and ours names the setting."""
    ref, ours = Gemma3ImageProcessorPil(), Ours(resample="pil")
    with pytest.raises(TypeError):
        ref(noise(900, 300, 5), do_pan_and_scan=True)
    with pytest.raises(SpecError, match="pan_and_scan_min_crop_size"):
        ours(noise(900, 300, 5), do_pan_and_scan=True)


def test_class_defaults_equal_hf() -> None:
    ref, ours = Gemma3ImageProcessorPil(), Ours(resample="pil")
    want = _both(ref, ours, noise(300, 200, 6), return_tensors="np")
    assert want["pixel_values"].shape == (1, 3, 224, 224)


@pytest.mark.parametrize(
    ("kw", "key"),
    [
        ({"resample": 3}, "resample"),
        ({"do_normalize": False}, "do_normalize"),
        ({"do_resize": False}, "do_resize"),
        ({"do_rescale": False}, "do_rescale"),
        ({"do_convert_rgb": False}, "do_convert_rgb"),
        ({"do_center_crop": True}, "do_center_crop"),
        ({"mystery_knob": 1}, "mystery_knob"),
        ({"size": {"height": 896, "width": 640}}, "size"),
        ({"size": {"shortest_edge": 896}}, "size"),
        ({"size": 8192}, "size"),
        ({"do_pan_and_scan": True, "pan_and_scan_max_num_crops": 1}, "pan_and_scan_max_num_crops"),
        ({"resample": "lanczos"}, "resample='lanczos'"),
        ({"sglang_mm_resample": "lanczos"}, "names no HF backend"),
    ],
)
def test_refusals_at_construction_name_the_key(kw: dict[str, Any], key: str) -> None:
    with pytest.raises(SpecError, match=key):
        Ours(**(CONFIGS["pan_and_scan"] | kw))


def test_refusals_per_call_name_the_key() -> None:
    ours = Ours(sglang_mm_resample="pil", **CONFIGS["pan_and_scan"])
    img = noise(64, 48, 0)
    for kw, key in [
        ({"resample": 3}, "resample"),
        ({"do_normalize": False}, "do_normalize"),
        ({"do_resize": False}, "do_resize"),
        ({"size": {"height": 100, "width": 200}}, "size"),
        ({"pan_and_scan_max_num_crops": 1}, "pan_and_scan_max_num_crops"),
        ({"pan_and_scan_min_crop_size": 0}, "pan_and_scan_min_crop_size"),
    ]:
        with pytest.raises(SpecError, match=key):
            ours(img, **kw)
    with pytest.raises(KernelArgumentError, match="do_rescale"):
        ours(img, do_rescale=False)
    with pytest.raises(KernelArgumentError, match="do_convert_rgb"):
        ours(img.convert("L"), do_convert_rgb=False)


def test_attributes_and_helpers_match_hf() -> None:
    ref, ours = _pair(CONFIGS["pan_and_scan"])
    for attr in (
        "model_input_names",
        "size",
        "resample",
        "rescale_factor",
        "image_mean",
        "image_std",
        "do_pan_and_scan",
        "pan_and_scan_min_crop_size",
        "pan_and_scan_max_num_crops",
        "pan_and_scan_min_ratio_to_activate",
        "do_convert_rgb",
        "default_to_square",
        "backend",
    ):
        assert getattr(ours, attr) == getattr(ref, attr), attr
    assert ours.valid_kwargs is ref.valid_kwargs
    assert ours.model_input_names == ["pixel_values", "num_crops"]
    # HF's own helper methods are inherited unchanged: pan_and_scan answers the crops HF cuts.
    chw = np.zeros((3, 300, 900), np.uint8)
    assert len(ours.pan_and_scan(chw, 256, 4, 1.2)) == len(ref.pan_and_scan(chw, 256, 4, 1.2))
    assert ours.reference == "pil"
    assert Ours().reference == mmhf.default_reference() == "pil"  # no torchvision here


def test_serialization_round_trips(tmp_path: Path) -> None:
    ref, ours = _pair(CONFIGS["pan_and_scan"])
    saved = json.loads(ours.to_json_string())
    assert saved["image_processor_type"] == "Gemma3ImageProcessor"
    assert saved.pop("sglang_mm_resample") == "pil"
    assert saved == json.loads(ref.to_json_string())
    ours.save_pretrained(tmp_path)
    again = Ours.from_pretrained(tmp_path)
    assert type(again) is Ours and again.to_dict() == ours.to_dict()
    plain = Gemma3ImageProcessorPil.from_pretrained(tmp_path)
    # The stock class keeps our one extra key as an inert attribute; every setting is equal.
    assert plain.to_dict().pop("sglang_mm_resample") == "pil"
    assert {k: v for k, v in plain.to_dict().items() if k != "sglang_mm_resample"} == (
        ref.to_dict()
    )
    img = photo("coffee")
    want = _both(plain, again, img, return_tensors="np")
    assert int(want["num_crops"][0]) == 2


def test_the_shipped_config_loads_in_both(tmp_path: Path) -> None:
    """google/gemma-3-*-it's file: nulls for the pan-and-scan settings, the processor's own
    keys (image_seq_length, processor_class) kept."""
    (tmp_path / "preprocessor_config.json").write_text(json.dumps(SHIPPED))
    ref = Gemma3ImageProcessorPil.from_pretrained(tmp_path)
    ours = Ours.from_pretrained(tmp_path)
    assert ours.reference == "pil" and ours.image_seq_length == 256
    saved = json.loads(ours.to_json_string())
    assert saved == json.loads(ref.to_json_string())
    _both(ref, ours, photo("rocket"), return_tensors="np")


def test_auto_image_processor_backend_for_every_model_type(tmp_path: Path) -> None:
    check_registration(
        Ours, SHIPPED, tmp_path, expect=("gemma3", "shieldgemma2"), unnamed=("gemma3",)
    )


def test_image_processor_never_falls_back(tmp_path: Path) -> None:
    check_never_falls_back(tmp_path, "SiglipImageProcessor")


def _sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


@pytest.mark.parametrize("case", GOLDENS["cases"], ids=[c["id"] for c in GOLDENS["cases"]])
def test_torchvision_reference_replays_the_goldens(case: dict[str, Any]) -> None:
    """``resample="aten_u8"`` (what ``from_pretrained`` picks where torchvision is installed)
    against HF's torchvision ``Gemma3ImageProcessor``, replayed from the committed goldens
    (tests/gen_goldens.py): the drop-in's whole answer, fed a uint8 array."""
    arr = make_input(case["source"])
    assert _sha256(arr) == case["input_sha256"]
    config = CONFIGS["pan_and_scan" if case["pan_and_scan"] else "example"]
    ours = Ours(sglang_mm_resample="aten_u8", **config)
    assert ours.reference == "aten_u8"
    out = ours(Image.fromarray(arr), return_tensors="np")
    assert list(out["pixel_values"].shape) == case["pixel_values_shape"]
    assert out["num_crops"].tolist() == case["num_crops"]
    assert _sha256(out["pixel_values"]) == case["pixel_values_sha256"]


def test_torchvision_reference_refuses_float_arrays() -> None:
    ours = Ours(sglang_mm_resample="aten_u8", **CONFIGS["example"])
    with pytest.raises(KernelArgumentError, match="torchvision"):
        ours(generated_image(40, 30).astype(np.float32))


def test_many_threads_one_instance_identical() -> None:
    config = CONFIGS["pan_and_scan"] | {"size": 224, "pan_and_scan_min_crop_size": 64}
    ours = Ours(sglang_mm_resample="pil", **config)
    images = [noise(300 + 170 * i, 200 + 11 * i, i) for i in range(4)]
    assert [ours(img)["num_crops"][0] for img in images] == [2, 2, 3, 3]
    check_thread_safety([functools.partial(ours, img) for img in images])


@pytest.mark.parametrize("pan_and_scan", [False, True], ids=["plain", "pan_and_scan"])
def test_accelerate_whole_processor(pan_and_scan: bool) -> None:
    """``Gemma3Processor``'s own defaults (``do_pan_and_scan: False`` among them) win over the
    image processor's settings, so pan and scan is asked for in the call, as callers do."""
    stock = processor(pan_and_scan)
    kw = {"do_pan_and_scan": True} if pan_and_scan else {}
    assert isinstance(stock, Gemma3Processor)
    fast = mmhf.accelerate(stock)
    assert type(fast.image_processor) is Ours and type(stock.image_processor) is not Ours
    assert fast.tokenizer is stock.tokenizer
    assert fast.image_processor.reference == "pil"
    text = [
        "Describe <start_of_image>",
        "Compare <start_of_image> and <start_of_image> these",
    ]
    images = [[photo("coffee")], [noise(200, 90, 7), noise(120, 700, 8)]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = stock(text=text, images=images, padding=True, **kw)
        got = fast(text=text, images=images, padding=True, **kw)
        assert {"input_ids", "attention_mask", "token_type_ids", "pixel_values"} <= set(want)
        assert_batch_features_equal(got, want)
        want = stock(text=text, images=images, padding=True, return_tensors="np", **kw)
        got = fast(text=text, images=images, padding=True, return_tensors="np", **kw)
    assert_batch_features_equal(got, want)
    crops = len(want["pixel_values"]) - 3
    assert crops == (2 if pan_and_scan else 0)  # coffee gets two crops; the others too small
    assert mmhf.accelerate(fast) is fast


def test_accelerate_keeps_a_tokenizer_built_here() -> None:
    """The local tokenizer carries Gemma 3's real special ids (no download)."""
    tok = tokenizer()
    assert tok.convert_tokens_to_ids("<start_of_image>") == 255999
    assert tok.convert_tokens_to_ids("<image_soft_token>") == 262144
