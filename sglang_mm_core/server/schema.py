"""The HTTP bodies, as pydantic models: they validate requests and document the API in
``/openapi.json``."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictInt,
    StrictStr,
    Tag,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from .._video_items import VideoOptions

INT64_MAX = 2**63 - 1
# Strict: a JSON ``true``, ``"5"`` or ``7.0`` is not a token id.
TokenId = Annotated[StrictInt, Field(ge=0, le=INT64_MAX)]
MAX_LISTED = 3  # offending elements named in an error message; the rest are only counted


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def bounded_list_error(what: str, bad: list[tuple[int, Any]], count: int, expected: str) -> str:
    """``what[i]=value`` for the first few offending elements plus how many there are: an
    error message whose size does not grow with the input."""
    shown = ", ".join(f"{what}[{i}]={_short(v)}" for i, v in bad[:MAX_LISTED])
    more = f" and {count - MAX_LISTED} more" if count > MAX_LISTED else ""
    return f"{count} element(s) of {what} are not {expected}: {shown}{more}"


def _first_bad(value: list[Any], ok: Any) -> tuple[list[tuple[int, Any]], int]:
    bad: list[tuple[int, Any]] = []
    count = 0
    for i, x in enumerate(value):
        if not ok(x):
            count += 1
            if len(bad) < MAX_LISTED:
                bad.append((i, x))
    return bad, count


def _is_token_id(x: Any) -> bool:
    return type(x) is int and 0 <= x <= INT64_MAX


def _is_str(x: Any) -> bool:
    return type(x) is str


def _is_video(x: Any) -> bool:
    return type(x) is str or type(x) is dict


def _video_kind(value: Any) -> str:
    """A video is a source string or an element object: its errors name that branch only."""
    return "source" if isinstance(value, str) else "element"


class VideoElement(VideoOptions):
    """A video with its own options, named as qwen-vl-utils' message elements name them;
    those left out follow the family's params."""

    video: StrictStr = Field(
        description="The video's source, in any of the forms an image source takes."
    )


class PreprocessRequest(BaseModel):
    """One request: the prompt's token ids (one placeholder per item, as the family's layout
    expects), its images and its videos, each list in the order of its placeholders."""

    model_config = ConfigDict(extra="forbid")

    rid: str | None = Field(
        None,
        max_length=256,
        description="Request id, echoed in the answer; in embedded mode the key the host "
        "answers by (assigned by the server when absent, unique among requests in flight).",
    )
    # At least one id: the schema states the rule the pipeline applies (an empty prompt is
    # its MmRequestError, a 400, as in process), so the two cannot disagree on [].
    input_ids: list[TokenId] = Field(
        description="Prompt token ids (at least one).", json_schema_extra={"minItems": 1}
    )
    images: list[StrictStr] = Field(
        default_factory=list,
        description="Each an http(s) URL, a data: URL, bare base64 or, when the fetch policy "
        "allows it, a file path or file:// URL.",
    )
    videos: list[
        Annotated[
            Annotated[StrictStr, Tag("source")] | Annotated[VideoElement, Tag("element")],
            Discriminator(_video_kind),
        ]
    ] = Field(
        default_factory=list,
        description="Each a source (the forms images take) or an object holding the source "
        'under "video" with per-video options (fps, nframes, min_frames, max_frames, '
        "min_pixels, max_pixels, total_pixels, video_start, video_end, resized_height, "
        "resized_width), for families that take videos.",
    )

    def video_sources(self) -> list[str | dict[str, Any]]:
        """The videos as `MmInput` takes them: a source, or a mapping of the source and the
        options given."""
        return [v if isinstance(v, str) else v.model_dump(exclude_none=True) for v in self.videos]

    # The element checks run in Python before pydantic's own, so a list of a million bad
    # elements is one short error, not a million (pydantic builds every one of them).
    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict) and len(data) > len(cls.model_fields) + MAX_LISTED:
            unknown = [k for k in data if k not in cls.model_fields]
            if len(unknown) > MAX_LISTED:
                shown = ", ".join(_short(k) for k in unknown[:MAX_LISTED])
                raise PydanticCustomError(
                    "extra_forbidden",
                    "{count} unknown field(s): {shown} and {more} more",
                    {"count": len(unknown), "shown": shown, "more": len(unknown) - MAX_LISTED},
                )
        return data

    @field_validator("input_ids", mode="wrap")
    @classmethod
    def _strict_ids(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if isinstance(value, list) and value:
            types = set(map(type, value))
            if types != {int} or min(value) < 0 or max(value) > INT64_MAX:
                bad, count = _first_bad(value, _is_token_id)
                if count > 1:
                    text = bounded_list_error("input_ids", bad, count, "integers in 0..2**63-1")
                    raise PydanticCustomError("token_ids", "{text}", {"text": text})
        return handler(value)

    @field_validator("images", mode="wrap")
    @classmethod
    def _strict_images(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if isinstance(value, list) and value and set(map(type, value)) != {str}:
            bad, count = _first_bad(value, _is_str)
            if count > 1:
                text = bounded_list_error("images", bad, count, "strings")
                raise PydanticCustomError("images", "{text}", {"text": text})
        return handler(value)

    @field_validator("videos", mode="wrap")
    @classmethod
    def _strict_videos(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if isinstance(value, list) and value and not set(map(type, value)) <= {str, dict}:
            bad, count = _first_bad(value, _is_video)
            if count > 1:
                text = bounded_list_error("videos", bad, count, "strings or objects")
                raise PydanticCustomError("videos", "{text}", {"text": text})
        return handler(value)


class ErrorDetail(BaseModel):
    type: str = Field(description="Error class: FetchError, LimitError, QueueFull, ...")
    message: str
    item: int | None = Field(
        None, description="Index of the item concerned in the request's list of its modality."
    )
    modality: str | None = Field(
        None, description='"image" or "video": the list item indexes (null without an item).'
    )
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
    per_item: list[int] = Field(description="Tokens each item takes, in prompt order.")
    modalities: list[str] = Field(description='Each item\'s modality: "image" or "video".')


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
    "VideoElement",
]
