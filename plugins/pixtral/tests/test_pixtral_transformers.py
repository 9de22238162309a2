"""The transformers drop-in `PixtralImageProcessorSglangMm` against HF's own
``PixtralImageProcessorPil`` in the installed transformers: the same `BatchFeature` bit for
bit on the photo corpus (as PIL images and as their files), each shipped spec, every input
form, per-call overrides and batches of different sizes (padded and not); its refusals; its
serialization; its registration with ``AutoImageProcessor`` for every model type; and
``accelerate`` on a whole ``PixtralProcessor``. ``resample="aten_u8"`` is replayed from the
committed torchvision goldens."""

from __future__ import annotations

import functools
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _pixtral_refs import (
    MODELS,
    PHOTOS,
    SKIMAGE_DATA,
    gradient,
    hf_pil_processor,
    hf_processor,
    noise,
    photo,
)
from PIL import Image
from sglang_mm_pixtral import PixtralFamily, PixtralParams
from sglang_mm_pixtral.hf_processor import PixtralImageProcessorSglangMm as Ours
from transformers import AutoImageProcessor, PixtralImageProcessorPil
from transformers.image_utils import PILImageResampling, load_image

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
from sglang_mm_core.errors import KernelArgumentError, MmError, SpecError

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = Path(__file__).parent / "fixtures"
# What the model repositories' preprocessor_config.json hold, as HF's class takes it.
CONFIGS = {
    "pixtral_12b": {"patch_size": {"height": 16, "width": 16}, "size": {"longest_edge": 1024}},
    "mistral3": {"patch_size": {"height": 14, "width": 14}, "size": {"longest_edge": 1540}},
}


def _pair(config: dict[str, Any]) -> tuple[Any, Ours]:
    return hf_pil_processor(config), Ours(resample="pil", **config)


def _call(proc: Any, images: Any, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return proc(images, **kw)


def _both(ref: Any, ours: Any, ref_images: Any, our_images: Any = None, **kw: Any) -> Any:
    want = _call(ref, ref_images, **kw)
    got = _call(ours, ref_images if our_images is None else our_images, **kw)
    assert_batch_features_equal(got, want)
    return got


@pytest.mark.parametrize("model", sorted(MODELS))
def test_corpus_photos_bit_exact(model: str) -> None:
    """Each corpus photo alone at full size, under what ``PixtralProcessor`` hands the image
    processor (``patch_size * spatial_merge_size``)."""
    ref, ours = _pair(MODELS[model][1])
    for name in PHOTOS:
        got = _both(ref, ours, photo(name))
        assert got["pixel_values"].dtype == np.float32 and got["pixel_values"].ndim == 4


@pytest.mark.parametrize("name", ["rocket.jpg", "logo.png", "coffee.png"])
def test_corpus_files_as_bytes_and_paths(name: str) -> None:
    """HF opens a path with ``load_image``; ours decodes the same file (its path, its bytes)
    without PIL, to the same bits. logo.png has alpha, which ``load_image`` drops."""
    ref, ours = _pair(MODELS["pixtral_12b"][1])
    path = SKIMAGE_DATA / name
    want = _call(ref, str(path))
    assert_batch_features_equal(_call(ref, load_image(str(path))), want)
    for source in (str(path), path, path.read_bytes()):
        assert_batch_features_equal(_call(ours, source), want)


def _example_specs() -> dict[str, dict[str, Any]]:
    out = {}
    for f in sorted((ROOT / "examples").glob("*/spec.json")):
        spec = json.loads(f.read_text())
        if spec.get("family") == "pixtral":
            out[f.parent.name] = spec
    return out


SPECS = _example_specs()


def test_the_shipped_specs_are_found() -> None:
    assert {"pixtral", "mistral3"} <= set(SPECS)


@pytest.mark.parametrize("example", sorted(SPECS))
def test_example_spec_bit_exact(example: str) -> None:
    """The settings an example spec stands for, as HF's class takes them: ours equals HF's
    class and the spec's own family, image by image."""
    p = PixtralParams.model_validate(SPECS[example]["params"])
    config = {
        "patch_size": p.factor,
        "size": {"longest_edge": p.longest_edge},
        "image_mean": list(p.image_mean),
        "image_std": list(p.image_std),
    }
    ref, ours = _pair(config)
    family = PixtralFamily(p)
    images = [photo("astronaut.png"), photo("hubble_deep_field.jpg"), noise(1700, 300, 4)]
    got = _both(ref, ours, images, do_pad=False)
    for k, im in enumerate(images):
        want = family.process_item(np.asarray(im)).feature.array
        np.testing.assert_array_equal(got["pixel_values"][k], want, strict=True)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_batches_of_different_sizes(model: str) -> None:
    """HF pads a batch to its largest height and width with zeros (``do_pad``, on by
    default) or returns a list of unpadded arrays; ``image_sizes`` is a list of tuples, or an
    int64 array for ``return_tensors="np"``."""
    ref, ours = _pair(MODELS[model][1])
    images = [photo("chelsea.png"), noise(97, 61, 1), noise(33, 400, 2), gradient(1200, 31)]
    for kw in ({}, {"return_tensors": "np"}, {"do_pad": False}, {"do_pad": True}):
        got = _both(ref, ours, images, **kw)
    padded = _call(ours, images)["pixel_values"]
    assert padded.shape[0] == 4 and isinstance(got["pixel_values"], np.ndarray)
    unpadded = _call(ours, images, do_pad=False)["pixel_values"]
    assert isinstance(unpadded, list) and len({a.shape for a in unpadded}) == 4
    # A list of different sizes cannot become one array: both refuse return_tensors="np".
    with pytest.raises(ValueError):
        _call(ref, images, do_pad=False, return_tensors="np")
    with pytest.raises(ValueError):
        _call(ours, images, do_pad=False, return_tensors="np")
    same = [noise(64, 48, 5), noise(64, 48, 6)]
    _both(ref, ours, same, do_pad=False, return_tensors="np")
    _both(ref, ours, same, do_pad=False)


#: Input forms HF itself raises on (there are none for this class); ours must raise too.
HF_REFUSES: set[str] = set()


@pytest.mark.parametrize("model", sorted(MODELS))
def test_every_input_form(model: str, tmp_path: Path) -> None:
    ref, ours = _pair(MODELS[model][1])
    names, refused = [], set()
    for form in input_forms(generated_image(131, 77), tmp_dir=tmp_path):
        names.append(form.name)
        try:
            want = _call(ref, form.reference_image, **form.kwargs)
        except Exception:
            refused.add(form.name)
            with pytest.raises((MmError, ValueError, TypeError)):
                _call(ours, form.image, **form.kwargs)
            continue
        assert_batch_features_equal(_call(ours, form.image, **form.kwargs), want)
        for kw in ({"return_tensors": "np"}, {"do_pad": False}):
            _both(ref, ours, form.reference_image, form.image, **form.kwargs, **kw)
    assert refused == HF_REFUSES
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


def test_forms_hf_refuses_are_refused() -> None:
    """A [0, 1] float image with do_rescale on (HF rescales it twice), an out-of-range float
    image, an RGBA image with do_convert_rgb off and a 5-D array are errors on both sides,
    never silently different pixels."""
    ref, ours = _pair(MODELS["pixtral_12b"][1])
    check_refused_forms(ref, ours, generated_image(40, 30))
    with pytest.raises((ValueError, TypeError)):
        _call(ref, 3)
    with pytest.raises(KernelArgumentError, match="unsupported image type"):
        _call(ours, 3)


def test_per_call_overrides() -> None:
    """Every keyword HF's class reads per call, at values the family reproduces."""
    ref, ours = _pair(MODELS["pixtral_12b"][1])
    img = photo("astronaut.png")
    small = noise(300, 170, 3)
    for kw in (
        {"size": {"longest_edge": 300}},
        {"size": 200},  # HF's get_size_dict: {"height": 200, "width": 200}, the same bound
        {"size": {"height": 250, "width": 250}},
        {"size": {"shortest_edge": 10, "longest_edge": 260}},  # HF reads longest_edge only
        {"patch_size": 28},
        {"patch_size": {"height": 14, "width": 14}},
        {"patch_size": 0},  # falsy: HF falls back to the instance's
        {"patch_size": 28, "size": {"longest_edge": 1540}},  # Mistral 3 via PixtralProcessor
        {"image_mean": [0.5, 0.25, 0.0], "image_std": [0.5, 2.0, 1.0]},
        {"image_mean": 0.5, "image_std": 0.5},
        {"resample": PILImageResampling.BICUBIC, "rescale_factor": 1 / 255},
        {"resample": 3, "do_center_crop": False, "crop_size": {"height": 9, "width": 9}},
        {"do_convert_rgb": True, "do_rescale": True, "do_normalize": True, "do_resize": True},
        {"pad_size": {"height": 2000, "width": 2000}, "image_seq_length": 7},  # unread by HF
        {"default_to_square": True, "size": 333},
        {"disable_grouping": True, "device": "cpu", "data_format": "channels_first"},
        {"data_format": "channels_last"},  # ignored by HF's class, and by ours
    ):
        _both(ref, ours, [img, small], **kw)


def test_refusals_at_construction_name_the_key() -> None:
    for kw, key in (
        ({"do_center_crop": True}, "do_center_crop"),
        ({"resample": 2}, "resample"),
        ({"mystery_knob": 1}, "mystery_knob"),
        ({"do_resize": False}, "do_resize"),
        ({"do_normalize": False}, "do_normalize"),
        ({"do_rescale": False}, "do_rescale"),
        ({"do_convert_rgb": False}, "do_convert_rgb"),
        ({"rescale_factor": 0.5}, "rescale_factor"),
        ({"size": {"height": 100, "width": 200}}, "size"),
        ({"size": {"shortest_edge": 224}}, "size"),
        ({"patch_size": {"height": 14, "width": 16}}, "patch_size"),
        ({"size": {"longest_edge": 100_000}}, "longest_edge"),
        ({"image_std": [0.5, 0.0, 0.5]}, "image_std"),
        ({"resample": "lanczos"}, "resample='lanczos'"),
        ({"sglang_mm_resample": "lanczos"}, "names no HF backend"),
    ):
        with pytest.raises(SpecError, match=key):
            Ours(**kw)
    # HF's class accepts these two (separate height / width bounds, oblong patches); the
    # family cannot reproduce them, so they are refused rather than approximated.
    for kw in (
        {"size": {"height": 100, "width": 200}},
        {"patch_size": {"height": 14, "width": 16}},
    ):
        PixtralImageProcessorPil(**kw)


def test_refusals_per_call_name_the_keyword() -> None:
    ref, ours = _pair(MODELS["pixtral_12b"][1])
    img = noise(64, 48)
    for kw, key in (
        ({"resample": 2}, "resample"),
        ({"resample": PILImageResampling.LANCZOS}, "resample"),
        ({"do_normalize": False}, "do_normalize"),
        ({"do_resize": False}, "do_resize"),
        ({"do_center_crop": True, "crop_size": {"height": 32, "width": 32}}, "do_center_crop"),
        ({"rescale_factor": 0.5}, "rescale_factor"),
        ({"size": {"height": 40, "width": 90}}, "size"),
        ({"patch_size": {"height": 14, "width": 16}}, "patch_size"),
    ):
        _call(ref, img, **kw)  # HF computes something for each of these
        with pytest.raises(SpecError, match=key):
            _call(ours, img, **kw)
    with pytest.raises(KernelArgumentError, match="do_rescale"):
        _call(ours, img, do_rescale=False)
    # What HF itself refuses, ours refuses too.
    with pytest.raises(ValueError, match="longest_edge"):
        _call(ref, img, size={"shortest_edge": 30})
    with pytest.raises(SpecError, match="size"):
        _call(ours, img, size={"shortest_edge": 30})
    with pytest.raises(ValueError, match="3 elements"):
        _call(ref, img, image_mean=[0.5, 0.5])
    with pytest.raises(SpecError, match="image_mean"):
        _call(ours, img, image_mean=[0.5, 0.5])
    with pytest.raises(TypeError, match="mystery"):
        _call(ref, img, mystery=1)
    with pytest.raises(TypeError, match="mystery"):
        _call(ours, img, mystery=1)
    thin = noise(2 * 1024 + 1, 1)
    with pytest.raises(ValueError):
        _call(ref, thin)
    with pytest.raises(KernelArgumentError, match="aspect ratio"):
        _call(ours, thin)


def test_attributes_and_helpers_match_hf() -> None:
    """What ``PixtralProcessor`` and vLLM read on the image processor, and HF's own helpers
    inherited unchanged."""
    from transformers.models.pixtral.image_processing_pil_pixtral import (
        get_resize_output_image_size,
    )

    for config in CONFIGS.values():
        ref, ours = _pair(config)
        for attr in (
            "patch_size",
            "size",
            "model_input_names",
            "do_pad",
            "resample",
            "image_mean",
            "image_std",
            "rescale_factor",
            "default_to_square",
            "do_convert_rgb",
            "backend",
            "_valid_kwargs_names",
        ):
            assert getattr(ours, attr) == getattr(ref, attr), attr
        assert ours.valid_kwargs is ref.valid_kwargs
        assert ours.size["longest_edge"] == config["size"]["longest_edge"]
        assert ours.model_input_names == ["pixel_values", "image_sizes"]
        arr = np.zeros((3, 700, 2100), dtype=np.uint8)
        side = config["patch_size"]["height"]
        want = get_resize_output_image_size(arr, size=ours.size["longest_edge"], patch_size=side)
        out = _call(ours, noise(2100, 700))
        assert out["image_sizes"] == [tuple(want)]
        np.testing.assert_array_equal(
            ours._pad_for_batching([np.ones((3, 2, 2), np.float32)], [(2, 2)]),
            ref._pad_for_batching([np.ones((3, 2, 2), np.float32)], [(2, 2)]),
        )
    assert Ours().reference == mmhf.default_reference() == "pil"  # no torchvision here
    assert Ours(resample="aten_u8").reference == "aten_u8"
    assert Ours(resample="torchvision").reference == "aten_u8"


def test_serialization_round_trips(tmp_path: Path) -> None:
    for model, config in CONFIGS.items():
        ref, ours = _pair(config)
        saved = json.loads(ours.to_json_string())
        assert saved["image_processor_type"] == "PixtralImageProcessor"
        assert saved.pop("sglang_mm_resample") == "pil"
        assert saved == json.loads(ref.to_json_string())
        d = tmp_path / model
        ours.save_pretrained(d)
        again = Ours.from_pretrained(d)
        assert type(again) is Ours and again.to_dict() == ours.to_dict()
        assert again.reference == "pil"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plain = PixtralImageProcessorPil.from_pretrained(d)
        # HF's class keeps the one key it does not know as an attribute, unused.
        stock_view = plain.to_dict()
        assert stock_view.pop("sglang_mm_resample") == "pil"
        assert stock_view == ref.to_dict()
        img = photo("coffee.png")
        _both(ref, again, img)
        _both(plain, again, img)
        # A stock save loads in ours with the same settings.
        stock_dir = tmp_path / f"{model}-stock"
        ref.save_pretrained(stock_dir)
        assert Ours.from_pretrained(stock_dir).to_dict() == {
            **ref.to_dict(),
            "image_processor_type": "PixtralImageProcessor",
        }
    assert "threads" not in Ours().to_dict()


def test_auto_image_processor_backend_for_every_model_type(tmp_path: Path) -> None:
    every = mmhf.model_types(Ours)
    types = check_registration(
        Ours,
        CONFIGS["mistral3"],
        tmp_path,
        expect=("pixtral", "mistral3", "lighton_ocr", "mistral_large4"),
        unnamed=every,
    )
    assert types == every  # every config class imports here
    for d in tmp_path.iterdir():
        assert AutoImageProcessor.from_pretrained(d, backend="sglang_mm").size == {
            "longest_edge": 1540
        }
        assert type(AutoImageProcessor.from_pretrained(d)) is PixtralImageProcessorPil
    # The real repositories' files: Pixtral-12B is a llava model, which names the class.
    for name in ("pixtral-12b", "mistral-small-3.1"):
        d = FIXTURES / name
        got = AutoImageProcessor.from_pretrained(d, backend="sglang_mm")
        assert type(got) is Ours and type(mmhf.image_processor(d)) is Ours
        stock = AutoImageProcessor.from_pretrained(d)
        _both(stock, got, photo("rocket.jpg"))


def test_image_processor_never_falls_back(tmp_path: Path) -> None:
    check_never_falls_back(tmp_path, "CLIPImageProcessor")
    assert mmhf.class_for("PixtralImageProcessorPil") is Ours
    assert mmhf.class_for("PixtralImageProcessor") is Ours


def test_many_threads_one_instance_identical() -> None:
    """One instance called from 12 threads at once, with and without a per-call override
    (another family each), gives what it gives alone."""
    ours = Ours(resample="pil", **MODELS["mistral3"][1])
    images = [noise(300 + 170 * i, 200 + 110 * i, i) for i in range(4)]
    small = {"size": {"longest_edge": 448}, "patch_size": 16}
    check_thread_safety(
        [functools.partial(ours, img) for img in images]
        + [functools.partial(ours, img, **small) for img in images]
    )


TEXT = "<s> [INST] hello [IMG] world [IMG] [/INST]"


@pytest.mark.parametrize("model", sorted(MODELS))
def test_accelerate_whole_processor(model: str) -> None:
    """``PixtralProcessor`` (HF's own code; its module's one import from the torchvision
    image processor module is replaced by the identical PIL function, see
    ``_pixtral_refs._pixtral_processor_class``) on a local tokenizer holding the real special
    ids. It defaults to torch tensors, which CI has not, so the calls ask for numpy."""
    stock = hf_processor(*MODELS[model])
    stock.tokenizer.pad_token = "<unk>"  # the local tokenizer has none; padding needs one
    fast = mmhf.accelerate(stock)
    assert type(fast.image_processor) is Ours and type(stock.image_processor) is not Ours
    assert fast.tokenizer is stock.tokenizer
    assert fast.image_processor.reference == "pil"
    images = [photo("rocket.jpg"), noise(700, 90, 3), noise(5, 800, 4)]
    # (Unpadded prompts of different lengths are a ragged object array, so one prompt there.)
    for text, imgs, kw in (
        ([TEXT], images[:2], {"return_tensors": "np"}),
        ([TEXT, "hello [IMG]"], images, {"return_tensors": "np", "padding": True}),
        (
            [TEXT, "hello [IMG]"],
            [images[:2], images[2:]],
            {"return_tensors": "np", "padding": True},
        ),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = stock(text=text, images=imgs, **kw)
            got = fast(text=text, images=imgs, **kw)
        assert {"input_ids", "attention_mask", "pixel_values", "image_sizes"} <= set(want)
        assert_batch_features_equal(got, want)
    sizes = [(768, 1024), (20, 3000), (1, 1)]
    assert fast._get_num_multimodal_tokens(sizes) == stock._get_num_multimodal_tokens(sizes)
    assert fast.model_input_names == stock.model_input_names
    assert mmhf.accelerate(fast) is fast


def _golden_cases() -> list[dict[str, Any]]:
    from test_pixtral_aten_parity import META

    return list(META["cases"])


def test_torchvision_reference_replays_the_goldens() -> None:
    """``resample="aten_u8"`` (what ``from_pretrained`` picks where torchvision is installed)
    against HF's torchvision ``PixtralImageProcessor``, replayed from the committed goldens
    (tests/gen_goldens.py): the drop-in's whole answer for every case."""
    from test_pixtral_aten_parity import ARRAYS, META, _input, _sha256

    processors = {
        m: Ours(sglang_mm_resample="aten_u8", **META["models"][m]["hf_kwargs"])
        for m in META["models"]
    }
    cases = _golden_cases()
    assert len(cases) >= 60
    for k, case in enumerate(cases):
        arr = _input(case)
        # As the goldens were made: a PIL image; every other case as a uint8 HWC array (its
        # layout stated: a 3-row array would otherwise read as channels first, in HF too).
        image = Image.fromarray(arr) if k % 2 else arr
        kw = {} if k % 2 else {"input_data_format": "channels_last"}
        out = processors[case["model"]](image, return_tensors="np", **kw)
        got = out["pixel_values"]
        assert got.shape == (1, *case["pixel_values_shape"]), case["id"]
        np.testing.assert_array_equal(out["image_sizes"], np.array([case["image_sizes"]]))
        got = got[0]
        if case["stored"] == "full":
            want = ARRAYS[f"{case['id']}/pixel_values"]
            np.testing.assert_array_equal(got, want, strict=True, err_msg=case["id"])
        else:
            want = ARRAYS[f"{case['id']}/rows"]
            np.testing.assert_array_equal(got[:, case["rows"], :], want, strict=True)
        assert _sha256(got) == case["pixel_values_sha256"], case["id"]
