"""Kimi K3 (``generation: "k3"``) against its checkpoint's processor (moonshotai/Kimi-K3's
``media_utils.py`` and image processor), restated step for step in _kimi_refs.py with the same
Pillow and numpy calls (``k3_checkpoint``), live:

- pixels and grids by their float32 bits on the corpus (photos, mosaics, NaViT edge sizes,
  images whose first plan has too many tokens for ``max_output_tokens``) and on encoded files
  through the pipeline (JPEG, WebP, grey JPEG and PNG, an RGB PNG with tRNS, a JPEG whose EXIF
  says rotate, which K3 does not);
- every source mode K3 treats apart from K2.5's path refused by the core's
  ``decode.source_modes`` with the mode named, in ``process`` and ``count_tokens``; for each,
  the restatement shows why: K3's answer on the image as Pillow opened it differs from its
  answer on the image converted to RGB first (what the core decodes);
- the ids and offsets against the restated prompt text (``make_image_prompt``, expanded as
  SGLang's Kimi K3 processor does) tokenized by a tokenizer built here;
- ``count_tokens`` against the pipeline."""

from __future__ import annotations

import functools
import io
import warnings
from typing import Any

import numpy as np
import pytest
from _kimi_corpus import IMAGES, make_input
from _kimi_refs import (
    K3_CFG,
    K3_TOKENIZER_JSON,
    as_bits,
    hf_tokenizer,
    k3_checkpoint,
    k3_expanded_text,
    tokenizer_object,
)
from PIL import Image
from sglang_mm_kimi import KimiFamily, KimiParams

import sglang_mm_core as mm
from sglang_mm_core.common import image_source_mode
from sglang_mm_core.conformance import process_item_and_compact

BG = K3_CFG["transparent_bg_config"]
#: moonshotai/Kimi-K3's settings as params (what spec_from_hf writes for its checkpoint).
K3 = {
    "generation": "k3",
    "max_patches": 65536,
    "tokenizer": str(K3_TOKENIZER_JSON),
    "transparent_bg_config": BG,
    "transparent_bg_fill_stage": "after_resize",
}
#: A small budget, so that the test images (300x200) are resized.
SMALL = {"max_patches": 64}


def spec(**params: Any) -> dict[str, Any]:
    return {"family": "kimi", "params": {**K3, **params}}


def ckpt_cfg(params: dict[str, Any]) -> dict[str, Any]:
    """Our params as the checkpoint's media_proc_cfg overrides."""
    out: dict[str, Any] = {}
    names = {"max_patches": "in_patch_limit", "merge_size": "merge_kernel_size"}
    for key in ("max_patches", "merge_size", "transparent_bg_config", "transparent_bg_fill_stage"):
        if key in params:
            out[names.get(key, key)] = params[key]
    if "size" in params:
        out["patch_limit_on_one_side"] = params["size"]["max_height"]
    return out


# --------------------------------------------------------------------------- geometry


# (id, source, params): the first plan of each "loop" case exceeds max_output_tokens.
CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("astronaut", {"photo": "astronaut.jpg"}, {}),
    ("chelsea", {"photo": "chelsea.png"}, {}),
    ("coffee", {"photo": "coffee.webp"}, {}),
    ("mosaic-4032x3024", {"mosaic": ["coffee.webp", 4032, 3024]}, {}),
    ("1x1", {"noise": [1, 1, 1]}, {}),
    ("27x29", {"noise": [27, 29, 2]}, {}),
    ("3584x3584-exact", {"noise": [3584, 3584, 3]}, {}),
    ("loop-3600x3600", {"noise": [3600, 3600, 4]}, {}),
    ("loop-5000x4000", {"mosaic": ["astronaut.jpg", 5000, 4000]}, {}),
    ("7168x20", {"noise": [7168, 20, 5]}, {}),
    ("7169x20-side-cap", {"noise": [7169, 20, 6]}, {}),
    ("20000x1", {"noise": [20000, 1, 7]}, {}),
    ("loop-small-300x200", {"mosaic": ["chelsea.png", 300, 200]}, SMALL),
    ("loop-small-113x250", {"noise": [113, 250, 8]}, SMALL),
    ("loop-small-250x57", {"noise": [250, 57, 9]}, {"max_patches": 40}),
    ("small-28x28", {"noise": [28, 28, 10]}, {"max_patches": 4}),
    ("side-256", {"noise": [8000, 500, 11]}, {"size": {"max_height": 256, "max_width": 256}}),
]
LOOPS = [c for c in CASES if c[0].startswith("loop")]


@pytest.mark.parametrize("case", LOOPS, ids=[c[0] for c in LOOPS])
def test_the_loop_cases_need_the_loop(case: tuple[str, dict[str, Any], dict[str, Any]]) -> None:
    """Each "loop" case's first plan is over max_output_tokens, so K2.5's plan differs."""
    _, source, params = case
    arr = make_input(source)
    h, w = arr.shape[:2]
    budget = params.get("max_patches", 65536)
    # K2.5's plan under the same budget is the loop's first round.
    first = KimiFamily({"max_patches": budget}).plan(w, h)
    assert first.content > budget // 4
    assert first.geometry != KimiFamily({**K3, **params}).plan(w, h).geometry


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_corpus(case: tuple[str, dict[str, Any], dict[str, Any]]) -> None:
    _, source, params = case
    arr = make_input(source)
    want, grid, n, _ = k3_checkpoint(Image.fromarray(arr), **ckpt_cfg(params))
    fam = KimiFamily({**K3, **params})
    item = process_item_and_compact(fam, arr, threads=2)
    np.testing.assert_array_equal(as_bits(item.feature.array), as_bits(want))
    assert item.aux["image_grid_thw"].array.tolist() == [grid]
    assert item.plan.content == n


# --------------------------------------------------------------------------- sources

W, H = 300, 200


def _enc(image: Image.Image, fmt: str = "PNG", **kw: Any) -> bytes:
    buf = io.BytesIO()
    image.save(buf, fmt, **kw)
    return buf.getvalue()


@functools.cache
def sources() -> dict[str, bytes]:
    """Encoded test files, named by their source mode label then what they are."""
    rgb = make_input({"mosaic": ["chelsea.png", W, H]})
    gray = Image.fromarray(rgb).convert("L")
    ramp = (np.arange(W)[None, :].repeat(H, 0) * 255 // (W - 1)).astype(np.uint8)
    deep = np.random.default_rng(3).integers(0, 600, (H, W), dtype=np.uint16)
    pal = Image.fromarray(rgb).convert("P")
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90: K3 opens the image as stored
    big = make_input({"mosaic": ["coffee.webp", 2600, 1900]})
    return {
        "RGB.jpg": (IMAGES / "astronaut.jpg").read_bytes(),
        "RGB.png": (IMAGES / "chelsea.png").read_bytes(),
        "RGB.webp": (IMAGES / "coffee.webp").read_bytes(),
        "RGB-big.jpg": _enc(Image.fromarray(big), "JPEG", quality=90),
        "RGB-exif-rotated.jpg": _enc(Image.fromarray(rgb), "JPEG", exif=exif),
        "RGB-mosaic.png": _enc(Image.fromarray(rgb)),
        "RGB+transparency.png": _enc(
            Image.fromarray(rgb), transparency=tuple(int(v) for v in rgb[3, 3])
        ),
        "L.jpg": _enc(gray, "JPEG", quality=90),
        "L.png": _enc(gray),
        "L+transparency.png": _enc(gray, transparency=int(np.asarray(gray)[5, 5])),
        "RGBA.png": _enc(Image.fromarray(np.dstack([rgb, ramp]))),
        "RGBA.webp": _enc(Image.fromarray(np.dstack([rgb, ramp])), "WEBP", quality=90),
        "LA.png": _enc(Image.merge("LA", [gray, Image.fromarray(ramp)])),
        "P.png": _enc(pal),
        "P.gif": _enc(pal, "GIF"),
        "P.bmp": _enc(pal, "BMP"),
        "P+transparency.png": _enc(pal, transparency=int(np.asarray(pal)[5, 5])),
        "1.png": _enc(gray.convert("1")),
        "1+transparency.png": _enc(gray.convert("1"), transparency=0),
        "I;16.png": _enc(Image.fromarray(deep)),
        "I;16+transparency.png": _enc(Image.fromarray(deep), transparency=100),
        "CMYK.jpg": _enc(Image.fromarray(rgb).convert("CMYK"), "JPEG", quality=90),
    }


def label(name: str) -> str:
    return name.rsplit(".", 1)[0].split("-")[0]


def test_the_sources_open_in_the_modes_they_are_named_for() -> None:
    for name, data in sources().items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(io.BytesIO(data)) as im:
                im.load()
                pillow = im.mode + ("+transparency" if "transparency" in im.info else "")
        assert image_source_mode(data).label == pillow == label(name), name


def request(fam: KimiFamily, *images: bytes) -> mm.MmInput:
    return mm.MmInput(input_ids=fam.example_prompt(len(images)), images=list(images))


def k3_on_rgb(data: bytes, cfg: dict[str, Any]) -> tuple[np.ndarray, list[int], int, Any]:
    """K3's answer for the image converted to RGB first: what the core decodes and the
    pipeline processes (K2.5's path), on K3's geometry."""
    with Image.open(io.BytesIO(data)) as im:
        rgb = im.convert("RGB")
    return k3_checkpoint(rgb, **cfg)


# (stage, transparent_bg_config): the source modes each serves.
SETTINGS = {
    "after_resize": (("after_resize", BG), {"RGB", "RGB+transparency", "L"}),
    "after_resize-no-bg": (
        ("after_resize", None),
        {"RGB", "RGB+transparency", "L", "L+transparency"},
    ),
    "before_resize": (
        ("before_resize", BG),
        {"RGB", "RGB+transparency", "L", "P", "1", "I;16", "CMYK"},
    ),
    "before_resize-no-bg": (("before_resize", None), set(mm.plugin.SOURCE_MODES)),
}


def settings(which: str, **params: Any) -> dict[str, Any]:
    (stage, bg), _ = SETTINGS[which]
    return {"transparent_bg_fill_stage": stage, "transparent_bg_config": bg, **params}


@pytest.mark.parametrize("which", sorted(SETTINGS))
@pytest.mark.parametrize("budget", [{}, SMALL], ids=["k3-budget", "resized"])
def test_every_source_served_or_refused(which: str, budget: dict[str, Any]) -> None:
    """Served sources equal the checkpoint on the image as Pillow opened it (bits, grid,
    ids, count); refused ones raise a DecodeError naming their mode in process and in
    count_tokens, and (when resized) the checkpoint's answer on them differs from its answer
    on the RGB image the core would decode."""
    params = settings(which, **budget)
    cfg = ckpt_cfg(params)
    _, served = SETTINGS[which]
    with mm.pipeline_from_spec(spec(**params)) as pipe:
        fam = pipe.family
        assert isinstance(fam, KimiFamily)
        for name, data in sources().items():
            req = request(fam, data)
            if label(name) in served:
                want, grid, n, _ = k3_checkpoint(data, **cfg)
                out = pipe.process(req)
                (item,) = out.items
                np.testing.assert_array_equal(
                    as_bits(item.feature.array), as_bits(want), err_msg=name
                )
                assert item.aux["image_grid_thw"].array.tolist() == [grid], name
                assert item.tokens == n
                assert pipe.count_tokens(req).length == len(out.input_ids)
                continue
            for call in (pipe.process, pipe.count_tokens):
                with pytest.raises(mm.DecodeError, match="Kimi K3") as e:
                    call(req)
                assert e.value.source_mode == label(name), name
            if budget:
                want = k3_checkpoint(data, **cfg)[0]
                ours = k3_on_rgb(data, cfg)[0]
                assert want.shape != ours.shape or not np.array_equal(want, ours), name


def test_grey_resized_in_its_mode_is_the_rgb_resize() -> None:
    """Why L is served under after_resize: Pillow's bicubic resize of L, then convert("RGB"),
    equals convert("RGB") then the RGB resize, on every size the corpus takes it to."""
    gray = Image.fromarray(make_input({"photo": "astronaut.jpg"})).convert("L")
    noise = Image.fromarray(make_input({"noise": [97, 61, 3]})[:, :, 0])
    for im in (gray, noise):
        for size in ((1, 1), (13, 7), (256, 255), (333, 91), (5, 400)):
            a = np.asarray(im.resize(size, Image.Resampling.BICUBIC).convert("RGB"))
            b = np.asarray(im.convert("RGB").resize(size, Image.Resampling.BICUBIC))
            np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------- prompt


def test_ids_and_offsets_against_the_checkpoint_prompt() -> None:
    """Each <|media_pad|> of the prompt becomes the checkpoint's make_image_prompt(W, H) with
    its pad repeated, as SGLang's Kimi K3 processor expands it; the size is the one the image
    was opened at (the EXIF rotation is not applied)."""
    names = ["RGB.jpg", "RGB-exif-rotated.jpg", "L.png", "RGB-big.jpg"]
    datas = [sources()[n] for n in names]
    text = (
        "<|im_user|>user<|im_middle|>Describe <|media_pad|> and <|media_pad|>"
        " and <|media_pad|> and <|media_pad|><|im_end|><|im_assistant|>assistant"
    )
    tok = hf_tokenizer(k3=True)
    prompt = tok(text, add_special_tokens=False)["input_ids"]
    with mm.pipeline_from_spec(spec()) as pipe:
        out = pipe.process(mm.MmInput(input_ids=prompt, images=datas))
        count = pipe.count_tokens(mm.MmInput(input_ids=prompt, images=datas))
    refs = [k3_checkpoint(d) for d in datas]
    expanded = k3_expanded_text(text, [(size, n) for _, _, n, size in refs])
    want = tok(expanded, add_special_tokens=False)["input_ids"]
    assert out.input_ids.tolist() == want
    pad = tokenizer_object(k3=True).token_to_id("<|media_pad|>")
    runs = [i for i, t in enumerate(want) if t == pad]
    starts = [i for i in runs if i - 1 not in runs]
    assert [s for s, _ in out.offsets] == starts
    assert [e - s + 1 for s, e in out.offsets] == [n for _, _, n, _ in refs]
    assert count.length == len(want) and count.per_item == [n for _, _, n, _ in refs]
    # The rotated JPEG's text is its stored size, W before H.
    assert refs[1][3] == (W, H) and f"image {W}x{H}" in expanded


# --------------------------------------------------------------------------- params


def test_k3_rules() -> None:
    base = {"generation": "k3", "tokenizer": str(K3_TOKENIZER_JSON)}
    KimiParams.model_validate(base)
    for bad, msg in (
        ({"resample": "aten_u8"}, "transformers has no Kimi K3 class"),
        ({"tokenizer": None}, "set tokenizer"),
        ({"max_patches": 3}, "under one token"),
        ({"video_token_id": 163700}, "images only"),
    ):
        with pytest.raises(ValueError, match=msg):
            KimiParams.model_validate({**base, **bad})
    with pytest.raises(ValueError, match="set generation 'k3'"):
        KimiParams.model_validate({"transparent_bg_fill_stage": "after_resize"})
    with pytest.raises(ValueError, match="set generation 'k3'"):
        KimiParams.model_validate({"transparent_bg_config": {}})


def test_videos_are_refused_under_k3() -> None:
    with mm.pipeline_from_spec(spec()) as pipe:
        with pytest.raises(mm.UnsupportedModalityError, match="Kimi K3 takes images only"):
            pipe.process(mm.MmInput(input_ids=[1, 163605, 2], videos=[b"\x00" * 16]))
