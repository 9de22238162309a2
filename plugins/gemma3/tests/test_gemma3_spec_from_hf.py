"""`spec_from_hf` on a local model directory shaped like google/gemma-3-*-it (the tokenizer is
the local test one, saved as tokenizer.json), and its refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _gemma3_refs import ids, tokenizer
from sglang_mm_gemma3 import Gemma3Family

import sglang_mm_core as mm
from sglang_mm_core.plugin import ModelDir

PRE: dict[str, Any] = {
    "image_processor_type": "Gemma3ImageProcessor",
    "processor_class": "Gemma3Processor",
    "size": {"height": 896, "width": 896},
    "resample": 2,
    "do_resize": True,
    "do_rescale": True,
    "rescale_factor": 0.00392156862745098,
    "do_normalize": True,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "do_convert_rgb": None,
    "do_pan_and_scan": None,
    "pan_and_scan_min_crop_size": None,
    "pan_and_scan_max_num_crops": None,
    "pan_and_scan_min_ratio_to_activate": None,
}
CONFIG = {
    "model_type": "gemma3",
    "boi_token_index": 255999,
    "eoi_token_index": 256000,
    "image_token_index": 262144,
    "mm_tokens_per_image": 256,
}


def _files(**changes: Any) -> dict[str, dict[str, Any]]:
    """A model directory as its parsed files (no tokenizer), ``PRE`` changed by ``changes``."""
    return {"preprocessor_config.json": {**PRE, **changes}, "config.json": CONFIG}


def _model_dir(root: Path) -> Path:
    (root / "preprocessor_config.json").write_text(json.dumps(PRE))
    (root / "config.json").write_text(json.dumps(CONFIG))
    tokenizer().backend_tokenizer.save(str(root / "tokenizer.json"))
    return root


def test_model_dir_gives_the_it_spec_with_tokenizer_ids(tmp_path: Path) -> None:
    spec = Gemma3Family.spec_from_hf(_model_dir(tmp_path), do_pan_and_scan=True)
    p = spec["params"]
    assert spec["family"] == "gemma3" and p["resample"] == "aten_u8" and p["size"] == 896
    assert p["double_newline_token_id"] == 108
    assert p["pan_and_scan_prefix_ids"] == ids("Here is the original image ")
    assert p["pan_and_scan_separator_ids"] == ids(" ")
    assert (p["pan_and_scan_min_crop_size"], p["pan_and_scan_max_num_crops"]) == (256, 4)
    with mm.pipeline_from_spec(spec):
        pass


def test_the_bundled_example_is_what_spec_from_hf_gives() -> None:
    example = Path(__file__).parents[3] / "examples" / "gemma3" / "spec.json"
    want = json.loads(example.read_text())["params"]
    got = Gemma3Family.spec_from_hf(_files(), resample="pil")["params"]
    assert {k: got[k] for k in want} == want


def test_parsed_files_read_the_tokenizer_as_the_directory_does(tmp_path: Path) -> None:
    # A tokenizer.json handed over parsed (no file on disk) gives the ids the file gives.
    root = _model_dir(tmp_path)
    files = {name: json.loads((root / name).read_text()) for name in _files()}
    files["tokenizer.json"] = json.loads((root / "tokenizer.json").read_text())
    parsed = Gemma3Family.spec_from_hf(files, do_pan_and_scan=True)
    assert parsed == Gemma3Family.spec_from_hf(ModelDir.load(root), do_pan_and_scan=True)
    assert parsed["params"]["pan_and_scan_infix_ids"] == ids(
        " and here are some crops to help you see better "
    )


def test_token_ids_override_and_fill_in_without_a_tokenizer() -> None:
    # Without tokenizer.json "\n\n" is Gemma's 108 and pan and scan needs the phrase ids given.
    assert Gemma3Family.spec_from_hf(_files())["params"]["double_newline_token_id"] == 108
    given = {
        "double_newline_token_id": 5,
        "pan_and_scan_prefix_ids": [6],
        "pan_and_scan_infix_ids": [7],
    }
    p = Gemma3Family.spec_from_hf(_files(), do_pan_and_scan=True, token_ids=given)["params"]
    assert (p["double_newline_token_id"], p["pan_and_scan_prefix_ids"]) == (5, [6])
    assert "pan_and_scan_separator_ids" not in p


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"resample": 3}, r"resample=3 \(bicubic\) is not supported \(only 2, bilinear\)"),
        ({"image_processor_type": "SiglipImageProcessor"}, "not Gemma 3's"),
        ({"do_rescale": False}, "do_rescale"),
        ({"size": {"height": 896, "width": 448}}, "square"),
        ({"do_pan_and_scan": True}, "pan_and_scan_prefix_ids"),
        ({"do_center_crop": True}, "do_center_crop' is not supported"),
        ({"image_seq_length": 64}, "image_seq_length 64 disagrees"),
    ],
)
def test_what_cannot_be_matched_is_refused(change: dict[str, Any], words: str) -> None:
    with pytest.raises(mm.SpecError, match=words):
        Gemma3Family.spec_from_hf(_files(**change))


def test_the_cli_reads_the_tokenizer_of_the_directory(tmp_path: Path) -> None:
    # `sglang-mm spec-from-hf DIR` hands spec_from_hf the directory (a ModelDir): the
    # tokenizer's ids reach the spec, as from the Python call.
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "sglang_mm_core", "spec-from-hf", str(_model_dir(tmp_path))],
        capture_output=True,
        text=True,
        check=True,
    )
    spec = json.loads(out.stdout)
    assert spec == Gemma3Family.spec_from_hf(tmp_path)
    assert spec["params"]["double_newline_token_id"] == 108
