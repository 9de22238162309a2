"""The family contract: params and their rules, the plan (token counts, geometry, the padded
part) and the feature it gives, layout, the HF config mapping and the plugin entry point."""

from __future__ import annotations

import importlib.metadata
import json
import math

import numpy as np
import pytest
import sglang_mm_inkling
from inkling_reference import scaled_size
from pydantic import ValidationError
from sglang_mm_inkling import InklingFamily, InklingParams

from sglang_mm_core import Registry, pipeline_from_spec
from sglang_mm_core.errors import KernelArgumentError, LayoutError, SpecError
from sglang_mm_core.plugin import Geometry, Part, Repeat, Rope1D

CAP = "rescale_image_max_upscaled_long_edge"


def test_defaults_are_the_spec_table() -> None:
    p = InklingParams()
    assert (p.patch_size, p.rescale_image_frac, getattr(p, CAP)) == (40, 2.0, 2048)
    assert (p.image_token_id, p.temporal_patch_size) == (200054, 2)
    fam = InklingFamily(p)
    assert fam.name == "inkling"
    assert fam.decode_defaults.alpha == "drop"
    assert fam.decode_defaults.exif_orientation is False


def test_params_round_trip_json_and_schema() -> None:
    p = InklingParams(patch_size=16, rescale_image_frac=1.5, **{CAP: 999})
    assert InklingParams.model_validate_json(p.model_dump_json()) == p
    schema = InklingParams.model_json_schema()
    assert set(schema["properties"]) == {
        "patch_size",
        "rescale_image_frac",
        CAP,
        "image_token_id",
        "temporal_patch_size",
    }
    json.dumps(schema)


@pytest.mark.parametrize(
    "params,field,needle",
    [
        ({"patch_size": 0}, "patch_size", "greater than zero, got 0"),
        ({"patch_size": -3}, "patch_size", "got -3"),
        ({"rescale_image_frac": -1.0}, "rescale_image_frac", "got -1.0"),
        ({"rescale_image_frac": 0.0}, "rescale_image_frac", "got 0.0"),
        ({"rescale_image_frac": math.nan}, "rescale_image_frac", "got nan"),
        ({"rescale_image_frac": math.inf}, "rescale_image_frac", "got inf"),
        ({"rescale_image_frac": None, CAP: 2048}, CAP, "rescale_image_frac=None"),
        ({"rescale_image_frac": 1.0, CAP: 2048}, CAP, "rescale_image_frac=1.0"),
        ({"rescale_image_frac": 0.5, CAP: 10}, CAP, "rescale_image_frac=0.5"),
        ({CAP: 0}, CAP, "greater than zero, got 0"),
        ({"image_token_id": -1}, "image_token_id", "greater than or equal to 0"),
        ({"temporal_patch_size": 0}, "temporal_patch_size", "greater than or equal to 1"),
        ({"patch_size": True}, "patch_size", "valid integer"),
        ({"nonsense": 1}, "nonsense", "Extra inputs"),
    ],
)
def test_bad_params_are_named(params: dict, field: str, needle: str) -> None:
    with pytest.raises(ValidationError) as info:
        InklingParams.model_validate(params)
    errors = info.value.errors()
    assert [e["loc"] for e in errors] == [(field,)]
    assert needle in errors[0]["msg"]


def test_default_cap_is_dropped_without_upscaling() -> None:
    assert getattr(InklingParams(rescale_image_frac=None), CAP) is None
    assert getattr(InklingParams.model_validate({"rescale_image_frac": 0.5}), CAP) is None
    assert getattr(InklingParams(rescale_image_frac=3.0), CAP) == 2048


def test_feature_is_a_read_only_broadcast_of_one_frame() -> None:
    arr = np.random.default_rng(1).integers(0, 256, (50, 70, 3), dtype=np.uint8)
    fam = InklingFamily(InklingParams(patch_size=16, temporal_patch_size=3))
    item = fam.process_item(arr)
    nph, npw = math.ceil(100 / 16), 140 // 16 + 1
    assert item.geometry == Geometry(100, 140, (nph, npw))
    feat = item.feature
    assert feat.dtype == "bfloat16" and feat.array.dtype == np.uint16
    assert feat.shape == (nph * npw, 3, 16, 16, 3)
    assert feat.array.strides[1] == 0 and not feat.array.flags.writeable
    assert np.shares_memory(feat.array[:, 0], feat.array[:, 2])
    assert item.aux["num_patches"].dtype == "int64"
    assert item.aux["num_patches"].array.tolist() == [nph * npw]
    assert item.plan.length == nph * npw
    # Non-contiguous input is accepted (copied) and gives the same bits.
    wide = np.zeros((50, 140, 3), dtype=np.uint8)
    wide[:, ::2] = arr
    again = fam.process_item(wide[:, ::2], threads=2)
    np.testing.assert_array_equal(again.feature.array, feat.array)


@pytest.mark.parametrize("frac,cap", [(2.0, 2048), (None, None), (0.3, None), (4.0, 300)])
@pytest.mark.parametrize("w,h", [(1, 1), (1920, 1080), (640, 480), (41, 3000), (2049, 2049)])
def test_plan_from_the_size_alone(w: int, h: int, frac: float | None, cap: int | None) -> None:
    fam = InklingFamily(
        InklingParams(patch_size=28, rescale_image_frac=frac, **{CAP: cap})  # type: ignore[arg-type]
    )
    sw, sh = scaled_size(w, h, frac, cap)
    nph, npw = math.ceil(sh / 28), sw // 28 + 1
    plan = fam.plan(w, h)
    assert plan.tokens == Repeat(200054, nph * npw)
    assert plan.length == plan.content == nph * npw
    assert plan.geometry == Geometry(sh, sw, (nph, npw))
    assert plan.parts == (Part((sw, sh), pad_to=(npw * 28, nph * 28)),)


def test_plan_agrees_with_the_feature() -> None:
    fam = InklingFamily(InklingParams(rescale_image_frac=None))
    for w, h in [(1, 1), (40, 40), (79, 81), (333, 12)]:
        item = fam.process_item(np.zeros((h, w, 3), dtype=np.uint8))
        assert item.feature.shape[0] == fam.plan(w, h).length
        assert item.geometry == fam.plan(w, h).geometry


@pytest.mark.parametrize("w,h", [(0, 5), (5, 0), (-1, 3)])
def test_plan_refuses_empty_sizes(w: int, h: int) -> None:
    with pytest.raises(KernelArgumentError, match=f"image size must be positive, got {w}x{h}"):
        InklingFamily().plan(w, h)


def test_layout_repeats_the_placeholder_per_patch() -> None:
    fam = InklingFamily(InklingParams(image_token_id=9, rescale_image_frac=None))
    ids = np.array([1, 9, 2, 3, 9, 4], dtype=np.int64)
    plans = [fam.plan(40, 40), fam.plan(120, 80)]
    assert [p.geometry for p in plans] == [Geometry(40, 40, (1, 2)), Geometry(80, 120, (2, 4))]
    out = fam.expand(ids, plans)
    assert out.input_ids.tolist() == [1, 9, 9, 2, 3, *[9] * 8, 4]
    assert out.offsets == [(1, 2), (5, 12)]
    geoms = [p.geometry for p in plans]
    assert fam.positions(len(out.input_ids), out.offsets, geoms, out.input_ids) == Rope1D(14)


def test_placeholder_count_mismatch_names_both_counts() -> None:
    fam = InklingFamily(InklingParams(image_token_id=9))
    one = fam.plan(1, 1)
    with pytest.raises(LayoutError, match=r"2 media placeholder\(s\) but 3 media item"):
        fam.expand(np.array([9, 1, 9]), [one] * 3)
    with pytest.raises(LayoutError, match=r"0 media placeholder\(s\) but 1 media item"):
        fam.expand(np.array([1, 2]), [one])
    registry = Registry()
    registry.register_family(InklingFamily)
    spec = {"family": "inkling", "params": {"image_token_id": 9}}
    with pipeline_from_spec(spec, registry=registry) as pipe:
        with pytest.raises(LayoutError, match=r"2 media placeholder\(s\) but 3 media item"):
            pipe.check_prompt([9, 1, 9], 3)


PRE = {
    "image_processor_type": "InklingImageProcessor",
    "patch_size": 32,
    "rescale_image_frac": 1.5,
    "rescale_image_max_upscaled_long_edge": 1536,
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.2613026, 0.2757771],
    "rescale_factor": 1 / 255,
    "do_rescale": True,
    "do_normalize": True,
    "resample": 1,
}


def _model(pre: dict, config: dict) -> dict[str, dict]:
    """A model directory's parsed files, as `spec_from_hf` takes them."""
    return {"preprocessor_config.json": pre, "config.json": config}


def test_spec_from_hf_maps_the_configs() -> None:
    spec = InklingFamily.spec_from_hf(_model(PRE, {"image_token_id": 151655, "hidden_size": 4096}))
    assert spec == {
        "family": "inkling",
        "params": {
            "patch_size": 32,
            "rescale_image_frac": 1.5,
            CAP: 1536,
            "image_token_id": 151655,
            "temporal_patch_size": 2,
        },
    }
    minimal = InklingFamily.spec_from_hf(_model({}, {"image_token_index": 5}))
    assert minimal["params"] == InklingParams(image_token_id=5).model_dump()
    # Keys that only name or route the processor never change a pixel.
    inert = {**PRE, "processor_class": "InklingProcessor", "return_tensors": "pt"}
    assert InklingFamily.spec_from_hf(_model(inert, {"image_token_id": 151655})) == spec
    lanczos = {**PRE, "resample": "lanczos", "rescale_factor": 0.003921569}
    assert InklingFamily.spec_from_hf(_model(lanczos, {"image_token_id": 151655})) == spec


@pytest.mark.parametrize(
    "pre,config,needle",
    [
        ({**PRE, "do_center_crop": True}, {"image_token_id": 1}, "do_center_crop"),
        ({**PRE, "image_mean": [0.5, 0.5, 0.5]}, {"image_token_id": 1}, "image_mean"),
        ({**PRE, "resample": 3}, {"image_token_id": 1}, "resample=3"),
        ({**PRE, "rescale_factor": 1 / 127.5}, {"image_token_id": 1}, "rescale_factor"),
        ({**PRE, "do_normalize": False}, {"image_token_id": 1}, "do_normalize"),
        ({**PRE, "patch_size": 0}, {"image_token_id": 1}, "patch_size"),
        ({**PRE, "rescale_image_frac": None}, {"image_token_id": 1}, CAP),
        (PRE, {}, "no image_token_id"),
        (PRE, {"image_token_id": 1, "image_token_index": 2}, "disagree"),
        (PRE, {"image_token_id": "x"}, "must be an integer"),
    ],
)
def test_spec_from_hf_refuses_what_it_cannot_match(pre: dict, config: dict, needle: str) -> None:
    with pytest.raises(SpecError, match=needle):
        InklingFamily.spec_from_hf(_model(pre, config))


def test_spec_from_hf_takes_no_options() -> None:
    with pytest.raises(SpecError, match=r"takes no options, got \['resample'\]"):
        InklingFamily.spec_from_hf(_model(PRE, {"image_token_id": 1}), resample="pil")


def test_spec_from_hf_reads_a_model_directory(tmp_path) -> None:
    (tmp_path / "preprocessor_config.json").write_text(json.dumps(PRE))
    (tmp_path / "config.json").write_text(json.dumps({"image_token_id": 151655}))
    want = InklingFamily.spec_from_hf(_model(PRE, {"image_token_id": 151655}))
    assert sglang_mm_inkling.spec_from_hf(tmp_path) == want
    assert InklingFamily.spec_from_hf(str(tmp_path)) == want
    with pytest.raises(SpecError, match=r"config\.json not found"):
        (tmp_path / "config.json").unlink()
        sglang_mm_inkling.spec_from_hf(tmp_path)


def test_entry_point_offers_the_family() -> None:
    eps = importlib.metadata.entry_points(group="sglang_mm")
    (ep,) = [e for e in eps if e.name == "inkling"]
    module = ep.load()
    assert list(module.sglang_mm_families()) == [InklingFamily]
    reg = Registry()
    reg.load_entry_points()
    assert reg.get("inkling") is InklingFamily
    info = reg.info("inkling")
    assert info is not None and info.distribution == "sglang-mm-inkling"
