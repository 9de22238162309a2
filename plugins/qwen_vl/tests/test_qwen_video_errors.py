"""Bad video requests through the driver: every one a typed `MmError` naming the video and
what was wrong, raised fast (limits before a frame is decoded), with nothing half-done; and
mutated clips through the whole request path never end in anything but an answer or a typed
error."""

from __future__ import annotations

import io
import time
from typing import Any

import av
import numpy as np
import pytest

from sglang_mm_core import MmInput, pipeline_from_spec
from sglang_mm_core.conformance.video import make_clip
from sglang_mm_core.errors import (
    DecodeError,
    KernelArgumentError,
    LayoutError,
    LimitError,
    MmError,
    MmRequestError,
)

VS, VE, VIDEO, IMAGE = 151652, 151653, 151656, 151655
ONE = [1, VS, VIDEO, VE, 2]
CLIP = make_clip("libx264", 64, 48, 8)


def pipe(limits: dict[str, Any] | None = None, **params: Any) -> Any:
    spec: dict[str, Any] = {"family": "qwen_vl", "params": params}
    if limits:
        spec["limits"] = limits
    return pipeline_from_spec(spec)


def refused(exc: type[MmError], request: MmInput, match: str, **kw: Any) -> MmError:
    with pipe(**kw) as p, pytest.raises(exc, match=match) as err:
        p.process(request)
    return err.value


def audio_only() -> bytes:
    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as out:
        stream = out.add_stream("aac", rate=8000)
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), "fltp", "mono")
        frame.sample_rate = 8000
        for packet in stream.encode(frame):
            out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return buf.getvalue()


@pytest.mark.parametrize(
    "blob, match",
    [
        (b"\x00\x01 not a video" * 40, "not a video container"),
        (b"", "video 0"),
        (CLIP[: len(CLIP) // 3], "video 0"),
        (audio_only(), "no video stream"),
    ],
    ids=["garbage", "empty", "truncated", "audio-only"],
)
def test_bad_files_are_typed_errors_naming_the_video(blob: bytes, match: str) -> None:
    err = refused(MmRequestError, MmInput(ONE, videos=[blob]), match)
    assert err.modality == "video" and "video 0" in str(err)


def test_a_bad_video_after_a_good_image_fails_the_whole_request() -> None:
    good = make_clip("libx264", 32, 32, 2)
    png = io.BytesIO()
    from PIL import Image

    Image.new("RGB", (40, 30), (9, 80, 200)).save(png, "PNG")
    ids = [1, VS, IMAGE, VE, VS, VIDEO, VE, VS, VIDEO, VE, 2]
    err = refused(
        DecodeError, MmInput(ids, [png.getvalue()], videos=[good, b"junk" * 99]), "video 1"
    )
    assert err.modality == "video"


@pytest.mark.parametrize(
    "video, match",
    [
        ({"video": CLIP, "fsp": 2}, r"video 0: bad video options \(fsp: Extra inputs"),
        ({"video": CLIP, "fps": -1}, r"video 0: bad video options \(fps: Input should be greater"),
        ({"video": CLIP, "fps": float("nan")}, "fps"),
        ({"video": CLIP, "nframes": 2.5}, "nframes"),
        ({"source": CLIP}, "holds its source under 'video' \\(keys given: source\\)"),
    ],
    ids=["unknown", "negative", "nan", "fractional", "no-source"],
)
def test_bad_options_name_themselves(video: dict[str, Any], match: str) -> None:
    refused(MmRequestError, MmInput(ONE, videos=[video]), match)


@pytest.mark.parametrize(
    "sampling, option, match",
    [
        ("hf", {"total_pixels": 10_000}, "only video_sampling 'qwen_vl_utils' reads it"),
        ("hf", {"video_start": 0.5}, "only video_sampling 'qwen_vl_utils' reads it"),
        ("none", {"fps": 1.0}, "video_sampling 'none' keeps every frame"),
        ("none", {"nframes": 4}, "video_sampling 'none' keeps every frame"),
    ],
)
def test_options_a_sampling_mode_does_not_read_are_refused(
    sampling: str, option: dict[str, Any], match: str
) -> None:
    name = next(iter(option))
    err = refused(
        KernelArgumentError,
        MmInput(ONE, videos=[{"video": CLIP, **option}]),
        f"video option {name}=.* is not supported: {match}",
        video_sampling=sampling,
    )
    assert err.modality == "video"


@pytest.mark.parametrize(
    "limits, match",
    [
        ({"max_video_frames": 7}, "frames"),
        ({"max_video_duration_s": 0.1}, "duration|long"),
        ({"max_image_pixels": 64 * 47}, "pixels"),
        ({"max_video_decoded_bytes": 64 * 48 * 3 * 3}, "bytes"),
    ],
    ids=["frames", "duration", "frame-size", "decoded-bytes"],
)
def test_limits_refuse_the_video(limits: dict[str, Any], match: str) -> None:
    long_clip = make_clip("libx264", 64, 48, 400)  # 16 s: decoding it all would be slow
    t0 = time.perf_counter()
    with pipe(limits, video_sampling="none") as p:
        with pytest.raises(LimitError, match=match) as err:
            p.process(MmInput(ONE, videos=[long_clip]))
        with pytest.raises(LimitError, match=match):
            p.count_tokens(MmInput(ONE, videos=[long_clip]))
    assert err.value.modality == "video" and "video 0" in str(err.value)
    assert time.perf_counter() - t0 < 30  # a hang guard, not a timing assertion


def test_the_feature_bytes_limit_is_the_full_feature_size() -> None:
    """``max_video_feature_bytes`` against the full feature's real size: at it the video
    passes, one byte under it is refused (in the compact form and by the count too, which
    must refuse what processing does), before any frame is decoded (a clip cut after its
    header is refused for its size, not for its missing frames)."""
    with pipe(video_sampling="none") as p:
        size = p.process(MmInput(ONE, videos=[CLIP])).items[0].feature.array.nbytes
    with pipe({"max_video_feature_bytes": size}, video_sampling="none") as p:
        assert p.process(MmInput(ONE, videos=[CLIP])).items[0].feature.array.nbytes == size
    with pipe({"max_video_feature_bytes": size - 1}, video_sampling="none") as p:
        for call in (p.process, p.count_tokens, lambda r: p.process(r, compact=True)):
            with pytest.raises(LimitError, match="max_video_feature_bytes") as err:
                call(MmInput(ONE, videos=[CLIP]))
            assert (err.value.limit, err.value.limit_value, err.value.value) == (
                "max_video_feature_bytes",
                size - 1,
                size,
            )
            assert err.value.modality == "video"
    at = CLIP.find(b"mdat")  # the frames' data zeroed, the container's index kept
    end = at - 4 + int.from_bytes(CLIP[at - 4 : at], "big")
    blank = CLIP[: at + 4] + bytes(end - at - 4) + CLIP[end:]
    with pipe(video_sampling="none") as p, pytest.raises(DecodeError):
        p.process(MmInput(ONE, videos=[blank]))  # decoding it fails...
    with pipe({"max_video_feature_bytes": size - 1}, video_sampling="none") as p:
        with pytest.raises(LimitError, match="max_video_feature_bytes"):
            p.process(MmInput(ONE, videos=[blank]))  # ...but the size is refused first


def test_max_items_counts_videos_before_fetching() -> None:
    missing = ["/no/such/clip.mp4"] * 3
    with pipe({"max_items": 2}) as p:
        with pytest.raises(LimitError, match="max_items = 2"):
            p.process(MmInput([1, *([VS, VIDEO, VE] * 3), 2], videos=missing))


@pytest.mark.parametrize(
    "ids, n, match",
    [
        ([1, VS, VIDEO, VE, VS, VIDEO, VE, 2], 1, r"2 video placeholder\(s\) but 1 video item"),
        (ONE, 2, r"1 video placeholder\(s\) but 2 video item"),
        ([1, VIDEO, 2], 1, "video placeholder 0 .* not directly between ids 151652 and 151653"),
    ],
    ids=["more-placeholders", "more-videos", "no-markers"],
)
def test_placeholders_and_videos_must_agree(ids: list[int], n: int, match: str) -> None:
    with pipe() as p:
        with pytest.raises(LayoutError, match=match):
            p.process(MmInput(ids, videos=[CLIP] * n))
        with pytest.raises(LayoutError, match=match):
            p.count_tokens(MmInput(ids, videos=[CLIP] * n))


def test_a_missing_file_is_a_fetch_error_naming_the_video() -> None:
    err = refused(MmRequestError, MmInput(ONE, videos=["/no/such/clip.mp4"]), r"video 0 \(file\)")
    assert err.modality == "video"


def test_mutated_clips_through_the_request_path() -> None:
    """Bytes flipped over real clips, then the whole request: an answer whose shapes agree
    with its own count, or a typed error; nothing else escapes."""
    rng = np.random.default_rng(23)
    clips = [make_clip("libx264", 48, 32, 6), make_clip("libvpx-vp9", 48, 32, 5, fmt="webm")]
    answered = refused_n = 0
    with pipe(video_sampling="none") as p:
        for clip in clips:
            for _ in range(40):
                blob = bytearray(clip)
                for pos in rng.integers(0, len(blob), int(rng.integers(1, 16))):
                    blob[pos] = int(rng.integers(0, 256))
                try:
                    out = p.process(MmInput(ONE, videos=[bytes(blob)]))
                except MmError:
                    refused_n += 1
                    continue
                answered += 1
                (item,) = out.items
                t, gh, gw = item.aux["video_grid_thw"].array[0]
                assert item.feature.array.shape[0] == t * gh * gw
                assert len(out.input_ids) == len(ONE) - 1 + item.tokens
    assert answered and refused_n  # both outcomes were reached


def _mutations(data: bytes, rng: np.random.Generator, n: int) -> list[bytes]:
    """Flipped bytes, cuts, a duplicated chunk and a zeroed run, over one real clip."""
    out = [data[: int(cut)] for cut in rng.integers(1, len(data), n // 4)]
    for _ in range(n - len(out)):
        blob = bytearray(data)
        kind = int(rng.integers(0, 3))
        if kind == 0:
            for pos in rng.integers(0, len(blob), int(rng.integers(1, 32))):
                blob[pos] = int(rng.integers(0, 256))
        elif kind == 1:
            a = int(rng.integers(0, len(blob)))
            b = min(len(blob), a + int(rng.integers(1, 512)))
            blob[a:a] = blob[a:b]
        else:
            a = int(rng.integers(0, len(blob)))
            blob[a : a + int(rng.integers(1, 256))] = bytes(256)[: len(blob[a : a + 256])]
        out.append(bytes(blob))
    return out


FUZZ_CLIPS = {
    "h264": dict(codec="libx264", w=48, h=32, n=6),
    "h264-444": dict(codec="libx264", w=33, h=17, n=5, pix_fmt="yuv444p"),
    "hevc": dict(codec="libx265", w=64, h=48, n=4),
    "vp9-webm": dict(codec="libvpx-vp9", w=48, h=32, n=5, fmt="webm"),
    "av1": dict(codec="libsvtav1", w=64, h=64, n=3),
    "mpeg4": dict(codec="mpeg4", w=40, h=30, n=3),
    "vfr-mkv": dict(codec="libx264", w=32, h=32, n=9, vfr=True, fmt="matroska"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", FUZZ_CLIPS)
def test_fuzz_the_container_path(name: str) -> None:
    """A few hundred mutated files per codec through ``process`` and ``count_tokens`` under
    every sampling mode: each an answer or an `MmError`; an answer's count agrees."""
    spec = dict(FUZZ_CLIPS[name])
    data = make_clip(spec.pop("codec"), spec.pop("w"), spec.pop("h"), spec.pop("n"), **spec)
    rng = np.random.default_rng(sum(map(ord, name)))
    pipes = [pipe(video_sampling=m) for m in ("hf", "none", "qwen_vl_utils")]
    try:
        for k, blob in enumerate(_mutations(data, rng, 480)):
            p = pipes[k % 3]
            request = MmInput(ONE, videos=[blob])
            try:
                out = p.process(request)
            except MmError:
                continue
            try:
                count = p.count_tokens(request)
            except MmError:
                continue  # e.g. the mutation took the stated frame count away
            assert count.length == len(out.input_ids)
    finally:
        for p in pipes:
            p.close()
