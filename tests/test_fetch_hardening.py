"""Fetch hardening (issue 9): invalid file paths are `FetchError`s naming the source, `data:`
URLs are bounded before they are decoded, and a cancelled request stops its download."""

from __future__ import annotations

import base64
import re
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sglang_mm_core import MmInput, _native, pipeline_from_spec
from sglang_mm_core._fetch import CancelScope, cancel_scope, fetch_all, fetch_one
from sglang_mm_core._spec import FetchPolicy, Limits
from sglang_mm_core.errors import (
    DecodeError,
    FetchError,
    LimitError,
    MmRequestError,
    RequestCancelledError,
)


def one(source: object, policy: FetchPolicy, limits: Limits | None = None) -> Any:
    return fetch_one(source, policy=policy, limits=limits or Limits())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "name", ["a\x00b.png", "\udcff\ud800.png", ""], ids=["nul", "surrogates", "empty"]
)
@pytest.mark.parametrize("rooted", [True, False])
def test_invalid_path_is_a_fetch_error_naming_it(tmp_path: Path, name: str, rooted: bool) -> None:
    policy = FetchPolicy(allow_file=True, file_root=str(tmp_path) if rooted else None)
    source = f"{tmp_path}/{name}" if name else "file:///"
    with pytest.raises(FetchError) as info:
        one(source, policy)
    assert info.value.item == 0
    if name:
        assert "invalid file path" in str(info.value) and "png" in str(info.value)


def test_nul_in_a_file_url(tmp_path: Path) -> None:
    policy = FetchPolicy(allow_file=True, file_root=str(tmp_path))
    with pytest.raises(FetchError, match="NUL byte"):
        one(f"file://{tmp_path}/a%00b", policy)


MiB = 1 << 20


def _peak_mb(fn: Any) -> tuple[BaseException | None, float, float]:
    tracemalloc.start()
    t = time.monotonic()
    err: BaseException | None = None
    try:
        fn()
    except BaseException as e:
        err = e
    took = time.monotonic() - t
    peak = tracemalloc.get_traced_memory()[1] / MiB
    tracemalloc.stop()
    return err, took, peak


@pytest.mark.parametrize("limit", ["max_total_bytes", "max_stream_bytes"])
def test_percent_encoded_data_url_refused_before_decoding(limit: str) -> None:
    url = "data:," + "%41" * (21 * MiB)  # 63 MB of text, 21 MiB decoded
    limits = Limits(**{limit: MiB})
    err, took, peak = _peak_mb(lambda: one(url, FetchPolicy(), limits))
    assert took < 2.0, f"refused after {took:.2f} s"
    assert isinstance(err, LimitError), err
    assert f"limits.{limit}" in str(err)
    assert peak < 16, f"{peak:.0f} MB while refusing"  # no decode, no list of escapes


def test_percent_decoding_counts_invalid_escapes_exactly() -> None:
    # Invalid escapes decode to themselves: 6 MiB decoded, refused from the count alone.
    url = "data:," + "%zz" * (2 * MiB)
    err, _, peak = _peak_mb(lambda: one(url, FetchPolicy(), Limits(max_stream_bytes=3 * MiB)))
    assert isinstance(err, LimitError) and "max_stream_bytes" in str(err), err
    assert "6291456 bytes" in str(err), err
    assert peak < 8, f"{peak:.0f} MB"
    assert len(one(url, FetchPolicy(), Limits(max_stream_bytes=6 * MiB)).data) == 6 * MiB


def _png() -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (31, 17), (200, 10, 30)).save(buf, "PNG")
    return buf.getvalue()


def test_an_image_payload_that_is_no_image_is_refused_from_its_first_bytes() -> None:
    """The issue's case in process: 21 million ``%00`` escapes (63 MB, 21 MB decoded, under
    every default budget) are refused from the first decoded bytes, with the error the
    decoder gives for the same bytes, in well under the time a Python decode took (6.2 s)."""
    url = "data:image/png," + "%00" * (21 * 10**6)
    err, took, peak = _peak_mb(lambda: fetch_all([url], policy=FetchPolicy(), limits=Limits()))
    assert isinstance(err, DecodeError), err
    assert took < 2.0, f"refused after {took:.2f} s"
    assert peak < 8, f"{peak:.0f} MB while refusing"  # nothing decoded past the header
    with pytest.raises(DecodeError) as raw:
        _native.image_decode_rgb(b"\x00" * 100)
    assert (err.format, err.unsupported) == (raw.value.format, raw.value.unsupported)
    assert str(err) == "image 0 (data_url): " + str(raw.value)
    b64 = "data:image/png;base64," + base64.b64encode(b"\x00" * (3 * MiB)).decode()
    with pytest.raises(DecodeError, match=r"image 0 \(data_url\): " + re.escape(str(raw.value))):
        fetch_all([b64], policy=FetchPolicy(), limits=Limits())
    with pytest.raises(DecodeError, match=r"image 0 \(base64\)"):
        fetch_all([b64.split(",", 1)[1]], policy=FetchPolicy(), limits=Limits())


@pytest.mark.parametrize("form", ["percent", "base64", "bare"])
def test_sniffed_images_decode_to_their_bytes(form: str) -> None:
    png = _png()
    if form == "percent":
        source = "data:image/png," + "".join(f"%{b:02X}" if b > 127 else chr(b) for b in png)
    else:
        text = base64.b64encode(png).decode()
        source = text if form == "bare" else "data:image/png;base64," + text
    assert bytes(fetch_all([source], policy=FetchPolicy(), limits=Limits())[0].data) == png


def test_a_videos_payload_is_not_sniffed_as_an_image() -> None:
    url = "data:video/mp4," + "%00" * 100
    got = fetch_all([url], policy=FetchPolicy(), limits=Limits(), n_images=0)
    assert bytes(got[0].data) == b"\x00" * 100


def test_a_huge_base64_data_url_is_not_copied_before_its_size_check() -> None:
    """In process, the payload was sliced out of the URL (a copy of the whole string) before
    its size was known: 1.8 billion characters cost 1.7 GB to refuse. 400 million here."""
    url = "data:image/png;base64," + "A" * (400 * 10**6)
    err, took, peak = _peak_mb(lambda: fetch_all([url], policy=FetchPolicy(), limits=Limits()))
    assert isinstance(err, LimitError) and "max_stream_bytes" in str(err), err
    assert took < 2.0 and peak < 1, (took, peak)
    pct = "data:," + "A" * (400 * 10**6)
    err, took, peak = _peak_mb(lambda: fetch_all([pct], policy=FetchPolicy(), limits=Limits()))
    assert isinstance(err, LimitError) and "max_stream_bytes" in str(err), err
    assert took < 2.0 and peak < 1, (took, peak)


def test_a_data_url_header_is_bounded() -> None:
    with pytest.raises(FetchError, match="no ',' within its first 4096 characters"):
        one("data:image/png;" + "x" * (10 * MiB), FetchPolicy())
    with pytest.raises(FetchError, match="no ',' before its data"):
        one("data:image/png;base64", FetchPolicy())


def test_text_the_kernels_cannot_read_is_a_fetch_error() -> None:
    with pytest.raises(FetchError, match="lone surrogate"):
        one("data:," + "%41\ud800", FetchPolicy())
    with pytest.raises(FetchError, match="non-ASCII"):
        one("data:;base64,QUJD\u00e9", FetchPolicy())
    assert bytes(one("data:,%41\u00e9", FetchPolicy()).data) == "A\u00e9".encode()


@pytest.mark.parametrize(
    "payload",
    ["hello%20world%zz%4", "%e2%82%ac" * 1000 + "%", "A%41" * (MiB // 3) + "%4"],
    ids=["mixed", "utf8", "chunk-boundary"],
)
def test_percent_decoding_in_chunks_is_exact(payload: str) -> None:
    from urllib.parse import unquote_to_bytes

    got = one("data:text/plain," + payload, FetchPolicy()).data
    assert bytes(got) == unquote_to_bytes(payload)


def test_base64_data_url_checks_the_stream_cap() -> None:
    url = "data:;base64," + base64.b64encode(b"x" * (2 * MiB)).decode()
    with pytest.raises(LimitError, match="max_stream_bytes"):
        one(url, FetchPolicy(), Limits(max_stream_bytes=MiB))
    assert bytes(one(url, FetchPolicy(), Limits(max_stream_bytes=2 * MiB)).data) == b"x" * (2 * MiB)


def test_cancel_stops_a_download(http_server: Any) -> None:
    policy = FetchPolicy(allow_private_networks=True, timeout_s=30.0)
    scope = CancelScope()
    threading.Timer(0.3, scope.cancel, args=("test",)).start()
    t = time.monotonic()
    with cancel_scope(scope), pytest.raises(RequestCancelledError, match="stopped: test"):
        fetch_all([http_server.url("/slow/600?interval=0.05")], policy=policy, limits=Limits())
    assert time.monotonic() - t < 2.0


def test_cancelled_scope_fetches_nothing_more() -> None:
    scope = CancelScope()
    scope.cancel("gone")
    with cancel_scope(scope), pytest.raises(RequestCancelledError, match="gone"):
        fetch_all([b"abc"], policy=FetchPolicy(), limits=Limits())


@pytest.mark.parametrize(
    "ids",
    [[1, True, 2], [False], [1, np.True_], [1.0, 2], ["5"]],
    ids=["bool", "only-bool", "np-bool", "float", "str"],
)
def test_python_token_ids_are_strict(ids: list[Any]) -> None:
    pipe = pipeline_from_spec({"family": "toy"}, registry=_toy_registry())
    try:
        with pytest.raises(MmRequestError, match="input_ids must be"):
            pipe.process(MmInput(input_ids=ids, images=[]))
    finally:
        pipe.close()


def _toy_registry() -> Any:
    from sglang_mm_toy import ToyFamily  # tests/conftest.py puts tests/toy on sys.path

    from sglang_mm_core import Registry

    reg = Registry()
    reg.register_family(ToyFamily)
    return reg
