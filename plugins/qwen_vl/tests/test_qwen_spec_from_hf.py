"""`spec_from_hf`: model directories shaped like the published Qwen2-VL, Qwen2.5-VL, Qwen3-VL
and Qwen3.5 ones; HF's own processor, loaded from the same directory, agrees on every value;
settings that cannot be honoured exactly are refused, by name."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from sglang_mm_qwen_vl import (
    QWEN2_5_VL,
    QWEN2_VL,
    QWEN3_5,
    QWEN3_VL,
    QwenVLFamily,
    QwenVLParams,
    spec_from_hf,
)

from sglang_mm_core import Registry, load_spec
from sglang_mm_core.errors import SpecError
from sglang_mm_core.plugin import ModelDir

CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]

QWEN2_VL_PP = {
    "min_pixels": 3136,
    "max_pixels": 12845056,
    "patch_size": 14,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": CLIP_MEAN,
    "image_std": CLIP_STD,
    "image_processor_type": "Qwen2VLImageProcessor",
    "processor_class": "Qwen2VLProcessor",
}
QWEN2_VL_CONFIG = {
    "architectures": ["Qwen2VLForConditionalGeneration"],
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "vision_start_token_id": 151652,
    "vision_end_token_id": 151653,
    "vision_token_id": 151654,
    "image_token_id": 151655,
    "video_token_id": 151656,
    "hidden_size": 3584,
    "model_type": "qwen2_vl",
    "vision_config": {
        "depth": 32,
        "embed_dim": 1280,
        "num_heads": 16,
        "in_chans": 3,
        "hidden_size": 3584,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "spatial_patch_size": 14,
        "temporal_patch_size": 2,
    },
    "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    "vocab_size": 152064,
}
# A Qwen2.5-VL checkpoint re-saved by a newer transformers: the full processor dict, and the
# token ids only inside text_config.
QWEN2_5_VL_PP = {
    "do_convert_rgb": True,
    "do_normalize": True,
    "do_rescale": True,
    "do_resize": True,
    "image_mean": CLIP_MEAN,
    "image_processor_type": "Qwen2_5_VLImageProcessor",
    "image_std": CLIP_STD,
    "max_pixels": 12845056,
    "merge_size": 2,
    "min_pixels": 3136,
    "patch_size": 14,
    "processor_class": "Qwen2_5_VLProcessor",
    "resample": 3,
    "rescale_factor": 0.00392156862745098,
    "size": {"longest_edge": 12845056, "shortest_edge": 3136},
    "temporal_patch_size": 2,
    "data_format": "channels_first",
    "default_to_square": True,
    "device": None,
    "disable_grouping": None,
    "input_data_format": None,
    "return_tensors": None,
}
QWEN2_5_VL_CONFIG = {
    "architectures": ["Qwen2_5_VLForConditionalGeneration"],
    "model_type": "qwen2_5_vl",
    "text_config": {
        "model_type": "qwen2_5_vl_text",
        "hidden_size": 3584,
        "image_token_id": 151655,
        "video_token_id": 151656,
        "vision_start_token_id": 151652,
        "vision_end_token_id": 151653,
        "vocab_size": 152064,
    },
    "vision_config": {
        "depth": 32,
        "hidden_size": 1280,
        "out_hidden_size": 3584,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "tokens_per_second": 2,
        "window_size": 112,
        "fullatt_block_indexes": [7, 15, 23, 31],
    },
}
QWEN3_VL_PP = {
    "size": {"longest_edge": 16777216, "shortest_edge": 65536},
    "patch_size": 16,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "processor_class": "Qwen3VLProcessor",
    "image_processor_type": "Qwen2VLImageProcessorFast",
}
QWEN3_VL_CONFIG = {
    "architectures": ["Qwen3VLForConditionalGeneration"],
    "image_token_id": 151655,
    "model_type": "qwen3_vl",
    "text_config": {"model_type": "qwen3_vl_text", "hidden_size": 4096, "vocab_size": 151936},
    "tie_word_embeddings": False,
    "video_token_id": 151656,
    "vision_config": {
        "deepstack_visual_indexes": [8, 16, 24],
        "depth": 27,
        "hidden_size": 1152,
        "model_type": "qwen3_vl",
        "out_hidden_size": 4096,
        "patch_size": 16,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    },
    "vision_end_token_id": 151653,
    "vision_start_token_id": 151652,
}
QWEN3_5_PP = dict(QWEN3_VL_PP)
QWEN3_5_CONFIG = {
    "architectures": ["Qwen3_5ForConditionalGeneration"],
    "image_token_id": 248056,
    "model_type": "qwen3_5",
    "text_config": {"model_type": "qwen3_5_text", "hidden_size": 5120, "vocab_size": 248320},
    "video_token_id": 248057,
    "vision_config": {
        "depth": 27,
        "hidden_size": 1152,
        "model_type": "qwen3_5",
        "out_hidden_size": 5120,
        "patch_size": 16,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    },
    "vision_end_token_id": 248054,
    "vision_start_token_id": 248053,
}

VIDEO_SETTINGS = {
    "video_sampling",
    "video_fps",
    "video_num_frames",
    "video_min_frames",
    "video_max_frames",
    "video_min_pixels",
    "video_max_pixels",
    "video_cap_pixels_per_frame",
}
MODELS = {
    "qwen2_vl": (QWEN2_VL_PP, QWEN2_VL_CONFIG, QWEN2_VL),
    "qwen2_5_vl": (QWEN2_5_VL_PP, QWEN2_5_VL_CONFIG, QWEN2_5_VL),
    "qwen3_vl": (QWEN3_VL_PP, QWEN3_VL_CONFIG, QWEN3_VL),
    "qwen3_5": (QWEN3_5_PP, QWEN3_5_CONFIG, QWEN3_5),
}


def model_dir(tmp_path: Path, pp: dict[str, Any], config: dict[str, Any]) -> Path:
    d = tmp_path / "model"
    d.mkdir(parents=True, exist_ok=True)
    (d / "preprocessor_config.json").write_text(json.dumps(pp, indent=2))
    (d / "config.json").write_text(json.dumps(config, indent=2))
    return d


def files(pp: dict[str, Any], config: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """A model directory as its parsed files (``config.json`` only when given)."""
    out = {"preprocessor_config.json": pp}
    if config is not None:
        out["config.json"] = config
    return out


def hf_processor(path: Path) -> Any:
    from transformers import Qwen2VLImageProcessorPil

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Qwen2VLImageProcessorPil.from_pretrained(str(path))


@pytest.mark.parametrize("model", sorted(MODELS))
def test_published_shapes(tmp_path, model):
    pp, config, values = MODELS[model]
    d = model_dir(tmp_path, pp, config)
    spec = QwenVLFamily.spec_from_hf(d)
    assert spec["family"] == "qwen_vl"
    # The video sampling settings are the directory's video processor's (here its image
    # processor's file, as transformers reads it: test_qwen_video_settings.py); the rest are
    # the published values.
    got = QwenVLParams.model_validate(spec["params"]).model_dump(exclude=VIDEO_SETTINGS)
    assert got == QwenVLParams(**values).model_dump(exclude=VIDEO_SETTINGS)
    # HF's own processor, reading the same directory, resolves the same values.
    hf = hf_processor(d)
    p = spec["params"]
    assert (hf.size["shortest_edge"], hf.size["longest_edge"]) == (p["min_pixels"], p["max_pixels"])
    assert (hf.patch_size, hf.merge_size, hf.temporal_patch_size) == (
        p["patch_size"],
        p["merge_size"],
        p["temporal_patch_size"],
    )
    assert list(hf.image_mean) == p["image_mean"] and list(hf.image_std) == p["image_std"]
    # the parsed files, and a ModelDir of the directory, give the same spec; the spec loads
    assert spec_from_hf(files(pp, config)) == spec
    assert spec_from_hf(ModelDir.load(d)) == spec
    reg = Registry()
    reg.register_family(QwenVLFamily)
    assert load_spec(spec, registry=reg).params == QwenVLParams.model_validate(spec["params"])


def test_resample_choice(tmp_path):
    d = model_dir(tmp_path, QWEN2_VL_PP, QWEN2_VL_CONFIG)
    assert QwenVLFamily.spec_from_hf(d)["params"]["resample"] == "aten_u8"
    assert QwenVLFamily.spec_from_hf(d, resample="pil")["params"]["resample"] == "pil"


def test_top_level_pixels_win_over_size(tmp_path):
    pp = {**QWEN3_VL_PP, "min_pixels": 1024, "max_pixels": 2_000_000}
    d = model_dir(tmp_path, pp, QWEN3_VL_CONFIG)
    p = QwenVLFamily.spec_from_hf(d)["params"]
    assert (p["min_pixels"], p["max_pixels"]) == (1024, 2_000_000)
    hf = hf_processor(d)
    assert (hf.size["shortest_edge"], hf.size["longest_edge"]) == (1024, 2_000_000)


def test_one_top_level_bound_mixes_with_size(tmp_path):
    pp = {**QWEN3_VL_PP, "max_pixels": 1_000_000}
    d = model_dir(tmp_path, pp, QWEN3_VL_CONFIG)
    p = QwenVLFamily.spec_from_hf(d)["params"]
    assert (p["min_pixels"], p["max_pixels"]) == (65536, 1_000_000)
    hf = hf_processor(d)
    assert (hf.size["shortest_edge"], hf.size["longest_edge"]) == (65536, 1_000_000)


def test_silent_file_takes_hf_class_defaults(tmp_path):
    d = model_dir(tmp_path, {"processor_class": "Qwen2VLProcessor"}, QWEN2_VL_CONFIG)
    p = QwenVLFamily.spec_from_hf(d)["params"]
    hf = hf_processor(d)
    assert (p["min_pixels"], p["max_pixels"]) == (hf.size["shortest_edge"], hf.size["longest_edge"])
    assert p["image_mean"] == list(hf.image_mean) and p["patch_size"] == hf.patch_size


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"do_resize": False}, "do_resize=False"),
        ({"do_rescale": False}, "do_rescale=False"),
        ({"do_normalize": False}, "do_normalize=False"),
        ({"do_convert_rgb": False}, "do_convert_rgb=False"),
        ({"resample": 2}, r"resample=2 \(bilinear\)"),
        ({"resample": 9}, r"resample=9 \(unknown\)"),
        ({"rescale_factor": 1 / 127.5}, "rescale_factor=0.00784"),
        ({"do_center_crop": True}, "do_center_crop=True"),
        ({"do_pad": True}, "do_pad=True"),
        ({"some_new_option": 1}, "'some_new_option'"),
        ({"image_processor_type": "CLIPImageProcessor"}, "CLIPImageProcessor"),
        ({"size": {"height": 448, "width": 448}}, r"size has key\(s\) \['height', 'width'\]"),
        ({"image_std": [0.5, 0.5]}, r"image_std=\[0.5, 0.5\]"),
        ({"image_std": [0.5, 0.0, 0.5]}, r"image_std\[1\] is 0.0"),
        ({"min_pixels": 20_000_000}, r"min_pixels \(20000000\) must not exceed"),
        ({"patch_size": 16}, r"patch_size=16 disagrees with config.json vision_config"),
        ({"merge_size": 4}, r"merge_size=4 disagrees.*spatial_merge_size=2"),
    ],
)
def test_unmatchable_settings_are_refused(change, message):
    with pytest.raises(SpecError, match=message):
        spec_from_hf(files({**QWEN2_5_VL_PP, **change}, QWEN2_5_VL_CONFIG))


def test_size_without_edges_and_no_bounds_is_refused():
    pp = {k: v for k, v in QWEN3_VL_PP.items() if k != "size"}
    pp["size"] = {"longest_edge": 16777216}
    with pytest.raises(SpecError, match="size has no shortest_edge and there is no min_pixels"):
        spec_from_hf(files(pp, QWEN3_VL_CONFIG))


def test_config_problems_are_refused():
    with pytest.raises(SpecError, match="model_type 'llava' is not a Qwen-VL model"):
        spec_from_hf(files(QWEN2_VL_PP, {**QWEN2_VL_CONFIG, "model_type": "llava"}))
    config = {k: v for k, v in QWEN2_VL_CONFIG.items() if k != "vision_end_token_id"}
    with pytest.raises(SpecError, match=r"config\.json has no vision_end_token_id"):
        spec_from_hf(files(QWEN2_VL_PP, config))
    with pytest.raises(SpecError, match=r"config\.json not found"):
        spec_from_hf(files(QWEN2_VL_PP))


def test_directory_problems_are_refused(tmp_path):
    with pytest.raises(SpecError, match="not a model directory"):
        QwenVLFamily.spec_from_hf(tmp_path / "missing")
    (tmp_path / "config.json").write_text(json.dumps(QWEN2_VL_CONFIG))
    with pytest.raises(SpecError, match=r"preprocessor_config\.json not found"):
        QwenVLFamily.spec_from_hf(tmp_path)
    (tmp_path / "preprocessor_config.json").write_text("{not json")
    with pytest.raises(SpecError, match="cannot read"):
        QwenVLFamily.spec_from_hf(tmp_path)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sglang_mm_core", "spec-from-hf", *args],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_cli_spec_from_hf(tmp_path):
    d = model_dir(tmp_path, QWEN3_VL_PP, QWEN3_VL_CONFIG)
    named = _cli(str(d), "--family", "qwen_vl")
    assert named.returncode == 0, named.stderr
    spec = json.loads(named.stdout)
    assert spec == QwenVLFamily.spec_from_hf(d)
    found = _cli(str(d))  # found among every installed family
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout) == spec
    bad = model_dir(tmp_path / "bad", {**QWEN3_VL_PP, "do_resize": False}, QWEN3_VL_CONFIG)
    refused = _cli(str(bad), "--family", "qwen_vl")
    assert refused.returncode == 1
    assert "do_resize=False" in refused.stderr and "Traceback" not in refused.stderr
