"""The transformers drop-in `Qwen2VLImageProcessorSglangMm` against HF's own
``Qwen2VLImageProcessorPil`` in the installed transformers: the same `BatchFeature` bit for
bit on the photo corpus, every input form, per-call overrides and batches; its refusals; its
serialization; its registration with ``AutoImageProcessor``; and ``accelerate`` on a whole
``Qwen2VLProcessor``."""

from __future__ import annotations

import functools
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _qwen_refs import PHOTOS, QWEN2, QWEN3, hf_pil_processor, noise, photo
from PIL import Image
from sglang_mm_qwen_vl.hf_processor import Qwen2VLImageProcessorSglangMm as Ours
from transformers import Qwen2VLImageProcessorPil

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

PARAM_SETS = {"qwen2": QWEN2, "qwen3": QWEN3}


def _config(params: dict[str, Any]) -> dict[str, Any]:
    return {
        "patch_size": params["patch_size"],
        "merge_size": params["merge_size"],
        "temporal_patch_size": params["temporal_patch_size"],
        "image_mean": list(params["image_mean"]),
        "image_std": list(params["image_std"]),
        "size": {"shortest_edge": params["min_pixels"], "longest_edge": params["max_pixels"]},
    }


def _pair(params: dict[str, Any]) -> tuple[Any, Ours]:
    return hf_pil_processor(params), Ours(resample="pil", **_config(params))


def _both(ref: Any, ours: Any, ref_images: Any, our_images: Any = None, **kw: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = ref(ref_images, **kw)
        got = ours(ref_images if our_images is None else our_images, **kw)
    assert_batch_features_equal(got, want)


@pytest.mark.parametrize("name", PHOTOS)
@pytest.mark.parametrize("params", PARAM_SETS, ids=list(PARAM_SETS))
def test_corpus_photo_bit_exact(name: str, params: str) -> None:
    ref, ours = _pair(PARAM_SETS[params])
    _both(ref, ours, photo(name))


def test_batch_of_different_sizes_and_return_tensors_np() -> None:
    ref, ours = _pair(QWEN2)
    images = [photo("chelsea.png"), noise(97, 61, 1), noise(33, 400, 2), photo("camera.png")]
    _both(ref, ours, images)
    _both(ref, ours, images, return_tensors="np")


def test_every_input_form(tmp_path: Path) -> None:
    ref, ours = _pair(QWEN2)
    names = []
    for form in input_forms(generated_image(131, 77), tmp_dir=tmp_path):
        _both(ref, ours, form.reference_image, form.image, **form.kwargs)
        names.append(form.name)
    assert {"pil_rgba", "pil_p_transparency", "pil_i16", "np_hwc_f32_unit", "png_bytes"} <= set(
        names
    )


def test_forms_hf_refuses_are_refused() -> None:
    """Where HF raises, ours raises a typed error naming the fault; a [0, 1] float image with
    do_rescale on (HF rescales it twice) is refused, not silently different pixels."""
    ref, ours = _pair(QWEN2)
    check_refused_forms(ref, ours, generated_image(40, 30))


def test_per_call_overrides() -> None:
    ref, ours = _pair(QWEN2)
    img = photo("astronaut.png")
    _both(ref, ours, img, size={"shortest_edge": 56 * 56, "longest_edge": 28 * 28 * 64})
    _both(ref, ours, img, min_pixels=256 * 28 * 28, max_pixels=512 * 28 * 28)
    _both(ref, ours, img, patch_size=16, merge_size=2)
    _both(ref, ours, img, image_mean=[0.5, 0.5, 0.5], image_std=0.5)


def test_refusals_name_the_key() -> None:
    with pytest.raises(SpecError, match="do_center_crop"):
        Ours(do_center_crop=True)
    with pytest.raises(SpecError, match="resample"):
        Ours(resample=2)
    with pytest.raises(SpecError, match="mystery_knob"):
        Ours(mystery_knob=1)
    ours = Ours(resample="pil")
    img = noise(64, 48)
    with pytest.raises(SpecError, match="resample"):
        ours(img, resample=2)
    with pytest.raises(SpecError, match="do_normalize"):
        ours(img, do_normalize=False)
    with pytest.raises(SpecError, match="rescale_factor"):
        ours(img, rescale_factor=0.5)
    with pytest.raises(KernelArgumentError, match="do_rescale"):
        ours(img, do_rescale=False)
    with pytest.raises(KernelArgumentError, match="aspect ratio"):
        ours(noise(201 * 3, 3))
    with pytest.raises(SpecError, match="resample='lanczos'"):
        Ours(resample="lanczos")
    with pytest.raises(SpecError, match="names no HF backend"):
        Ours(sglang_mm_resample="lanczos")


def test_attributes_and_helpers_match_hf() -> None:
    ref, ours = _pair(QWEN3)
    for attr in ("merge_size", "patch_size", "temporal_patch_size", "model_input_names"):
        assert getattr(ours, attr) == getattr(ref, attr), attr
    assert ours.valid_kwargs is ref.valid_kwargs
    for h, w in ((480, 640), (1080, 1920), (31, 5000), (28, 28)):
        for kw in (None, {"min_pixels": 1000, "max_pixels": 200_000}):
            assert ours.get_number_of_image_patches(h, w, kw) == ref.get_number_of_image_patches(
                h, w, kw
            )
    out = ours(noise(640, 480))
    assert out["pixel_values"].shape[0] == ours.get_number_of_image_patches(480, 640)
    assert ours.reference == "pil"
    assert Ours().reference == mmhf.default_reference() == "pil"  # no torchvision here


def test_serialization_round_trips(tmp_path: Path) -> None:
    ref, ours = _pair(QWEN3)
    saved = json.loads(ours.to_json_string())
    assert saved["image_processor_type"] == "Qwen2VLImageProcessor"
    assert saved.pop("sglang_mm_resample") == "pil"
    stock = {k: v for k, v in json.loads(ref.to_json_string()).items()}
    assert saved == stock
    ours.save_pretrained(tmp_path)
    again = Ours.from_pretrained(tmp_path)
    assert again.to_dict() == ours.to_dict()
    _both(ref, again, photo("coffee.png"))
    plain = Qwen2VLImageProcessorPil.from_pretrained(tmp_path)
    _both(plain, again, photo("coffee.png"))


def test_auto_image_processor_backend_for_every_model_type(tmp_path: Path) -> None:
    check_registration(
        Ours,
        _config(QWEN2),
        tmp_path,
        expect=("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_5"),
        unnamed=("qwen2_vl", "qwen3_vl"),
    )


def test_image_processor_never_falls_back(tmp_path: Path) -> None:
    check_never_falls_back(tmp_path, "CLIPImageProcessor")


def test_many_threads_one_instance_identical() -> None:
    ours = Ours(resample="pil")
    images = [noise(300 + 17 * i, 200 + 11 * i, i) for i in range(4)]
    check_thread_safety(
        [functools.partial(ours, img) for img in images]
        + [functools.partial(ours, images[0], size={"shortest_edge": 3136, "longest_edge": 10**5})]
    )


def _tokenizer() -> Any:
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    special = {
        "<|vision_start|>": 151652,
        "<|vision_end|>": 151653,
        "<|image_pad|>": 151655,
        "<|video_pad|>": 151656,
    }
    vocab = {w: i for i, w in enumerate(["<unk>", "hello", "world", "two", "photos"])}
    vocab.update(special)
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"<\|[a-z_]+\|>| |[^\s<]+"), behavior="isolated")
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        pad_token="<unk>",
        additional_special_tokens=list(special),
    )


def test_accelerate_whole_processor(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Qwen2VLProcessor`` insists on a video processor, whose class needs torchvision; CI
    has none, so the stock processor is built with ``video_processor=None`` past HF's class
    check for that one attribute. Everything the call runs is HF's own code."""
    from transformers import ProcessorMixin, Qwen2VLProcessor

    check = ProcessorMixin.check_argument_for_proper_class

    def lenient(self: Any, name: str, arg: Any) -> Any:
        return None if name == "video_processor" and arg is None else check(self, name, arg)

    monkeypatch.setattr(ProcessorMixin, "check_argument_for_proper_class", lenient)
    stock = Qwen2VLProcessor(
        image_processor=hf_pil_processor(QWEN2), tokenizer=_tokenizer(), video_processor=None
    )
    fast = mmhf.accelerate(stock)
    assert type(fast.image_processor) is Ours and type(stock.image_processor) is not Ours
    assert fast.tokenizer is stock.tokenizer
    text = [
        "hello <|vision_start|><|image_pad|><|vision_end|> world",
        "two <|vision_start|><|image_pad|><|vision_end|> photos "
        "<|vision_start|><|image_pad|><|vision_end|>",
    ]
    images = [[photo("rocket.jpg")], [noise(200, 90), photo("logo.png")]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = stock(text=text, images=images, padding=True)
        got = fast(text=text, images=images, padding=True)
    assert "input_ids" in want and "attention_mask" in want
    assert_batch_features_equal(got, want)
    assert mmhf.accelerate(fast) is fast


def test_pil_passthrough_is_not_copied_needlessly() -> None:
    """An RGB PIL image is read as it is (no conversion), with the same bits as HF's copy."""
    ours = Ours(resample="pil")
    img = Image.fromarray(generated_image(64, 64))
    _both(hf_pil_processor(QWEN2), ours, img)


def _golden_cases() -> list[dict[str, Any]]:
    from test_qwen_aten_parity import META

    return list(META["cases"])


@pytest.mark.parametrize("case", _golden_cases(), ids=lambda c: c["id"])
def test_torchvision_reference_replays_the_goldens(case: dict[str, Any]) -> None:
    """``resample="aten_u8"`` (what ``from_pretrained`` picks where torchvision is installed)
    against HF's torchvision ``Qwen2VLImageProcessor``, replayed from the committed goldens
    (tests/gen_goldens.py): the drop-in's whole answer."""
    from test_qwen_aten_parity import ARRAYS, META, _input, _sha256

    params = META["params"][case["params"]]
    ours = Ours(sglang_mm_resample="aten_u8", **_config(params))
    # As a PIL image: HF reads a [1, 1, 3] array as channels-first (ambiguous shapes are).
    out = ours(Image.fromarray(_input(case)), return_tensors="np")
    got = out["pixel_values"]
    np.testing.assert_array_equal(out["image_grid_thw"], np.array(case["grid_thw"]).reshape(1, 3))
    assert list(got.shape) == case["pixel_values_shape"]
    if case["stored"] == "full":
        np.testing.assert_array_equal(got, ARRAYS[f"{case['id']}/pixel_values"], strict=True)
    assert _sha256(got) == case["pixel_values_sha256"]
