"""Spec-time rules of the params: each bad value is refused when the spec loads, named."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError
from sglang_mm_pixtral import MISTRAL3, PixtralFamily, PixtralParams


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ({"patch_size": 0}, "patch_size"),
        ({"spatial_merge_size": 0}, "spatial_merge_size"),
        ({"longest_edge": 0}, "longest_edge"),
        ({"longest_edge": 70000}, "above the kernel"),
        ({"image_std": (1.0, 0.0, 1.0)}, "channel 1 is zero"),
        ({"image_mean": (float("nan"), 0.0, 0.0)}, "not finite"),
        ({"image_break_token_id": 10}, "differ"),
        ({"resample": "bilinear"}, "resample"),
        ({"do_pad": True}, "do_pad"),
    ],
)
def test_bad_params_are_refused(bad: dict[str, object], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        PixtralParams(**bad)


def test_published_values() -> None:
    p = PixtralParams()
    assert (p.patch_size, p.spatial_merge_size, p.longest_edge, p.factor) == (16, 1, 1024, 16)
    m = PixtralParams(**MISTRAL3)
    assert (m.patch_size, m.spatial_merge_size, m.longest_edge, m.factor) == (14, 2, 1540, 28)
    assert m.max_side == 1540


def test_normalize_table_is_the_feature() -> None:
    """Every feature value is ``table[c][byte]`` of the resized uint8 image, so a compact
    (uint8 + table) form is exact. Checked on an image that needs no resize."""
    for resample in ("pil", "aten_u8"):
        fam = PixtralFamily(PixtralParams(resample=resample))
        table = fam.normalize_table()
        assert table.shape == (3, 256) and table.dtype == np.float32
        img = np.arange(32 * 16 * 3, dtype=np.uint8).reshape(16, 32, 3)
        feat = fam.process_item(img).feature.array
        for c in range(3):
            np.testing.assert_array_equal(
                feat[c].view(np.uint32), table[c][img[..., c]].view(np.uint32)
            )
