"""Writes ``fixtures/video_sampling_goldens.json``: the frame indices and per-video target sizes
of the real references, for `test_qwen_video_sampling.py` to replay without torch.

Run in the torch venv (outside CI)::

    /work/torchvenv/bin/python plugins/qwen_vl/tests/gen_video_sampling_goldens.py

Every value comes from the references' own code, called directly:

- transformers: ``Qwen2VLVideoProcessor`` / ``Qwen3VLVideoProcessor``, constructed with the case's
  ``min_frames`` / ``max_frames`` / ``temporal_patch_size`` / ``max_video_tokens``, then
  ``sample_frames(VideoMetadata(...), fps=..., num_frames=...)`` and ``resize(...)`` on a
  zero-stride tensor of the video's shape, the base class's pixel resize replaced by a stub that
  records the size ``resize`` asks for;
- qwen-vl-utils: its readers ``_read_video_torchvision`` (``torchvision.io.read_video`` replaced
  by a stub returning a zero-stride ``T``-frame tensor and the rate), ``_read_video_decord`` and
  ``_read_video_torchcodec`` (``decord`` / ``torchcodec`` replaced by stub modules reporting the
  frame count and rate), so ``calculate_video_frame_range``, ``smart_nframes`` and the readers'
  ``torch.linspace(...).round().long()`` run as written; and ``fetch_video`` itself on a stub
  reader, its ``transforms.functional.resize`` replaced by a stub recording the target size.

Index arrays are stored once each (cases refer to them by number), as one delta-coded int32 LZMA
stream in base64; an error is recorded as the exception's type and message."""

from __future__ import annotations

import base64
import importlib.metadata as md
import json
import lzma
import os
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import torch

os.environ.pop("MODEL_SEQ_LEN", None)
os.environ.pop("FORCE_QWENVL_VIDEO_READER", None)

import qwen_vl_utils.vision_process as qvu
import transformers
from transformers.image_utils import SizeDict
from transformers.models.qwen2_vl.video_processing_qwen2_vl import (
    Qwen2VLVideoProcessor,
)
from transformers.models.qwen3_vl.video_processing_qwen3_vl import (
    Qwen3VLVideoProcessor,
)
from transformers.utils import logging as hf_logging
from transformers.video_processing_utils import BaseVideoProcessor
from transformers.video_utils import VideoMetadata

hf_logging.set_verbosity_error()
qvu.logger.disabled = True

OUT = Path(__file__).parent / "fixtures" / "video_sampling_goldens.json"

PRIMES = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73]
_MORE_TOTALS = [
    47, 48, 49, 60, 61, 64, 97, 100, 101, 120, 127, 150, 151, 199, 240, 251, 256, 300, 307, 359,
    360, 499, 500, 600, 601, 719, 720, 750, 767, 768, 769, 900, 997, 1009, 1499, 1500, 1536, 1537,
    1799, 1800, 1999, 2003, 2399, 2400, 2699, 2997, 2999, 3000,
]  # fmt: skip
TOTALS = sorted(set(range(1, 34)) | set(PRIMES) | set(_MORE_TOTALS))
VIDEO_FPS = [1, 7.5, 23.976, 24, 25, 29.97, 30, 59.94, 60]
GENERATIONS = {"qwen2": Qwen2VLVideoProcessor, "qwen3": Qwen3VLVideoProcessor}

_arrays: list[np.ndarray] = []
_array_ids: dict[bytes, int] = {}


def array_id(values: Any) -> int:
    a = np.asarray(values, dtype=np.int64)
    assert a.ndim == 1
    key = a.astype("<i8").tobytes()
    if key not in _array_ids:
        _array_ids[key] = len(_arrays)
        _arrays.append(a)
    return _array_ids[key]


_errors: list[list[str]] = []
_error_ids: dict[tuple[str, str], int] = {}


def error(e: BaseException) -> int:
    """The reference's refusal as ``-1 - i``, ``errors[i]`` being its ``[type, message]``."""
    key = (type(e).__name__, str(e))
    if key not in _error_ids:
        _error_ids[key] = len(_errors)
        _errors.append(list(key))
    return -1 - _error_ids[key]


# --- transformers -------------------------------------------------------------------------


def hf_processor(gen: str, config: dict[str, Any]) -> BaseVideoProcessor:
    p = GENERATIONS[gen](**{k: v for k, v in config.items() if v is not None})
    for k, v in config.items():
        if v is not None:
            assert getattr(p, k) == v, (gen, k)
    return p


def hf_index_groups() -> list[dict[str, Any]]:
    groups = []
    plans: list[tuple[dict[str, Any], dict[str, Any], list[int], list[Any]]] = []
    default = {"min_frames": None, "max_frames": None, "temporal_patch_size": None}
    for fps in [0.5, 1, 2, 4.5, 30]:
        plans.append((default, {"fps": fps}, TOTALS, VIDEO_FPS))
    plans.append((default, {"fps": 2}, TOTALS, [None]))
    plans.append((default, {}, TOTALS[::3], [25, None]))
    plans.append((default, {"fps": 2, "num_frames": 8}, TOTALS[::9], [25]))
    for nf in [0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 31, 32, 64, 100, 767, 768]:
        plans.append((default, {"num_frames": nf}, TOTALS, [30]))
    for mn, mx, tp in [
        (1, 16, 2),
        (8, 32, 2),
        (17, 101, 2),
        (2, 3000, 2),
        (4, 768, 1),
        (4, 768, 3),
        (5, 9, 4),
        (64, 64, 2),
    ]:
        config = {"min_frames": mn, "max_frames": mx, "temporal_patch_size": tp}
        for fps in [2.0, 0.5]:
            plans.append((config, {"fps": fps}, TOTALS, [29.97]))
        plans.append((config, {"num_frames": 9}, TOTALS[::2], [30]))
    for gen in GENERATIONS:
        for config, call, totals, rates in plans:
            p = hf_processor(gen, config)
            cases = []
            for total in totals:
                for rate in rates:
                    meta = VideoMetadata(total_num_frames=total, fps=rate)
                    try:
                        idx = p.sample_frames(meta, **call)
                        res: Any = array_id(np.asarray(idx))
                    except Exception as e:
                        res = error(e)
                    cases.append([total, rate, res])
            groups.append({"generation": gen, "config": config, "call": call, "cases": cases})
    return groups


_captured: list[Any] = []


def _capture_resize(self: Any, image: Any, size: Any, resample: Any = None, **kw: Any) -> Any:
    _captured.append((size.height, size.width))
    return image


SIZES = [
    (1, 1), (1, 2), (2, 1), (1, 200), (1, 201), (3, 7), (13, 17), (27, 29), (28, 28), (31, 33),
    (32, 32), (55, 57), (64, 64), (100, 1), (111, 333), (144, 176), (240, 320), (239, 427),
    (360, 640), (361, 641), (480, 640), (479, 853), (540, 960), (576, 720), (720, 1280),
    (719, 1279), (1080, 1920), (1081, 1919), (1440, 2560), (2160, 3840), (3840, 2160),
    (1920, 1080), (1000, 5), (5, 1000), (4, 800), (800, 4), (4, 801), (0, 5),
]  # fmt: skip
NFRAMES = [0, 1, 2, 3, 4, 8, 16, 64, 767, 768]


def hf_size_groups() -> list[dict[str, Any]]:
    groups = []
    # the class ``super().resize`` reaches from both processors (the pixel resize itself)
    bases = {
        next(b for b in cls.__mro__[1:] if "resize" in b.__dict__) for cls in GENERATIONS.values()
    }
    original = {c: c.__dict__["resize"] for c in bases}
    for c in bases:
        c.resize = _capture_resize
    try:
        for gen in GENERATIONS:
            for edges in [None, (4096, 25165824), (3136, 12845056)]:
                for cap in [False, True]:
                    for tokens in [None, 300] if cap else [None]:
                        p = hf_processor(gen, {"max_video_tokens": tokens})
                        shortest, longest = edges or (p.size.shortest_edge, p.size.longest_edge)
                        factor = p.patch_size * p.merge_size
                        cases = []
                        for h, w in SIZES:
                            for n in NFRAMES:
                                video = torch.empty(1, 1, 1, 1, 1, dtype=torch.uint8)
                                video = video.expand(1, n, 3, h, w)
                                _captured.clear()
                                try:
                                    p.resize(
                                        videos=video,
                                        size=SizeDict(shortest_edge=shortest, longest_edge=longest),
                                        resample=None,
                                        factor=factor,
                                        temporal_factor=p.temporal_patch_size,
                                        cap_pixels_per_frame=cap,
                                    )
                                    res: Any = list(_captured[-1])
                                except Exception as e:
                                    res = error(e)
                                cases.append([h, w, n, res])
                        groups.append(
                            {
                                "generation": gen,
                                "min_pixels": None if edges is None else shortest,
                                "max_pixels": None if edges is None else longest,
                                "cap_pixels_per_frame": cap,
                                "max_video_tokens": tokens,
                                "cases": cases,
                            }
                        )
    finally:
        for c, f in original.items():
            c.resize = f  # type: ignore[method-assign]
    return groups


# --- qwen-vl-utils ------------------------------------------------------------------------


class _Batch:
    def __init__(self, n: int) -> None:
        self.n = n

    def asnumpy(self) -> np.ndarray:
        return np.zeros((self.n, 1, 1, 3), dtype=np.uint8)


class _FakeDecordReader:
    frames = 0
    rate = 0.0

    def __init__(self, path: str) -> None:
        pass

    def __len__(self) -> int:
        return _FakeDecordReader.frames

    def get_avg_fps(self) -> float:
        return _FakeDecordReader.rate

    def get_batch(self, idx: list[int]) -> _Batch:
        return _Batch(len(idx))


class _FakeTorchcodecDecoder:
    def __init__(self, path: str, num_ffmpeg_threads: int = 0) -> None:
        self.metadata = types.SimpleNamespace(
            average_fps=_FakeDecordReader.rate, num_frames=_FakeDecordReader.frames
        )

    def get_frames_at(self, indices: list[int]) -> Any:
        return types.SimpleNamespace(data=torch.zeros(len(indices), 3, 1, 1))


def _fake_read_video(path: str, start_pts: Any, end_pts: Any, pts_unit: str, output_format: str):
    video = torch.empty(1, 1, 1, 1, dtype=torch.uint8).expand(_FakeDecordReader.frames, 3, 1, 1)
    return video, None, {"video_fps": _FakeDecordReader.rate}


def install_qvu_stubs() -> None:
    decord = types.ModuleType("decord")
    decord.VideoReader = _FakeDecordReader  # type: ignore[attr-defined]
    sys.modules["decord"] = decord
    tc = types.ModuleType("torchcodec")
    tcd = types.ModuleType("torchcodec.decoders")
    tcd.VideoDecoder = _FakeTorchcodecDecoder  # type: ignore[attr-defined]
    tc.decoders = tcd  # type: ignore[attr-defined]
    sys.modules["torchcodec"] = tc
    sys.modules["torchcodec.decoders"] = tcd
    qvu.io = types.SimpleNamespace(read_video=_fake_read_video)  # type: ignore[assignment]


READERS = {
    "torchvision": qvu._read_video_torchvision,
    "decord": qvu._read_video_decord,
    "torchcodec": qvu._read_video_torchcodec,
}


def qvu_index_groups() -> list[dict[str, Any]]:
    plans: list[tuple[list[str], dict[str, Any], list[int], list[Any]]] = []
    every = ["torchvision", "decord", "torchcodec"]
    plans.append((every, {}, TOTALS, VIDEO_FPS))
    for fps in [0.5, 1, 4.5, 30]:
        plans.append((["torchvision"], {"fps": fps}, TOTALS, VIDEO_FPS))
    plans.append((["decord"], {"fps": 4.5}, TOTALS[::2], VIDEO_FPS))
    plans.append((every, {"fps": 2.0, "nframes": 8}, TOTALS[::9], [25]))
    plans.append((["torchvision"], {}, TOTALS[::5], [0, -24]))
    for nf in [1, 2, 3, 4, 5, 7, 8, 15, 16, 100, 767, 768, 3001, 7.5]:
        readers = ["torchvision", "decord"] if nf in (5, 100) else ["torchvision"]
        plans.append((readers, {"nframes": nf}, TOTALS, [30]))
    for mn, mx in [(1, 16), (8, 32), (17, 101), (2, 3000), (64, 64), (5, 9), (7.5, 33.3)]:
        for fps in [2.0, 0.5]:
            opts = {"fps": fps, "min_frames": mn, "max_frames": mx}
            plans.append((["torchvision", "decord"], opts, TOTALS, [29.97]))
    for start, end in [
        (None, 1.0),
        (0.5, None),
        (1.0, 3.0),
        (2.5, 2.5),
        (10.0, 1e9),
        (-1.0, 5.0),
        (0.04, 0.1),
        (3.3, 7.7),
    ]:
        for opts in [{}, {"nframes": 6}, {"fps": 4.0}]:
            ele = dict(opts)
            if start is not None:
                ele["video_start"] = start
            if end is not None:
                ele["video_end"] = end
            readers = ["decord", "torchcodec"] if not opts else ["decord"]
            plans.append((readers, ele, TOTALS[::3], [23.976, 30, 60]))
    groups = []
    for readers, opts, totals, rates in plans:
        for reader in readers:
            cases = []
            for total in totals:
                for rate in rates:
                    _FakeDecordReader.frames, _FakeDecordReader.rate = total, rate
                    try:
                        _, meta, sample_fps = READERS[reader]({"video": "stub.mp4", **opts})
                        idx = meta["frames_indices"]
                        res: Any = [array_id(np.asarray(idx)), sample_fps]
                    except Exception as e:
                        res = error(e)
                    cases.append([total, rate, res])
            groups.append({"reader": reader, "options": opts, "cases": cases})
    return groups


_qvu_size: list[Any] = []
_qvu_video: list[Any] = []


def _stub_backend(ele: dict[str, Any]) -> Any:
    return _qvu_video[0], {}, 2.0


def _stub_resize(video: Any, size: list[int], interpolation: Any, antialias: bool) -> Any:
    _qvu_size.append(list(size))
    return torch.zeros(1)


def qvu_size_groups() -> list[dict[str, Any]]:
    qvu.VIDEO_READER_BACKENDS["stub"] = _stub_backend
    qvu.get_video_reader_backend = lambda: "stub"  # type: ignore[assignment]
    qvu.transforms = types.SimpleNamespace(  # type: ignore[assignment]
        functional=types.SimpleNamespace(resize=_stub_resize)
    )
    options: list[dict[str, Any]] = [
        {},
        {"min_pixels": 1},
        {"min_pixels": 50000},
        {"max_pixels": 100},
        {"min_pixels": 1, "max_pixels": 100},
        {"min_pixels": 3136, "max_pixels": 20000},
        {"max_pixels": 200000.5},
        {"max_pixels": 10**7},
        {"total_pixels": 10**6},
        {"total_pixels": 20 * 10**6},
        {"total_pixels": 5e7, "min_pixels": 3136},
        {"min_pixels": 40000, "max_pixels": 30000},
        {"resized_height": 280, "resized_width": 420},
        {"resized_height": 33, "resized_width": 1},
        {"resized_height": 1000},
    ]
    groups = []
    for patch in [14, 16]:
        for opts in options:
            cases = []
            for h, w in SIZES:
                for n in NFRAMES:
                    if n == 0 and opts:
                        continue
                    _qvu_video[:] = [torch.empty(1, 1, 1, 1).expand(n, 3, h, w)]
                    _qvu_size.clear()
                    try:
                        qvu.fetch_video({"video": "stub.mp4", **opts}, image_patch_size=patch)
                        res: Any = _qvu_size[-1]
                    except Exception as e:
                        res = error(e)
                    cases.append([h, w, n, res])
            groups.append({"image_patch_size": patch, "options": opts, "cases": cases})
    # Sizes where the bound int(min_pixels * 1.05) (not the float) decides the floor (found by a
    # search over sizes with the bound from min_pixels, total_pixels being small).
    for min_pixels, h, w in [(52267, 450, 875), (33333, 44, 1577), (77777, 121, 1265),
                             (12347, 1045, 30), (61111, 373, 212)]:  # fmt: skip
        opts = {"min_pixels": min_pixels, "total_pixels": 1000}
        cases = []
        for n in [2, 8]:
            _qvu_video[:] = [torch.empty(1, 1, 1, 1).expand(n, 3, h, w)]
            _qvu_size.clear()
            qvu.fetch_video({"video": "stub.mp4", **opts}, image_patch_size=14)
            cases.append([h, w, n, _qvu_size[-1]])
        groups.append({"image_patch_size": 14, "options": opts, "cases": cases})
    return groups


def encode_arrays() -> dict[str, Any]:
    lengths = np.array([len(a) for a in _arrays], dtype="<i4")
    flat = np.concatenate(_arrays) if _arrays else np.zeros(0, np.int64)
    deltas = np.diff(flat, prepend=0)
    assert np.abs(deltas).max(initial=0) < 2**31
    blob = lzma.compress(lengths.tobytes() + deltas.astype("<i4").tobytes(), preset=9)
    return {
        "count": len(_arrays),
        "encoding": "base64(lzma(int32 LE lengths[count] + int32 LE deltas of the concatenation))",
        "data": base64.b64encode(blob).decode("ascii"),
    }


def main() -> None:
    install_qvu_stubs()
    doc: dict[str, Any] = {
        "about": "Frame indices and video target sizes of the references, written by "
        "gen_video_sampling_goldens.py (read it for how each reference is called).",
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "qwen_vl_utils": md.version("qwen-vl-utils"),
            "numpy": np.__version__,
            "python": sys.version.split()[0],
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        },
        "qwen_vl_utils_model_seq_len": qvu.MODEL_SEQ_LEN,
        "hf_indices": hf_index_groups(),
        "hf_sizes": hf_size_groups(),
        "qvu_indices": qvu_index_groups(),
        "qvu_sizes": qvu_size_groups(),
    }
    doc["arrays"] = encode_arrays()
    doc["errors"] = _errors
    OUT.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    n = sum(len(g["cases"]) for k in ("hf_indices", "hf_sizes", "qvu_indices", "qvu_sizes")
            for g in doc[k])  # fmt: skip
    print(f"{OUT}: {n} cases, {len(_arrays)} index arrays, {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
