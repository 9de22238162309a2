"""`sglang_mm_qwen_vl.video_sampling` against the references' own outputs, without torch: every
case of ``fixtures/video_sampling_goldens.json`` (written by `gen_video_sampling_goldens.py` in
the torch venv from transformers' Qwen2-VL / Qwen3-VL video processors and qwen-vl-utils) is
replayed bit for bit, and each refusal of a reference is a `KernelArgumentError` here."""

from __future__ import annotations

import base64
import json
import lzma
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sglang_mm_qwen_vl.video_sampling import (
    hf_frame_indices,
    hf_frame_size,
    qwen_vl_utils_frame_indices,
    qwen_vl_utils_frame_range,
    qwen_vl_utils_frame_size,
    qwen_vl_utils_nframes,
    qwen_vl_utils_sample_fps,
)

from sglang_mm_core.plugin import KernelArgumentError

FIXTURE = Path(__file__).parent / "fixtures" / "video_sampling_goldens.json"
DOC: dict[str, Any] = json.loads(FIXTURE.read_text())
ERRORS: list[list[str]] = DOC["errors"]
SECTIONS = ("hf_indices", "hf_sizes", "qvu_indices", "qvu_sizes")


def _decode_arrays(spec: dict[str, Any]) -> list[np.ndarray]:
    raw = lzma.decompress(base64.b64decode(spec["data"]))
    count = spec["count"]
    lengths = np.frombuffer(raw[: 4 * count], dtype="<i4")
    flat = np.cumsum(np.frombuffer(raw[4 * count :], dtype="<i4").astype(np.int64))
    assert int(lengths.sum()) == len(flat)
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    return [flat[bounds[i] : bounds[i + 1]] for i in range(count)]


ARRAYS = _decode_arrays(DOC["arrays"])


def _refused(call: Callable[[], object]) -> bool:
    try:
        call()
    except KernelArgumentError:
        return True
    return False


class _Mismatches:
    """Collects the cases that differ, so that a failure lists several at once."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.count = 0

    def error_case(self, where: str, res: int, call: Callable[[], object]) -> None:
        self.count += 1
        if not _refused(call):
            kind, message = ERRORS[-1 - res]
            self.items.append(f"{where}: the reference raised {kind}({message!r}), ours did not")

    def check(self) -> None:
        assert not self.items, f"{len(self.items)} mismatches:\n" + "\n".join(self.items[:20])


def test_goldens_record_their_versions() -> None:
    versions = DOC["versions"]
    for name in ("torch", "transformers", "qwen_vl_utils"):
        assert isinstance(versions[name], str) and versions[name][0].isdigit(), name
    assert versions["transformers"].startswith("5.23"), versions
    assert DOC["qwen_vl_utils_model_seq_len"] == 128000
    total = sum(len(g["cases"]) for s in SECTIONS for g in DOC[s])
    assert total > 40000
    assert all(any(g["cases"] for g in DOC[s]) for s in SECTIONS)


def test_hf_frame_indices_replay() -> None:
    bad = _Mismatches()
    for group in DOC["hf_indices"]:
        gen, config, call = group["generation"], group["config"], group["call"]
        for total, rate, res in group["cases"]:

            def ours(total: int = total, rate: Any = rate, kw: Any = (gen, config, call)) -> Any:
                return hf_frame_indices(
                    total, rate, generation=kw[0], do_sample_frames=True, **kw[1], **kw[2]
                )

            where = f"{gen} {config} {call} total={total} fps={rate}"
            if res < 0:
                bad.error_case(where, res, ours)
                continue
            bad.count += 1
            got = ours()
            assert got.dtype == np.int64
            try:
                np.testing.assert_array_equal(got, ARRAYS[res], strict=True)
            except AssertionError as e:
                bad.items.append(f"{where}: {str(e).splitlines()[-2:]}")
    bad.check()
    assert bad.count == sum(len(g["cases"]) for g in DOC["hf_indices"])


def test_hf_frame_size_replay() -> None:
    bad = _Mismatches()
    for group in DOC["hf_sizes"]:
        opts = {k: group[k] for k in ("min_pixels", "max_pixels", "max_video_tokens")}
        gen, cap = group["generation"], group["cap_pixels_per_frame"]
        for h, w, n, res in group["cases"]:

            def ours(h: int = h, w: int = w, n: int = n, kw: Any = (gen, cap, opts)) -> Any:
                return hf_frame_size(h, w, n, generation=kw[0], cap_pixels_per_frame=kw[1], **kw[2])

            where = f"{gen} {opts} cap={cap} {w}x{h} t={n}"
            if isinstance(res, int):
                bad.error_case(where, res, ours)
                continue
            bad.count += 1
            got = ours()
            if list(got) != res or not all(type(x) is int for x in got):
                bad.items.append(f"{where}: ours {got}, reference {res}")
    bad.check()
    assert bad.count == sum(len(g["cases"]) for g in DOC["hf_sizes"])


def test_qwen_vl_utils_frame_indices_replay() -> None:
    bad = _Mismatches()
    for group in DOC["qvu_indices"]:
        reader, opts = group["reader"], group["options"]
        for total, rate, res in group["cases"]:

            def ours(total: int = total, rate: Any = rate, kw: Any = (reader, opts)) -> Any:
                return qwen_vl_utils_frame_indices(total, rate, reader=kw[0], **kw[1])

            where = f"{reader} {opts} total={total} fps={rate}"
            if isinstance(res, int):
                bad.error_case(where, res, ours)
                continue
            bad.count += 1
            aid, sample_fps = res
            got = ours()
            try:
                np.testing.assert_array_equal(got, ARRAYS[aid], strict=True)
            except AssertionError as e:
                bad.items.append(f"{where}: {str(e).splitlines()[-2:]}")
                continue
            # the count and the rate the reader reports, from the same options
            if reader == "torchvision":
                count = total
            else:
                range_opts = {k: opts.get(k) for k in ("video_start", "video_end")}
                count = qwen_vl_utils_frame_range(total, rate, **range_opts)[2]
            n_opts = {k: v for k, v in opts.items() if k not in ("video_start", "video_end")}
            n = qwen_vl_utils_nframes(count, rate, **n_opts)
            if n != len(got) or qwen_vl_utils_sample_fps(n, count, rate) != sample_fps:
                bad.items.append(f"{where}: nframes {n} / sample_fps differ from {res}")
    bad.check()
    assert bad.count == sum(len(g["cases"]) for g in DOC["qvu_indices"])


def test_qwen_vl_utils_frame_size_replay() -> None:
    bad = _Mismatches()
    for group in DOC["qvu_sizes"]:
        patch, opts = group["image_patch_size"], group["options"]
        for h, w, n, res in group["cases"]:

            def ours(h: int = h, w: int = w, n: int = n, kw: Any = (patch, opts)) -> Any:
                return qwen_vl_utils_frame_size(h, w, n, image_patch_size=kw[0], **kw[1])

            where = f"patch={patch} {opts} {w}x{h} nframes={n}"
            if isinstance(res, int):
                bad.error_case(where, res, ours)
                continue
            bad.count += 1
            if min(res) <= 0:  # the reference sizes it empty; its resize then fails
                if not _refused(ours):
                    bad.items.append(f"{where}: reference size {res} is empty, ours accepted it")
                continue
            got = ours()
            if list(got) != res or not all(type(x) is int for x in got):
                bad.items.append(f"{where}: ours {got}, reference {res}")
    bad.check()
    assert bad.count == sum(len(g["cases"]) for g in DOC["qvu_sizes"])


@pytest.mark.parametrize("generation", ["qwen2", "qwen3"])
def test_hf_without_sampling_keeps_every_frame(generation: str) -> None:
    for total in (0, 1, 7, 300):
        np.testing.assert_array_equal(
            hf_frame_indices(total, 30.0, generation=generation, do_sample_frames=False),  # type: ignore[arg-type]
            np.arange(total, dtype=np.int64),
            strict=True,
        )


def test_hf_defaults() -> None:
    # Qwen2-VL keeps every frame by default; Qwen3-VL samples at 2 fps by default.
    np.testing.assert_array_equal(
        hf_frame_indices(50, 25.0, generation="qwen2"), np.arange(50), strict=False
    )
    np.testing.assert_array_equal(hf_frame_indices(50, 25.0, generation="qwen3"), [0, 16, 33, 49])
    # transformers: smart_resize(1080, 1920, 28, 128 * 28 * 28, 768 * 28 * 28)
    assert hf_frame_size(1080, 1920, 8, generation="qwen2") == (560, 1008)
    with pytest.raises(KernelArgumentError, match="generation"):
        hf_frame_indices(10, 1.0, generation="qwen9")  # type: ignore[arg-type]


def test_refusals_name_the_argument() -> None:
    with pytest.raises(KernelArgumentError, match="fps and num_frames"):
        hf_frame_indices(10, 1.0, generation="qwen3", fps=1.0, num_frames=4)
    with pytest.raises(KernelArgumentError, match="fps and nframes"):
        qwen_vl_utils_nframes(10, 1.0, fps=1.0, nframes=4)
    with pytest.raises(KernelArgumentError, match="nframes"):
        qwen_vl_utils_nframes(3, 30.0, nframes=6)
    with pytest.raises(KernelArgumentError, match="temporal_patch_size"):
        hf_frame_size(64, 64, 1, generation="qwen3")
    with pytest.raises(KernelArgumentError, match="video_start"):
        qwen_vl_utils_frame_indices(100, 30.0, video_start=1.0)
