"""End to end through the core pipeline: spec -> request -> model-ready output, compared with
the numpy + Pillow reference; spec-time refusals; the bundled example."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from blake3 import blake3
from inkling_reference import decode_patchify as ref_decode_patchify
from numpy.testing import assert_array_equal

from sglang_mm_core import MmInput, pipeline_from_spec
from sglang_mm_core.errors import DecodeError, LayoutError, SpecError
from sglang_mm_core.plugin import Rope1D

TOK = 200054
EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "inkling"


def _spec(threads: int | None = None, **params: object) -> dict:
    return {"family": "inkling", "params": params, "threads": threads}


@pytest.mark.parametrize("threads", [0, 2])
def test_request_matches_the_reference(photo_jpegs: dict, threads: int) -> None:
    datas = [photo_jpegs["chelsea"], photo_jpegs["camera_gray"]]
    ids = [5, 6, TOK, 7, TOK, 8]
    with pipeline_from_spec(_spec(threads)) as pipe:
        out = pipe.process(MmInput(input_ids=ids, images=datas))
    assert out.family == "inkling"
    refs = [ref_decode_patchify(d, 40, 2.0, 2048) for d in datas]
    counts = [len(bits) // (40 * 40 * 3) for _, _, bits in refs]
    want_ids = [5, 6, *[TOK] * counts[0], 7, *[TOK] * counts[1], 8]
    assert out.input_ids.tolist() == want_ids
    assert out.offsets == [(2, 1 + counts[0]), (3 + counts[0], 2 + counts[0] + counts[1])]
    assert out.positions == Rope1D(len(want_ids))
    for item, data, (h, w, bits), n in zip(out.items, datas, refs, counts, strict=True):
        assert (item.geometry.height, item.geometry.width) == (h, w)
        assert item.tokens == n
        assert item.feature.shape == (n, 2, 40, 40, 3)
        assert_array_equal(item.feature.array[:, 0].reshape(-1), bits)
        assert_array_equal(item.feature.array[:, 1].reshape(-1), bits)
        assert item.hash == int.from_bytes(blake3(data).digest()[:8], "big")


def test_spec_decode_defaults_are_the_reference() -> None:
    with pipeline_from_spec(_spec()) as pipe:
        assert pipe.spec.spec.decode.alpha == "drop"
        assert pipe.spec.spec.decode.exif_orientation is False


@pytest.mark.parametrize(
    "params,needle",
    [
        ({"patch_size": 0}, "params.patch_size: Value error, patch_size must be greater than zero"),
        ({"rescale_image_frac": -0.5}, "params.rescale_image_frac"),
        (
            {"rescale_image_frac": None, "rescale_image_max_upscaled_long_edge": 64},
            "params.rescale_image_max_upscaled_long_edge",
        ),
        ({"image_token_id": -2}, "params.image_token_id"),
    ],
)
def test_bad_params_fail_at_spec_time(params: dict, needle: str) -> None:
    with pytest.raises(SpecError, match=needle.replace("(", r"\(")):
        pipeline_from_spec(_spec(**params))


def test_request_errors(photo_jpegs: dict) -> None:
    good = photo_jpegs["coffee"]
    with pipeline_from_spec(_spec(2)) as pipe:
        with pytest.raises(LayoutError, match=r"1 media placeholder\(s\) but 2 media item"):
            pipe.process(MmInput(input_ids=[1, TOK, 2], images=[good, good]))
        with pytest.raises(DecodeError) as info:
            pipe.process(MmInput(input_ids=[TOK, TOK], images=[good, b"\x89PNG\r\n\x1a\n junk"]))
        assert info.value.item == 1


def test_bundled_example_runs() -> None:
    spec = json.loads((EXAMPLES / "spec.json").read_text())
    doc = json.loads((EXAMPLES / "request.json").read_text())
    images = [str(EXAMPLES / name) for name in doc["images"]]
    req = MmInput(doc["input_ids"], images, rid=doc.get("rid"))
    with pipeline_from_spec(spec) as pipe:
        out = pipe.process(req)
        count = pipe.count_tokens(req)
    assert count.length == len(out.input_ids)
    assert count.per_item == [it.tokens for it in out.items]
    for item, path in zip(out.items, req.images, strict=True):
        h, w, bits = ref_decode_patchify(Path(str(path)).read_bytes(), 40, 2.0, 2048)
        assert (item.geometry.height, item.geometry.width) == (h, w)
        assert_array_equal(np.asarray(item.feature.array[:, 0]).reshape(-1), bits)
