"""The source mode (`common.image_source_mode`): the mode Pillow 13 opens an image in and
whether it reads a transparency entry, from the header alone, against Pillow itself on every
decode corpus; and the decode policy built on it (the spec's ``decode.source_modes``, a
family's `DecodeDefaults.source_modes` and ``decode_defaults_for``), refused in `process` and
`count_tokens` alike, before any pixel is decoded."""

from __future__ import annotations

import functools
import io
import struct
import warnings
import zlib
from pathlib import Path
from typing import Any, ClassVar

import corpus
import numpy as np
import pytest
import test_decode_deep
from core_helpers import png_bytes
from PIL import Image
from sglang_mm_toy import ToyFamily, ToyParams

from sglang_mm_core import (
    DecodeError,
    LimitError,
    MmInput,
    Registry,
    SpecError,
    load_spec,
    pipeline_from_spec,
)
from sglang_mm_core.common import image_source_mode
from sglang_mm_core.plugin import SOURCE_MODES, DecodeDefaults, SourceMode

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "images"
FORMATS = {"JPEG": "JPEG", "MPO": "JPEG", "PNG": "PNG", "WEBP": "WebP", "GIF": "GIF", "BMP": "BMP"}


@functools.cache
def every_case() -> dict[str, bytes]:
    """The decode corpora: the parity cases, the malformed edge cases, the deep PNG layouts,
    the bundled example images and scikit-image's sample files."""
    out = {k: make() for k, make in corpus.parity_cases().items()}
    out |= {f"edge-{k}": v for k, v in corpus.edge_cases().items()}
    out |= {f"deep-{k}": v for k, (v, _) in test_decode_deep.cases().items()}
    out |= {f"example-{p.name}": p.read_bytes() for p in sorted(EXAMPLES.glob("*.*g"))}
    out |= {f"example-{p.name}": p.read_bytes() for p in sorted(EXAMPLES.glob("*.webp"))}
    for name in ("rocket.jpg", "logo.png", "camera.png", "no_time_for_that_tiny.gif"):
        out[f"skimage-{name}"] = corpus.sample_file(name)
    return out


def pillow_mode(data: bytes) -> tuple[tuple[str, bool, str], bool]:
    """``((mode, "transparency" in info, format), loaded)`` as Pillow has them once it has
    tried to load the pixels (a PNG's tRNS after the image data is read then)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        im = Image.open(io.BytesIO(data))
        try:
            im.load()
            loaded = True
        except Exception:
            loaded = False
        return (im.mode, "transparency" in im.info, FORMATS[str(im.format)]), loaded


@pytest.mark.parametrize("name", sorted(every_case()))
def test_the_mode_pillow_opens(name: str) -> None:
    data = every_case()[name]
    try:
        want, loaded = pillow_mode(data)
    except Exception:  # Pillow cannot open it: neither can we
        with pytest.raises(DecodeError):
            image_source_mode(data)
        return
    try:
        got = image_source_mode(data)
    except DecodeError:
        # Only where Pillow's own load fails too (a broken chunk after the image data): the
        # header read stops where Pillow's load does, and the decode refuses the image.
        assert not loaded, name
        return
    assert (got.mode, got.transparency, got.format) == want
    assert got.label in SOURCE_MODES
    assert got.has_alpha == (want[1] or "A" in Image.new(want[0], (1, 1)).getbands())


def test_every_label_is_reached_by_the_corpora() -> None:
    """The corpora cover every label the decoders can report (so each is tested above)."""
    seen = set()
    for data in every_case().values():
        try:
            seen.add(image_source_mode(data).label)
        except DecodeError:
            pass
    assert seen == set(SOURCE_MODES)


def test_a_source_mode_value() -> None:
    m = SourceMode("P", True, "GIF")
    assert (m.label, m.has_alpha) == ("P+transparency", True)
    assert (SourceMode("CMYK", False, "JPEG").label, SourceMode("LA", False, "PNG").has_alpha) == (
        "CMYK",
        True,
    )
    with pytest.raises(DecodeError, match="TIFF"):
        image_source_mode(b"II*\x00" + bytes(64))


# --------------------------------------------------------------------------- the policy

RGBA = png_bytes(np.full((6, 9, 4), 200, np.uint8))
GRAY = png_bytes(np.full((6, 9), 7, np.uint8))
RGB = png_bytes(np.full((6, 9, 3), 9, np.uint8))


class PickyToy(ToyFamily):
    """The toy family, reproducing RGB and L sources only when ``patch`` is 4 (a params-driven
    policy, as a family whose params select another reference)."""

    name: ClassVar[str] = "picky"

    @classmethod
    def decode_defaults_for(cls, params: ToyParams) -> DecodeDefaults:  # type: ignore[override]
        if params.patch != 4:
            return cls.decode_defaults
        return DecodeDefaults(source_modes=("RGB", "L"), source_modes_reason="toy reasons")


@pytest.fixture
def picky() -> Registry:
    reg = Registry()
    reg.register_family(ToyFamily, PickyToy)
    return reg


def request(*images: bytes) -> MmInput:
    return MmInput(input_ids=ToyFamily().example_prompt(len(images)), images=list(images))


def test_the_spec_policy_refuses_before_decoding(registry: Registry) -> None:
    spec: dict[str, Any] = {"family": "toy", "decode": {"source_modes": ["RGB", "L"]}}
    with pipeline_from_spec(spec, registry=registry) as pipe:
        assert pipe.count_tokens(request(RGB, GRAY)).per_item == [
            i.tokens for i in pipe.process(request(RGB, GRAY)).items
        ]
        for call in (pipe.process, pipe.count_tokens):
            with pytest.raises(DecodeError) as e:
                call(request(RGB, RGBA))
            err = e.value
            assert (err.item, err.format, err.source_mode) == (1, "PNG", "RGBA")
            assert str(err) == (
                "image 1 (bytes): a PNG image of source mode 'RGBA' is refused: "
                "decode.source_modes accepts only L, RGB"
            )
            assert err.fields == {"format": "PNG", "source_mode": "RGBA"}


def test_the_refusal_comes_before_any_pixel(registry: Registry) -> None:
    """A refused mode is named even for an image whose decode would be refused (over the
    pixel limit): the policy reads the header only."""
    ihdr = struct.pack(">IIBBBBB", 70000, 1, 8, 6, 0, 0, 0)  # past max_image_side
    big = (
        b"\x89PNG\r\n\x1a\n"
        + corpus.png_chunk(b"IHDR", ihdr)
        + corpus.png_chunk(b"IDAT", zlib.compress(bytes(1 + 4 * 70000)))
        + corpus.png_chunk(b"IEND", b"")
    )
    spec = {"family": "toy", "decode": {"source_modes": ["RGB"]}}
    with pipeline_from_spec(spec, registry=registry) as pipe:
        with pytest.raises(DecodeError, match="'RGBA' is refused"):
            pipe.process(request(big))
    with pipeline_from_spec({"family": "toy"}, registry=registry) as pipe:
        with pytest.raises(LimitError):  # what the decode says of it without the policy
            pipe.process(request(big))


def test_a_family_default_by_params_with_its_reason(picky: Registry) -> None:
    with pipeline_from_spec({"family": "picky", "params": {"patch": 4}}, registry=picky) as pipe:
        assert pipe.spec.spec.decode.source_modes == ("L", "RGB")
        pipe.process(request(GRAY))
        with pytest.raises(DecodeError, match=r"accepts only L, RGB \(toy reasons\)$"):
            pipe.count_tokens(request(RGBA))
    # Other params: the class defaults, every image accepted.
    with pipeline_from_spec({"family": "picky", "params": {"patch": 8}}, registry=picky) as pipe:
        assert pipe.spec.spec.decode.source_modes is None
        pipe.process(request(RGBA))
    # The spec's own list wins, without the family's reason.
    spec = {"family": "picky", "params": {"patch": 4}, "decode": {"source_modes": ["RGBA"]}}
    with pipeline_from_spec(spec, registry=picky) as pipe:
        pipe.process(request(RGBA))
        with pytest.raises(DecodeError, match=r"accepts only RGBA$"):
            pipe.process(request(RGB))


def test_the_spec_field_is_checked_and_canonical(registry: Registry) -> None:
    for bad, msg in (([], "lists no mode"), (["RGBX"], "unknown source mode 'RGBX'")):
        with pytest.raises(SpecError, match=msg):
            load_spec({"family": "toy", "decode": {"source_modes": bad}}, registry=registry)
    a = load_spec(
        {"family": "toy", "decode": {"source_modes": ["RGB", "L", "L"]}}, registry=registry
    )
    b = load_spec({"family": "toy", "decode": {"source_modes": ["L", "RGB"]}}, registry=registry)
    assert a.spec.decode.source_modes == ("L", "RGB") and a.fingerprint == b.fingerprint
    c = load_spec({"family": "toy"}, registry=registry)
    assert c.spec.decode.source_modes is None and c.fingerprint != a.fingerprint
    with pytest.raises(ValueError, match="unknown source mode"):
        DecodeDefaults(source_modes=("RGB", "CMYKA"))
