"""Goldens of transformers *4.57.1*'s Qwen3-VL processor on the clips, prompts and tokenizer
files of ``gen_video_qwen3_goldens.py``, for ``video_markers: "replace"``: before 5.10,
``Qwen3VLProcessor.__call__`` replaced the whole ``<|vision_start|><|video_pad|><|vision_end|>``
of the prompt with the timestamped groups (5.x replaces ``<|video_pad|>`` alone, keeping the
prompt's markers around them), so the first timestamp follows the prompt's text directly and is
tokenized with it. The call and the PyAV loading are those of the 5.23 generator (4.57's
``load_video(path, backend="pyav", sample_indices_fn=...)``), the tokenizer is
``Qwen2TokenizerFast.from_pretrained(<fixtures tokenizer dir>)`` (4.57 reads tokenizer.json as
it is), the positions are 4.57's ``Qwen3VLModel.get_rope_index``.

transformers 4.57 needs huggingface-hub < 1 and tokenizers < 0.23, so it is installed into a
directory of its own that shadows the torch venv's::

    /work/torchvenv/bin/python -m pip install --target /tmp/tf457 --no-deps \\
        transformers==4.57.1 huggingface-hub==0.36.0 tokenizers==0.22.1
    PYTHONPATH=/tmp/tf457 /work/torchvenv/bin/python \\
        plugins/qwen_vl/tests/gen_video_qwen3_t4_goldens.py

Writes fixtures/video_qwen3_t4_goldens.json with every version (run the 5.23 generator first:
the tokenizer files are its)."""

from __future__ import annotations

import hashlib
import platform
import sys
import tempfile
import traceback
import types
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gen_video_qwen3_goldens as q3  # noqa: E402

base = q3.base
OUT = HERE / "fixtures" / "video_qwen3_t4_goldens.json"
GENERATOR = "plugins/qwen_vl/tests/gen_video_qwen3_t4_goldens.py"


def pyav_fetch_videos(video_processor: Any) -> None:
    """4.57's ``fetch_videos`` with ``backend="pyav"`` (it picks torchcodec, else
    torchvision)."""
    from transformers.video_utils import load_video

    def fetch_videos(video_url_or_urls: Any, sample_indices_fn: Any = None) -> Any:
        if isinstance(video_url_or_urls, list):
            return list(
                zip(
                    *[
                        fetch_videos(x, sample_indices_fn=sample_indices_fn)
                        for x in video_url_or_urls
                    ],
                    strict=True,
                )
            )
        return load_video(video_url_or_urls, backend="pyav", sample_indices_fn=sample_indices_fn)

    video_processor.fetch_videos = fetch_videos


def rope(model: str, got: Any) -> tuple[list[list[int]], int]:
    """4.57's ``Qwen3VLModel.get_rope_index`` on a stub carrying the config it reads."""
    import torch
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLModel

    special = q3.SPECIAL[model]
    config = types.SimpleNamespace(
        vision_config=types.SimpleNamespace(spatial_merge_size=q3.MERGE),
        image_token_id=special["<|image_pad|>"],
        video_token_id=special["<|video_pad|>"],
        vision_start_token_id=special["<|vision_start|>"],
    )
    stub = types.SimpleNamespace(config=config)
    kwargs = {
        key: torch.tensor(np.asarray(got[key])) if key in got else None
        for key in ("image_grid_thw", "video_grid_thw")
    }
    pos, delta = Qwen3VLModel.get_rope_index(
        stub, torch.tensor(np.asarray(got["input_ids"])), **kwargs
    )
    return pos[:, 0, :].tolist(), int(delta.reshape(-1)[0])


def run_case(case: tuple[Any, ...], toks: dict[str, Any], tmp: Path) -> dict[str, Any]:
    from transformers import Qwen2VLImageProcessor, Qwen3VLProcessor
    from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

    cid, model, recipes, prompt_name, with_image, videos_kwargs, why = case
    tok = toks[model]
    video_processor = Qwen3VLVideoProcessor()
    pyav_fetch_videos(video_processor)
    image_processor = Qwen2VLImageProcessor(
        patch_size=16,
        merge_size=2,
        temporal_patch_size=2,
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
        size={"shortest_edge": 65536, "longest_edge": 16777216},
        min_pixels=65536,  # 4.57 reads these, not size
        max_pixels=16777216,
    )
    processor = Qwen3VLProcessor(
        image_processor=image_processor, tokenizer=tok, video_processor=video_processor
    )
    clips, paths = [], []
    for k, recipe in enumerate(recipes):
        r = dict(recipe)
        data = base.make_clip(r.pop("codec"), r.pop("w"), r.pop("h"), r.pop("n"), **r)
        path = tmp / f"{cid}-{k}.mp4"
        path.write_bytes(data)
        paths.append(str(path))
        clips.append(
            {"recipe": recipe, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
        )
    prompt = q3.PROMPTS[prompt_name]
    row: dict[str, Any] = {
        "id": cid,
        "why": why,
        "model": model,
        "tokenizer": f"fixtures/{q3.TOKENIZER_DIRS[model].name}/tokenizer.json",
        "clips": clips,
        "prompt": prompt,
        "prompt_ids": tok(prompt)["input_ids"],
        "with_image": with_image,
        "videos_kwargs": videos_kwargs,
    }
    if "cap_pixels_per_frame" in videos_kwargs:
        row["skipped"] = "transformers 4.57's video processor has no cap_pixels_per_frame"
        return row
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = processor(
                text=[prompt],
                images=[base.image()] if with_image else None,
                videos=paths,
                return_tensors="pt",  # 4.57's video processors are torch-only
                # 4.57 cannot make tensors of the metadata it would return, but uses it itself
                **videos_kwargs,
            )
            got = {k: v.numpy() if hasattr(v, "numpy") else v for k, v in got.items()}
        except Exception as e:  # recorded: what 4.57 does with this clip
            frame = traceback.extract_tb(e.__traceback__)[-1]
            row["error"] = {
                "type": type(e).__name__,
                "message": str(e),
                "raised_in": f"{Path(frame.filename).name}:{frame.name}",
            }
            print(cid, "error", row["error"])
            return row
    pv = np.asarray(got["pixel_values_videos"])
    positions, delta = rope(model, got)
    row.update(
        {
            "input_ids": np.asarray(got["input_ids"])[0].tolist(),
            "pixel_values_videos": {
                "dtype": str(pv.dtype),
                "shape": list(pv.shape),
                "sha256": base.sha256(pv),
            },
            "video_grid_thw": np.asarray(got["video_grid_thw"]).tolist(),
            "positions": positions,
            "delta": delta,
        }
    )
    if with_image:
        row["image_grid_thw"] = np.asarray(got["image_grid_thw"]).tolist()
    print(cid, row["video_grid_thw"], len(row["input_ids"]), delta)
    return row


def main() -> None:
    import av
    import tokenizers
    import torch
    import torchvision
    import transformers
    from transformers import Qwen2TokenizerFast
    from transformers.utils import logging as hf_logging

    assert transformers.__version__.startswith("4.57"), transformers.__version__
    hf_logging.set_verbosity_error()
    torch.set_num_threads(1)
    toks = {m: Qwen2TokenizerFast.from_pretrained(str(d)) for m, d in q3.TOKENIZER_DIRS.items()}
    for model, tok in toks.items():
        for content, i in q3.SPECIAL[model].items():
            assert tok(content)["input_ids"] == [i], (model, content)
    with tempfile.TemporaryDirectory() as tmp:
        rows = [run_case(case, toks, Path(tmp)) for case in q3.CASES]
    doc = {
        "generator": GENERATOR,
        "reference": (
            "transformers 4.57.1's Qwen3VLProcessor(image_processor=Qwen2VLImageProcessor(patch "
            "16, mean/std 0.5), tokenizer=Qwen2TokenizerFast.from_pretrained(<fixtures tokenizer "
            "dir>), video_processor=Qwen3VLVideoProcessor()) on clip paths read by "
            "load_video(backend='pyav'); 4.57's Qwen3VLModel.get_rope_index"
        ),
        "layout": (
            "4.57 replaces the whole <|vision_start|><|video_pad|><|vision_end|> of the prompt "
            "(str.replace of its first occurrence, once per video)"
        ),
        "cases_of": "gen_video_qwen3_goldens.py (its CASES, PROMPTS and tokenizer files)",
        "tokenizers_files": {
            m: hashlib.sha256((d / "tokenizer.json").read_bytes()).hexdigest()
            for m, d in q3.TOKENIZER_DIRS.items()
        },
        "tensor_hash": "sha256 of the float32 C-contiguous bytes",
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "av": av.__version__,
        "numpy": np.__version__,
        "cases": rows,
    }
    base.OUT = OUT
    base.write(doc)
    print(f"{len(rows)} cases -> {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
