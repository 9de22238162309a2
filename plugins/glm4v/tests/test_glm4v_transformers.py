"""The transformers drop-ins ``Glm4vImageProcessorSglangMm`` and ``Glm46VImageProcessorSglangMm``
against HF's own ``Glm4vImageProcessorPil`` / ``Glm46VImageProcessorPil`` in the installed
transformers (no torch): the same `BatchFeature` bit for bit on the photo corpus, every input
form, per-call overrides and batches; their refusals; serialization; registration with
``AutoImageProcessor`` for every model type; ``accelerate`` on a whole ``Glm4vProcessor``; and
the torchvision reference through the committed goldens."""

from __future__ import annotations

import functools
import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _glm4v_corpus import make_input
from _glm4v_refs import PHOTOS, SHIPPED_PREPROCESSOR, noise, photo, pil_class, processor
from PIL import Image
from sglang_mm_glm4v.hf_processor import Glm4vImageProcessorSglangMm, Glm46VImageProcessorSglangMm

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

OURS = {"glm4v": Glm4vImageProcessorSglangMm, "glm46v": Glm46VImageProcessorSglangMm}
CONFIG = {
    k: v
    for k, v in SHIPPED_PREPROCESSOR.items()
    if k not in ("image_processor_type", "processor_class")
}
GOLDENS = json.loads((Path(__file__).parent / "fixtures" / "aten_goldens.json").read_text())


def _pair(model_type: str = "glm4v", **config: Any) -> tuple[Any, Any]:
    kw = {**CONFIG, **config}
    return pil_class(model_type)(**kw), OURS[model_type](sglang_mm_resample="pil", **kw)


def _both(ref: Any, ours: Any, ref_images: Any, our_images: Any = None, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = ref(ref_images, **kw)
        got = ours(ref_images if our_images is None else our_images, **kw)
    assert_batch_features_equal(got, want)
    return want


@pytest.mark.parametrize("model_type", ["glm4v", "glm46v"])
@pytest.mark.parametrize("name", PHOTOS)
def test_corpus_photo_bit_exact(name: str, model_type: str) -> None:
    _both(*_pair(model_type), photo(name))


@pytest.mark.parametrize("model_type", ["glm4v", "glm46v"])
def test_batch_of_different_sizes_and_return_tensors_np(model_type: str) -> None:
    ref, ours = _pair(model_type)
    images = [photo("chelsea.png"), noise(97, 61, 1), noise(3, 400, 2), noise(1, 1, 3)]
    _both(ref, ours, images)
    want = _both(ref, ours, images, return_tensors="np")
    assert want["image_grid_thw"].shape == (4, 3)


def test_every_input_form(tmp_path: Path) -> None:
    ref, ours = _pair()
    names = []
    for form in input_forms(generated_image(131, 77), tmp_dir=tmp_path):
        _both(ref, ours, form.reference_image, form.image, **form.kwargs)
        names.append(form.name)
    assert {"pil_rgba", "pil_p_transparency", "pil_i16", "np_hwc_f32_unit", "png_bytes"} <= set(
        names
    )


def test_forms_hf_refuses_are_refused() -> None:
    ref, ours = _pair()
    check_refused_forms(ref, ours, generated_image(40, 30))


def test_per_call_overrides() -> None:
    ref, ours = _pair("glm46v")
    img = photo("astronaut.png")
    _both(ref, ours, img, size={"shortest_edge": 56 * 56, "longest_edge": 28 * 28 * 64})
    _both(ref, ours, img, patch_size=16, merge_size=2)
    _both(ref, ours, img, temporal_patch_size=4)
    _both(ref, ours, img, image_mean=[0.5, 0.5, 0.5], image_std=0.5)


def test_refusals_name_the_key() -> None:
    ours_cls = Glm4vImageProcessorSglangMm
    for kw, key in [
        ({"do_center_crop": True}, "do_center_crop"),
        ({"resample": 2}, "resample"),
        ({"mystery_knob": 1}, "mystery_knob"),
        ({"resample": "lanczos"}, "resample='lanczos'"),
        ({"sglang_mm_resample": "lanczos"}, "names no HF backend"),
    ]:
        with pytest.raises(SpecError, match=key):
            ours_cls(**kw)
    ours = ours_cls(resample="pil")
    img = noise(64, 48)
    for kw, key in [
        ({"resample": 2}, "resample"),
        ({"do_normalize": False}, "do_normalize"),
        ({"do_resize": False}, "do_resize"),
        ({"rescale_factor": 0.5}, "rescale_factor"),
        ({"size": {"height": 224, "width": 224}}, "shortest_edge"),
    ]:
        with pytest.raises((SpecError, ValueError), match=key):
            ours(img, **kw)
    with pytest.raises(KernelArgumentError, match="do_rescale"):
        ours(img, do_rescale=False)
    with pytest.raises(KernelArgumentError, match="aspect ratio"):
        ours(noise(201, 1))
    with pytest.raises(ValueError, match="aspect ratio"):
        pil_class("glm4v")()(noise(201, 1))


@pytest.mark.parametrize("model_type", ["glm4v", "glm46v"])
def test_attributes_and_helpers_match_hf(model_type: str) -> None:
    ref, ours = _pair(model_type)
    for attr in ("merge_size", "patch_size", "temporal_patch_size", "model_input_names", "size"):
        assert getattr(ours, attr) == getattr(ref, attr), attr
    assert ours.valid_kwargs is ref.valid_kwargs
    for h, w in ((480, 640), (1080, 1920), (31, 5000), (1, 1), (27, 5000)):
        for kw in (None, {"size": {"shortest_edge": 1000, "longest_edge": 200_000}}):
            assert ours.get_number_of_image_patches(h, w, kw) == ref.get_number_of_image_patches(
                h, w, kw
            )
    out = ours(noise(640, 480))
    assert out["pixel_values"].shape[0] == ours.get_number_of_image_patches(480, 640)
    assert ours.reference == "pil"
    assert OURS[model_type]().reference == mmhf.default_reference() == "pil"  # no torchvision


def test_class_defaults_equal_hf() -> None:
    for model_type, cls in OURS.items():
        ref, ours = pil_class(model_type)(), cls(resample="pil")
        _both(ref, ours, noise(3000, 2000, 9))  # over the class's 28*28*15000 / 2 budget
        assert ours.to_dict() | {"sglang_mm_resample": None} == ref.to_dict() | {
            "sglang_mm_resample": None
        }


def test_serialization_round_trips(tmp_path: Path) -> None:
    ref, ours = _pair("glm46v")
    saved = json.loads(ours.to_json_string())
    assert saved["image_processor_type"] == "Glm46VImageProcessor"
    assert saved.pop("sglang_mm_resample") == "pil"
    assert saved == json.loads(ref.to_json_string())
    ours.save_pretrained(tmp_path)
    again = Glm46VImageProcessorSglangMm.from_pretrained(tmp_path)
    assert type(again) is Glm46VImageProcessorSglangMm and again.to_dict() == ours.to_dict()
    plain = pil_class("glm46v").from_pretrained(tmp_path)
    _both(plain, again, photo("coffee.png"))


def test_auto_image_processor_backend_for_every_model_type(tmp_path: Path) -> None:
    """``glm4v`` and ``glm46v`` are transformers' own mappings; ``glm4v_moe`` checkpoints name
    ``Glm4vImageProcessor`` in their config, which `image_processor` follows."""
    check_registration(
        Glm4vImageProcessorSglangMm, CONFIG, tmp_path / "a", expect=("glm4v",), unnamed=("glm4v",)
    )
    check_registration(
        Glm46VImageProcessorSglangMm,
        CONFIG,
        tmp_path / "b",
        expect=("glm46v",),
        unnamed=("glm46v",),
    )
    moe = tmp_path / "glm4v_moe"
    moe.mkdir()
    (moe / "preprocessor_config.json").write_text(json.dumps(SHIPPED_PREPROCESSOR))
    (moe / "config.json").write_text(json.dumps({"model_type": "glm4v_moe"}))
    assert type(mmhf.image_processor(moe)) is Glm4vImageProcessorSglangMm


def test_image_processor_never_falls_back(tmp_path: Path) -> None:
    check_never_falls_back(tmp_path, "CLIPImageProcessor")


def test_many_threads_one_instance_identical() -> None:
    ours = Glm4vImageProcessorSglangMm(resample="pil", **CONFIG)
    images = [noise(300 + 170 * i, 200 + 11 * i, i) for i in range(4)]
    small = {"shortest_edge": 3136, "longest_edge": 10**5}
    calls = [functools.partial(ours, img) for img in images]
    calls.append(functools.partial(ours, images[0], size=small))
    check_thread_safety(calls)


@pytest.mark.parametrize("model_type", ["glm4v", "glm46v"])
def test_accelerate_whole_processor(model_type: str) -> None:
    stock = processor(model_type)
    fast = mmhf.accelerate(stock)
    assert type(fast.image_processor) is OURS[model_type]
    assert type(stock.image_processor) is not OURS[model_type]
    assert fast.tokenizer is stock.tokenizer and fast.image_processor.reference == "pil"
    i = "<|begin_of_image|><|image|><|end_of_image|>"
    text = [f"Describe {i} this", f"compare {i} and {i}"]
    images = [[photo("rocket.jpg")], [noise(200, 90, 7), photo("logo.png")]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = stock(text=text, images=images, padding=True, return_tensors="np")
        got = fast(text=text, images=images, padding=True, return_tensors="np")
    assert {"input_ids", "mm_token_type_ids", "pixel_values", "image_grid_thw"} <= set(want)
    assert_batch_features_equal(got, want)
    assert mmhf.accelerate(fast) is fast


@pytest.mark.parametrize("case", GOLDENS["cases"][:12], ids=lambda c: c["id"])
def test_torchvision_reference_replays_the_goldens(case: dict[str, Any]) -> None:
    """``sglang_mm_resample="aten_u8"`` (what ``from_pretrained`` picks where torchvision is
    installed) against HF's torchvision class, replayed from the committed goldens: the
    drop-in's whole answer."""
    cls = OURS["glm46v" if case["model_type"] == "glm46v" else "glm4v"]
    ours = cls(sglang_mm_resample="aten_u8", **{**CONFIG, "size": case["size"]})
    out = ours(Image.fromarray(make_input(case["source"])), return_tensors="np")
    assert out["image_grid_thw"].tolist() == case["image_grid_thw"]
    got = np.ascontiguousarray(out["pixel_values"])
    assert list(got.shape) == case["pixel_values_shape"]
    assert hashlib.sha256(got.tobytes()).hexdigest() == case["pixel_values_sha256"]
