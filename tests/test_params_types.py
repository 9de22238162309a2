"""The shared params field types: the rule and its message, once for every family."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sglang_mm_core.plugin import ChannelMean, ChannelStd, FamilyParams


class Norm(FamilyParams):
    image_mean: ChannelMean = (0.5, 0.5, 0.5)
    image_std: ChannelStd = (0.5, 0.5, 0.5)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"image_mean": (0.1, float("nan"), 0.1)}, "image_mean[1] is nan; values must be finite"),
        ({"image_std": (float("inf"), 1, 1)}, "image_std[0] is inf; values must be finite"),
        (
            {"image_std": (0.5, 0.5, 0)},
            "image_std[2] is 0.0; a standard deviation must not be zero",
        ),
    ],
)
def test_refused_with_the_field_and_channel_named(fields: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Norm(**fields)


def test_valid_values_pass_unchanged() -> None:
    p = Norm(image_mean=(0.1, 0.2, 0.3), image_std=(1.0, -2.0, 3.0))
    assert p.image_mean == (0.1, 0.2, 0.3) and p.image_std == (1.0, -2.0, 3.0)
