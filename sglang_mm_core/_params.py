"""Field types that several families' ``Params`` share, so a rule and its message live once."""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import AfterValidator, ValidationInfo

Triple = tuple[float, float, float]


def _finite(v: Triple, info: ValidationInfo) -> Triple:
    for c, x in enumerate(v):
        if not math.isfinite(x):
            raise ValueError(f"{info.field_name}[{c}] is {x}; values must be finite")
    return v


def _nonzero(v: Triple, info: ValidationInfo) -> Triple:
    for c, x in enumerate(v):
        if x == 0:
            raise ValueError(
                f"{info.field_name}[{c}] is {x}; a standard deviation must not be zero"
            )
    return v


#: A per-channel normalisation mean: three finite floats.
ChannelMean = Annotated[Triple, AfterValidator(_finite)]
#: A per-channel normalisation std: three finite, non-zero floats.
ChannelStd = Annotated[Triple, AfterValidator(_finite), AfterValidator(_nonzero)]

__all__ = ["ChannelMean", "ChannelStd"]
