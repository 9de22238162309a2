"""`spec_from_hf` on model directories written here the way `OpenGVLab/InternVL3-1B-hf` and
`InternVL3_5-1B-HF` ship them: the spec it builds reproduces HF's image processor loaded from
the same directory, bit for bit, whether given as a path or as its parsed files; the `<img>` /
`</img>` ids come from the tokenizer files (the shipped ids only without one); what it cannot
match is refused, naming the setting; the CLI finds this family for such a directory."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _internvl_refs import TOKENS_3, TOKENS_3_5, as_bits, photo
from sglang_mm_internvl import InternVLFamily, spec_from_hf

from sglang_mm_core.errors import SpecError

PREPROCESSOR = {
    "crop_size": None,
    "crop_to_patches": False,
    "data_format": "channels_first",
    "default_to_square": True,
    "device": None,
    "do_center_crop": None,
    "do_convert_rgb": True,
    "do_normalize": True,
    "do_rescale": True,
    "do_resize": True,
    "image_mean": [0.485, 0.456, 0.406],
    "image_processor_type": "GotOcr2ImageProcessorFast",
    "image_std": [0.229, 0.224, 0.225],
    "input_data_format": None,
    "max_patches": 12,
    "min_patches": 1,
    "processor_class": "InternVLProcessor",
    "resample": 3,
    "rescale_factor": 0.00392156862745098,
    "return_tensors": None,
    "size": {"height": 448, "width": 448},
}


def config(image_token_id: int) -> dict[str, Any]:
    return {
        "architectures": ["InternVLForConditionalGeneration"],
        "model_type": "internvl",
        "downsample_ratio": 0.5,
        "image_token_id": image_token_id,
        "projector_hidden_act": "gelu",
        "vision_feature_layer": -1,
        "text_config": {"model_type": "qwen2", "hidden_size": 896},
        "vision_config": {
            "model_type": "internvl_vision",
            "image_size": [448, 448],
            "patch_size": [14, 14],
            "hidden_size": 1024,
        },
    }


def tokenizer_config(tokens: dict[str, int]) -> dict[str, Any]:
    return {
        "added_tokens_decoder": {
            str(i): {"content": t, "special": True, "lstrip": False, "rstrip": False}
            for t, i in tokens.items()
        },
        "extra_special_tokens": {
            "context_image_token": "<IMG_CONTEXT>",
            "end_image_token": "</img>",
            "start_image_token": "<img>",
            "video_token": "<video>",
        },
    }


def model_files(tokens: dict[str, int], **pp: Any) -> dict[str, dict[str, Any]]:
    """The JSON files of a model directory, by name, as the checkpoints ship them."""
    return {
        "preprocessor_config.json": {**PREPROCESSOR, **pp},
        "config.json": config(tokens["<IMG_CONTEXT>"]),
        "processor_config.json": {"image_seq_length": 256, "processor_class": "InternVLProcessor"},
        "tokenizer_config.json": tokenizer_config(tokens),
    }


def model_dir(root: Path, tokens: dict[str, int], **pp: Any) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, doc in model_files(tokens, **pp).items():
        (root / name).write_text(json.dumps(doc))
    return root


def bare(pp: dict[str, Any], cfg: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A directory of the two config files alone (no processor or tokenizer file)."""
    return {"preprocessor_config.json": pp, "config.json": cfg}


@pytest.mark.parametrize("tokens", [TOKENS_3, TOKENS_3_5], ids=["internvl3", "internvl3_5"])
def test_spec_reproduces_hf_loaded_from_the_directory(tmp_path, tokens):
    from transformers import GotOcr2ImageProcessorPil

    root = model_dir(tmp_path / "m", tokens)
    doc = spec_from_hf(root, resample="pil")
    p = doc["params"]
    assert doc["family"] == "internvl"
    assert (p["image_token_id"], p["start_image_token_id"], p["end_image_token_id"]) == (
        tokens["<IMG_CONTEXT>"],
        tokens["<img>"],
        tokens["</img>"],
    )
    assert p["crop_to_patches"] is True and p["image_seq_length"] == 256
    # the directory's parsed files give the same spec; so do the two configs alone, from the
    # shipped tokenizers' ids
    files = model_files(tokens)
    assert InternVLFamily.spec_from_hf(files, resample="pil") == doc
    pp = json.loads((root / "preprocessor_config.json").read_text())
    assert spec_from_hf(bare(pp, config(tokens["<IMG_CONTEXT>"])), resample="pil") == doc
    fam = InternVLFamily(p)
    hf = GotOcr2ImageProcessorPil.from_pretrained(str(root))
    for name in ("chelsea.png", "rocket.jpg"):
        image = photo(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # InternVLProcessor always asks for the tiles, whatever the file says
            want = hf(images=[image], crop_to_patches=True, return_tensors="np")["pixel_values"]
        got = fam.process_item(np.asarray(image)).feature.array
        np.testing.assert_array_equal(as_bits(got), as_bits(np.asarray(want)))


def test_defaults_to_the_torchvision_backend(tmp_path):
    assert spec_from_hf(model_dir(tmp_path / "m", TOKENS_3))["params"]["resample"] == "aten_u8"


@pytest.mark.parametrize(
    ("pp", "message"),
    [
        ({"resample": 2}, r"resample=2 \(bilinear\) is not supported"),
        ({"do_normalize": False}, r"do_normalize=False is not supported"),
        ({"rescale_factor": 0.5}, r"rescale_factor=0.5 is not supported"),
        ({"size": {"height": 448, "width": 336}}, r"not square"),
        ({"size": {"shortest_edge": 448}}, r"must be \{height, width\}"),
        ({"do_pad": True}, r"do_pad=True is not supported"),
        ({"use_fancy_crop": True}, r"'use_fancy_crop' is not supported"),
        ({"image_processor_type": "CLIPImageProcessor"}, r"'CLIPImageProcessor' is not supported"),
        ({"min_patches": 6, "max_patches": 2}, r"min_patches \(6\) must not exceed"),
        ({"size": {"height": 224, "width": 224}}, r"tile size 224 disagrees .* image_size 448"),
    ],
)
def test_refused_settings_name_themselves(pp, message):
    with pytest.raises(SpecError, match=message):
        spec_from_hf(model_files(TOKENS_3, **pp))


def test_refused_models():
    with pytest.raises(SpecError, match="not an InternVL model"):
        spec_from_hf(bare(PREPROCESSOR, {**config(151667), "model_type": "qwen2_vl"}))
    with pytest.raises(SpecError, match="123 is not a shipped InternVL tokenizer's and the model"):
        spec_from_hf(bare(PREPROCESSOR, config(123)))
    with pytest.raises(SpecError, match="whole number of tokens"):
        spec_from_hf(bare(PREPROCESSOR, {**config(151667), "downsample_ratio": 0.3}))
    with pytest.raises(SpecError, match=r"preprocessor_config\.json not found"):
        spec_from_hf({"config.json": config(151667)})


def test_marker_ids_come_from_the_tokenizer_files():
    """Other ids than the shipped ones, from tokenizer_config.json or tokenizer.json alone;
    a tokenizer without the markers, or whose <IMG_CONTEXT> is not config.json's, is refused
    (never the shipped ids in its place)."""
    other = {"<img>": 7, "</img>": 8, "<IMG_CONTEXT>": 9}
    files = model_files(other)
    p = spec_from_hf(files)["params"]
    assert (p["start_image_token_id"], p["end_image_token_id"], p["image_token_id"]) == (7, 8, 9)
    del files["tokenizer_config.json"]
    files["tokenizer.json"] = {
        "added_tokens": [{"id": i, "content": t, "special": True} for t, i in other.items()]
    }
    assert spec_from_hf(files)["params"] == p
    without = model_files(TOKENS_3)
    del without["tokenizer_config.json"]["added_tokens_decoder"]["151665"]
    with pytest.raises(SpecError, match="no id for <img>"):
        spec_from_hf(without)
    disagreeing = model_files(TOKENS_3)
    disagreeing["config.json"] = config(151671)
    with pytest.raises(SpecError, match=r"<IMG_CONTEXT> = 151667, config\.json image_token_id"):
        spec_from_hf(disagreeing)


def test_marker_names_follow_the_tokenizer_config():
    """``InternVLProcessor`` reads the markers' names from the tokenizer's
    ``extra_special_tokens``; so does spec_from_hf."""
    tokens = {"<image>": 5, "</image>": 6, "<IMG_CONTEXT>": 151667}
    files = model_files(tokens)
    extra = files["tokenizer_config.json"]["extra_special_tokens"]
    extra.update(start_image_token="<image>", end_image_token="</image>")
    p = spec_from_hf(files)["params"]
    assert (p["start_image_token_id"], p["end_image_token_id"]) == (5, 6)


def test_a_disagreeing_processor_config_is_refused(tmp_path):
    root = model_dir(tmp_path / "m", TOKENS_3)
    (root / "processor_config.json").write_text(json.dumps({"image_seq_length": 64}))
    with pytest.raises(SpecError, match="image_seq_length 64 disagrees"):
        spec_from_hf(root)


def test_cli_spec_from_hf(tmp_path):
    root = model_dir(tmp_path / "m", TOKENS_3_5)
    out = subprocess.run(
        [sys.executable, "-m", "sglang_mm_core", "spec-from-hf", str(root)],
        capture_output=True,
        text=True,
        check=True,
    )
    doc = json.loads(out.stdout)
    assert doc["family"] == "internvl" and doc["params"]["image_token_id"] == 151671
    assert doc["params"]["start_image_token_id"] == 151669
