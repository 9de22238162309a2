"""Video containers through PyAV (the extra ``sglang-mm-core[video]``): the header a token
count needs, and the sampled frames as RGB uint8, one at a time.

Frames are what transformers' ``read_video_pyav`` makes of the same file with the same PyAV:
frames counted in decode order from the start, each picked frame converted with
``to_ndarray(format="rgb24")``, the stream's ``frames`` and ``average_rate`` as its frame count
and rate. Frames stream out as they are decoded, so a caller never holds more than the one it
is resizing. Every limit the header can show is checked before a frame is decoded; corrupt,
truncated, audio-only and zero-frame files are a `DecodeError`, never a crash."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import DecodeError, LimitError

EXTRA = "sglang-mm-core[video]"


def _av() -> Any:
    try:
        import av
    except ImportError:
        raise DecodeError(
            f"video needs PyAV: pip install '{EXTRA}'", format="video", unsupported=True
        ) from None
    return av


_LOG_LOCK = threading.Lock()
_log_users = 0  # threaded decoders of ours alive
_log_saved: int | None = None  # PyAV's log level before the first of them


@contextmanager
def _silent_pyav_log(av: Any) -> Iterator[None]:
    """PyAV's log callback off while a threaded decoder of ours lives. With PyAV logging on
    (torchvision turns it on when imported), FFmpeg's frame threads log through a callback
    that takes the GIL, and freeing a threaded decoder waits for those threads with the GIL
    held: a thread logging an error then deadlocks the process. Off, FFmpeg's messages are
    dropped in C. The level is put back when the last of our decoders is gone (unless someone
    set another meanwhile)."""
    global _log_users, _log_saved
    with _LOG_LOCK:
        if _log_users == 0:
            _log_saved = av.logging.get_level()
            if _log_saved is not None:
                av.logging.set_level(None)
        _log_users += 1
    try:
        yield
    finally:
        with _LOG_LOCK:
            _log_users -= 1
            if _log_users == 0:
                if _log_saved is not None and av.logging.get_level() is None:
                    av.logging.set_level(_log_saved)
                _log_saved = None


@dataclass(frozen=True)
class VideoLimits:
    """What one video may cost, checked from the header where it can be: frame size (as for
    images), frame count, duration, decoded RGB bytes, and a wall-clock deadline."""

    max_pixels: int
    max_side: int
    max_frames: int = 100_000
    max_duration_s: float = 3 * 3600.0
    max_decoded_bytes: int = 8 * 2**30
    max_feature_bytes: int = 4 * 2**30
    deadline: float | None = None  # time.monotonic() value


@dataclass(frozen=True)
class VideoHeader:
    """The first video stream as its container states it. ``frames`` is the stream's stated
    count (None when the container does not state one), ``fps`` its average rate."""

    width: int
    height: int
    frames: int | None
    fps: float
    duration_s: float | None
    codec: str


def _open(data: bytes | bytearray | memoryview) -> Any:
    av = _av()
    try:
        # metadata is text the file chooses: never let its encoding fail the open
        return av.open(io.BytesIO(bytes(data)), mode="r", metadata_errors="replace")
    except (av.error.FFmpegError, ValueError) as e:
        raise DecodeError(f"not a video container PyAV can open: {e}", format=None) from None


def _video_stream(container: Any) -> Any:
    streams = container.streams.video
    if not streams:
        kinds = sorted({s.type for s in container.streams}) or ["none"]
        raise DecodeError(
            f"the container has no video stream (streams: {', '.join(kinds)})", format="video"
        )
    return streams[0]


def _header(container: Any, stream: Any) -> VideoHeader:
    ctx = stream.codec_context
    if ctx is None:
        raise DecodeError("the video stream's codec has no decoder here", format="video")
    width, height = int(ctx.width or 0), int(ctx.height or 0)
    frames = int(stream.frames) if stream.frames else None
    rate = stream.average_rate
    fps = float(rate) if rate else 0.0
    duration = None
    if stream.duration is not None and stream.time_base:
        duration = float(stream.duration * stream.time_base)
    elif container.duration is not None:
        duration = container.duration / 1_000_000
    return VideoHeader(width, height, frames, fps, duration, ctx.name)


def _check(header: VideoHeader, limits: VideoLimits) -> None:
    w, h = header.width, header.height
    if w <= 0 or h <= 0:
        raise DecodeError(f"the video stream states no frame size ({w}x{h})", format="video")
    if max(w, h) > limits.max_side:
        raise LimitError(
            f"video frames {w}x{h} exceed max_image_side {limits.max_side}",
            limit="max_image_side",
            limit_value=limits.max_side,
            value=max(w, h),
        )
    if w * h > limits.max_pixels:
        raise LimitError(
            f"video frames {w}x{h} exceed max_image_pixels {limits.max_pixels}",
            limit="max_image_pixels",
            limit_value=limits.max_pixels,
            value=w * h,
        )
    if header.frames is not None and header.frames > limits.max_frames:
        raise LimitError(
            f"the video states {header.frames} frames, over max_video_frames {limits.max_frames}",
            limit="max_video_frames",
            limit_value=limits.max_frames,
            value=header.frames,
        )
    if header.duration_s is not None and header.duration_s > limits.max_duration_s:
        raise LimitError(
            f"the video lasts {header.duration_s:.1f} s, over max_video_duration_s "
            f"{limits.max_duration_s:g}",
            limit="max_video_duration_s",
        )


def probe(data: bytes | bytearray | memoryview, limits: VideoLimits) -> VideoHeader:
    """The first video stream's header, from the container alone (no frame is decoded);
    a `LimitError` for a header over ``limits``."""
    container = _open(data)
    try:
        header = _header(container, _video_stream(container))
    finally:
        container.close()
    _check(header, limits)
    return header


def count_frames(data: bytes | bytearray | memoryview, limits: VideoLimits) -> int:
    """The first video stream's frames counted from its packets, without decoding a frame:
    for a container that states no count (WebM, some Matroska), as qwen-vl-utils' exact
    readers count them (one frame per non-empty packet); a `LimitError` past
    ``limits.max_frames``."""
    av = _av()
    container = _open(data)
    count = 0
    try:
        stream = _video_stream(container)
        for packet in container.demux(stream):
            if packet.size:
                count += 1
                if count > limits.max_frames:
                    raise LimitError(
                        f"the video has more than max_video_frames {limits.max_frames} frames",
                        limit="max_video_frames",
                        limit_value=limits.max_frames,
                    )
    except av.error.FFmpegError as e:
        raise DecodeError(f"the video is corrupt at packet {count}: {e}", format="video") from None
    finally:
        container.close()
    if count == 0:
        raise DecodeError("the video stream holds no frame", format="video")
    return count


def check_decoded_bytes(header: VideoHeader, frames: int, limits: VideoLimits) -> None:
    """Refuse ``frames`` distinct frames of ``header``'s size over the decoded-bytes limit:
    decoding checks it, and so does a token count (which must refuse what decoding would)."""
    size = header.width * header.height * 3 * frames
    if size > limits.max_decoded_bytes:
        raise LimitError(
            f"{frames} frames of {header.width}x{header.height} decode to {size} bytes, over "
            f"max_video_decoded_bytes {limits.max_decoded_bytes}",
            limit="max_video_decoded_bytes",
            limit_value=limits.max_decoded_bytes,
            value=size,
        )


def iter_frames(
    data: bytes | bytearray | memoryview, indices: Iterable[int], limits: VideoLimits
) -> Iterator[tuple[int, npt.NDArray[np.uint8]]]:
    """``(index, rgb)`` for each distinct frame index asked for, in decode order: RGB uint8
    ``[h, w, 3]`` exactly as ``read_video_pyav`` converts it. Decoding stops after the last
    index; an index past the end of the stream is a `DecodeError` naming it. FFmpeg's frame
    threads are used (they give identical frames)."""
    av = _av()
    wanted = sorted({int(i) for i in indices})
    if not wanted:
        return
    if wanted[0] < 0:
        raise DecodeError(f"frame index {wanted[0]} is negative", format="video")
    with _silent_pyav_log(av):
        container = _open(data)
        stream = None
        failure: BaseException | None = None
        try:
            stream = _video_stream(container)
            header = _header(container, stream)
            _check(header, limits)
            check_decoded_bytes(header, len(wanted), limits)
            stream.thread_type = "AUTO"
            yield from _decode(av, container, stream, header, wanted, limits)
        except BaseException as e:  # GeneratorExit too: re-raised once the decoder is freed
            failure = e
        finally:
            container.close()
        # The decoder and its threads are freed here, with the callback off: a traceback
        # would keep the decoding frames (and so the decoder) alive past this point.
        del container, stream
        if failure is not None:
            failure.__traceback__ = failure.__context__ = None
            raise failure


def _decode(
    av: Any,
    container: Any,
    stream: Any,
    header: VideoHeader,
    wanted: list[int],
    limits: VideoLimits,
) -> Iterator[tuple[int, npt.NDArray[np.uint8]]]:
    pending = iter(wanted)
    target = next(pending)
    last = wanted[-1]
    index = -1
    try:
        for frame in container.decode(stream):
            index += 1
            if limits.deadline is not None and time.monotonic() > limits.deadline:
                raise LimitError("the request deadline passed while decoding the video")
            if index > limits.max_frames:
                raise LimitError(
                    f"the video has more than max_video_frames {limits.max_frames} frames",
                    limit="max_video_frames",
                    limit_value=limits.max_frames,
                )
            if index != target:
                continue
            if (frame.width, frame.height) != (header.width, header.height):
                raise DecodeError(
                    f"frame {index} is {frame.width}x{frame.height}, the stream states "
                    f"{header.width}x{header.height}",
                    format="video",
                )
            yield index, np.ascontiguousarray(frame.to_ndarray(format="rgb24"))
            if index == last:
                return
            target = next(pending)
    except av.error.FFmpegError as e:
        raise DecodeError(
            f"the video is corrupt at frame {index + 1}: {e}", format="video"
        ) from None
    if index < 0:
        raise DecodeError("the video stream holds no frame", format="video")
    raise DecodeError(
        f"frame {target} asked for, but the stream ends after {index + 1} frames",
        format="video",
    )


__all__ = ["EXTRA", "VideoHeader", "VideoLimits", "count_frames", "iter_frames", "probe"]
