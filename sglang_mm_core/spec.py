"""The spec document (design.md section 5): pydantic models, validated as a whole before any
request is served. The family's own ``params`` are validated by its ``Params`` model."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Limits(_Strict):
    """Per-request budgets; over any of them the request fails with a `LimitError`."""

    max_items: int = Field(64, ge=0, description="Most media sources in one request.")
    max_total_bytes: int = Field(
        1_342_177_280, gt=0, description="Most encoded bytes over all sources of one request."
    )
    max_stream_bytes: int = Field(
        67_108_864, gt=0, description="Most bytes of one file or HTTP stream."
    )
    max_image_pixels: int = Field(
        178_956_970, gt=0, description="Most pixels of one decoded image (Pillow's bomb limit)."
    )
    max_image_side: int = Field(65_535, gt=0, description="Longest side of one decoded image.")


class DecodeOptions(_Strict):
    """Colour and orientation handling; a field left out takes the family's default."""

    alpha: Literal["white", "drop"] | None = None
    exif_orientation: bool | None = None


class FetchPolicy(_Strict):
    """Which sources may be fetched, and how long a download may take."""

    timeout_s: float | None = Field(
        None, gt=0, description="Whole-download timeout; else $REQUEST_TIMEOUT, else 3 s."
    )
    allow_file: bool = True
    file_root: str | None = None
    allowed_domains: list[str] | None = None
    allow_private_networks: bool = True
