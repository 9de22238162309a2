"""The core's plugin conformance suite, run on the Inkling family with its default params and
with a small patch and no rescale."""

from __future__ import annotations

from sglang_mm_inkling import InklingFamily

from sglang_mm_core.conformance import parametrize_with_checks


@parametrize_with_checks(
    [
        InklingFamily,
        {
            "family": "inkling",
            "params": {"patch_size": 14, "rescale_image_frac": None, "temporal_patch_size": 1},
        },
    ]
)
def test_conformance(target, check) -> None:  # type: ignore[no-untyped-def]
    check(target)
