"""Qwen-VL videos end to end vs the references, interleaved in one process; prints medians and
ratios, then the peak memory of the long clip.

Two clips, made here with PyAV's libx264 and cached under the temp directory, keyed by recipe:
  1. 20 frames of 1280x720 (``make_clip``'s moving gradients plus noise, 10 fps), every frame
     kept (``video_sampling="none"``; HF's ``do_sample_frames=False``);
  2. 60 s of 1920x1080 at 30 fps (a textured background panning under a moving box, preset
     ultrafast, CRF 25, about 7 Mbit/s), sampled at 2 fps (``hf`` sampling: 120 frames).
Sides, with two threads each:
  - ours: ``Pipeline.process`` of the clip's path, ``resample="aten_u8"``, ``threads=2``;
    beside it ``compact=True`` (the uint8 codes and tables, not expanded to float32), which
    shows what the expansion costs;
  - HF: ``transformers.video_utils.load_video(path, backend="pyav")`` (its ``read_video_pyav``,
    whose decoder threading is PyAV's default; for clip 2 with the video processor's own
    ``sample_frames`` at fps 2 as ``sample_indices_fn``, as HF's ``fetch_videos`` passes it),
    then ``Qwen2VLVideoProcessor`` (torchvision, ``torch.set_num_threads(2)``) on the frames
    with ``do_sample_frames=False``. Both answers (the warm-up calls') must have the same
    ``video_grid_thw`` and the same ``pixel_values_videos`` bits, or the bench stops;
  - qwen-vl-utils' ``process_vision_info`` (``fetch_video``, its torchvision reader, forced by
    ``FORCE_QWENVL_VIDEO_READER``) then ``Qwen2VLVideoProcessor`` on its frames, against ours
    with ``video_sampling="qwen_vl_utils"`` and the same element options (every bit must agree);
    clip 1 only (its reader, ``torchvision.io.read_video``, decodes the whole clip into memory
    first: 11 GB of frames for clip 2), and only where that reader exists (torchvision < 0.26:
    run from a venv with torch 2.10 and torchvision 0.25);
  - PyAV decode only: every frame up to the last sampled one decoded with
    ``thread_type="AUTO"``, the sampled ones converted with ``to_ndarray(format="rgb24")``:
    the floor of any pipeline that decodes with PyAV.
Targets: HF / ours >= 8x on clip 1; ours / decode-only <= 1.25x on clip 2; peak memory of
clip 2 (ours in a fresh subprocess: ``ru_maxrss`` minus the RSS after imports and a warm-up)
<= 1.5x the output's bytes (measured first, while this process is small: a child's
``ru_maxrss`` starts at its parent's RSS; VmHWM, reset at the baseline, is printed beside it).

Run: /path/to/torchvenv/bin/python bench/bench_video.py [--quick]  (PyAV; torch, torchvision
and transformers for the HF side, skipped without them; the project's packages on the path)."""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import resource
import site
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("FORCE_QWENVL_VIDEO_READER", "torchvision")  # read when it is imported
warnings.simplefilter("ignore")


def _editable_installs() -> None:
    """A venv that reaches the project's venv through a .pth naming its site-packages (a
    plain path line) has not read that directory's own .pth files, the editable installs of
    the core and the plugins: read them."""
    for p in list(sys.path):
        if p.endswith("site-packages") and not p.startswith(sys.prefix):
            site.addsitedir(p)


_editable_installs()

import numpy as np  # noqa: E402
from _timing import interleaved  # noqa: E402

from sglang_mm_core import MmInput, Tensor, pipeline_from_spec  # noqa: E402
from sglang_mm_core.conformance.video import make_clip  # noqa: E402

VS, VIDEO, VE = 151652, 151656, 151653
PROMPT = [1, 2, VS, VIDEO, VE, 3]
THREADS = 2
CACHE = Path(tempfile.gettempdir()) / "sglang-mm-bench-video"
#: Bump when `panning_clip` changes what it encodes, so old cached clips are not reused.
CLIP_VERSION = 1


# --- clips ----------------------------------------------------------------------------------


def panning_clip(path: Path, w: int, h: int, seconds: int, rate: int, crf: int) -> None:
    """A long clip that codes like footage rather than noise: a textured background (blocky
    and fine noise over gradients) panning 4 px right and 2 px down per frame, and an
    inverted box moving across it, encoded as it is drawn (never all frames in memory)."""
    import av

    rng = np.random.default_rng(0)
    pad = 512
    hh, ww = h + pad, w + pad
    blocks = rng.integers(0, 256, (hh // 16 + 1, ww // 16 + 1, 3), dtype=np.uint8)
    fine = rng.integers(0, 32, (hh // 2 + 1, ww // 2 + 1, 3), dtype=np.uint8)
    yy, xx = np.mgrid[0:hh, 0:ww]
    grad = np.stack([(xx // 3) % 256, (yy // 2) % 256, ((xx + yy) // 4) % 256], -1)
    tex = (
        np.repeat(np.repeat(blocks, 16, 0), 16, 1)[:hh, :ww] // 4
        + (grad // 2).astype(np.uint8)
        + np.repeat(np.repeat(fine, 2, 0), 2, 1)[:hh, :ww]
    )  # at most 63 + 127 + 31: no wrap
    bw, bh = w // 4, h // 3
    box = np.ascontiguousarray(255 - tex[:bh, :bw])
    tmp = path.with_suffix(".part")
    with av.open(str(tmp), mode="w", format="mp4") as out:
        stream = out.add_stream("libx264", rate=rate)
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        stream.options = {"preset": "ultrafast", "crf": str(crf)}
        for k in range(seconds * rate):
            x, y = (4 * k) % pad, (2 * k) % pad
            img = tex[y : y + h, x : x + w].copy()
            bx, by = (9 * k) % (w - bw), (5 * k) % (h - bh)
            img[by : by + bh, bx : bx + bw] = box
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    tmp.replace(path)


def cached(recipe: dict[str, Any], make: Callable[[Path], None]) -> Path:
    """The clip of ``recipe`` under CACHE, made once (the name holds the recipe's hash and
    PyAV's version)."""
    import av

    key = json.dumps({**recipe, "av": av.__version__}, sort_keys=True)
    path = CACHE / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.mp4"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        print(f"making {recipe} -> {path} ...", flush=True)
        make(path)
        print(f"  {time.perf_counter() - t0:.0f} s, {path.stat().st_size / 1e6:.1f} MB", flush=True)
    return path


def clip_720p() -> Path:
    recipe = {"codec": "libx264", "w": 1280, "h": 720, "n": 20, "rate": 10}

    def make(path: Path) -> None:
        path.write_bytes(make_clip(**recipe))  # type: ignore[arg-type]

    return cached({"make_clip": recipe}, make)


def clip_1080p_60s() -> Path:
    recipe = {"w": 1920, "h": 1080, "seconds": 60, "rate": 30, "crf": 25}
    return cached(
        {"panning_clip": recipe, "version": CLIP_VERSION},
        functools.partial(panning_clip, **recipe),  # type: ignore[arg-type]
    )


#: (name, clip, family params, HF's sampling: None for every frame, else the fps)
CASES: list[tuple[str, Callable[[], Path], dict[str, Any], float | None]] = [
    ("1: 720p, 20 frames, all", clip_720p, {"video_sampling": "none"}, None),
    ("2: 1080p30 60 s at 2 fps", clip_1080p_60s, {"video_sampling": "hf", "video_fps": 2.0}, 2.0),
]


# --- sides ----------------------------------------------------------------------------------


def spec(params: dict[str, Any]) -> dict[str, Any]:
    return {
        "family": "qwen_vl",
        "params": {"resample": "aten_u8", **params},
        "threads": THREADS,
    }


def ours(pipe: Any, path: Path, compact: bool = False) -> Callable[[], Any]:
    req = MmInput(input_ids=PROMPT, videos=[str(path)])
    return lambda: pipe.process(req, compact=compact)


def hf_side() -> tuple[Callable[[Path, float | None], Callable[[], Any]] | None, str]:
    """A maker of HF's call on a clip, or None and why not."""
    try:
        import torch
        from transformers import Qwen2VLVideoProcessor
        from transformers.video_utils import load_video
    except ImportError as e:
        return None, f"skipped ({e.name or e} is not importable here)"
    torch.set_num_threads(THREADS)
    processor = Qwen2VLVideoProcessor()

    def make(path: Path, fps: float | None) -> Callable[[], Any]:
        sample = None if fps is None else functools.partial(processor.sample_frames, fps=fps)

        def run() -> Any:
            frames, meta = load_video(str(path), backend="pyav", sample_indices_fn=sample)
            return processor(
                videos=[frames], video_metadata=[meta], do_sample_frames=False, return_tensors="pt"
            )

        return run

    return make, (
        f"torch {torch.__version__} threads={torch.get_num_threads()}, "
        "load_video(backend='pyav') + Qwen2VLVideoProcessor"
    )


#: qwen-vl-utils' message element options for each case it runs (clip 1: its 20 frames).
QVU_OPTIONS: dict[str, dict[str, Any]] = {"1: 720p, 20 frames, all": {"nframes": 20}}


def qvu_side() -> Callable[[Path, dict[str, Any]], Callable[[], Any]] | None:
    """A maker of qwen-vl-utils' call then HF's video processor on its frames, or None."""
    if not qwen_vl_utils_status().startswith("reader 'torchvision' available"):
        return None
    from qwen_vl_utils import process_vision_info
    from transformers import Qwen2VLVideoProcessor

    processor = Qwen2VLVideoProcessor()

    def make(path: Path, options: dict[str, Any]) -> Callable[[], Any]:
        messages = [{"role": "user", "content": [{"type": "video", "video": str(path), **options}]}]

        def run() -> Any:
            with open(os.devnull, "w") as null:  # qwen-vl-utils logs every read
                err, sys.stderr = sys.stderr, null
                try:
                    _, pairs, kw = process_vision_info(
                        messages, return_video_kwargs=True, return_video_metadata=True
                    )
                finally:
                    sys.stderr = err
            vids, metas = [v for v, _ in pairs], [m for _, m in pairs]
            kw = {k: v for k, v in kw.items() if k != "fps"}  # a list; the metadata has it
            return processor(videos=vids, video_metadata=metas, return_tensors="pt", **kw)

        return run

    return make


def ours_qvu(pipe: Any, path: Path, options: dict[str, Any]) -> Callable[[], Any]:
    req = MmInput(input_ids=PROMPT, videos=[{"video": str(path), **options}])
    return lambda: pipe.process(req)


def qwen_vl_utils_status() -> str:
    """Whether qwen-vl-utils' fetch_video can be timed here, and why not."""
    try:
        import torchvision
        from qwen_vl_utils import vision_process
    except ImportError as e:
        return f"not importable ({e.name or e} is missing)"
    with open(os.devnull, "w") as null:  # get_video_reader_backend prints its choice
        err, sys.stderr = sys.stderr, null
        try:
            reader = vision_process.get_video_reader_backend()
        finally:
            sys.stderr = err
    if reader == "torchvision" and not hasattr(torchvision.io, "read_video"):
        return (
            "cannot read a file here: no torchcodec or decord, and its torchvision reader calls "
            f"torchvision.io.read_video, which torchvision {torchvision.__version__} no longer "
            "has (removed in 0.26)"
        )
    return f"reader {reader!r} available"


def sampled(path: Path, fps: float | None) -> list[int]:
    """The frames both pipelines convert: HF's ``sample_frames`` rule (the plugin's copy of
    it) over the stream's stated count and rate, or every frame."""
    import av
    from sglang_mm_qwen_vl.video_sampling import hf_frame_indices

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        total, rate = int(stream.frames), float(stream.average_rate or 0)
    got = hf_frame_indices(
        total, rate, generation="qwen2", do_sample_frames=fps is not None, fps=fps
    )
    return [int(i) for i in got]


def decode_only(path: Path, indices: list[int]) -> Callable[[], Any]:
    import av

    wanted, last = set(indices), max(indices)

    def run() -> list[Any]:
        kept = []
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            for i, frame in enumerate(container.decode(stream)):
                if i in wanted:
                    kept.append(frame.to_ndarray(format="rgb24"))
                if i == last:
                    break
        return kept

    return run


class First:
    """A timed callable that keeps its first answer (the warm-up's) to be checked after."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn, self.result = fn, None

    def __call__(self) -> Any:
        got = self.fn()
        if self.result is None:
            self.result = got
        return got


def check_same(name: str, out: Any, ref: Any) -> str:
    """Refuse to report timings of different work: the grid and every bit must agree."""
    item = out.items[0]
    grid = item.aux["video_grid_thw"].array.tolist()
    want = ref["video_grid_thw"].tolist()
    if grid != want:
        raise SystemExit(f"{name}: video_grid_thw ours {grid}, HF {want}")
    pv, ref_pv = item.feature.array, ref["pixel_values_videos"].numpy()
    if pv.shape != ref_pv.shape or not np.array_equal(pv, ref_pv):
        raise SystemExit(f"{name}: pixel_values_videos differ (ours {pv.shape}, HF {ref_pv.shape})")
    return f"grid {grid[0]} equal to HF's, pixel_values_videos {pv.shape} equal bit for bit"


# --- memory ---------------------------------------------------------------------------------


def _status(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def peak_child(path: Path, warm: Path, params: dict[str, Any]) -> None:
    """In a fresh process: the pipeline built and warmed up on a small clip, then one request
    of ``path``; prints the figures as JSON. ``ru_maxrss`` survives ``execve``: it starts at
    the parent's RSS when it forked (which is why the parent runs this first, while small);
    VmHWM, reset to the baseline where /proc allows it, is this request's own peak."""
    import gc

    import av  # noqa: F401  (imported before the baseline, as the pipeline imports it)

    with pipeline_from_spec(spec(params)) as pipe:
        pipe.process(MmInput(input_ids=PROMPT, videos=[str(warm)]))
        gc.collect()
        base = _status("VmRSS")
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # VmHWM := VmRSS
        except OSError:
            pass
        out = pipe.process(MmInput(input_ids=PROMPT, videos=[str(path)]))
        maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        hwm = _status("VmHWM")
        feature = out.items[0].feature
        assert isinstance(feature, Tensor)  # compact=False
        nbytes = feature.array.nbytes
    print(json.dumps({"base": base, "maxrss": maxrss, "hwm": hwm, "output": nbytes}))


def peak_memory(path: Path, warm: Path, params: dict[str, Any]) -> str:
    args = [sys.executable, __file__, "--peak-child", str(path), str(warm), json.dumps(params)]
    got = subprocess.run(args, check=True, capture_output=True, text=True)
    m = json.loads(got.stdout.strip().splitlines()[-1])
    mib, base, output = 2**20, m["base"], m["output"]
    used, hwm_used = m["maxrss"] - base, m["hwm"] - base
    return (
        f"peak memory, case 2 (ours, threads={THREADS}, a fresh process): ru_maxrss "
        f"{m['maxrss'] / mib:.0f} MiB - RSS after imports and a warm-up {base / mib:.0f} MiB = "
        f"{used / mib:.0f} MiB (VmHWM: {hwm_used / mib:.0f} MiB); output pixel_values_videos "
        f"{output / mib:.0f} MiB (the file: {path.stat().st_size / mib:.0f} MiB) -> "
        f"{used / output:.2f}x the output (target <= 1.5x)"
    )


# --- main -----------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(
        description="Qwen-VL video preprocessing: sglang-mm vs HF and PyAV decode-only "
        "(interleaved medians, 2 threads each), plus peak memory of the 60 s clip.",
    )
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--peak-child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peak_child:
        path, warm, params = args.peak_child
        peak_child(Path(path), Path(warm), json.loads(params))
        return

    reps = {CASES[0][0]: 5 if args.quick else 15, CASES[1][0]: 2 if args.quick else 5}
    clips = {name: make() for name, make, _, _ in CASES}
    memory = peak_memory(clips[CASES[1][0]], clips[CASES[0][0]], CASES[1][2])  # while small
    hf_make, hf_note = hf_side()
    qvu_make = qvu_side()
    import av

    # torchvision turns PyAV's Python log callback on when imported; with frame threads (the
    # decode-only side) that deadlocks on a decoder's close (sglang_mm_core._video).
    av.logging.set_level(None)
    print(f"HF: {hf_note}")
    print(f"qwen-vl-utils 0.0.14 fetch_video: {qwen_vl_utils_status()}")
    print(f"{os.cpu_count()} cores; ours threads={THREADS}; decode-only thread_type=AUTO")
    rows = []
    for name, _, params, fps in CASES:
        path = clips[name]
        with pipeline_from_spec(spec(params)) as pipe:
            indices = sampled(path, fps)
            fns: dict[str, Callable[[], object]] = {
                "ours": First(ours(pipe, path)),
                "compact": ours(pipe, path, compact=True),
            }
            if hf_make is not None:
                fns["hf"] = First(hf_make(path, fps))
            fns["decode"] = decode_only(path, indices)
            qvu_options = QVU_OPTIONS.get(name)
            qvu_pipe = None
            if qvu_make is not None and qvu_options is not None:
                qvu_pipe = pipeline_from_spec(spec({"video_sampling": "qwen_vl_utils"}))
                fns["ours_qvu"] = First(ours_qvu(qvu_pipe, path, qvu_options))
                fns["qvu"] = First(qvu_make(path, qvu_options))
            t0 = time.perf_counter()
            ms = interleaved(fns, reps[name])
            took = time.perf_counter() - t0
        if qvu_pipe is not None:
            qvu_pipe.close()
        note = "HF side skipped"
        if hf_make is not None:
            note = check_same(name, fns["ours"].result, fns["hf"].result)  # type: ignore[attr-defined]
        if "qvu" in fns:
            same = check_same(f"{name} (qwen-vl-utils)", fns["ours_qvu"].result, fns["qvu"].result)  # type: ignore[attr-defined]
            note += f"; qwen_vl_utils mode: {same.replace('HF', 'qwen-vl-utils')}"
        fns.clear()
        print(f"case {name}: {len(indices)} frames converted; {note}; {took:.0f} s")
        rows.append((name, ms, reps[name]))

    print()
    print(
        "| case | sglang-mm | HF | PyAV decode-only | HF / ours | ours / decode-only "
        "| sglang-mm compact=True | compact / decode-only | runs |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, ms, n in rows:
        hf = f"{ms['hf']:.0f} ms" if "hf" in ms else "-"
        ratio = f"{ms['hf'] / ms['ours']:.1f}x" if "hf" in ms else "-"
        print(
            f"| {name} | {ms['ours']:.0f} ms | {hf} | {ms['decode']:.0f} ms | {ratio} | "
            f"{ms['ours'] / ms['decode']:.2f}x | {ms['compact']:.0f} ms | "
            f"{ms['compact'] / ms['decode']:.2f}x | {n} |"
        )
    print("targets: HF / ours >= 8x on case 1; ours / decode-only <= 1.25x on case 2 (medians)")
    for name, ms, n in rows:
        if "qvu" in ms:
            print(
                f"qwen-vl-utils + HF, case {name}: {ms['qvu']:.0f} ms; ours (qwen_vl_utils mode) "
                f"{ms['ours_qvu']:.0f} ms: {ms['qvu'] / ms['ours_qvu']:.1f}x ({n} runs)"
            )
    print()
    print(memory)


if __name__ == "__main__":
    main()
