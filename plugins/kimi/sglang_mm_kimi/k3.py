"""What Kimi K3's checkpoint processor (moonshotai/Kimi-K3: ``media_utils.py`` and its image
processor) does differently from K2.5's, restated for the family:

- **the images it serves bit for bit**. K3 keeps the image in the mode Pillow opened it in.
  ``fill_transparent_bg_with`` then keeps an RGB image as it is (a tRNS colour ignored),
  converts an image without alpha to RGB, and composites one with alpha (an ``"A"`` band or a
  transparency entry) onto its background in numpy float32, truncated. It does so at
  ``transparent_bg_fill_stage``: before or after the bicubic resize. Where the result equals
  the K2.5 path the core runs (``convert("RGB")``, then the RGB resize), the source is served;
  every other source mode is refused by the core's ``decode.source_modes`` before it is
  decoded (`source_modes`);
- **its prompt**: each ``<|media_pad|>`` becomes ``<|media_begin|>`` ``image WxH`` (the
  size the image was opened at, tokenized by the model's tokenizer) ``<|media_content|>``,
  one ``<|media_pad|>`` per token, ``<|media_end|>`` (`image_ids`), as SGLang's Kimi K3
  processor expands it and as the checkpoint's ``make_image_prompt`` writes it."""

from __future__ import annotations

from sglang_mm_core import plugin as mm

from .params import KimiParams

#: Sources whose bicubic resize in their own mode, then ``convert("RGB")``, equals
#: ``convert("RGB")`` then the RGB resize: RGB (nothing converts; a tRNS colour is ignored by
#: both) and 8-bit grey (the resize works on each band alike; tested on the corpus).
_AFTER_RESIZE = ("RGB", "RGB+transparency", "L")
_AFTER_RESIZE_WHY = (
    "Kimi K3 resizes in the source's mode and composites transparency after the resize; this "
    "mode does not reproduce that: only RGB and 8-bit grey sources resize as RGB does"
)
_BEFORE_RESIZE_WHY = (
    "Kimi K3 composites a source with alpha or a transparency entry onto its background in "
    "numpy float32 before the resize; this mode does not reproduce that blend"
)


def source_modes(p: KimiParams) -> tuple[tuple[str, ...] | None, str | None]:
    """``(accepted source modes, why the others are refused)`` of a Kimi K3 spec; ``(None,
    None)`` where every source is served (K3 without compositing, converting at load time:
    K2.5's own path)."""
    composites = p.transparent_bg_config is not None
    if p.transparent_bg_fill_stage == "after_resize":
        # Without a config the image is only converted to RGB after the resize, so a grey
        # source's transparency entry is dropped as K2.5 drops it.
        after: tuple[str, ...] = _AFTER_RESIZE
        return (after if composites else (*after, "L+transparency")), _AFTER_RESIZE_WHY
    if not composites:
        return None, None
    # Composited at load time: every source without alpha is converted to RGB first (an RGB
    # one kept as it is), as K2.5 does.
    before = tuple(
        label
        for label in mm.SOURCE_MODES
        if ("transparency" not in label and "A" not in label) or label == "RGB+transparency"
    )
    return before, _BEFORE_RESIZE_WHY


#: The word before an image's size in its prompt text.
IMAGE_WORD = "image"


def image_text(width: int, height: int) -> str:
    """The checkpoint's ``make_image_prompt`` text between ``<|media_begin|>`` and
    ``<|media_content|>``: ``image WxH`` of the image as opened (no EXIF rotation)."""
    return f"{IMAGE_WORD} {width}x{height}"


def image_ids(
    p: KimiParams, tokenizer: mm.TextTokenizer, width: int, height: int, tokens: int
) -> mm.Explicit:
    """One image's ids: ``<|media_begin|>``, ``image WxH``, ``<|media_content|>``, ``tokens``
    copies of ``<|media_pad|>``, ``<|media_end|>``; the item's offsets span the pads."""
    head = (p.media_begin_token_id, *tokenizer.ids(image_text(width, height)))
    head += (p.media_content_token_id,)
    ids = (*head, *[p.image_token_id] * tokens, p.media_end_token_id)
    return mm.Explicit(ids, content=(len(head), len(head) + tokens))


__all__ = ["IMAGE_WORD", "image_ids", "image_text", "source_modes"]
