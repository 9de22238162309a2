"""`spec_from_hf` for GLM-4.1V, GLM-4.5V and GLM-4.6V model directories: the shipped settings
give the example specs (plus the directory's tokenizer), each model type its own ids and video
rules, the CLI finds the family, and every setting that cannot be matched is refused by name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _glm4v_refs import SHIPPED_PREPROCESSOR
from _glm4v_tokenizer import write
from sglang_mm_glm4v import Glm4vFamily, spec_from_hf

import sglang_mm_core as mm
from sglang_mm_core.plugin import SpecError

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
VISION = {"patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}
CONFIGS = {
    "glm4v": {"model_type": "glm4v", "image_token_id": 151343, "video_token_id": 151344},
    "glm4v_moe": {"model_type": "glm4v_moe", "image_token_id": 151363, "video_token_id": 151364},
    "glm46v": {
        "model_type": "glm46v",
        "image_token_id": 151343,
        "video_start_token_id": 151361,
        "video_end_token_id": 151362,
    },
}
VIDEO = {
    "video_processor_type": "Glm4vVideoProcessor",
    "size": {"shortest_edge": 12544, "longest_edge": 47040000},
    "do_sample_frames": True,
    "fps": 2,
    "max_duration": 300,
    "patch_size": 14,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
}


def _model(model_type: str, **files: Any) -> dict[str, Any]:
    """A checkpoint's JSON files: its config, image and video processor settings."""
    pre = dict(SHIPPED_PREPROCESSOR)
    video = dict(VIDEO)
    if model_type == "glm46v":
        pre["image_processor_type"] = "Glm46VImageProcessor"
        pre["processor_class"] = "Glm46VProcessor"
        video["video_processor_type"] = "Glm46VVideoProcessor"
    return {
        "config.json": {**CONFIGS[model_type], "vision_config": VISION},
        "preprocessor_config.json": pre,
        "video_preprocessor_config.json": video,
        **files,
    }


def _example(name: str) -> dict[str, Any]:
    doc = json.loads((EXAMPLES / name / "spec.json").read_text())
    return {"family": doc["family"], "params": {**doc["params"], "tokenizer": None}}


@pytest.mark.parametrize("model_type", ["glm4v", "glm4v_moe", "glm46v"])
def test_the_shipped_settings_give_the_example_spec(model_type: str) -> None:
    assert spec_from_hf(_model(model_type)) == _example(model_type)
    assert Glm4vFamily.spec_from_hf(_model(model_type), resample="pil")["params"]["resample"] == (
        "pil"
    )


def test_a_directory_names_its_tokenizer(tmp_path: Path) -> None:
    for name, doc in _model("glm46v", **{"video_preprocessor_config.json": VIDEO}).items():
        (tmp_path / name).write_text(json.dumps(doc))
    write("glm46v", tmp_path)
    spec = spec_from_hf(tmp_path)
    p = spec["params"]
    assert p["tokenizer"] == str((tmp_path / "tokenizer.json").resolve())
    # the video processor's class decides the sampling, the processor's the timestamps
    assert (p["video_sampling"], p["timestamps"]) == ("glm4v", "glm46v")
    with mm.pipeline_from_spec(spec) as pipe:
        assert pipe.family.name == "glm4v"


def test_the_cli_finds_the_family(tmp_path: Path) -> None:
    for name, doc in _model("glm4v_moe").items():
        (tmp_path / name).write_text(json.dumps(doc))
    cli = Path(sys.executable).with_name("sglang-mm")
    got = subprocess.run(
        [str(cli), "spec-from-hf", str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert json.loads(got.stdout)["params"]["image_token_id"] == 151363


def test_nested_processor_config_and_video_settings() -> None:
    proc = {
        "processor_class": "Glm46VProcessor",
        "image_processor": {
            "image_processor_type": "Glm46VImageProcessor",
            "size": {"shortest_edge": 3136, "longest_edge": 1003520},
        },
        "video_processor": {
            "video_processor_type": "Glm46VVideoProcessor",
            "size": {"shortest_edge": 3136, "longest_edge": 2007040},
            "fps": 2,
            "max_duration": 300,
        },
    }
    model = {"config.json": CONFIGS["glm46v"], "processor_config.json": proc}
    p = spec_from_hf(model)["params"]
    assert (p["min_pixels"], p["max_pixels"]) == (3136, 1003520)
    assert (p["video_min_pixels"], p["video_max_pixels"]) == (3136, 2007040)
    assert (p["video_sampling"], p["timestamps"], p["video_start_token_id"]) == (
        "glm46v",
        "glm46v",
        151361,
    )
    video = {**VIDEO, "fps": 1, "max_duration": 60}
    p = spec_from_hf(_model("glm4v", **{"video_preprocessor_config.json": video}))["params"]
    assert (p["video_fps"], p["video_max_duration"]) == (1.0, 60)


def _refused(model: dict[str, Any], match: str) -> None:
    with pytest.raises(SpecError, match=match):
        spec_from_hf(model)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"resample": 2}, "resample"),
        ({"do_center_crop": True}, "do_center_crop"),
        ({"do_normalize": False}, "do_normalize"),
        ({"rescale_factor": 0.5}, "rescale_factor"),
        ({"mystery_knob": 1}, "mystery_knob"),
        ({"size": {"shortest_edge": 12544}}, "longest_edge"),
        ({"size": {"height": 224, "width": 224}}, "height"),
        ({"image_processor_type": "Qwen2VLImageProcessor"}, "not a GLM-4.xV processor"),
        ({"patch_size": 16}, "vision_config patch_size=14"),
        ({"image_std": [0.5, 0.0, 0.5]}, r"image_std"),
    ],
)
def test_image_settings_that_cannot_be_matched_are_refused(
    change: dict[str, Any], match: str
) -> None:
    model = _model("glm4v")
    model["preprocessor_config.json"] = {**model["preprocessor_config.json"], **change}
    _refused(model, match)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"do_sample_frames": False}, "do_sample_frames"),
        ({"num_frames": 16}, "num_frames"),
        ({"image_mean": [0.5, 0.5, 0.5]}, "image_mean"),
        ({"temporal_patch_size": 4}, "temporal_patch_size"),
        ({"video_processor_type": "Qwen2VLVideoProcessor"}, "not a GLM-4.xV"),
        ({"resample": 2}, "resample"),
    ],
)
def test_video_settings_that_cannot_be_matched_are_refused(
    change: dict[str, Any], match: str
) -> None:
    _refused(_model("glm4v", **{"video_preprocessor_config.json": {**VIDEO, **change}}), match)


def test_other_refusals() -> None:
    _refused({**_model("glm4v"), "config.json": {"model_type": "qwen2_vl"}}, "not a GLM-4.xV")
    _refused({"config.json": CONFIGS["glm4v"]}, "preprocessor_config.json")
    # without a video processor's own settings, transformers reads the image processor's
    # file for videos too (older checkpoints share it): its size then bounds the frames
    model = _model("glm4v")
    del model["video_preprocessor_config.json"]
    p = spec_from_hf(model)["params"]
    assert (p["video_min_pixels"], p["video_max_pixels"]) == (12544, 9633792)
    model = _model("glm4v", **{"processor_config.json": {"processor_class": "LlavaProcessor"}})
    _refused(model, "processor_class")
    # the tokenizer's <|image|> is another id than config.json's: the processor would expand
    # the prompt with the tokenizer's
    tok = {"added_tokens": [{"id": 151363, "content": "<|image|>", "special": True}]}
    _refused(_model("glm4v", **{"tokenizer.json": tok}), "disagrees with the tokenizer")
