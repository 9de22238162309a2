"""``spec_from_hf``: both layouts of ``preprocessor_config.json`` (the checkpoint's
``media_proc_cfg``, transformers' ``Kimi_K25ImageProcessor`` keys), the token id from
``config.json`` cross-checked with the tokenizer, and every refusal named."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _kimi_refs import K3_CFG, K3_TOKENIZER_JSON
from sglang_mm_kimi import KimiFamily

import sglang_mm_core as mm

# moonshotai/Kimi-K2.5's media_proc_cfg (the checkpoint's processor defaults).
MEDIA_PROC_CFG: dict[str, Any] = {
    "in_patch_limit": 16384,
    "patch_size": 14,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "merge_kernel_size": 2,
    "fixed_output_tokens": None,
    "patch_limit_on_one_side": 512,
    "in_patch_limit_each_frame": 4096,
    "in_patch_limit_video": None,
    "sample_fps": 2.0,
    "max_num_frames_each_video": None,
    "temporal_merge_kernel_size": 4,
    "timestamp_mode": "hh:mm:ss.fff",
}
CHECKPOINT: dict[str, Any] = {
    "config.json": {
        "model_type": "kimi_k25",
        "media_placeholder_token_id": 163605,
        "vision_config": {"patch_size": 14, "merge_kernel_size": [2, 2]},
    },
    "preprocessor_config.json": {
        "auto_map": {"AutoImageProcessor": "kimi_k25_vision_processing.KimiK25VisionProcessor"},
        "media_proc_cfg": MEDIA_PROC_CFG,
    },
    "tokenizer_config.json": {"added_tokens_decoder": {"163605": {"content": "<|media_pad|>"}}},
}
HF_LAYOUT: dict[str, Any] = {
    "config.json": {"model_type": "kimi_k25", "media_placeholder_token_id": 163605},
    "preprocessor_config.json": {
        "image_processor_type": "Kimi_K25ImageProcessor",
        "do_resize": True,
        "resample": 3,
        "size": {"max_height": 512, "max_width": 512},
        "max_patches": 16384,
        "do_rescale": True,
        "rescale_factor": 1 / 255,
        "do_normalize": True,
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
        "do_convert_rgb": True,
        "patch_size": 14,
        "merge_size": 2,
    },
}


def _with(model: dict[str, Any], name: str, **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(model)
    out[name].update(changes)
    return out


def _ckpt(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(CHECKPOINT)
    out["preprocessor_config.json"]["media_proc_cfg"].update(changes)
    return out


def test_the_checkpoint_layout_gives_the_pil_reference() -> None:
    spec = KimiFamily.spec_from_hf(CHECKPOINT)
    assert spec["params"] == KimiFamily().params.model_dump(mode="json")
    assert "decode" not in spec  # the family's default is the checkpoint's loader
    aten = KimiFamily.spec_from_hf(CHECKPOINT, resample="aten_u8")
    assert aten["params"]["resample"] == "aten_u8"
    assert aten["decode"] == {"alpha": "white", "exif_orientation": True}


def test_the_transformers_layout_gives_the_torchvision_reference() -> None:
    spec = KimiFamily.spec_from_hf(HF_LAYOUT)
    assert spec["params"]["resample"] == "aten_u8"
    assert spec["decode"] == {"alpha": "white", "exif_orientation": True}
    mm.pipeline_from_spec(spec).close()
    smaller = _with(
        HF_LAYOUT,
        "preprocessor_config.json",
        max_patches=4096,
        size={"max_height": 256, "max_width": 256},
    )
    params = KimiFamily.spec_from_hf(smaller)["params"]
    assert params["max_patches"] == 4096 and params["size"]["max_height"] == 256


def test_checkpoint_values_map_to_hf_names() -> None:
    params = KimiFamily.spec_from_hf(_ckpt(in_patch_limit=4096, patch_limit_on_one_side=256))[
        "params"
    ]
    assert params["max_patches"] == 4096 and params["size"] == {"max_height": 256, "max_width": 256}


@pytest.mark.parametrize(
    ("model", "match"),
    [
        (_ckpt(fixed_output_tokens=256), "fixed_output_tokens"),
        (_ckpt(transparent_bg_fill_stage="after_resize"), "K3's transparent-background"),
        (_ckpt(frobnicate=1), "frobnicate"),
        (_ckpt(merge_kernel_size=[2, 3]), "square merge kernel"),
        (_ckpt(image_mean=[0.48145466, 0.4578275, 0.40821073]), "bit for bit"),
        (_with(CHECKPOINT, "config.json", model_type="kimi_vl"), "model_type"),
        (
            _with(CHECKPOINT, "config.json", media_placeholder_token_id=5),
            "disagrees with the tokenizer",
        ),
        (
            _with(CHECKPOINT, "config.json", vision_config={"patch_size": 16}),
            "vision_config patch_size",
        ),
        (_with(HF_LAYOUT, "preprocessor_config.json", do_normalize=False), "do_normalize"),
        (_with(HF_LAYOUT, "preprocessor_config.json", resample=2), "resample"),
        (_with(HF_LAYOUT, "preprocessor_config.json", do_pad=True), "do_pad"),
        (_with(HF_LAYOUT, "preprocessor_config.json", rescale_factor=0.5), "rescale_factor"),
        (
            _with(HF_LAYOUT, "preprocessor_config.json", image_processor_type="CLIPImageProcessor"),
            "image_processor_type",
        ),
        (_with(HF_LAYOUT, "preprocessor_config.json", size={"max_height": 512}), "max_width"),
    ],
)
def test_refusals_name_the_key(model: dict[str, Any], match: str) -> None:
    with pytest.raises(mm.SpecError, match=match):
        KimiFamily.spec_from_hf(model)


def test_the_cli_builds_the_spec_from_a_directory(tmp_path: Path) -> None:
    for name, doc in CHECKPOINT.items():
        (tmp_path / name).write_text(json.dumps(doc))
    out = subprocess.run(
        [sys.executable, "-m", "sglang_mm_core", "spec-from-hf", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == KimiFamily.spec_from_hf(CHECKPOINT)


def test_the_example_spec_is_what_spec_from_hf_gives() -> None:
    example = Path(__file__).resolve().parents[3] / "examples" / "kimi_k2_5" / "spec.json"
    spec = json.loads(example.read_text())
    built = KimiFamily.spec_from_hf(CHECKPOINT)
    assert spec["params"] == built["params"] and spec.get("decode") == built.get("decode")


def test_the_transformers_layout_serves_videos(tmp_path: Path) -> None:
    """With transformers' layout, the video processor's settings, the tokenizer's placeholder
    id and its tokenizer.json make a spec that serves videos."""
    from _kimi_refs import TOKENIZER_JSON, VIDEO_TOKEN_ID

    video = {
        "video_processor_type": "Kimi_K25VideoProcessor",
        "fps": 2,
        "max_patches": 4096,
        "temporal_patch_size": 4,
        "patch_size": 14,
        "merge_size": 2,
        "do_sample_frames": True,
        "resample": 3,
    }
    files = {**HF_LAYOUT, "video_preprocessor_config.json": video}
    for name, doc in files.items():
        (tmp_path / name).write_text(json.dumps(doc))
    (tmp_path / "tokenizer.json").write_bytes(TOKENIZER_JSON.read_bytes())
    params = KimiFamily.spec_from_hf(tmp_path)["params"]
    assert params["video_token_id"] == VIDEO_TOKEN_ID
    assert params["tokenizer"] == str((tmp_path / "tokenizer.json").resolve())
    assert (params["video_fps"], params["video_max_patches"], params["temporal_patch_size"]) == (
        2,
        4096,
        4,
    )
    assert KimiFamily(params).tokenizer is not None
    (tmp_path / "video_preprocessor_config.json").write_text(
        json.dumps({**video, "patch_size": 16})
    )
    with pytest.raises(mm.SpecError, match="one value serves both"):
        KimiFamily.spec_from_hf(tmp_path)
    (tmp_path / "video_preprocessor_config.json").write_text(
        json.dumps({**video, "do_sample_frames": False})
    )
    with pytest.raises(mm.SpecError, match="do_sample_frames"):
        KimiFamily.spec_from_hf(tmp_path)


def test_video_settings_are_found_where_transformers_finds_them() -> None:
    """processor_config.json's video_processor section first, then
    video_preprocessor_config.json, then the image processor's own file, whose max_patches
    the video processor then takes (AutoVideoProcessor builds Kimi_K25VideoProcessor from it)."""
    only_image = KimiFamily.spec_from_hf(HF_LAYOUT)["params"]
    assert only_image["video_max_patches"] == 16384
    video = {"video_processor_type": "Kimi_K25VideoProcessor", "max_patches": 2048, "fps": 1}
    nested = {**HF_LAYOUT, "processor_config.json": {"video_processor": video}}
    nested["video_preprocessor_config.json"] = {**video, "max_patches": 1024}
    p = KimiFamily.spec_from_hf(nested)["params"]
    assert (p["video_max_patches"], p["video_fps"]) == (2048, 1)
    del nested["processor_config.json"]
    assert KimiFamily.spec_from_hf(nested)["params"]["video_max_patches"] == 1024
    nested["video_preprocessor_config.json"] = {**video, "do_pad": True}
    with pytest.raises(mm.SpecError, match=r"video_preprocessor_config\.json: .*'do_pad'"):
        KimiFamily.spec_from_hf(nested)


# --------------------------------------------------------------------------- Kimi K3

# moonshotai/Kimi-K3's media_proc_cfg: the image keys (_kimi_refs.K3_CFG) and the video keys
# (inert: K3 serves images only).
K3_MEDIA_PROC_CFG: dict[str, Any] = {
    **K3_CFG,
    "in_patch_limit_each_frame": 16384,
    "sample_fps": 8.0,
    "temporal_merge_kernel_size": 4,
    "config_type": "media_proc.processors.moonvit.MoonViTMediaProcessorConfig",
}
K3_CHECKPOINT: dict[str, Any] = {
    "config.json": {
        "model_type": "kimi_k3",
        "media_placeholder_token_id": 163605,
        "image_placeholder": "<|kimi_image_placeholder|>",
        "vision_config": {"patch_size": 14, "merge_kernel_size": [2, 2]},
    },
    "preprocessor_config.json": {
        "processor_class": "KimiK3Processor",
        "auto_map": {"AutoImageProcessor": "kimi_k3_vision_processing.KimiK3VisionProcessor"},
        "media_proc_cfg": K3_MEDIA_PROC_CFG,
    },
}


def _k3(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(K3_CHECKPOINT)
    out["preprocessor_config.json"]["media_proc_cfg"].update(changes)
    return out


def test_a_k3_checkpoint_gives_the_k3_spec(tmp_path: Path) -> None:
    spec = KimiFamily.spec_from_hf(K3_CHECKPOINT, tokenizer=K3_TOKENIZER_JSON)
    p = spec["params"]
    assert (p["generation"], p["resample"], p["max_patches"]) == ("k3", "pil", 65536)
    assert p["transparent_bg_fill_stage"] == "after_resize"
    assert p["transparent_bg_config"] == K3_MEDIA_PROC_CFG["transparent_bg_config"]
    assert p["tokenizer"] == str(K3_TOKENIZER_JSON.resolve()) and "decode" not in spec
    with mm.pipeline_from_spec(spec) as pipe:  # the family's K3 decode policy
        assert pipe.spec.spec.decode.source_modes == ("L", "RGB", "RGB+transparency")
    # From a directory (what `sglang-mm spec-from-hf DIR` passes), its tokenizer.json.
    for name, doc in K3_CHECKPOINT.items():
        (tmp_path / name).write_text(json.dumps(doc))
    (tmp_path / "tokenizer.json").write_bytes(K3_TOKENIZER_JSON.read_bytes())
    from_dir = KimiFamily.spec_from_hf(mm.plugin.ModelDir.load(tmp_path))
    assert from_dir["params"]["tokenizer"] == str((tmp_path / "tokenizer.json").resolve())
    # The checkpoint's defaults where its keys are absent: no compositing, before_resize.
    cfg = {k: v for k, v in K3_MEDIA_PROC_CFG.items() if not k.startswith("transparent")}
    bare = copy.deepcopy(K3_CHECKPOINT)
    bare["preprocessor_config.json"]["media_proc_cfg"] = cfg
    p = KimiFamily.spec_from_hf(bare, tokenizer=K3_TOKENIZER_JSON)["params"]
    assert (p["transparent_bg_config"], p["transparent_bg_fill_stage"]) == (None, "before_resize")


def test_the_k3_example_spec_is_what_spec_from_hf_gives() -> None:
    root = Path(__file__).resolve().parents[3]
    example = json.loads((root / "examples" / "kimi_k3" / "spec.json").read_text())
    built = KimiFamily.spec_from_hf(K3_CHECKPOINT, tokenizer=K3_TOKENIZER_JSON)
    folder = root / "examples" / "kimi_k3"  # a spec file's relative paths are its folder's
    assert (folder / example["params"]["tokenizer"]).resolve() == K3_TOKENIZER_JSON.resolve()
    assert {**example["params"], "tokenizer": None} == {**built["params"], "tokenizer": None}
    assert example.get("decode") == built.get("decode")


@pytest.mark.parametrize(
    ("model", "match"),
    [
        (K3_CHECKPOINT, "has no tokenizer.json"),
        (_k3(fixed_output_tokens=1024), "fixed_output_tokens"),
        (_k3(transparent_bg_fill_stage="sometime"), "transparent_bg_fill_stage"),
        (_k3(transparent_bg_config={"pattern": "plaid"}), "pattern"),
        (_k3(transparent_bg_config="chessboard"), "must be an object"),
        (_k3(frobnicate=1), "frobnicate"),
        (
            _with(K3_CHECKPOINT, "preprocessor_config.json", media_proc_cfg=None),
            "holds the checkpoint's media_proc_cfg",
        ),
    ],
)
def test_k3_refusals_name_the_key(model: dict[str, Any], match: str) -> None:
    with pytest.raises(mm.SpecError, match=match):
        KimiFamily.spec_from_hf(model, tokenizer=None if "no tokenizer" in match else _tok())


def _tok() -> Path:
    return K3_TOKENIZER_JSON


def test_k3_refuses_transformers_backend() -> None:
    with pytest.raises(mm.SpecError, match="transformers has no Kimi K3 class"):
        KimiFamily.spec_from_hf(K3_CHECKPOINT, tokenizer=K3_TOKENIZER_JSON, resample="aten_u8")
