"""The error tree and its structured fields: a kernel error reaches Python as its class with
the message unchanged and the limit's name and values, or the detected format, as attributes;
attribution to an item keeps them; every error class sits under `MmError`, the server's and
the codec's keeping their stdlib bases; the client rebuilds an error with its HTTP status and
fields from an answer body."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from core_helpers import png_bytes
from sglang_mm_toy import ToyFamily

from sglang_mm_core import (
    CodecError,
    DecodeError,
    KernelArgumentError,
    LimitError,
    MmError,
    MmInput,
    MmRequestError,
    Registry,
    pipeline_from_spec,
)
from sglang_mm_core._native import image_decode_rgb
from sglang_mm_core.client import error_from
from sglang_mm_core.errors import RidError, ServerError
from sglang_mm_core.server.errors import answer_for

PNG_40x30 = png_bytes(np.zeros((30, 40, 3), dtype=np.uint8))


def test_a_named_kernel_limit_carries_its_fields() -> None:
    with pytest.raises(LimitError) as info:
        image_decode_rgb(PNG_40x30, max_pixels=1000)
    err = info.value
    assert str(err) == "PNG image of 40x30 = 1200 pixels exceeds the limit of 1000 pixels"
    assert (err.limit, err.limit_value, err.value) == ("max_image_pixels", 1000, 1200)
    assert err.fields == {"limit": "max_image_pixels", "limit_value": 1000, "value": 1200}
    with pytest.raises(LimitError) as info:
        image_decode_rgb(PNG_40x30, max_side=32)
    err = info.value
    assert str(err) == "PNG image of 40x30 pixels has a side over the limit of 32 pixels"
    assert (err.limit, err.limit_value, err.value) == ("max_image_side", 32, 40)


@pytest.mark.parametrize(
    ("data", "message", "fmt", "unsupported"),
    [
        (b"II*\x00\x08\x00\x00\x00", "unsupported image format: TIFF", "TIFF", True),
        (b"hello world", "unsupported image format: unknown format", None, True),
        (b"", "unsupported image format: empty input (0 bytes)", None, True),
        (PNG_40x30[:40], None, "PNG", False),
    ],
)
def test_a_decode_error_names_the_detected_format(
    data: bytes, message: str | None, fmt: str | None, unsupported: bool
) -> None:
    with pytest.raises(DecodeError) as info:
        image_decode_rgb(data)
    err = info.value
    if message is not None:
        assert str(err) == message
    else:
        assert str(err).startswith("cannot decode PNG image: ")
    assert (err.format, err.unsupported) == (fmt, unsupported)


def test_kernel_argument_errors_have_no_fields() -> None:
    with pytest.raises(KernelArgumentError) as info:
        image_decode_rgb(PNG_40x30, alpha="purple")
    assert info.value.fields == {}
    assert isinstance(info.value, ValueError)


def test_attribution_keeps_the_fields() -> None:
    reg = Registry()
    reg.register_family(ToyFamily)
    spec = {"family": "toy", "limits": {"max_image_pixels": 1000}}
    with pipeline_from_spec(spec, registry=reg) as pipe, pytest.raises(LimitError) as info:
        pipe.process(MmInput(input_ids=pipe.family.example_prompt(2), images=[PNG_40x30] * 2))
    err = info.value
    assert str(err) == (
        "image 0 (bytes): PNG image of 40x30 = 1200 pixels exceeds the limit of 1000 pixels"
    )
    assert (err.item, err.source_kind) == (0, "bytes")
    assert err.fields == {"limit": "max_image_pixels", "limit_value": 1000, "value": 1200}
    again = err.at_item(1)  # already attributed: the message is kept, the fields too
    assert (str(again), again.item, again.limit) == (str(err), 1, "max_image_pixels")
    # They survive pickling (a process pool hands errors back that way).
    back = pickle.loads(pickle.dumps(err))
    assert (type(back), str(back), back.fields, back.item) == (
        LimitError,
        str(err),
        err.fields,
        0,
    )


def test_driver_limits_carry_fields() -> None:
    reg = Registry()
    reg.register_family(ToyFamily)
    spec = {"family": "toy", "limits": {"max_items": 1, "max_image_pixels": 1000}}
    with pipeline_from_spec(spec, registry=reg) as pipe:
        with pytest.raises(LimitError) as info:
            pipe.process(MmInput(input_ids=pipe.family.example_prompt(2), images=[b"a", b"b"]))
        assert info.value.fields == {"limit": "max_items", "limit_value": 1, "value": 2}
        with pytest.raises(LimitError) as info:
            pipe.count_tokens(MmInput(input_ids=pipe.family.example_prompt(1), images=[PNG_40x30]))
        assert info.value.fields == {
            "limit": "max_image_pixels",
            "limit_value": 1000,
            "value": 1200,
        }


def test_every_error_is_an_mm_error_keeping_its_stdlib_base() -> None:
    assert issubclass(RidError, MmError) and issubclass(RidError, LookupError)
    assert issubclass(CodecError, MmError) and issubclass(CodecError, ValueError)
    from sglang_mm_core.server import codec

    assert codec.CodecError is CodecError
    with pytest.raises(LookupError, match="unknown rid"):
        raise RidError("push_result: unknown rid 'x'")


def test_server_body_carries_the_fields_and_the_client_rebuilds_them() -> None:
    err = LimitError(
        "image 1 (http): too big", item=1, limit="max_image_side", limit_value=8, value=9
    )
    answer = answer_for(err)
    assert answer.status == 413
    body = json.loads(answer.body)  # type: ignore[arg-type]
    assert body == {
        "error": {
            "type": "LimitError",
            "message": "image 1 (http): too big",
            "item": 1,
            "modality": "image",
            "fields": {"limit": "max_image_side", "limit_value": 8, "value": 9},
        }
    }
    back = error_from(413, answer.body, answer.headers)  # type: ignore[arg-type]
    assert isinstance(back, LimitError)
    assert (str(back), back.item, back.status) == ("image 1 (http): too big", 1, 413)
    assert back.fields == err.fields
    # No fields: no key; a request error without fields comes back with its status.
    plain = answer_for(MmRequestError("bad"))
    assert "fields" not in json.loads(plain.body)["error"]  # type: ignore[arg-type]
    rebuilt = error_from(400, plain.body, plain.headers)  # type: ignore[arg-type]
    assert type(rebuilt) is MmRequestError and rebuilt.status == 400
    other = error_from(503, b'{"error": {"type": "QueueFull", "message": "full"}}', {})
    assert isinstance(other, ServerError) and other.status == 503


def test_every_error_pickles_whole() -> None:
    # Keyword-only fields too (the client's ServerError once failed to unpickle).
    errors = [
        ServerError("queue full", status=503, error_type="QueueFull", retry_after=1.5),
        LimitError("over", limit="max_items", limit_value=3, value=4).at_item(2, "url"),
        DecodeError("bad", format="PNG"),
    ]
    for err in errors:
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and str(back) == str(err)
        assert back.__dict__ == err.__dict__ and back.args == err.args
