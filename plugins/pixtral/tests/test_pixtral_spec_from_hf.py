"""`spec_from_hf` on model directories shaped like the published Pixtral-12B and Mistral
Small 3.1 repositories (their config values; no weights): the specs equal the shipped example
specs, the CLI builds them, and settings HF reads but we cannot reproduce are refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sglang_mm_pixtral.hf import spec_from_hf

from sglang_mm_core.plugin import ModelDir, SpecError

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
DIRS = {"pixtral-12b": "pixtral", "mistral-small-3.1": "mistral3"}


@pytest.mark.parametrize("model", sorted(DIRS))
def test_directory_gives_the_example_spec(model: str) -> None:
    spec = spec_from_hf(FIXTURES / model)
    want = json.loads((EXAMPLES / DIRS[model] / "spec.json").read_text())
    assert spec["params"] == want["params"]


@pytest.mark.parametrize("model", sorted(DIRS))
def test_cli(model: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "sglang_mm_core", "spec-from-hf", str(FIXTURES / model),
         "--family", "pixtral"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(out.stdout)["params"] == spec_from_hf(FIXTURES / model)["params"]


def _files(model: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    d = ModelDir.load(FIXTURES / model)
    return tuple(  # type: ignore[return-value]
        d.require(f)
        for f in ("preprocessor_config.json", "config.json", "processor_config.json",
                  "tokenizer_config.json")
    )  # fmt: skip


def _spec(
    pp: dict[str, Any],
    cfg: dict[str, Any],
    proc: dict[str, Any] | None = None,
    tok: dict[str, Any] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """`spec_from_hf` of a directory holding these files (the optional ones when given)."""
    files = {"preprocessor_config.json": pp, "config.json": cfg}
    if proc is not None:
        files["processor_config.json"] = proc
    if tok is not None:
        files["tokenizer_config.json"] = tok
    return spec_from_hf(files, **options)


def test_dicts_and_token_ids() -> None:
    pp, cfg, proc, tok = _files("mistral-small-3.1")
    tok["added_tokens_decoder"]["12"]["content"] = "[OTHER]"
    tok["added_tokens_decoder"]["20"] = {"content": "[IMG_BREAK]"}
    spec = _spec(pp, cfg, proc, tok, resample="aten_u8")
    assert spec["params"]["image_break_token_id"] == 20
    assert spec["params"]["resample"] == "aten_u8"
    # Without tokenizer files only Tekken's [IMG] = 10 implies 12 / 13.
    assert _spec(pp, cfg)["params"]["image_end_token_id"] == 13
    with pytest.raises(SpecError, match="IMG_BREAK"):
        _spec(pp, {**cfg, "image_token_index": 77})


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"resample": 2}, "resample"),
        ({"rescale_factor": 0.5}, "rescale_factor"),
        ({"do_normalize": False}, "do_normalize"),
        ({"do_center_crop": True}, "do_center_crop"),
        ({"size": {"height": 512, "width": 512}}, "longest_edge"),
        ({"patch_size": {"height": 14, "width": 16}}, "patch_size"),
        ({"patch_size": 16}, "patch_size disagrees"),
        ({"unknown_knob": 1}, "unknown_knob"),
        ({"image_processor_type": "CLIPImageProcessor"}, "image_processor_type"),
    ],
)
def test_refusals(change: dict[str, Any], match: str) -> None:
    pp, cfg, proc, _ = _files("mistral-small-3.1")
    with pytest.raises(SpecError, match=match):
        _spec({**pp, **change}, cfg, proc)


def test_refuses_other_models_and_disagreeing_merge() -> None:
    pp, cfg, proc, _ = _files("mistral-small-3.1")
    with pytest.raises(SpecError, match="model_type"):
        _spec(pp, {**cfg, "model_type": "qwen2_vl"})
    with pytest.raises(SpecError, match="model_type"):
        _spec(pp, {**cfg, "model_type": "llava", "vision_config": {"model_type": "clip"}})
    with pytest.raises(SpecError, match="spatial_merge_size"):
        _spec(pp, cfg, {**proc, "spatial_merge_size": 1})
