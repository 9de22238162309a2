"""Generated test clips: moving gradients plus noise, encoded by PyAV's own encoders (the extra
``sglang-mm-core[video]``). It exists so that video tests, ours and plugin authors', make their
clips rather than download them: the same arguments give the same bytes with the same (pinned)
PyAV, so a golden can name a clip by its recipe and the SHA-256 of its bytes.

The goldens' side of that bargain is here too: `clip_record` (a clip and its record),
`clip_from_record` (the clip again, checked against the record) and `hf_reads_with_pyav` (a
transformers video processor reading clip paths through PyAV, as the core decodes them). This
module needs only numpy and PyAV (transformers for the last), so a generator in a torch venv
without sglang-mm loads it from its file."""

from __future__ import annotations

import hashlib
import inspect
import io
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt


def clip_frames(w: int, h: int, n: int, seed: int = 0) -> list[npt.NDArray[np.uint8]]:
    """The ``n`` RGB uint8 ``[h, w, 3]`` frames `make_clip` encodes."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    out = []
    for k in range(n):
        base = np.stack([(xx * 4 + k * 9) % 256, (yy * 3 + k * 5) % 256, (xx + yy + k) % 256], -1)
        noise = rng.integers(-20, 21, (h, w, 3))
        out.append(np.clip(base + noise, 0, 255).astype(np.uint8))
    return out


def make_clip(
    codec: str,
    w: int,
    h: int,
    n: int,
    *,
    fmt: str = "mp4",
    pix_fmt: str = "yuv420p",
    rate: int = 25,
    vfr: bool = False,
    seed: int = 0,
    rotation: int = 0,
) -> bytes:
    """An ``n``-frame ``w x h`` clip of `clip_frames`, encoded with ``codec`` (``libx264``,
    ``libx265``, ``libvpx-vp9``, ``libsvtav1``, ``mpeg4``, ...) into ``fmt``; ``vfr`` spaces
    the frames 40, 15 and 90 ms apart in turn (millisecond timestamps, in MP4 too);
    ``rotation`` (0, 90, 180 or 270 degrees, MP4 only) writes it into the track header's
    display matrix, which FFmpeg reads as the stream's display-matrix side data.
    Deterministic for a given PyAV build: single-threaded encoders and a bit-exact muxer (no
    random Matroska UIDs, no version tag), so the same PyAV gives the same bytes anywhere."""
    import av

    buf = io.BytesIO()
    with av.open(buf, mode="w", format=fmt, options={"fflags": "+bitexact"}) as out:
        stream = out.add_stream(codec, rate=rate)
        if not isinstance(stream, av.VideoStream):
            raise ValueError(f"{codec!r} is not a video encoder")
        stream.width, stream.height, stream.pix_fmt = w, h, pix_fmt
        stream.thread_count = 1
        if codec == "libx264":
            stream.options = {"preset": "ultrafast", "threads": "1"}
        if codec == "libx265":
            stream.options = {"preset": "ultrafast", "x265-params": "log-level=error:pools=none"}
        if codec == "libsvtav1":
            stream.options = {"preset": "11", "svtav1-params": "lp=1"}
        if vfr:
            stream.time_base = stream.codec_context.time_base = Fraction(1, 1000)
        pts = 0
        for k, rgb in enumerate(clip_frames(w, h, n, seed)):
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            if vfr:
                frame.pts, frame.time_base = pts, Fraction(1, 1000)
                pts += (40, 15, 90)[k % 3]
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    data = buf.getvalue()
    return _rotated(data, rotation) if rotation else data


#: The track header's display matrix (16.16 fixed point, then 2.30) per clockwise rotation.
_MATRICES = {
    90: (0, 1 << 16, 0, -(1 << 16), 0, 0, 0, 0, 1 << 30),
    180: (-(1 << 16), 0, 0, 0, -(1 << 16), 0, 0, 0, 1 << 30),
    270: (0, -(1 << 16), 0, 1 << 16, 0, 0, 0, 0, 1 << 30),
}


def _rotated(data: bytes, rotation: int) -> bytes:
    """An MP4 whose one track header carries the display matrix of ``rotation``: muxers no
    longer write one from a ``rotate`` tag, so the header is patched in place (version-0
    ``tkhd``: the matrix sits 40 bytes after the box type)."""
    if rotation not in _MATRICES:
        raise ValueError(f"rotation must be 0, 90, 180 or 270, not {rotation!r}")
    at = data.find(b"tkhd")
    if at < 0 or data[at + 4] != 0 or data.find(b"tkhd", at + 4) >= 0:
        raise ValueError("rotation needs an MP4 with one version-0 track header (fmt='mp4')")
    matrix = b"".join(v.to_bytes(4, "big", signed=True) for v in _MATRICES[rotation])
    start = at + 4 + 40
    return data[:start] + matrix + data[start + 36 :]


def clip_record(recipe: Mapping[str, Any]) -> tuple[bytes, dict[str, Any]]:
    """The clip of ``recipe`` (`make_clip`'s arguments by name) and what a golden records of
    it: the recipe, the SHA-256 of its bytes and their count."""
    data = make_clip(**recipe)
    return data, {
        "recipe": dict(recipe),
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
    }


def clip_from_record(record: Mapping[str, Any]) -> bytes:
    """The clip a `clip_record` record names, made again; an ``AssertionError`` when its bytes
    are no longer the recorded ones (another PyAV build: the golden no longer applies)."""
    data = make_clip(**record["recipe"])
    assert hashlib.sha256(data).hexdigest() == record["sha256"], (
        f"make_clip({record['recipe']}) no longer makes the clip the goldens were captured on "
        "(another PyAV?)"
    )
    return data


#: The call transformers 5.x's ``BaseVideoProcessor.fetch_videos`` makes, whose ``backend`` it
#: hard-codes (torchcodec, or torchvision < 0.26): `hf_reads_with_pyav` replaces it.
_HF_FETCH_CALL = (
    "load_video(video_url_or_urls, backend=backend, sample_indices_fn=sample_indices_fn)"
)


def hf_reads_with_pyav(video_processor: Any) -> None:
    """Make a transformers video processor read clip paths as HF's own ``fetch_videos`` does,
    but with ``backend="pyav"``: ``transformers.video_utils.load_video(path, backend="pyav",
    sample_indices_fn=...)`` (``read_video_pyav``, what the core's decode matches), with the
    processor's ``sample_frames`` where it samples. Refuses a transformers whose
    ``fetch_videos`` is not the one this replaces."""
    from transformers.video_processing_utils import BaseVideoProcessor
    from transformers.video_utils import load_video

    source = inspect.getsource(BaseVideoProcessor.fetch_videos)
    assert _HF_FETCH_CALL in source and 'backend = "torchcodec"' in source, source

    def fetch_videos(video_url_or_urls: Any, sample_indices_fn: Any = None) -> Any:
        if isinstance(video_url_or_urls, list):
            pairs = [
                fetch_videos(x, sample_indices_fn=sample_indices_fn) for x in video_url_or_urls
            ]
            return list(zip(*pairs, strict=True))
        return load_video(video_url_or_urls, backend="pyav", sample_indices_fn=sample_indices_fn)

    video_processor.fetch_videos = fetch_videos


__all__ = [
    "clip_frames",
    "clip_from_record",
    "clip_record",
    "hf_reads_with_pyav",
    "make_clip",
]
