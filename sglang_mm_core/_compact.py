"""The compact form of a feature: one uint8 code per value, plus per-channel lookup tables.

Every feature of today's families is a per-channel table applied to resized uint8 pixels,
with the same frame repeated ``temporal_patch_size`` times and (Inkling) a constant pad value
outside the image. Carrying the codes once and the tables (a few KB) is exact and 4-8x
smaller; the full `Tensor` is a gather away (`CompactTensor.expand` on the CPU,
`CompactTensor.torch` on the device that eats it).

The expansion, on ``codes`` of shape ``view_shape``:

1. ``value = luts[c][code]`` where ``c`` is the index along ``channel_axis``;
2. where a pad rule holds, ``value = pad[c]`` instead; a rule ``(outer, inner, limit)`` holds at
   every index with ``idx[outer] * view_shape[inner] + idx[inner] >= limit`` (a patch grid cut
   from a padded image: patch row/column times patch side plus the offset in the patch);
3. ``repeat_axis`` (of size 1 in the codes) is broadcast to ``repeats``;
4. the result is reshaped to ``shape``, the full feature's shape."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ._carriers import Tensor

CompactDType = Literal["float32", "bfloat16"]
_LUT_NUMPY: dict[str, np.dtype[Any]] = {
    "float32": np.dtype(np.float32),
    "bfloat16": np.dtype(np.uint16),  # raw bits, as in `Tensor`
}
PadRule = tuple[int, int, int]


def _read_only(arr: npt.NDArray[Any]) -> npt.NDArray[Any]:
    if not arr.flags.writeable:
        return arr
    view = arr.view()
    view.flags.writeable = False
    return view


@dataclass(frozen=True, eq=False)
class CompactTensor:
    """uint8 ``codes`` (C-contiguous, shape ``view_shape``, frames once) and ``luts``
    (``[channels, 256]`` in the output dtype; bfloat16 as uint16 bits) that expand exactly to
    the full feature of ``shape``; see the module docstring for the rule."""

    codes: npt.NDArray[np.uint8]
    luts: npt.NDArray[Any]
    dtype: CompactDType
    shape: tuple[int, ...]
    channel_axis: int
    repeat_axis: int
    repeats: int
    pad: npt.NDArray[Any] | None = None
    pad_rules: tuple[PadRule, ...] = ()

    def __post_init__(self) -> None:
        want = _LUT_NUMPY.get(self.dtype)
        if want is None:
            raise ValueError(f"compact tensors are float32 or bfloat16, not {self.dtype!r}")
        c, v = self.codes, self.codes.shape
        if c.dtype != np.uint8 or not c.flags.c_contiguous:
            raise ValueError("compact codes must be a C-contiguous uint8 array")
        nd = c.ndim
        if not (0 <= self.channel_axis < nd and 0 <= self.repeat_axis < nd):
            raise ValueError(f"channel/repeat axis out of range for {nd}-d codes")
        if v[self.repeat_axis] != 1 or self.repeats < 1:
            raise ValueError("the repeat axis must have size 1 in the codes, repeats >= 1")
        ch = v[self.channel_axis]
        if self.luts.dtype != want or self.luts.shape != (ch, 256):
            raise ValueError(f"luts must be {want} of shape ({ch}, 256), got {self.luts.shape}")
        if int(np.prod(v, dtype=np.int64)) * self.repeats != int(
            np.prod(self.shape, dtype=np.int64)
        ):
            raise ValueError(f"codes {list(v)} x {self.repeats} do not make {list(self.shape)}")
        if self.pad_rules:
            if self.pad is None or self.pad.dtype != want or self.pad.shape != (ch,):
                raise ValueError(f"pad rules need pad values, {want} of shape ({ch},)")
            for outer, inner, _ in self.pad_rules:
                if not (0 <= outer < nd and 0 <= inner < nd) or self.channel_axis in (outer, inner):
                    raise ValueError(f"bad pad rule axes ({outer}, {inner})")
        # Families hand every carrier their one table: the carrier holds it read-only, so
        # editing one item's tables cannot change the family's (or other items').
        object.__setattr__(self, "luts", _read_only(self.luts))
        if self.pad is not None:
            object.__setattr__(self, "pad", _read_only(self.pad))

    @property
    def view_shape(self) -> tuple[int, ...]:
        return tuple(self.codes.shape)

    @property
    def nbytes(self) -> int:
        """Bytes carried: codes, tables and pad values (what crosses a wire or a PCIe bus)."""
        pad = 0 if self.pad is None else self.pad.nbytes
        return int(self.codes.nbytes + self.luts.nbytes + pad)

    def pad_mask(self) -> npt.NDArray[np.bool_] | None:
        """Where the pad rules hold, broadcastable against the codes (None without rules)."""
        if not self.pad_rules:
            return None
        v = self.view_shape
        mask = np.zeros([1] * len(v), dtype=bool)
        for outer, inner, limit in self.pad_rules:
            so = [1] * len(v)
            so[outer] = v[outer]
            si = [1] * len(v)
            si[inner] = v[inner]
            pos = np.arange(v[outer]).reshape(so) * v[inner] + np.arange(v[inner]).reshape(si)
            mask = mask | (pos >= limit)
        return mask

    def expand(self) -> Tensor:
        """The full feature, bit-identical to the family's ordinary answer. With ``repeats``
        > 1 and a repeat axis that stays a separate axis of ``shape`` the result is a read-only
        broadcast view (as Inkling's own feature is); otherwise a fresh contiguous array."""
        v = self.view_shape
        ax = self.channel_axis
        values = np.empty(v, dtype=self.luts.dtype)
        mask = self.pad_mask()
        for c in range(v[ax]):
            sel = (slice(None),) * ax + (slice(c, c + 1),)
            got = self.luts[c][self.codes[sel]]
            if mask is not None:
                assert self.pad is not None
                got = np.where(mask, self.pad[c], got)
            values[sel] = got
        if self.repeats == 1:  # nothing to repeat: the fresh (writable) values themselves
            return Tensor(values.reshape(self.shape), self.dtype)
        full = np.broadcast_to(values, _with(v, self.repeat_axis, self.repeats))
        out = full.reshape(self.shape)
        if not out.flags.c_contiguous and 0 not in out.strides:
            out = np.ascontiguousarray(out)
        return Tensor(out, self.dtype)

    def torch(self, device: Any = None) -> Any:
        """The full feature as a torch tensor on ``device``: only the codes and tables are
        moved there, and one gather expands them (``torch`` must be installed)."""
        import torch  # type: ignore[import-not-found,unused-ignore]

        v = self.view_shape
        ax = self.channel_axis
        ch = v[ax]
        table = self.luts
        if self.pad is not None:
            table = np.concatenate([table, self.pad.reshape(ch, 1)], axis=1)
        width = table.shape[1]
        if self.dtype == "bfloat16":
            lut = torch.from_numpy(table.view(np.int16).copy()).to(device).view(torch.bfloat16)
        else:
            lut = torch.from_numpy(np.ascontiguousarray(table)).to(device)
        codes = torch.from_numpy(self.codes).to(device)
        cshape = [1] * len(v)
        cshape[ax] = ch
        base = torch.arange(ch, device=codes.device, dtype=torch.int64).reshape(cshape) * width
        index = codes.to(torch.int64) + base
        mask = self.pad_mask()
        if mask is not None:
            index = torch.where(torch.from_numpy(mask).to(codes.device), base + width - 1, index)
        values = lut.reshape(-1)[index]
        full = values.expand(*_with(v, self.repeat_axis, self.repeats))
        return full.reshape(self.shape)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CompactTensor):
            return NotImplemented
        same_pad = (self.pad is None) == (other.pad is None) and (
            self.pad is None or np.array_equal(self.pad, other.pad)  # type: ignore[arg-type]
        )
        return (
            self.dtype == other.dtype
            and self.shape == other.shape
            and self.channel_axis == other.channel_axis
            and self.repeat_axis == other.repeat_axis
            and self.repeats == other.repeats
            and self.pad_rules == other.pad_rules
            and self.codes.shape == other.codes.shape
            and np.array_equal(self.codes, other.codes)
            and np.array_equal(self.luts, other.luts)
            and same_pad
        )

    __hash__ = None  # type: ignore[assignment]

    # -- the stored form (outputs.py) -----------------------------------------------------
    def layout(self) -> dict[str, Any]:
        """The metadata that, with the codes, luts and pad tensors, rebuilds the carrier."""
        return {
            "dtype": self.dtype,
            "shape": list(self.shape),
            "channel_axis": self.channel_axis,
            "repeat_axis": self.repeat_axis,
            "repeats": self.repeats,
            "pad_rules": [list(r) for r in self.pad_rules],
        }

    @classmethod
    def from_layout(
        cls,
        meta: dict[str, Any],
        codes: npt.NDArray[np.uint8],
        luts: npt.NDArray[Any],
        pad: npt.NDArray[Any] | None,
    ) -> CompactTensor:
        rules: Sequence[Sequence[int]] = meta.get("pad_rules", [])
        return cls(
            codes=codes,
            luts=luts,
            dtype=meta["dtype"],
            shape=tuple(int(d) for d in meta["shape"]),
            channel_axis=int(meta["channel_axis"]),
            repeat_axis=int(meta["repeat_axis"]),
            repeats=int(meta["repeats"]),
            pad=pad,
            pad_rules=tuple((int(a), int(b), int(c)) for a, b, c in rules),
        )


def _with(shape: tuple[int, ...], axis: int, size: int) -> tuple[int, ...]:
    return (*shape[:axis], size, *shape[axis + 1 :])


#: What an item's ``feature`` is: the full tensor, or (``compact=True``) its compact form.
Feature = Tensor | CompactTensor

__all__ = ["CompactDType", "CompactTensor", "Feature", "PadRule"]
