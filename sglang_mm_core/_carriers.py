"""The values that cross the boundaries: what a family returns per item, what a request brings
and what the pipeline hands back. Plain frozen dataclasses over numpy arrays, so they pickle,
compare and convert (torch, ml_dtypes) without pulling those libraries in.

The ones built on every request get `dict_init`'s ``__init__``, which writes the fields
straight into the instance dict: a few microseconds of GIL time per request."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from ._dict_init import dict_init

if TYPE_CHECKING:
    from ._compact import CompactTensor
    from ._plan import Plan
    from ._positions import MRope, Rope1D

DType = Literal["uint8", "uint16", "int32", "int64", "float32", "bfloat16"]

_NUMPY_FOR: dict[str, np.dtype[Any]] = {
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "float32": np.dtype(np.float32),
    "bfloat16": np.dtype(np.uint16),  # carried as raw bits
}


@dataclass(frozen=True, eq=False, init=False)
class Tensor:
    """A C-contiguous numpy array plus a dtype tag; ``bfloat16`` travels as ``uint16`` bits
    because numpy has no bfloat16 of its own."""

    array: npt.NDArray[Any]
    dtype: DType

    def __init__(self, array: npt.NDArray[Any], dtype: DType) -> None:
        want = _NUMPY_FOR.get(dtype)
        if want is None:
            raise ValueError(f"unknown tensor dtype tag {dtype!r}")
        if array.dtype != want:
            raise ValueError(f"tensor tagged {dtype} must hold {want} values, got {array.dtype}")
        if not array.flags.c_contiguous:
            # A broadcast view (e.g. repeated frames) is allowed only when it says so.
            if not (array.flags.writeable is False and 0 in array.strides):
                raise ValueError("tensor arrays must be C-contiguous")
        d = self.__dict__
        d["array"] = array
        d["dtype"] = dtype

    @classmethod
    def of(cls, array: npt.NDArray[Any], dtype: DType | None = None) -> Tensor:
        return cls(array, dtype or str(array.dtype))  # type: ignore[arg-type]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    def numpy(self) -> npt.NDArray[Any]:
        """The values as numpy; bfloat16 becomes ``ml_dtypes.bfloat16`` (must be installed)."""
        if self.dtype == "bfloat16":
            import ml_dtypes  # type: ignore[import-not-found,import-untyped,unused-ignore]

            return self.array.view(ml_dtypes.bfloat16)  # type: ignore[no-any-return,unused-ignore]
        return self.array

    def torch(self) -> Any:
        """A torch tensor sharing memory (``torch`` must be installed)."""
        import torch  # type: ignore[import-not-found,unused-ignore]

        t = torch.from_numpy(np.ascontiguousarray(self.array))
        return t.view(torch.bfloat16) if self.dtype == "bfloat16" else t

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tensor):
            return NotImplemented
        return self.dtype == other.dtype and np.array_equal(self.array, other.array)

    __hash__ = None  # type: ignore[assignment]


@dict_init
@dataclass(frozen=True)
class Geometry:
    """Where an item's pixels ended up: the resized ``(height, width)``, the family's token
    grid (Qwen: ``(t, gh, gw)`` in patches; Inkling: ``(nph, npw)``) and, for a video, the
    seconds one temporal step of the grid spans (HF's ``second_per_grid_t``; None for an
    image), which time-aware positions read."""

    height: int
    width: int
    grid: tuple[int, ...]
    seconds_per_grid_t: float | None = None


@dict_init
@dataclass(frozen=True, eq=False)
class ProcessedItem:
    """One item after the feature pipeline: the feature the vision tower eats (a
    `CompactTensor` in the compact form), auxiliary tensors (e.g. ``image_grid_thw``), its
    geometry and the `Plan` it was made by (which the layout reads)."""

    feature: Tensor | CompactTensor
    aux: Mapping[str, Tensor]
    geometry: Geometry
    plan: Plan | None = None


Source: TypeAlias = bytes | bytearray | memoryview | str

#: A video source: a `Source`, or a mapping ``{"video": source, "fps": 2.0, ...}`` with its
#: per-video options (`VideoOptions`' names, as qwen-vl-utils names them).
VideoSource: TypeAlias = Source | Mapping[str, Any]


@dataclass(frozen=True)
class MmInput:
    """One request: the prompt's token ids, its image sources (bytes, data: URL, base64, path
    or http(s) URL) and its video sources, each list in the order of its placeholders."""

    input_ids: Sequence[int] | npt.NDArray[np.integer[Any]]
    images: Sequence[Source] = ()
    rid: str | None = None
    videos: Sequence[VideoSource] = ()


@dict_init
@dataclass(frozen=True, eq=False)
class MmItem:
    """One item of the answer, ``modality`` ``"image"`` or ``"video"``;
    ``feature`` is a `CompactTensor` under ``compact=True``; ``tokens`` is the length of its
    offsets."""

    feature: Tensor | CompactTensor
    aux: Mapping[str, Tensor]
    hash: int
    geometry: Geometry
    tokens: int
    modality: str = "image"


@dict_init
@dataclass(frozen=True, eq=False)
class MmOutput:
    """The model-ready result of one request; offsets are inclusive ``(start, end)`` indices
    into ``input_ids``, one pair per item."""

    input_ids: npt.NDArray[np.int64]
    items: list[MmItem]
    offsets: list[tuple[int, int]]
    positions: Rope1D | MRope
    family: str
    spec_fingerprint: str
    rid: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def hashes(self) -> list[int]:
        return [it.hash for it in self.items]


@dataclass(frozen=True)
class TokenCount:
    """What `Pipeline.count_tokens` answers from headers alone: the expanded prompt's length
    and each item's tokens and modality (``"image"`` or ``"video"``), in prompt order."""

    length: int
    per_item: list[int]
    modalities: list[str]


__all__ = [
    "DType",
    "Geometry",
    "MmInput",
    "MmItem",
    "MmOutput",
    "ProcessedItem",
    "Source",
    "Tensor",
    "TokenCount",
    "VideoSource",
]
