"""``spec_from_hf``: the geometry from a model directory's ``config.json``, flat (SGLang's
runtime names) or in ``vision_config`` (HF's), the flat one first as SGLang's
``normalize_deepseek_v41_config`` reads them; bad configs are a `SpecError` naming the field;
``sglang-mm spec-from-hf`` on a directory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sglang_mm_deepseek_v41 import DeepseekV41Params, spec_from_hf

from sglang_mm_core import pipeline_from_spec
from sglang_mm_core.plugin import SpecError

HF_CONFIG = {
    "model_type": "deepseek_v41",
    "architectures": ["DeepseekV41ForCausalLM"],
    "image_token_id": 128815,
    "text_config": {"hidden_size": 7168},
    "vision_config": {
        "patch_size": 14,
        "downsample_ratio": 3,
        "max_image_tokens": 2048,
        "min_pixels": 200704,
        "max_wh_ratio": 4,
        "hidden_size": 1024,
    },
}


def _params(cfg: dict[str, object], **kw: object) -> dict[str, object]:
    spec = spec_from_hf({"config.json": cfg}, **kw)  # type: ignore[arg-type]
    assert spec["family"] == "deepseek_v41"
    pipeline_from_spec(spec)  # the spec loads
    return spec["params"]  # type: ignore[no-any-return]


def test_vision_config() -> None:
    p = _params(HF_CONFIG)
    assert (p["max_image_tokens"], p["min_pixels"], p["max_wh_ratio"]) == (2048, 200704, 4)
    assert p["image_token_id"] == 128815


def test_flat_fields_come_first_and_text_config_is_read() -> None:
    cfg = {
        **HF_CONFIG,
        "vision_max_n_token": 512,
        "text_config": {"image_token_id": 7, "vision_min_pixels": 1000},
    }
    cfg.pop("image_token_id")
    p = _params(cfg)
    assert (p["max_image_tokens"], p["min_pixels"], p["image_token_id"]) == (512, 1000, 7)


def test_defaults_and_overrides() -> None:
    p = _params({"model_type": "deepseek_v4"}, pil_pass_order="pillow12", image_token_id=3)
    want = DeepseekV41Params(pil_pass_order="pillow12", image_token_id=3).model_dump()
    assert p == want


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        ({"model_type": "qwen2_vl"}, "model_type"),
        ({"vision_config": {"patch_size": 0}}, "patch_size"),
        ({"vision_config": {"max_image_tokens": 3}}, "max_image_tokens"),
        ({"vision_config": {"max_wh_ratio": -1}}, "max_wh_ratio"),
        ({"vision_config": [1]}, "vision_config"),
    ],
)
def test_bad_configs_are_refused(cfg: dict[str, object], match: str) -> None:
    with pytest.raises(SpecError, match=match):
        spec_from_hf({"config.json": cfg})


def test_cli(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(HF_CONFIG))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "sglang_mm_core",
            "spec-from-hf",
            str(tmp_path),
            "--family",
            "deepseek_v41",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["params"]["max_image_tokens"] == 2048
