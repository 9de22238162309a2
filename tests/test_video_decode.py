"""Video containers through PyAV (`sglang_mm_core._video`, the first part of Qwen-VL video):
the frames equal transformers' ``read_video_pyav`` on the same file with the same PyAV, bit
for bit, across codecs, sizes, frame counts and a variable frame rate; the header is what
transformers reads; every limit the header shows is refused before a frame is decoded; and
corrupt, truncated, audio-only and zero-frame files are typed errors. The clips are made here
with PyAV's own encoders."""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

import av
import numpy as np
import pytest
from transformers.video_utils import read_video_pyav

from sglang_mm_core._video import VideoLimits, iter_frames, probe
from sglang_mm_core.common import DEFAULT_MAX_PIXELS, DEFAULT_MAX_SIDE
from sglang_mm_core.conformance.video import make_clip
from sglang_mm_core.errors import DecodeError, LimitError

LIMITS = VideoLimits(max_pixels=DEFAULT_MAX_PIXELS, max_side=DEFAULT_MAX_SIDE)


CLIPS = {
    "h264-420": dict(codec="libx264", w=64, h=48, n=7),
    "h264-444-odd": dict(codec="libx264", w=33, h=17, n=5, pix_fmt="yuv444p"),
    "hevc": dict(codec="libx265", w=64, h=48, n=6),
    "vp9-webm": dict(codec="libvpx-vp9", w=48, h=32, n=5, fmt="webm"),
    "av1": dict(codec="libsvtav1", w=64, h=64, n=4),
    "mpeg4-odd-frames": dict(codec="mpeg4", w=40, h=30, n=3),
    "one-frame": dict(codec="libx264", w=32, h=32, n=1),
    "two-frames": dict(codec="libx264", w=32, h=32, n=2),
    "vfr": dict(codec="libx264", w=32, h=32, n=9, vfr=True, fmt="matroska"),
    "rotated-90": dict(codec="libx264", w=64, h=48, n=4, rotation=90),
}


def _clip(name: str) -> bytes:
    spec = dict(CLIPS[name])
    return make_clip(spec.pop("codec"), spec.pop("w"), spec.pop("h"), spec.pop("n"), **spec)


def _reference(path: Path, indices: list[int]) -> tuple[np.ndarray, object]:
    """transformers' own reader, told which indices to take."""
    return read_video_pyav(str(path), sample_indices_fn=lambda metadata, **_: np.array(indices))


@pytest.mark.parametrize("name", CLIPS)
def test_frames_equal_read_video_pyav(tmp_path: Path, name: str) -> None:
    data = _clip(name)
    path = tmp_path / "clip"
    path.write_bytes(data)
    header = probe(data, LIMITS)
    n = CLIPS[name]["n"]
    assert (header.width, header.height) == (CLIPS[name]["w"], CLIPS[name]["h"])
    for indices in (list(range(n)), [0], [n - 1], sorted({0, n // 2, n - 1})):
        want, meta = _reference(path, indices)
        got = list(iter_frames(data, indices, LIMITS))
        assert [i for i, _ in got] == sorted(set(indices))
        stacked = np.stack([rgb for _, rgb in got])
        assert stacked.dtype == np.uint8 and stacked.shape == want.shape
        np.testing.assert_array_equal(stacked, want)
    # the header is what transformers reads
    assert header.frames == meta.total_num_frames or (
        header.frames is None and not meta.total_num_frames
    )
    assert header.fps == meta.fps


@pytest.mark.parametrize("rotation", [90, 180, 270])
def test_rotation_is_not_applied(rotation: int) -> None:
    """The rule: a display matrix is not applied (transformers' ``read_video_pyav``, whose
    frames ``test_frames_equal_read_video_pyav`` matches on the rotated clip, ignores it):
    frames and header keep the stored orientation. The clip does carry the side data."""
    data = make_clip("libx264", 64, 48, 2, rotation=rotation)
    with av.open(io.BytesIO(data)) as container:
        first = next(container.decode(video=0))
    assert first.rotation == {90: -90, 180: -180, 270: 90}[rotation]  # FFmpeg: counter-clockwise
    header = probe(data, LIMITS)
    assert (header.width, header.height) == (64, 48)
    for _, rgb in iter_frames(data, [0, 1], LIMITS):
        assert rgb.shape == (48, 64, 3)


def test_repeated_indices_give_one_frame_each(tmp_path: Path) -> None:
    """``read_video_pyav`` keeps a frame once however often its index is asked for."""
    data = _clip("h264-420")
    path = tmp_path / "clip.mp4"
    path.write_bytes(data)
    want, _ = _reference(path, [1, 1, 3, 3, 3])
    got = [rgb for _, rgb in iter_frames(data, [1, 1, 3, 3, 3], LIMITS)]
    np.testing.assert_array_equal(np.stack(got), want)
    assert len(got) == 2


def test_frames_stream_one_at_a_time() -> None:
    """A consumer gets each frame as it is decoded (a generator), so nothing holds them all."""
    frames = iter_frames(_clip("h264-420"), [0, 6], LIMITS)
    first = next(frames)
    assert first[0] == 0
    assert next(frames)[0] == 6
    assert next(frames, None) is None


def test_header_limits_refuse_before_decoding() -> None:
    data = _clip("h264-420")  # 64x48, 7 frames
    cases = [
        (VideoLimits(max_pixels=64 * 48 - 1, max_side=4096), "max_image_pixels"),
        (VideoLimits(max_pixels=10**6, max_side=63), "max_image_side"),
        (VideoLimits(max_pixels=10**6, max_side=4096, max_frames=6), "max_video_frames"),
        (VideoLimits(max_pixels=10**6, max_side=4096, max_duration_s=0.1), "max_video_duration_s"),
    ]
    for limits, name in cases:
        with pytest.raises(LimitError) as e:
            probe(data, limits)
        assert e.value.limit == name
        with pytest.raises(LimitError):
            next(iter_frames(data, [0], limits))
    tight = VideoLimits(max_pixels=10**6, max_side=4096, max_decoded_bytes=64 * 48 * 3 * 2)
    with pytest.raises(LimitError, match="max_video_decoded_bytes"):
        next(iter_frames(data, [0, 1, 2], tight))
    assert len(list(iter_frames(data, [0, 1], tight))) == 2


def test_deadline_stops_decoding() -> None:
    past = VideoLimits(max_pixels=10**6, max_side=4096, deadline=time.monotonic() - 1)
    with pytest.raises(LimitError, match="deadline"):
        list(iter_frames(_clip("h264-420"), [6], past))


def _audio_only() -> bytes:
    buf = io.BytesIO()
    with av.open(buf, mode="w", format="matroska") as out:
        stream = out.add_stream("pcm_s16le", rate=8000)
        frame = av.AudioFrame.from_ndarray(
            np.zeros((1, 800), dtype=np.int16), format="s16", layout="mono"
        )
        frame.sample_rate = 8000
        for packet in stream.encode(frame):
            out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return buf.getvalue()


def _no_frames() -> bytes:
    buf = io.BytesIO()
    with av.open(buf, mode="w", format="matroska") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 32, 32, "yuv420p"
        for packet in stream.encode():
            out.mux(packet)
    return buf.getvalue()


def test_bad_files_are_typed_errors() -> None:
    data = _clip("h264-420")
    bad = {
        "garbage": b"\x00\x01not a video at all" * 50,
        "empty": b"",
        "truncated": data[: len(data) // 3],
        "audio-only": _audio_only(),
        "no-frames": _no_frames(),
    }
    for name, blob in bad.items():
        with pytest.raises(DecodeError) as e:
            list(iter_frames(blob, [0], LIMITS))
        assert str(e.value), name
    with pytest.raises(DecodeError, match="no video stream"):
        probe(bad["audio-only"], LIMITS)
    with pytest.raises(DecodeError, match="ends after 7 frames"):
        list(iter_frames(data, [7], LIMITS))
    with pytest.raises(DecodeError, match="negative"):
        list(iter_frames(data, [-1], LIMITS))


def test_mutated_files_never_crash() -> None:
    """Bytes flipped all over a real clip: every outcome is frames or a typed error."""
    rng = np.random.default_rng(11)
    for name in ("h264-420", "vp9-webm", "mpeg4-odd-frames"):
        data = bytearray(_clip(name))
        blobs = [bytes(data[:cut]) for cut in rng.integers(1, len(data), 20)]
        for _ in range(100):
            blob = bytearray(data)
            for pos in rng.integers(0, len(blob), int(rng.integers(1, 24))):
                blob[pos] = int(rng.integers(0, 256))
            blobs.append(bytes(blob))
        for blob in blobs:
            try:
                probe(blob, LIMITS)
                for _, rgb in iter_frames(blob, range(CLIPS[name]["n"]), LIMITS):
                    assert rgb.dtype == np.uint8 and rgb.ndim == 3
            except (DecodeError, LimitError):
                pass


def test_without_pyav_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "av", None)  # what `import av` meets when it is absent
    with pytest.raises(DecodeError, match=r"sglang-mm-core\[video\]") as e:
        probe(b"whatever", LIMITS)
    assert e.value.unsupported is True


# -- PyAV's log callback and FFmpeg's frame threads ---------------------------------------------
def test_pyav_logging_is_off_while_a_decoder_lives_and_put_back_after() -> None:
    """With PyAV logging on (torchvision turns it on at import), a frame thread logging an
    error while its decoder is freed (the GIL held) deadlocks the process; so our decoders run
    with PyAV's silent callback, and the level comes back once the last one is gone: after a
    full read, an early close and an error alike."""
    clip = _clip("h264-420")
    before = av.logging.get_level()
    av.logging.set_level(av.logging.ERROR)
    try:
        frames = iter_frames(clip, [0, 3, 6], LIMITS)
        next(frames)
        assert av.logging.get_level() is None
        inner = iter_frames(clip, [1], LIMITS)
        next(inner)
        frames.close()  # early: one of ours still lives
        assert av.logging.get_level() is None
        assert list(inner) == []
        assert av.logging.get_level() == av.logging.ERROR
        assert len(list(iter_frames(clip, [0, 6], LIMITS))) == 2
        assert av.logging.get_level() == av.logging.ERROR
        with pytest.raises(DecodeError, match="ends after 7 frames"):
            list(iter_frames(clip, [9], LIMITS))
        assert av.logging.get_level() == av.logging.ERROR
    finally:
        av.logging.set_level(before)


_STRESS = """
import av, numpy as np
from sglang_mm_core._video import VideoLimits, iter_frames
from sglang_mm_core.conformance.video import make_clip
from sglang_mm_core.errors import DecodeError
av.logging.set_level(av.logging.ERROR)  # as torchvision leaves it
clip = make_clip("libx264", 320, 240, 60, seed=3)
rng = np.random.default_rng(0)
for _ in range(320):
    data = bytearray(clip)
    for k in rng.integers(6000, len(data), 20):
        data[int(k)] ^= 0xFF
    try:
        for _ in iter_frames(data, range(0, 31, 3), VideoLimits(10**8, 10**5)):
            pass
    except DecodeError:
        pass
print("done")
"""


@pytest.mark.slow
def test_corrupt_clips_with_pyav_logging_on_never_deadlock() -> None:
    """Damaged H.264 makes FFmpeg's frame threads log errors; with PyAV logging on, freeing a
    decoder stopped early deadlocked within these 320 clips (PyAV's own loop did, here). In a
    subprocess, so that a deadlock is a timeout, not a hung suite."""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", _STRESS], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr[-2000:]


def test_prefetched_frames_keep_their_order_bound_and_errors() -> None:
    """The decode runs ahead on a helper thread by at most two frames; an early stop closes
    the source (on the helper), and the source's error is raised in its place."""
    import threading

    from sglang_mm_core._video_items import prefetched

    pulled: list[int] = []
    closed = threading.Event()

    def source():  # type: ignore[no-untyped-def]
        try:
            for i in range(100):
                pulled.append(i)
                yield i
        finally:
            closed.set()

    got = prefetched(source(), depth=2)
    assert next(got) == 0
    time.sleep(0.3)
    assert len(pulled) <= 4  # the one taken, two queued, one in the helper's hand
    got.close()
    assert closed.wait(5)

    def failing():  # type: ignore[no-untyped-def]
        yield 1
        yield 2
        raise DecodeError("frame 3 is broken", format="video")

    it = prefetched(failing())
    assert [next(it), next(it)] == [1, 2]
    with pytest.raises(DecodeError, match="frame 3 is broken"):
        next(it)
    assert list(prefetched(iter([]))) == []
    clip = _clip("h264-420")
    assert [i for i, _ in prefetched(iter_frames(clip, [0, 2, 6], LIMITS))] == [0, 2, 6]
