"""The row-break expansion against HF's ``PixtralProcessor`` (run on a tokenizer built here
from the real special ids): ids, each item's offsets spanning its whole sequence, the content
mask of ``[IMG]`` tokens, header-only counts, and placeholder mismatches."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
from _pixtral_refs import IMG, IMG_BREAK, IMG_END, MODELS, TEXT, gradient, hf_processor, noise
from PIL import Image
from sglang_mm_pixtral import PixtralFamily, PixtralParams, content_mask, row_break_ids

from sglang_mm_core import MmInput, Registry, pipeline_from_spec
from sglang_mm_core.plugin import LayoutError

PROMPT = "<s> [INST] hello [IMG] world [IMG] [IMG] hello [/INST]"
SIZES = [(40, 20), (17, 33), (1, 1), (1300, 77), (640, 480), (2, 1600)]


def _words(text: str) -> list[int]:
    vocab = {**TEXT, "[IMG]": IMG}
    return [vocab[w] for w in text.split()]


def _png(im: Image.Image) -> bytes:
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def _hf(model: str, images: list[Image.Image], prompt: str = PROMPT):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = hf_processor(*MODELS[model])(text=[prompt], images=images, return_tensors="np")
    return np.asarray(out["input_ids"][0], dtype=np.int64), np.asarray(out["image_sizes"])


def _ours(model: str, images: list[Image.Image], prompt: str = PROMPT):
    fam = PixtralFamily(PixtralParams(**MODELS[model][0]))
    items = [fam.process_item(np.asarray(im)) for im in images]
    ids = np.asarray(_words(prompt), dtype=np.int64)
    return fam, items, fam.expand(ids, [it.plan for it in items])


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("start", [0, 3])
def test_expansion_matches_pixtral_processor(model: str, start: int) -> None:
    images = [noise(w, h, seed=i) for i, (w, h) in enumerate(SIZES[start : start + 3], start=start)]
    ref_ids, ref_sizes = _hf(model, images)
    fam, items, ex = _ours(model, images)
    np.testing.assert_array_equal(ex.input_ids, ref_ids)
    np.testing.assert_array_equal(
        np.stack([it.aux["image_sizes"].array for it in items]), ref_sizes
    )
    # Offsets: each image's whole sequence, from its first [IMG] to its [IMG_END].
    starts = np.flatnonzero((ref_ids == IMG) & ~np.isin(np.roll(ref_ids, 1), [IMG, IMG_BREAK]))
    ends = np.flatnonzero(ref_ids == IMG_END)
    assert ex.offsets == list(zip(starts.tolist(), ends.tolist(), strict=True))
    # The mask marks exactly the tokens the model fills (Mistral3 / Llava: ids == [IMG]).
    mask = content_mask(ex.input_ids, ex.offsets, IMG)
    np.testing.assert_array_equal(mask, ref_ids == IMG)
    for (a, b), it in zip(ex.offsets, items, strict=True):
        span = ref_ids[a : b + 1]
        assert len(span) == it.plan.content
        np.testing.assert_array_equal(it.aux["content_mask"].array, span == IMG)
        rows, cols = it.geometry.grid
        assert int((span == IMG).sum()) == rows * cols
        h, w = it.aux["image_sizes"].array
        assert (rows, cols) == (h // fam.params.factor, w // fam.params.factor)


def test_row_break_rule() -> None:
    assert row_break_ids(1, 1, IMG, IMG_BREAK, IMG_END) == (IMG, IMG_END)
    assert row_break_ids(2, 3, 1, 2, 3) == (1, 1, 1, 2, 1, 1, 1, 3)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_counts_from_headers_agree_with_hf(model: str) -> None:
    """The plan's token count against HF's ``_get_num_multimodal_tokens`` over sizes around
    the grid and the boundary, and against the real expansion where that helper misreads a
    size: it builds ``np.zeros((h, w, 3))`` and infers channels-first when ``h`` is 1 or 3."""
    fam = PixtralFamily(PixtralParams(**MODELS[model][0]))
    proc = hf_processor(*MODELS[model])
    f, longest = fam.params.factor, fam.params.longest_edge
    sizes = [(2, 2), (f, f), (f + 1, f - 1), (longest, longest), (longest + 1, 5), (5, 2 * longest)]
    hf = proc._get_num_multimodal_tokens(image_sizes=[(h, w) for w, h in sizes])
    assert [fam.plan(w, h).length for w, h in sizes] == hf["num_image_tokens"]
    for w, h in [(longest + 1, 3), (40, 1), (7, 3)]:
        ids, _ = _hf(model, [noise(w, h)], "hello [IMG]")
        assert fam.plan(w, h).length == len(ids) - 1, (w, h)
        helper = proc._get_num_multimodal_tokens(image_sizes=[(h, w)])["num_image_tokens"][0]
        if (w, h) == (longest + 1, 3):
            assert helper != len(ids) - 1  # HF's helper is off here; the expansion is the truth


@pytest.mark.parametrize("model", sorted(MODELS))
def test_pipeline_from_bytes(model: str) -> None:
    """Through the core pipeline from PNG bytes, several sizes in one request: ids and features
    as HF, and the header-only count equals the pipeline's."""
    images = [gradient(300, 200), noise(31, 900, seed=2), noise(2000, 40, seed=3)]
    spec = {"family": "pixtral", "params": PixtralParams(**MODELS[model][0]).model_dump()}
    registry = Registry()
    registry.register_family(PixtralFamily)
    req = MmInput(input_ids=_words(PROMPT), images=[_png(im) for im in images])
    ref_ids, _ = _hf(model, images)
    with pipeline_from_spec(spec, registry=registry) as pipe:
        out = pipe.process(req)
        count = pipe.count_tokens(req)
    np.testing.assert_array_equal(out.input_ids, ref_ids)
    assert count.length == len(ref_ids)
    fam = PixtralFamily(PixtralParams(**MODELS[model][0]))
    for k, im in enumerate(images):
        want = fam.process_item(np.asarray(im)).feature.array
        np.testing.assert_array_equal(out.items[k].feature.array, want)


@pytest.mark.parametrize("n_images", [1, 4])
def test_placeholder_mismatch_is_a_layout_error(n_images: int) -> None:
    fam = PixtralFamily(PixtralParams())
    plans = [fam.process_item(np.asarray(noise(20, 20))).plan] * n_images
    ids = np.asarray(_words(PROMPT), dtype=np.int64)  # three [IMG]
    with pytest.raises(LayoutError, match="3 media placeholder"):
        fam.expand(ids, plans)
    registry = Registry()
    registry.register_family(PixtralFamily)
    with pipeline_from_spec({"family": "pixtral"}, registry=registry) as pipe:
        with pytest.raises(LayoutError):
            pipe.check_prompt(ids, n_images)
