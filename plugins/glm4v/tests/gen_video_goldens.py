"""Generate the video goldens that the CI replays without torch (run it where torch is, e.g.
``/work/torchenv/bin/python plugins/glm4v/tests/gen_video_goldens.py``), into
``fixtures/video_goldens.json``:

- ``sampling``: the frame indices of transformers 5.23's ``Glm4vVideoProcessor.sample_frames``
  (at its default fps and per-call ones) and ``Glm46VVideoProcessor.sample_frames`` on
  ``VideoMetadata(total_num_frames, fps, duration=total / fps)`` over a grid of frame counts
  and rates: short, at the duration thresholds (30 s, 300 s, 2400 s), long, and rates under
  the requested fps.
- ``requests``: whole requests through the model type's processor (``Glm4vProcessor`` /
  ``Glm46VProcessor`` with the torchvision image processor at the shipped size, the video
  processor's class defaults and the local tokenizer of `_glm4v_tokenizer`) on clips made by
  ``sglang_mm_core.conformance.video.make_clip`` (recipe and SHA-256 recorded), each read in
  one of two ways:

  - ``torchcodec``: every frame decoded with PyAV as transformers' ``read_video_pyav`` does
    (``to_ndarray(format="rgb24")``), passed as the video array with its ``VideoMetadata``
    (``total_num_frames`` = the stream's frame count, ``fps`` its average rate, ``duration``
    their quotient) and ``do_sample_frames=True``: HF samples the array, so a repeated index
    is a repeated frame, as with transformers' default torchcodec reader (and SGLang);
  - ``pyav``: the clip's path, read by transformers' own PyAV reader
    (``conformance.video.hf_reads_with_pyav``): a repeated index decodes once.

  Recorded: the sampled indices, ``video_grid_thw``, the SHA-256 of the float32
  ``pixel_values_videos`` (and of ``pixel_values`` with an image), the expanded
  ``input_ids``, the SHA-256 of the int64 ``mm_token_type_ids`` and of the positions
  ``[3, L]`` of the model class's ``get_rope_index`` (in full too where short) and their
  delta; or HF's error.

The torch venv needs no sglang-mm: ``conformance/video.py`` (``clip_record``,
``hf_reads_with_pyav``) needs only numpy and PyAV, so it is loaded from its file."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import sys
import tempfile
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _glm4v_corpus import ROOT, make_input
from gen_goldens import meta, processor, rope, write

OUT = Path(__file__).parent / "fixtures" / "video_goldens.json"


def _load_clips() -> Any:
    """``sglang_mm_core.conformance.video`` from its file (it needs only numpy and PyAV)."""
    path = ROOT / "sglang_mm_core" / "conformance" / "video.py"
    spec = importlib.util.spec_from_file_location("_conformance_video", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


clips_module = _load_clips()

#: (total frames, fps) of the sampler goldens.
SAMPLING_GRID = [(1, 25.0), (2, 25.0), (3, 1.0), (7, 2.0), (13, 0.5), (30, 25.0), (31, 30.0)]
SAMPLING_GRID += [(75, 2.5), (120, 25.0), (749, 25.0), (750, 25.0), (751, 25.0), (900, 30.0)]
SAMPLING_GRID += [(899, 29.97002997002997), (7500, 25.0), (7501, 25.0), (9000, 30.0)]
SAMPLING_GRID += [(9001, 30.0), (18000, 60.0), (60000, 25.0), (60001, 25.0), (72000, 24.0)]
SAMPLING_GRID += [(100, 1.0), (400, 1.0), (3000, 1.0), (5, 0.1), (1000, 0.4)]
#: Per-call fps of Glm4vVideoProcessor.sample_frames (None: its fps 2).
GLM4V_FPS = [None, 1.0, 0.5, 3.0, 30.0]

V = "<|begin_of_video|><|video|><|end_of_video|>"
I = "<|begin_of_image|><|image|><|end_of_image|>"  # noqa: E741
PROMPTS = {
    "video": f"[gMASK]<sop><|user|>\n{V}Describe this video<|assistant|>",
    "alone": V,
    "two-videos": f"compare {V} and {V}",
    "image-video": f"{I} and {V} compare",
}
IMAGE = {"noise": [200, 150, 7]}

H264 = {"codec": "libx264", "w": 64, "h": 48, "n": 30}
LONG = {"codec": "libx264", "w": 64, "h": 48, "n": 120}
ONE = {"codec": "libx264", "w": 32, "h": 32, "n": 1}
HD = {"codec": "libx264", "w": 1280, "h": 720, "n": 20, "rate": 10}
HEVC = {"codec": "libx265", "w": 64, "h": 48, "n": 12}
ODD_444 = {"codec": "libx264", "w": 33, "h": 17, "n": 11, "pix_fmt": "yuv444p"}
VP9_MP4 = {"codec": "libvpx-vp9", "w": 48, "h": 32, "n": 10}
MPEG4 = {"codec": "mpeg4", "w": 40, "h": 30, "n": 3}
SLOW = {"codec": "libx264", "w": 48, "h": 48, "n": 5, "rate": 1}
VFR = {"codec": "libx264", "w": 32, "h": 32, "n": 9, "vfr": True}

#: Per-call sizes that make the frame count the resize sees matter.
SMALL_MAX = {"shortest_edge": 3136, "longest_edge": 21500}
BIG_MIN = {"shortest_edge": 30_000, "longest_edge": 47_040_000}

#: (id, model type, reader, clip recipes, prompt, with the image, videos_kwargs, why)
CASES: list[tuple[str, str, str, list[dict[str, Any]], str, bool, dict[str, Any], str]] = [
    ("glm4v-h264", "glm4v", "torchcodec", [H264], "video", False, {},
     "1.2 s at 2 fps: frames 0 and 13, one temporal group"),
    ("glm4v-long-odd", "glm4v", "torchcodec", [LONG], "video", False, {},
     "9 frames, the last repeated to 10: the resize counts 10"),
    ("glm4v-long-odd-pyav", "glm4v", "pyav", [LONG], "video", False, {},
     "the same through the pyav reader: the repeat decodes once, the resize counts 9"),
    ("glm4v-long-odd-max", "glm4v", "torchcodec", [LONG], "video", False, {"size": SMALL_MAX},
     "10 frames counted against a small longest_edge"),
    ("glm4v-long-odd-max-pyav", "glm4v", "pyav", [LONG], "video", False, {"size": SMALL_MAX},
     "9 frames counted against it"),
    ("glm4v-fps1", "glm4v", "torchcodec", [LONG], "alone", False, {"fps": 1.0},
     "a per-call fps"),
    ("glm4v-720p", "glm4v", "torchcodec", [HD], "video", False, {},
     "1280x720 at 10 fps, 2 s"),
    ("glm4v-one-frame", "glm4v", "torchcodec", [ONE], "video", False, {},
     "one frame, repeated by the sampler"),
    ("glm4v-one-frame-pyav", "glm4v", "pyav", [ONE], "video", False, {},
     "one frame through the pyav reader: fewer frames than the temporal patch, refused"),
    ("glm4v-hevc", "glm4v", "pyav", [HEVC], "video", False, {}, "HEVC"),
    ("glm4v-444-odd-size", "glm4v", "torchcodec", [ODD_444], "video", False, {},
     "yuv444p, 33x17: the side under 28 upscaled first"),
    ("glm4v-slow-rate", "glm4v", "torchcodec", [SLOW], "video", False, {},
     "a 1 fps video sampled at 2 fps: repeated indices dropped by the sampler"),
    ("glm4v-vfr", "glm4v", "torchcodec", [VFR], "video", False, {},
     "variable frame rate in MP4: the average rate"),
    ("glm4v-moe-two-videos", "glm4v_moe", "torchcodec", [H264, HEVC], "two-videos", False,
     {}, "two videos in one prompt, GLM-4.5V's ids"),
    ("glm4v-moe-image-video", "glm4v_moe", "pyav", [LONG], "image-video", True, {},
     "an image then a video"),
    ("glm46v-h264", "glm46v", "torchcodec", [H264], "video", False, {},
     "1.2 s: 3 fps x 2, 7 frames, the last repeated"),
    ("glm46v-long", "glm46v", "torchcodec", [LONG], "video", False, {}, "4.8 s"),
    ("glm46v-h264-min", "glm46v", "torchcodec", [H264], "video", False, {"size": BIG_MIN},
     "8 frames counted against a large shortest_edge"),
    ("glm46v-h264-min-pyav", "glm46v", "pyav", [H264], "video", False, {"size": BIG_MIN},
     "7 frames counted against it"),
    ("glm46v-long-pyav", "glm46v", "pyav", [LONG], "video", False, {}, "4.8 s, pyav"),
    ("glm46v-720p", "glm46v", "pyav", [HD], "alone", False, {}, "1280x720 at 10 fps"),
    ("glm46v-vp9-mp4", "glm46v", "torchcodec", [VP9_MP4], "video", False, {}, "VP9 in MP4"),
    ("glm46v-mpeg4-3-frames", "glm46v", "torchcodec", [MPEG4], "video", False, {},
     "0.12 s: int(0.12 * 3 * 2) = 0 frames sampled"),
    ("glm46v-image-video", "glm46v", "torchcodec", [H264], "image-video", True, {},
     "an image then a video"),
    ("glm46v-two-videos", "glm46v", "pyav", [H264, VFR], "two-videos", False, {},
     "two videos"),
]  # fmt: skip


def sha256(a: Any) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype=np.float32).tobytes()).hexdigest()


def int_sha256(a: Any) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype=np.int64).tobytes()).hexdigest()


def indices_row(indices: Any) -> Any:
    """The indices in full up to 64 of them, else their count, SHA-256 (int64) and ends."""
    a = np.asarray(indices, dtype=np.int64)
    if len(a) <= 64:
        return a.tolist()
    return {"n": len(a), "sha256": int_sha256(a), "head": a[:8].tolist(), "tail": a[-8:].tolist()}


def sampling_goldens() -> list[dict[str, Any]]:
    from transformers import Glm4vVideoProcessor, Glm46VVideoProcessor
    from transformers.video_utils import VideoMetadata

    rows = []
    for total, fps in SAMPLING_GRID:
        for cls, rates in ((Glm4vVideoProcessor, GLM4V_FPS), (Glm46VVideoProcessor, [None])):
            for rate in rates:
                meta_ = VideoMetadata(total_num_frames=total, fps=fps, duration=total / fps)
                row: dict[str, Any] = {
                    "processor": cls.__name__,
                    "total": total,
                    "fps": fps,
                    "requested_fps": rate,
                }
                try:
                    row["indices"] = indices_row(cls().sample_frames(meta_, fps=rate))
                except Exception as e:  # recorded: what HF does
                    row["error"] = f"{type(e).__name__}: {e}"
                rows.append(row)
    return rows


def decoded(data: bytes) -> tuple[np.ndarray, Any]:
    """Every frame as ``read_video_pyav`` converts it, and the metadata it states."""
    import av
    from transformers.video_utils import VideoMetadata

    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.video[0]
        total, rate = stream.frames, stream.average_rate
        frames = np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])
    meta_ = VideoMetadata(
        total_num_frames=int(total), fps=float(rate), duration=float(total / rate)
    )
    return frames, meta_


def run_case(case: tuple[Any, ...], tmp: Path) -> dict[str, Any]:
    from PIL import Image

    cid, model_type, reader, recipes, prompt_name, with_image, kwargs, why = case
    proc = processor(model_type)
    clips, paths, arrays, metas = [], [], [], []
    for k, recipe in enumerate(recipes):
        data, record = clips_module.clip_record(recipe)
        path = tmp / f"{cid}-{k}.mp4"
        path.write_bytes(data)
        paths.append(str(path))
        clips.append(record)
        frames, m = decoded(data)
        arrays.append(frames)
        metas.append(m)
    text = PROMPTS[prompt_name]
    row: dict[str, Any] = {
        "id": cid,
        "why": why,
        "model_type": model_type,
        "reader": reader,
        "processor": type(proc).__name__,
        "video_processor": type(proc.video_processor).__name__,
        "clips": clips,
        "prompt": text,
        "prompt_ids": proc.tokenizer(text)["input_ids"],
        "image": IMAGE if with_image else None,
        "videos_kwargs": kwargs,
    }
    call: dict[str, Any] = {"return_tensors": "np", "return_metadata": True, **kwargs}
    if reader == "pyav":
        clips_module.hf_reads_with_pyav(proc.video_processor)
        call["videos"] = paths
    else:
        call |= {"videos": arrays, "video_metadata": metas, "do_sample_frames": True}
    images = [Image.fromarray(make_input(IMAGE))] if with_image else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = proc(text=[text], images=images, **call)
        except Exception as e:  # recorded: what HF does with this clip
            frame = traceback.extract_tb(e.__traceback__)[-1]
            row["error"] = {
                "type": type(e).__name__,
                "message": str(e),
                "raised_in": f"{Path(frame.filename).name}:{frame.name}",
            }
            print(cid, "error", row["error"])
            return row
    pv = np.asarray(got["pixel_values_videos"])
    positions, delta = rope(model_type, got)
    ids = np.asarray(got["input_ids"])[0]
    types_ = np.asarray(got["mm_token_type_ids"])[0]
    pos = np.asarray(positions, dtype=np.int64)
    row |= {
        "frame_indices": [
            np.asarray(m.frames_indices).astype(int).tolist() for m in got["video_metadata"]
        ],
        "input_ids": ids.tolist(),
        "mm_token_type_ids_sha256": int_sha256(types_),
        "video_grid_thw": np.asarray(got["video_grid_thw"]).tolist(),
        "pixel_values_videos": {"shape": list(pv.shape), "sha256": sha256(pv)},
        "positions_sha256": int_sha256(pos),
        # in full where short (they are what a failing test prints)
        "positions": positions if len(ids) <= 600 else None,
        "delta": delta,
    }
    if with_image:
        px = np.asarray(got["pixel_values"])
        row["pixel_values"] = {"shape": list(px.shape), "sha256": sha256(px)}
        row["image_grid_thw"] = np.asarray(got["image_grid_thw"]).tolist()
    print(cid, row["video_grid_thw"], row["frame_indices"], len(row["input_ids"]), delta)
    return row


def main() -> None:
    import av
    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    torch.set_num_threads(1)
    sampling = sampling_goldens()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [run_case(case, Path(tmp)) for case in CASES]
    reference = (
        "Glm4vProcessor / Glm46VProcessor(image_processor=Glm4vImageProcessor / "
        "Glm46VImageProcessor(size=shipped), tokenizer=<local>, video_processor="
        "Glm4vVideoProcessor() / Glm46VVideoProcessor()); get_rope_index of Glm4vModel / "
        "Glm4vMoeModel / Glm46VModel"
    )
    doc = {
        **meta(reference),
        "generator": "plugins/glm4v/tests/gen_video_goldens.py",
        "av": av.__version__,
        "readers": {
            "torchcodec": "PyAV-decoded rgb24 frames passed as the video array with "
            "VideoMetadata(total_num_frames=stream.frames, fps=float(average_rate), "
            "duration=float(frames / average_rate)) and do_sample_frames=True",
            "pyav": "the clip's path, fetch_videos = load_video(path, backend='pyav', "
            "sample_indices_fn=...)",
        },
        "tensor_hash": "sha256 of the float32 C-contiguous bytes",
        "sampling": sampling,
        "cases": rows,
    }
    write(OUT, doc)


if __name__ == "__main__":
    main()
