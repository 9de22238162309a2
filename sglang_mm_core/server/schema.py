"""The HTTP bodies, as pydantic models: they validate requests and document the API in
``/openapi.json``."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

INT64_MAX = 2**63 - 1
TokenId = Annotated[int, Field(ge=0, le=INT64_MAX)]


class PreprocessRequest(BaseModel):
    """One request: the prompt's token ids (one placeholder per image, as the family's layout
    expects) and its images in placeholder order."""

    model_config = ConfigDict(extra="forbid")

    rid: str | None = Field(
        None,
        max_length=256,
        description="Request id, echoed in the answer; in embedded mode the key the host "
        "answers by (assigned by the server when absent, unique among requests in flight).",
    )
    input_ids: list[TokenId] = Field(description="Prompt token ids.")
    images: list[str] = Field(
        default_factory=list,
        description="Each an http(s) URL, a data: URL, bare base64 or, when the fetch policy "
        "allows it, a file path or file:// URL.",
    )


class ErrorDetail(BaseModel):
    type: str = Field(description="Error class: FetchError, LimitError, QueueFull, ...")
    message: str
    item: int | None = Field(None, description="Index of the image concerned, if any.")
    fields: dict[str, str | int | bool] | None = Field(
        None,
        description="Structured fields of the error, when it has any: LimitError's limit, "
        "limit_value and value; DecodeError's format and unsupported.",
    )


class ErrorBody(BaseModel):
    error: ErrorDetail


class TokensAnswer(BaseModel):
    rid: str | None
    length: int = Field(description="Length of the expanded input_ids.")
    per_item: list[int] = Field(description="Tokens each image takes.")


class FamilyEntry(BaseModel):
    name: str
    distribution: str
    version: str


class FamiliesAnswer(BaseModel):
    serving: str = Field(description="The family this server's spec uses.")
    spec_fingerprint: str
    installed: list[FamilyEntry]


class HealthAnswer(BaseModel):
    status: str
    family: str
    spec_fingerprint: str
    workers: int


__all__ = [
    "ErrorBody",
    "ErrorDetail",
    "FamiliesAnswer",
    "FamilyEntry",
    "HealthAnswer",
    "PreprocessRequest",
    "TokensAnswer",
]
