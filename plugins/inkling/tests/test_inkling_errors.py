"""Bad input to the original API: typed errors naming the value, batches naming the index."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sglang_mm_inkling import (
    InklingFamily,
    decode_patchify,
    decode_patchify_batch,
    patchify_rgb,
    preprocess_images,
)

from sglang_mm_core.errors import DecodeError, KernelArgumentError, LimitError, SpecError

CAP = "rescale_image_max_upscaled_long_edge"


@pytest.mark.parametrize(
    "args,needle",
    [
        ((0,), "patch_size must be greater than zero, got 0"),
        ((-40,), "got -40"),
        ((40, -2.0), "rescale_frac must be finite and greater than zero, got -2"),
        ((40, math.nan), "got NaN"),
        ((40, math.inf), "got inf"),
        ((40, None, 2048), "rescale_cap=2048 caps upscaling and needs rescale_frac above 1"),
        ((40, 1.0, 2048), "got rescale_frac=1"),
        ((40, 2.0, 0), "rescale_cap must be greater than zero, got 0"),
        ((40, 2.0, -5), "got -5"),
    ],
)
def test_bad_arguments(photo_jpegs: dict, args: tuple, needle: str) -> None:
    data = photo_jpegs["astronaut"]
    for call in (
        lambda: decode_patchify(data, *args),
        lambda: decode_patchify_batch([data], *args),
        lambda: preprocess_images([data], *args),
    ):
        with pytest.raises(KernelArgumentError, match=needle):
            call()


def test_patchify_rgb_rejects_bad_arrays() -> None:
    with pytest.raises(KernelArgumentError, match="greater than zero"):
        patchify_rgb(np.zeros((4, 4, 3), np.uint8), 0)
    with pytest.raises(KernelArgumentError, match=r"shape \[h, w, 3\]"):
        patchify_rgb(np.zeros((4, 4, 4), np.uint8), 2)
    with pytest.raises(KernelArgumentError, match="empty 0x4"):
        patchify_rgb(np.zeros((4, 0, 3), np.uint8), 2)
    with pytest.raises(LimitError, match="exceeds the limit"):
        patchify_rgb(np.zeros((1, 1, 3), np.uint8), 1 << 20)


def test_process_item_rejects_bad_arrays() -> None:
    fam = InklingFamily()
    with pytest.raises(KernelArgumentError, match="uint8"):
        fam.process_item(np.zeros((4, 4, 3), np.float32))  # type: ignore[arg-type]
    with pytest.raises(KernelArgumentError, match=r"\[h, w, 3\]"):
        fam.process_item(np.zeros((4, 4), np.uint8))


def test_huge_rescale_is_refused_before_allocating() -> None:
    fam = InklingFamily(InklingFamily.Params(rescale_image_frac=1e6, **{CAP: None}))
    with pytest.raises(LimitError, match="gives 10000000x10000000, over the limit"):
        fam.process_item(np.zeros((10, 10, 3), np.uint8))


@pytest.mark.parametrize("bad", [b"", b"not an image at all", b"\xff\xd8\xff\xe0" + b"\0" * 40])
def test_corrupt_bytes(bad: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_patchify(bad, 40)


def test_batch_names_the_failing_index(photo_jpegs: dict) -> None:
    good = photo_jpegs["coffee"]
    truncated = good[: len(good) // 3]
    for fn in (decode_patchify_batch, preprocess_images):
        for threads in (1, 2):
            with pytest.raises(DecodeError) as info:
                fn([good, good, b"garbage", truncated], 40, threads=threads)
            # The lowest failing index is reported, whatever the thread timing.
            assert info.value.item == 2
            assert str(info.value).startswith("image 2")


def test_batch_rejects_non_bytes_items(photo_jpegs: dict) -> None:
    with pytest.raises(KernelArgumentError, match="image 1: expected encoded image bytes, got str"):
        decode_patchify_batch([photo_jpegs["coffee"], "astronaut.jpg"], 40)


def test_bytes_like_inputs_are_accepted(photo_jpegs: dict) -> None:
    data = photo_jpegs["chelsea"]
    want = decode_patchify(data, 40, None)[2]
    for form in (bytearray(data), memoryview(data)):
        np.testing.assert_array_equal(decode_patchify(form, 40, None)[2], want)


def test_thread_settings(photo_jpegs: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    datas = [photo_jpegs["coffee"], photo_jpegs["rocket"]]
    want = [bits for _, _, bits in decode_patchify_batch(datas, 40, threads=1)]
    monkeypatch.setenv("SGLANG_MM_THREADS", "0")
    for (_, _, bits), ref in zip(decode_patchify_batch(datas, 40), want, strict=True):
        np.testing.assert_array_equal(bits, ref)
    monkeypatch.setenv("SGLANG_MM_THREADS", "many")
    # The core's one thread decision reads the variable, with the core's error.
    with pytest.raises(
        SpecError, match="SGLANG_MM_THREADS must be a non-negative integer, got 'many'"
    ):
        decode_patchify(datas[0], 40)
    with pytest.raises(KernelArgumentError, match="threads must be >= 0, got -1"):
        decode_patchify(datas[0], 40, threads=-1)
