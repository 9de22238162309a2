"""`spec_from_hf` on local model directories shaped like google/gemma-4-* (the image processor
settings in ``processor_config.json`` or ``preprocessor_config.json``, the ids in
``config.json``, the local test tokenizer saved beside them), each key mapped, its refusals,
and the spec it gives processing an image as HF's `Gemma4ImageProcessorPil` does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _gemma4_refs import SHIPPED_PREPROCESSOR, as_bits, hf_pil, noise, tokenizer
from sglang_mm_gemma4 import Gemma4Family

import sglang_mm_core as mm
from sglang_mm_core.plugin import ModelDir

# The image processor settings as Gemma4ImageProcessor saves them.
PRE: dict[str, Any] = dict(SHIPPED_PREPROCESSOR)
CONFIG: dict[str, Any] = {
    "model_type": "gemma4",
    "boi_token_id": 255999,
    "eoi_token_id": 258882,
    "image_token_id": 258880,
    "vision_config": {"model_type": "gemma4_vision", "patch_size": 16, "pooling_kernel_size": 3},
}
ROOT = Path(__file__).resolve().parents[3]
#: Gemma4VideoProcessor's settings as saved beside them (its class defaults).
VIDEO: dict[str, Any] = {
    "video_processor_type": "Gemma4VideoProcessor",
    "do_convert_rgb": True,
    "do_resize": True,
    "resample": 3,
    "do_rescale": True,
    "rescale_factor": 0.00392156862745098,
    "do_normalize": True,
    "image_mean": [0.0, 0.0, 0.0],
    "image_std": [1.0, 1.0, 1.0],
    "patch_size": 16,
    "max_soft_tokens": 70,
    "pooling_kernel_size": 3,
    "num_frames": 32,
    "do_sample_frames": True,
    "fps": None,
    "size": None,
    "default_to_square": True,
    "return_metadata": False,
}


def _files(config: dict[str, Any] | None = None, **changes: Any) -> dict[str, dict[str, Any]]:
    """A model directory as its parsed files (no tokenizer), ``PRE`` changed by ``changes``."""
    pre = {k: v for k, v in {**PRE, **changes}.items() if v is not ...}
    return {"preprocessor_config.json": pre, "config.json": CONFIG if config is None else config}


def _model_dir(root: Path, *, nested: bool = True) -> Path:
    """google/gemma-4-*-it's layout: the settings nested in processor_config.json (with the
    processor's own keys around them), the tokenizer files."""
    if nested:
        proc = {"processor_class": "Gemma4Processor", "image_seq_length": 280}
        proc["image_processor"] = {**PRE, "image_seq_length": 280}
        proc["video_processor"] = VIDEO
        (root / "processor_config.json").write_text(json.dumps(proc))
    else:
        (root / "preprocessor_config.json").write_text(json.dumps(PRE))
    (root / "config.json").write_text(json.dumps(CONFIG))
    tokenizer().save_pretrained(root)
    return root


@pytest.mark.parametrize("nested", [True, False], ids=["processor_config", "preprocessor_config"])
def test_model_dir_gives_the_example_spec(tmp_path: Path, nested: bool) -> None:
    """The example spec, and the directory's tokenizer.json for the videos' timestamps. A
    directory with only preprocessor_config.json gives the image processor's settings to the
    video processor too, as AutoVideoProcessor does (280 tokens, no normalize)."""
    root = _model_dir(tmp_path, nested=nested)
    spec = Gemma4Family.spec_from_hf(root)
    example = json.loads((ROOT / "examples" / "gemma4" / "spec.json").read_text())
    want = dict(example["params"])
    if not nested:
        want |= {"video_max_soft_tokens": 280, "video_do_normalize": False}
    params = dict(spec["params"])
    assert params["tokenizer"] == str((root / "tokenizer.json").resolve())
    params["tokenizer"] = None  # the example names no file
    assert {"family": "gemma4", "params": params} == {"family": "gemma4", "params": want}
    with mm.pipeline_from_spec(spec):
        pass


def test_defaults_are_gemma4s_when_keys_are_absent_or_null() -> None:
    # Only the class named: every setting HF's default, every id Gemma4Config's.
    # The video processor reads the same file: its class defaults where the keys are absent.
    bare = {"image_processor_type": "Gemma4ImageProcessorPil"}
    spec = Gemma4Family.spec_from_hf({"preprocessor_config.json": bare, "config.json": {}})
    shipped = Gemma4Family.spec_from_hf(_files())
    video = {"video_max_soft_tokens": (70, 280), "video_do_normalize": (True, False)}
    for key, (absent, given) in video.items():
        assert (spec["params"].pop(key), shipped["params"].pop(key)) == (absent, given)
    assert spec == shipped
    nulls = {k: None for k in PRE if k != "image_processor_type"}
    got = Gemma4Family.spec_from_hf(_files(**nulls))
    assert (
        got["params"].pop("video_max_soft_tokens"),
        got["params"].pop("video_do_normalize"),
    ) == (
        70,
        True,
    )
    assert got == spec
    p = spec["params"]
    assert (p["patch_size"], p["max_soft_tokens"], p["pooling_kernel_size"]) == (16, 280, 3)
    assert (p["boi_token_id"], p["eoi_token_id"], p["image_token_id"]) == (
        255999,
        258882,
        258880,
    )
    assert p["resample"] == "pil" and p["do_rescale"] is True and p["do_normalize"] is False


def test_processor_config_wins_over_preprocessor_config() -> None:
    # transformers reads the nested section first; so does spec_from_hf.
    files = _files(max_soft_tokens=70)
    files["processor_config.json"] = {"image_processor": {**PRE, "max_soft_tokens": 560}}
    assert Gemma4Family.spec_from_hf(files)["params"]["max_soft_tokens"] == 560
    files["processor_config.json"] = {"image_seq_length": 280}  # no section: the other file
    assert Gemma4Family.spec_from_hf(files)["params"]["max_soft_tokens"] == 70


@pytest.mark.parametrize(
    ("change", "param", "value"),
    [
        ({"max_soft_tokens": 1120}, "max_soft_tokens", 1120),
        ({"max_soft_tokens": 70}, "max_soft_tokens", 70),
        ({"do_normalize": True}, "do_normalize", True),
        ({"image_mean": [0.5, 0.4, 0.3]}, "image_mean", [0.5, 0.4, 0.3]),
        ({"image_std": 0.5}, "image_std", [0.5, 0.5, 0.5]),
        ({"rescale_factor": 1 / 127.5}, "rescale_factor", 1 / 127.5),
        ({"do_rescale": False}, "do_rescale", False),
        ({"do_convert_rgb": None, "resample": None}, "resample", "pil"),
    ],
)
def test_each_key_is_mapped(change: dict[str, Any], param: str, value: Any) -> None:
    assert Gemma4Family.spec_from_hf(_files(**change))["params"][param] == value


def test_patch_and_pooling_sizes_map_when_the_tower_agrees() -> None:
    vision = {"patch_size": 14, "pooling_kernel_size": 2}
    config = {**CONFIG, "vision_config": vision}
    p = Gemma4Family.spec_from_hf(_files(config, **vision))["params"]
    assert (p["patch_size"], p["pooling_kernel_size"]) == (14, 2)


def test_resample_picks_the_backend_and_token_ids_override() -> None:
    assert Gemma4Family.spec_from_hf(_files(), resample="aten_u8")["params"]["resample"] == (
        "aten_u8"
    )
    config = {**CONFIG, "image_token_id": 7, "boi_token_id": 8, "eoi_token_id": 9}
    p = Gemma4Family.spec_from_hf(_files(config))["params"]
    assert (p["image_token_id"], p["boi_token_id"], p["eoi_token_id"]) == (7, 8, 9)
    p = Gemma4Family.spec_from_hf(_files(), token_ids={"image_token_id": 5})["params"]
    assert (p["image_token_id"], p["boi_token_id"]) == (5, 255999)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"resample": 2}, r"resample=2 \(bilinear\) is not supported \(only 3, bicubic\)"),
        ({"resample": 1}, "resample=1"),
        ({"image_processor_type": "SiglipImageProcessor"}, "not Gemma 4's"),
        ({"image_processor_type": ...}, "image_processor_type None"),
        ({"do_resize": False}, "do_resize"),
        ({"do_convert_rgb": False}, "do_convert_rgb"),
        ({"do_center_crop": True}, "do_center_crop=True"),
        ({"do_pad": True}, "do_pad=True"),
        ({"do_pan_and_scan": True}, "'do_pan_and_scan' is not supported"),
        ({"max_soft_tokens": 300}, "max_soft_tokens must be one of"),
        ({"rescale_factor": 0}, "rescale_factor"),
        ({"image_mean": [0.5, 0.5]}, "image_mean"),
        ({"patch_size": 14}, "patch_size=14 disagrees with config.json vision_config"),
        ({"pooling_kernel_size": 4}, "pooling_kernel_size=4 disagrees"),
    ],
)
def test_what_cannot_be_matched_is_refused(change: dict[str, Any], words: str) -> None:
    with pytest.raises(mm.SpecError, match=words):
        Gemma4Family.spec_from_hf(_files(**change))


def test_inert_keys_are_accepted() -> None:
    # HF's Gemma 4 classes read none of these (the resize follows the patch budget).
    inert = {"size": {"height": 896, "width": 896}, "default_to_square": True}
    inert |= {"image_seq_length": 280, "processor_class": "Gemma4Processor", "do_pad": False}
    assert Gemma4Family.spec_from_hf(_files(**inert)) == Gemma4Family.spec_from_hf(_files())


def test_ids_disagreeing_with_the_tokenizer_are_refused(tmp_path: Path) -> None:
    root = _model_dir(tmp_path)
    (root / "config.json").write_text(json.dumps({**CONFIG, "eoi_token_id": 1}))
    with pytest.raises(mm.SpecError, match="eoi_token_id 1 disagrees with the tokenizer's"):
        Gemma4Family.spec_from_hf(root)
    # An explicit id is the caller's word.
    spec = Gemma4Family.spec_from_hf(root, token_ids={"eoi_token_id": 258882})
    assert spec["params"]["eoi_token_id"] == 258882
    with pytest.raises(mm.SpecError, match="unknown keys"):
        Gemma4Family.spec_from_hf(root, token_ids={"audio_token_id": 1})
    (root / "config.json").write_text(json.dumps({**CONFIG, "video_token_id": 1}))
    with pytest.raises(mm.SpecError, match=r"video_token_id 1 disagrees with the tokenizer's"):
        Gemma4Family.spec_from_hf(root)
    spec = Gemma4Family.spec_from_hf(root, token_ids={"video_token_id": 258884})
    assert spec["params"]["video_token_id"] == 258884


def test_missing_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(mm.SpecError, match=r"config\.json"):
        Gemma4Family.spec_from_hf({"preprocessor_config.json": PRE})
    with pytest.raises(mm.SpecError, match=r"preprocessor_config\.json"):
        Gemma4Family.spec_from_hf({"config.json": CONFIG})
    bad = {"config.json": CONFIG, "processor_config.json": {"image_processor": 3}}
    with pytest.raises(mm.SpecError, match="image_processor must be a JSON object"):
        Gemma4Family.spec_from_hf(bad)


@pytest.mark.parametrize("tokens", [70, 1120])
def test_the_spec_processes_as_hf(tokens: int) -> None:
    spec = Gemma4Family.spec_from_hf(_files(max_soft_tokens=tokens))
    img = noise(500, 333, seed=tokens)
    want = hf_pil(max_soft_tokens=tokens)(images=[img], return_tensors="np")
    fam = Gemma4Family(Gemma4Family.Params.model_validate(spec["params"]))
    item = fam.process_item(np.asarray(img), threads=1)
    got = item.feature.array  # type: ignore[union-attr]
    np.testing.assert_array_equal(as_bits(got), as_bits(want["pixel_values"][0]))
    np.testing.assert_array_equal(
        item.aux["image_position_ids"].array, want["image_position_ids"][0]
    )
    with mm.pipeline_from_spec(spec):
        pass


def test_parsed_files_equal_the_directory(tmp_path: Path) -> None:
    root = _model_dir(tmp_path)
    names = ("processor_config.json", "config.json", "tokenizer.json", "tokenizer_config.json")
    files = {name: json.loads((root / name).read_text()) for name in names}
    from_dir = Gemma4Family.spec_from_hf(ModelDir.load(root))
    assert from_dir["params"]["tokenizer"] == str((root / "tokenizer.json").resolve())
    from_dir["params"]["tokenizer"] = None  # parsed files have no path to name
    assert Gemma4Family.spec_from_hf(files) == from_dir


def test_the_cli_reads_the_directory(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "sglang_mm_core", "spec-from-hf", str(_model_dir(tmp_path))],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == Gemma4Family.spec_from_hf(tmp_path)


def _with_video(**changes: Any) -> dict[str, dict[str, Any]]:
    files = _files()
    video = {k: v for k, v in {**VIDEO, **changes}.items() if v is not ...}
    files["processor_config.json"] = {"image_processor": PRE, "video_processor": video}
    return files


def test_video_settings_map_to_the_video_params() -> None:
    p = Gemma4Family.spec_from_hf(_with_video())["params"]
    assert (p["video_max_soft_tokens"], p["video_num_frames"]) == (70, 32)
    assert p["video_do_sample_frames"] is True and p["video_do_normalize"] is True
    assert p["max_soft_tokens"] == 280 and p["tokenizer"] is None  # no directory to name
    change = {"max_soft_tokens": 140, "num_frames": 8, "do_sample_frames": False}
    change |= {"do_normalize": False, "image_mean": 0.5, "image_std": [0.5, 0.25, 0.5]}
    p = Gemma4Family.spec_from_hf(_with_video(**change))["params"]
    assert (p["video_max_soft_tokens"], p["video_num_frames"]) == (140, 8)
    assert p["video_do_sample_frames"] is False and p["video_do_normalize"] is False
    assert (p["video_image_mean"], p["video_image_std"]) == ([0.5] * 3, [0.5, 0.25, 0.5])
    # video_preprocessor_config.json, when processor_config.json has no video section
    files = _files()
    files["video_preprocessor_config.json"] = {**VIDEO, "num_frames": 16}
    assert Gemma4Family.spec_from_hf(files)["params"]["video_num_frames"] == 16


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"fps": 2.0}, "fps=2.0 is not supported"),
        ({"resample": 2}, r"resample=2 \(bilinear\) is not supported"),
        ({"do_resize": False}, "do_resize"),
        ({"do_center_crop": True}, "do_center_crop=True"),
        ({"video_processor_type": "Qwen2VLVideoProcessor"}, "not Gemma 4's"),
        ({"patch_size": 14}, "patch_size=14 differs from the image processor's 16"),
        ({"rescale_factor": 1 / 127.5}, "rescale_factor=.* differs from the image processor's"),
        ({"temporal_patch_size": 2}, "'temporal_patch_size' is not supported"),
        ({"max_soft_tokens": 100}, "video_max_soft_tokens must be one of"),
    ],
)
def test_video_settings_that_cannot_be_matched_are_refused(
    change: dict[str, Any], words: str
) -> None:
    with pytest.raises(mm.SpecError, match=words):
        Gemma4Family.spec_from_hf(_with_video(**change))
