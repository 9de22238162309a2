"""The feature pipeline as a family declares it: a per-channel `Table`, a writer (the output
layout) and, when the core composes the feature, a resampler. The pixel work is
``mm_kernels::features`` (through ``_native``); this module turns a family's declaration and
an item's `Plan` into that call, and its output into a `Tensor` or, from the same table, a
`CompactTensor`. The compact form is derived here, once, for every family."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from . import _native
from ._carriers import Tensor
from ._compact import CompactTensor
from .errors import KernelArgumentError

if TYPE_CHECKING:
    from ._plan import Plan

#: Whose rescale-then-normalize arithmetic a table reproduces: ``"numpy"`` (HF's PIL
#: backends: rescale in float64, cast, normalize in float32), ``"torchvision"`` (HF's
#: torchvision backends: rescale folded into mean and std, float32), ``"float32"`` (every
#: step in float32, as torch ops on a float32 tensor).
Arithmetic: TypeAlias = Literal["numpy", "torchvision", "float32"]
#: The HF backend a family matches: its PIL backend or its torchvision backend.
Backend: TypeAlias = Literal["pil", "aten_u8"]
#: A rectangle ``(x, y, width, height)`` in pixels.
Rect: TypeAlias = tuple[int, int, int, int]


def hf_backend(
    backend: str, filter: Literal["bicubic", "bilinear"] = "bicubic"
) -> tuple[str, Arithmetic]:
    """``(resampler, arithmetic)`` of a HuggingFace backend (a family's ``resample`` param,
    ``"pil"`` or ``"aten_u8"``) for the interpolation its processor asks for: the one place
    these names are read (``mm_kernels::features::Backend``, which Rust kernels use too); an
    unknown name is a `KernelArgumentError` naming it."""
    resample, arithmetic = _native.hf_backend(backend, filter)
    return resample, arithmetic  # type: ignore[return-value]


class Table:
    """What each uint8 sample of each channel becomes: ``values[c][v]``, the reference's own
    rescale-then-normalize arithmetic evaluated once per value (so the lookup is bit-exact
    with it), in float32 or rounded to bfloat16 (carried as uint16 bits). ``pad_sample``
    adds a pad value per channel: the arithmetic applied to that out-of-range sample (Inkling
    pads with ``-1``). Built in Rust (``mm_kernels::features::Table``), the same code a
    family's own kernel uses, so both agree.

    Use `Table.hf` for a HuggingFace processor: its backend picks the arithmetic."""

    __slots__ = ("_native", "arithmetic", "dtype", "mean", "pad", "rescale_factor", "std", "values")

    _native: Any
    #: ``[3, 256]`` read-only: float32 values, or bfloat16 bits as uint16.
    values: npt.NDArray[Any]
    #: ``[3]`` read-only pad values (the table's dtype), or None.
    pad: npt.NDArray[Any] | None
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    arithmetic: Arithmetic
    rescale_factor: float
    dtype: Literal["float32", "bfloat16"]

    def __init__(
        self,
        mean: tuple[float, float, float],
        std: tuple[float, float, float],
        *,
        arithmetic: Arithmetic,
        rescale_factor: float = 1 / 255,
        dtype: Literal["float32", "bfloat16"] = "float32",
        pad_sample: int | None = None,
    ) -> None:
        native = _native.FeatureTable(
            tuple(mean), tuple(std), rescale_factor, arithmetic, dtype, pad_sample
        )
        values = _read_only(native.values())
        pad = native.pad()
        object.__setattr__(self, "_native", native)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "pad", None if pad is None else _read_only(pad))
        object.__setattr__(self, "mean", tuple(mean))
        object.__setattr__(self, "std", tuple(std))
        object.__setattr__(self, "arithmetic", arithmetic)
        object.__setattr__(self, "rescale_factor", rescale_factor)
        object.__setattr__(self, "dtype", dtype)

    @classmethod
    def hf(
        cls,
        mean: tuple[float, float, float],
        std: tuple[float, float, float],
        backend: Backend,
        *,
        rescale_factor: float = 1 / 255,
        dtype: Literal["float32", "bfloat16"] = "float32",
    ) -> Table:
        """HF's ``rescale`` then ``normalize`` as the named backend computes them."""
        _, arithmetic = hf_backend(backend)
        return cls(mean, std, arithmetic=arithmetic, rescale_factor=rescale_factor, dtype=dtype)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Table is immutable: cannot set {name!r}")

    def __repr__(self) -> str:
        return (
            f"Table(mean={self.mean}, std={self.std}, arithmetic={self.arithmetic!r}, "
            f"rescale_factor={self.rescale_factor!r}, dtype={self.dtype!r})"
        )


def _read_only(arr: npt.NDArray[Any]) -> npt.NDArray[Any]:
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True)
class Part:
    """One part of an image: the rectangle ``source`` of the decoded image (all of it when
    None) resized to ``size`` ``(width, height)``, of which the rectangle ``crop`` is kept
    (all of it when None), padded to ``pad_to`` ``(width, height)`` (no padding when None):
    on the right and bottom with the table's pad value, or, with ``fill``, on a canvas of
    that RGB colour with the kept pixels' top-left corner at ``at`` ``(x, y)``.

    A canvas is ``PIL.ImageOps.pad``'s letterbox (`Part.on_canvas`); its colour is a sample
    like any pixel (the table's value of it, and itself as a compact code), so the writers
    see no padding, and its image may be empty (a side a contain-fit rounds to 0)."""

    size: tuple[int, int]
    source: Rect | None = None
    crop: Rect | None = None
    pad_to: tuple[int, int] | None = None
    fill: tuple[int, int, int] | None = None
    at: tuple[int, int] = (0, 0)

    @classmethod
    def on_canvas(
        cls,
        size: tuple[int, int],
        canvas: tuple[int, int],
        fill: tuple[int, int, int],
        at: tuple[int, int],
    ) -> Part:
        """The whole image resized to ``size``, pasted at ``at`` on a ``canvas`` of ``fill``."""
        return cls(size, pad_to=canvas, fill=fill, at=at)

    @property
    def extent(self) -> tuple[int, int]:
        """``(width, height)`` the part takes in the output."""
        if self.pad_to is not None:
            return self.pad_to
        if self.crop is not None:
            return self.crop[2], self.crop[3]
        return self.size

    def _native(self) -> tuple[Any, ...]:
        if self.fill is None and self.at != (0, 0):
            raise KernelArgumentError(f"a part placed at {self.at} needs a fill colour")
        fill = None if self.fill is None else (self.fill, self.at)
        return (self.source, self.size, self.crop, self.pad_to, fill)


class Writer:
    """The output layout of a feature; a writer knows the feature's full shape from a plan
    and how its compact form (codes plus the table) expands."""

    #: The name of ``mm_kernels::features::Writer`` it stands for.
    kind: ClassVar[str]

    def shape(self, plan: Plan) -> tuple[int, ...]:
        """The full feature's shape for ``plan``."""
        raise NotImplementedError

    def full(self, values: npt.NDArray[Any], plan: Plan, dtype: str) -> Tensor:
        """The kernel's full output as the feature."""
        return Tensor(values.reshape(self.shape(plan)), dtype)  # type: ignore[arg-type]

    def compact(self, codes: npt.NDArray[np.uint8], plan: Plan, table: Table) -> CompactTensor:
        """The kernel's codes as the compact feature."""
        raise NotImplementedError

    def native(self) -> dict[str, int]:
        return {}

    def video(
        self, frames: Sequence[npt.NDArray[np.uint8]], plan: Plan, table: Table
    ) -> CompactTensor:
        """A video's feature, compact, from each sampled frame's codes (the kernel's codes
        for ``plan``'s one part), in order. Only writers with a time axis lay out videos."""
        raise KernelArgumentError(f"the {type(self).__name__} writer lays out no video")

    def video_sink(self, plan: Plan, table: Table, frames: int) -> VideoSink | None:
        """Where a video's full feature is written frame by frame as frames are coded, so
        the codes of the whole clip are never held (None: the writer has none, and the full
        feature is `video`'s expanded)."""
        return None

    def video_bytes(self, plan: Plan, table: Table, frames: int) -> int | None:
        """Bytes of the full feature `video` lays out for ``frames`` frames (None: unknown,
        for a writer that lays out no video)."""
        return None

    def kernel_size(self, plan: Plan, codes: bool) -> int:
        """Elements a kernel writes for ``plan``: the full shape's (frames a writer repeats
        are written once, where the writer says so)."""
        size = 1
        for d in self.shape(plan):
            size *= d
        return size

    @staticmethod
    def one(plan: Plan) -> Part:
        parts = plan.parts
        if len(parts) != 1:
            raise KernelArgumentError(f"this writer takes one part, the plan has {len(parts)}")
        return parts[0]


@dataclass(frozen=True)
class ChannelPlanes(Writer):
    """One part as three channel planes (CHW): ``[3, H, W]`` (Pixtral, CLIP)."""

    kind: ClassVar[str] = "planes"

    def shape(self, plan: Plan) -> tuple[int, ...]:
        w, h = self.one(plan).extent
        return (3, h, w)

    def compact(self, codes: npt.NDArray[np.uint8], plan: Plan, table: Table) -> CompactTensor:
        _, h, w = shape = self.shape(plan)
        return _compact(codes.reshape(3, 1, h, w), table, shape, 0, 1, 1)


@dataclass(frozen=True)
class Tiles(Writer):
    """Every part cut into ``size x size`` tiles in row-major order, parts in order, each
    three channel planes: ``[tiles, 3, size, size]`` (InternVL's canvas and thumbnail;
    Gemma 3's image and crops, one tile each)."""

    size: int
    kind: ClassVar[str] = "tiles"

    def shape(self, plan: Plan) -> tuple[int, ...]:
        t = self.size
        n = 0
        for part in plan.parts:
            w, h = part.extent
            n += (w // t) * (h // t)
        return (n, 3, t, t)

    def compact(self, codes: npt.NDArray[np.uint8], plan: Plan, table: Table) -> CompactTensor:
        n, _, t, _ = shape = self.shape(plan)
        return _compact(codes.reshape(n, 3, 1, t, t), table, shape, 1, 2, 1)

    def native(self) -> dict[str, int]:
        return {"tile": self.size}


@dataclass(frozen=True)
class PatchRows(Writer):
    """One part as Qwen-VL's ``pixel_values``: ``[gh * gw, 3 * tps * ps * ps]``, patches in
    merge-block order, each still frame repeated ``temporal_patch_size`` times (the compact
    form holds it once)."""

    patch_size: int
    merge_size: int
    temporal_patch_size: int
    kind: ClassVar[str] = "patch_rows"

    def shape(self, plan: Plan) -> tuple[int, ...]:
        w, h = self.one(plan).extent
        ps = self.patch_size
        return ((h // ps) * (w // ps), 3 * self.temporal_patch_size * ps * ps)

    def compact(self, codes: npt.NDArray[np.uint8], plan: Plan, table: Table) -> CompactTensor:
        shape = self.shape(plan)
        ps = self.patch_size
        view = codes.reshape(shape[0], 3, 1, ps, ps)
        return _compact(view, table, shape, 1, 2, self.temporal_patch_size)

    def native(self) -> dict[str, int]:
        return {
            "patch_size": self.patch_size,
            "merge_size": self.merge_size,
            "temporal_patch_size": self.temporal_patch_size,
        }

    def kernel_size(self, plan: Plan, codes: bool) -> int:
        full = super().kernel_size(plan, codes)
        return full // self.temporal_patch_size if codes else full

    def video(
        self, frames: Sequence[npt.NDArray[np.uint8]], plan: Plan, table: Table
    ) -> CompactTensor:
        """``pixel_values_videos``: ``[t * gh * gw, 3 * tps * ps * ps]``, rows by temporal
        group, each row channel-major, then frame in the group, then the patch's pixels (HF's
        video ``patchify``); a frame count that is not a multiple of ``tps`` repeats the last
        frame, as HF does. The codes hold every frame (there is no repeat to share)."""
        if not frames:
            raise KernelArgumentError("a video needs at least one frame")
        rows, width = self.shape(plan)
        tps, pp = self.temporal_patch_size, self.patch_size**2
        per = [f.reshape(rows, 3, pp) for f in frames]
        per += [per[-1]] * (-len(per) % tps)
        groups = len(per) // tps
        codes = np.empty((groups, rows, 3, tps, pp), dtype=np.uint8)
        for g in range(groups):
            for k in range(tps):
                codes[g, :, :, k, :] = per[g * tps + k]
        shape = (groups * rows, width)
        return _compact(codes.reshape(groups * rows, 3, 1, tps * pp), table, shape, 1, 2, 1)

    def video_bytes(self, plan: Plan, table: Table, frames: int) -> int:
        rows, width = self.shape(plan)
        groups = -(-frames // self.temporal_patch_size)
        return groups * rows * width * table.values.dtype.itemsize

    def video_sink(self, plan: Plan, table: Table, frames: int) -> VideoSink:
        """`video`'s layout, expanded through ``table`` as each frame arrives."""
        if frames < 1:
            raise KernelArgumentError("a video needs at least one frame")
        rows, _ = self.shape(plan)
        return _PatchRowsVideo(table, frames, rows, self.temporal_patch_size, self.patch_size**2)


class VideoSink:
    """A video's full feature, allocated once and filled frame by frame: `put` the codes of
    the frame at each position of the sampled sequence, then `finish`."""

    def put(self, position: int, codes: npt.NDArray[np.uint8]) -> None:
        raise NotImplementedError

    def finish(self) -> Tensor:
        raise NotImplementedError


class _PatchRowsVideo(VideoSink):
    """`PatchRows.video` expanded in place: ``[groups, rows, 3, tps, pp]`` values, frame
    ``position`` at group ``position // tps``, slot ``position % tps``."""

    def __init__(self, table: Table, frames: int, rows: int, tps: int, pp: int) -> None:
        self.table, self.frames, self.rows, self.tps, self.pp = table, frames, rows, tps, pp
        groups = -(-frames // tps)
        self.luts = np.ascontiguousarray(table.values)
        self.values = np.empty((groups, rows, 3, tps, pp), dtype=self.luts.dtype)
        self.filled = np.zeros(frames, dtype=bool)

    def put(self, position: int, codes: npt.NDArray[np.uint8]) -> None:
        if not 0 <= position < self.frames:
            raise KernelArgumentError(f"frame position {position} outside 0..{self.frames - 1}")
        frame = np.ascontiguousarray(codes.reshape(self.rows, 3, self.pp))
        g, k = divmod(position, self.tps)
        _native.lut_into_slot(frame, self.luts, self.values[g], k)
        self.filled[position] = True

    def finish(self) -> Tensor:
        if not self.filled.all():
            missing = int(np.flatnonzero(~self.filled)[0])
            raise KernelArgumentError(f"frame position {missing} of the video was never written")
        g, k = divmod(self.frames - 1, self.tps)
        for slot in range(k + 1, self.tps):  # the last frame repeated, as HF does
            self.values[g, :, :, slot, :] = self.values[g, :, :, k, :]
        groups = self.values.shape[0]
        flat = self.values.reshape(groups * self.rows, 3 * self.tps * self.pp)
        return Tensor(flat, self.table.dtype)


@dataclass(frozen=True)
class ChwPatches(Writer):
    """One part cut into ``patch_size`` square patches in row-major order, each three channel
    planes: ``[rows * cols, 3, ps, ps]`` (DeepSeek-V4.1, Kimi K2.5). Qwen's patch rows with
    no merge and no temporal repeat, in the shape a ViT's patch embedding takes. A video is
    its frames' patches one frame after the other: ``[frames * rows * cols, 3, ps, ps]``
    (Kimi K2.5's ``pixel_values_videos``)."""

    patch_size: int
    kind: ClassVar[str] = "patch_rows"

    def shape(self, plan: Plan) -> tuple[int, ...]:
        w, h = self.one(plan).extent
        ps = self.patch_size
        return ((h // ps) * (w // ps), 3, ps, ps)

    def compact(self, codes: npt.NDArray[np.uint8], plan: Plan, table: Table) -> CompactTensor:
        shape = self.shape(plan)
        ps = self.patch_size
        return _compact(codes.reshape(shape[0], 3, 1, ps, ps), table, shape, 1, 2, 1)

    def native(self) -> dict[str, int]:
        return {"patch_size": self.patch_size, "merge_size": 1, "temporal_patch_size": 1}

    def _rows(self) -> PatchRows:
        """The same layout as patch rows of one frame each (no merge, no temporal repeat)."""
        return PatchRows(self.patch_size, 1, 1)

    def video(
        self, frames: Sequence[npt.NDArray[np.uint8]], plan: Plan, table: Table
    ) -> CompactTensor:
        """A video: each sampled frame's patches in turn, ``[n * rows * cols, 3, ps, ps]``."""
        if not frames:
            raise KernelArgumentError("a video needs at least one frame")
        rows = self.shape(plan)[0]
        ps = self.patch_size
        codes = np.stack([f.reshape(rows, 3, 1, ps, ps) for f in frames])
        n = len(frames) * rows
        return _compact(codes.reshape(n, 3, 1, ps, ps), table, (n, 3, ps, ps), 1, 2, 1)

    def video_bytes(self, plan: Plan, table: Table, frames: int) -> int:
        return self._rows().video_bytes(plan, table, frames)

    def video_sink(self, plan: Plan, table: Table, frames: int) -> VideoSink:
        """`video`'s layout, expanded through ``table`` as each frame arrives."""
        return _Reshaped(self._rows().video_sink(plan, table, frames), self.patch_size)


class _Reshaped(VideoSink):
    """A patch-rows sink of one frame per group, its rows seen as ``[n, 3, ps, ps]``."""

    def __init__(self, inner: VideoSink, patch_size: int) -> None:
        self.inner, self.patch_size = inner, patch_size

    def put(self, position: int, codes: npt.NDArray[np.uint8]) -> None:
        self.inner.put(position, codes)

    def finish(self) -> Tensor:
        flat = self.inner.finish()
        ps = self.patch_size
        return Tensor(flat.array.reshape(-1, 3, ps, ps), flat.dtype)


@dataclass(frozen=True)
class HwcPatches(Writer):
    """One part cut into ``patch_size`` square patches, channels last inside each, the
    table's pad value where the part's extent reaches past its pixels: ``[rows * cols,
    temporal_patch_size, ps, ps, 3]`` with the frames one read-only broadcast view (Inkling)."""

    patch_size: int
    temporal_patch_size: int = 1
    kind: ClassVar[str] = "hwc_patches"

    def _grid(self, plan: Plan) -> tuple[int, int]:
        w, h = self.one(plan).extent
        return h // self.patch_size, w // self.patch_size

    def shape(self, plan: Plan) -> tuple[int, ...]:
        rows, cols = self._grid(plan)
        ps = self.patch_size
        return (rows * cols, self.temporal_patch_size, ps, ps, 3)

    def full(self, values: npt.NDArray[Any], plan: Plan, dtype: str) -> Tensor:
        n, tps, ps, _, _ = shape = self.shape(plan)
        one = values.reshape(n, 1, ps, ps, 3)
        frames = one if tps == 1 else np.broadcast_to(one, shape)
        return Tensor(frames, dtype)  # type: ignore[arg-type]

    def compact(self, codes: npt.NDArray[np.uint8], plan: Plan, table: Table) -> CompactTensor:
        rows, cols = self._grid(plan)
        ps = self.patch_size
        part = self.one(plan)
        kw, kh = part.size if part.crop is None else (part.crop[2], part.crop[3])
        padded = part.pad_to is not None and part.pad_to != (kw, kh)
        return _compact(
            codes.reshape(rows, cols, 1, ps, ps, 3),
            table,
            self.shape(plan),
            5,
            2,
            self.temporal_patch_size,
            pad_rules=((0, 3, kh), (1, 4, kw)) if padded else (),
        )

    def native(self) -> dict[str, int]:
        return {"patch_size": self.patch_size}

    def kernel_size(self, plan: Plan, codes: bool) -> int:
        return super().kernel_size(plan, codes) // self.temporal_patch_size  # one frame


@dataclass(frozen=True)
class PatchVectors(Writer):
    """One part cut into ``patch_size`` square patches in row-major order, each flattened to
    one vector with the channels last (``[ps, ps, 3]`` read in order), then zero rows up to
    ``pad_to`` patches: ``[pad_to or rows * cols, ps * ps * 3]`` (Gemma 4's pre-patchified
    ``pixel_values``). The padding is the value 0.0 (not the table's value of a sample); the
    kernel writes the image's patches as `HwcPatches` does, and the rows after them are
    zeros (the core's kernel writes them in place; a family kernel may leave them out). A
    plan with more patches than ``pad_to`` is a `KernelArgumentError`. A video is
    its frames so laid out one after the other: ``[frames, pad_to, ps * ps * 3]`` (Gemma 4's
    ``pixel_values_videos``)."""

    patch_size: int
    pad_to: int | None = None
    kind: ClassVar[str] = "hwc_patches"

    def patches(self, plan: Plan) -> int:
        """The image's own patches (the rows before the padding)."""
        w, h = self.one(plan).extent
        n = (h // self.patch_size) * (w // self.patch_size)
        if self.pad_to is not None and n > self.pad_to:
            raise KernelArgumentError(
                f"a {w}x{h} part has {n} patches of {self.patch_size}, more than pad_to = "
                f"{self.pad_to}"
            )
        return n

    def shape(self, plan: Plan) -> tuple[int, ...]:
        n = self.patches(plan)
        return (n if self.pad_to is None else self.pad_to, self.patch_size**2 * 3)

    def kernel_size(self, plan: Plan, codes: bool) -> int:
        return self.patches(plan) * self.patch_size**2 * 3

    def full(self, values: npt.NDArray[Any], plan: Plan, dtype: str) -> Tensor:
        shape = self.shape(plan)
        n = self.patches(plan)
        if values.size == shape[0] * shape[1]:  # padded by the kernel (or nothing to pad)
            return Tensor(values.reshape(shape), dtype)  # type: ignore[arg-type]
        out = np.zeros(shape, dtype=values.dtype)
        out[:n] = values.reshape(n, shape[1])
        return Tensor(out, dtype)  # type: ignore[arg-type]

    def _image_codes(self, codes: npt.NDArray[np.uint8], plan: Plan) -> npt.NDArray[np.uint8]:
        """The image's own patches of ``codes`` (with or without the kernel's zero rows):
        ``[n, 1, ps * ps, 3]``."""
        n, area = self.patches(plan), self.patch_size**2
        return codes.reshape(-1, 1, area, 3)[:n]

    def compact(self, codes: npt.NDArray[np.uint8], plan: Plan, table: Table) -> CompactTensor:
        shape = self.shape(plan)
        n, area = self.patches(plan), self.patch_size**2
        if codes.size == shape[0] * shape[1]:  # the kernel wrote the zero rows
            view = codes.reshape(shape[0], 1, area, 3)
        else:
            view = np.zeros((shape[0], 1, area, 3), dtype=np.uint8)
            view[:n] = self._image_codes(codes, plan)
        padded = shape[0] > n
        return CompactTensor(
            codes=view,
            luts=table.values,
            dtype=table.dtype,
            shape=shape,
            channel_axis=3,
            repeat_axis=1,
            repeats=1,
            pad=np.zeros(3, dtype=table.values.dtype) if padded else None,
            pad_rules=((0, 2, n * area),) if padded else (),
        )

    def native(self) -> dict[str, int]:
        if self.pad_to is None:
            return {"patch_size": self.patch_size}
        return {"patch_size": self.patch_size, "pad_to": self.pad_to}

    def video(
        self, frames: Sequence[npt.NDArray[np.uint8]], plan: Plan, table: Table
    ) -> CompactTensor:
        """A video as Gemma 4's ``pixel_values_videos``: ``[frames, pad_to, ps * ps * 3]``,
        each sampled frame's patches as one image's (the same padding), frames in order."""
        if not frames:
            raise KernelArgumentError("a video needs at least one frame")
        rows, width = self.shape(plan)
        n, area = self.patches(plan), self.patch_size**2
        view = np.zeros((len(frames), rows, 1, area, 3), dtype=np.uint8)
        for k, codes in enumerate(frames):
            view[k, :n] = self._image_codes(codes, plan)
        padded = rows > n
        return CompactTensor(
            codes=view,
            luts=table.values,
            dtype=table.dtype,
            shape=(len(frames), rows, width),
            channel_axis=4,
            repeat_axis=2,
            repeats=1,
            pad=np.zeros(3, dtype=table.values.dtype) if padded else None,
            pad_rules=((1, 3, n * area),) if padded else (),
        )

    def video_bytes(self, plan: Plan, table: Table, frames: int) -> int:
        rows, width = self.shape(plan)
        return frames * rows * width * table.values.dtype.itemsize

    def video_sink(self, plan: Plan, table: Table, frames: int) -> VideoSink:
        """`video`'s layout, each frame's codes looked up into its slot as it arrives."""
        if frames < 1:
            raise KernelArgumentError("a video needs at least one frame")
        rows, width = self.shape(plan)
        return _PatchVectorsVideo(table, frames, rows, width, self.patches(plan))


class _PatchVectorsVideo(VideoSink):
    """`PatchVectors.video` expanded in place: ``[frames, rows, ps * ps * 3]`` values, zeros
    past each frame's ``n`` patches."""

    def __init__(self, table: Table, frames: int, rows: int, width: int, n: int) -> None:
        self.table, self.frames, self.n = table, frames, n
        self.luts = np.ascontiguousarray(table.values)
        self.values = np.zeros((frames, rows, width), dtype=self.luts.dtype)
        self.filled = np.zeros(frames, dtype=bool)

    def put(self, position: int, codes: npt.NDArray[np.uint8]) -> None:
        if not 0 <= position < self.frames:
            raise KernelArgumentError(f"frame position {position} outside 0..{self.frames - 1}")
        # Channels last: each sample is a row of 3 channels, so the channel-major slot writer
        # with one pixel per channel and one slot writes it in order.
        pixels = self.n * self.values.shape[2] // 3
        # The frame's own patches (its codes may carry the kernel's zero rows after them).
        frame = np.ascontiguousarray(codes.reshape(-1)[: pixels * 3]).reshape(pixels, 3, 1)
        dst = self.values[position, : self.n].reshape(pixels, 3, 1, 1)
        _native.lut_into_slot(frame, self.luts, dst, 0)
        self.filled[position] = True

    def finish(self) -> Tensor:
        if not self.filled.all():
            missing = int(np.flatnonzero(~self.filled)[0])
            raise KernelArgumentError(f"frame position {missing} of the video was never written")
        return Tensor(self.values, self.table.dtype)


def _compact(
    codes: npt.NDArray[np.uint8],
    table: Table,
    shape: tuple[int, ...],
    channel_axis: int,
    repeat_axis: int,
    repeats: int,
    *,
    pad_rules: tuple[tuple[int, int, int], ...] = (),
) -> CompactTensor:
    return CompactTensor(
        codes=codes,
        luts=table.values,
        dtype=table.dtype,
        shape=shape,
        channel_axis=channel_axis,
        repeat_axis=repeat_axis,
        repeats=repeats,
        pad=table.pad if pad_rules else None,
        pad_rules=pad_rules,
    )


@dataclass(frozen=True)
class Features:
    """How a family's items become their feature: every sample through ``table``, laid out
    by ``writer``. With ``resample`` (a core resampler: ``pil_bicubic``, ``aten_u8``,
    ``pil_bilinear``, ``aten_u8_bilinear``, ``pil_lanczos``, ``aten_f32``, ``aten_f32_nofma``;
    see `hf_backend`) the core
    composes it from the plan's parts, and the family needs no kernel of its own; without,
    the family's ``kernel`` writes it. The compact form comes from the table; a family whose
    feature is not a table of uint8 samples passes ``table=None`` (no compact form) and the
    feature's ``dtype``."""

    table: Table | None
    writer: Writer
    resample: str | None = None
    pass_order: Literal["pillow13", "pillow12"] = "pillow13"
    untabled_dtype: Literal["float32", "bfloat16"] = "float32"

    @property
    def dtype(self) -> str:
        """The feature's dtype tag."""
        return self.table.dtype if self.table is not None else self.untabled_dtype

    def compose(
        self,
        image: npt.NDArray[np.uint8],
        parts: Sequence[Part],
        *,
        codes: bool = False,
        threads: int = 1,
    ) -> npt.NDArray[Any]:
        """The core's composition of ``parts`` of a decoded RGB uint8 ``[h, w, 3]`` image,
        flat: the table's values (float32, or bfloat16 bits as uint16) or (``codes``) the
        uint8 samples, in the writer's layout, with the GIL released. What the driver runs
        for a plan; a family's direct API calls it with parts of its own."""
        recipe = self.recipe()
        if recipe is None:
            raise KernelArgumentError("these features are written by a family kernel: no resample")
        assert self.table is not None
        native = [p._native() for p in parts]
        out: npt.NDArray[Any] = recipe.run(
            image, native, self.table._native, codes, max(1, threads)
        )
        return out

    def recipe(self) -> Any:
        """The native recipe (None when the family's own kernel writes the feature)."""
        if self.resample is None:
            return None
        if self.table is None:
            raise KernelArgumentError("the core composes a feature through a table: give one")
        return _native.FeatureRecipe(
            self.writer.kind, self.resample, self.pass_order, **self.writer.native()
        )


__all__ = [
    "Arithmetic",
    "Backend",
    "ChannelPlanes",
    "ChwPatches",
    "Features",
    "HwcPatches",
    "Part",
    "PatchRows",
    "PatchVectors",
    "Rect",
    "Table",
    "Tiles",
    "VideoSink",
    "Writer",
    "hf_backend",
]
