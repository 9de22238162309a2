"""The Gemma 4 family: every image is resized, keeping its aspect ratio, to the largest size
whose sides are multiples of ``pooling_kernel_size * patch_size`` (48) within a budget of
``max_soft_tokens * pooling_kernel_size**2`` patches, rescaled to [0, 1] (no normalize), and
cut into 16x16 patches, each one vector with the channels last; the patches are zero-padded to
the budget, with their ``(x, y)`` positions (-1 on the padding). Its placeholder ``<|image|>``
becomes ``<boi>`` + ``<|image|>`` x soft tokens + ``<eoi>``. The pixels are a composition of
the core's kernels: bicubic resize, HF's rescale table, the `PatchVectors` writer.

Videos (`video.py`) are sampled frames, each laid out as an image under the video processor's
own budget (70 soft tokens) and table, always by the torchvision backend's arithmetic (HF has
no PIL video processor), behind an ``mm:ss`` timestamp in the prompt."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from sglang_mm_core import plugin as mm

from .geometry import aspect_ratio_preserving_size, position_ids
from .params import Gemma4Params
from .video import plan_video


def mm_token_type_ids(input_ids: npt.ArrayLike, p: Gemma4Params) -> npt.NDArray[np.int64]:
    """HF's ``mm_token_type_ids`` for an expanded prompt: 1 on image tokens, 2 on video
    tokens, 0 elsewhere."""
    ids = np.asarray(input_ids)
    out: npt.NDArray[np.int64] = (ids == p.image_token_id).astype(np.int64)
    out[ids == p.video_token_id] = 2
    return out


def _table(
    backend: mm.Backend,
    do_rescale: bool,
    rescale_factor: float,
    do_normalize: bool,
    mean: tuple[float, float, float],
    std: tuple[float, float, float],
) -> mm.Table:
    """HF's rescale-then-normalize of either backend, with normalize off as Gemma 4 ships it:
    then the rescale alone is numpy's float64 multiply (PIL backend) or torch's float32 one."""
    _, arithmetic = mm.hf_backend(backend, "bicubic")
    if not do_normalize:
        mean, std = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
        arithmetic = "numpy" if backend == "pil" else "float32"
    scale = rescale_factor if do_rescale else 1.0
    return mm.Table(mean, std, arithmetic=arithmetic, rescale_factor=scale)


class Gemma4Family(mm.Family[Gemma4Params]):
    name: ClassVar[str] = "gemma4"
    # As HF's loaders: alpha composited onto white, EXIF orientation applied.
    decode_defaults: ClassVar[mm.DecodeDefaults] = mm.DecodeDefaults(
        alpha="white", exif_orientation=True
    )

    modalities: ClassVar[frozenset[str]] = frozenset({"image", "video"})

    def __init__(self, params: mm.FamilyParams | Mapping[str, Any] | None = None) -> None:
        super().__init__(params)
        path = self.params.tokenizer
        #: The model's tokenizer, for the videos' timestamps (None without the param).
        self.timestamp_tokenizer = mm.load_tokenizer(path) if path is not None else None

    def features(self) -> mm.Features:
        p = self.params
        resample, _ = mm.hf_backend(p.resample, "bicubic")
        table = _table(
            p.resample, p.do_rescale, p.rescale_factor, p.do_normalize, p.image_mean, p.image_std
        )
        return mm.Features(table, mm.PatchVectors(p.patch_size, pad_to=p.max_patches), resample)

    def video_features(self) -> mm.Features:
        """``Gemma4VideoProcessor``'s: torchvision's uint8 bicubic and arithmetic, whatever
        ``resample`` says for images, and each frame padded to the video's budget."""
        p = self.params
        resample, _ = mm.hf_backend("aten_u8", "bicubic")
        table = _table(
            "aten_u8",
            p.do_rescale,
            p.rescale_factor,
            p.video_do_normalize,
            p.video_image_mean,
            p.video_image_std,
        )
        writer = mm.PatchVectors(p.patch_size, pad_to=p.video_max_patches)
        return mm.Features(table, writer, resample)

    def target_size(self, height: int, width: int, *, video: bool = False) -> tuple[int, int]:
        """The resized ``(H, W)`` of an upright ``width x height`` image (or, with ``video``,
        video frame), as HF computes it."""
        p = self.params
        budget = p.video_max_patches if video else p.max_patches
        return aspect_ratio_preserving_size(
            height, width, p.patch_size, budget, p.pooling_kernel_size
        )

    def video_plan(self, header: mm.VideoHeader, options: mm.VideoOptions) -> mm.VideoPlan:
        """The sampled frames, their one size and the timestamped tokens (`video.plan_video`)."""
        size = self.target_size(header.height, header.width, video=True)
        return plan_video(self.params, header, options, self.timestamp_tokenizer, size)

    def video_placeholder(self) -> mm.Placeholder:
        return mm.Placeholder(self.params.video_token_id)

    def plan(self, width: int, height: int) -> mm.Plan:
        p = self.params
        h, w = self.target_size(height, width)
        k = p.pooling_kernel_size
        rows, cols = h // p.patch_size, w // p.patch_size
        n = rows * cols // k**2
        tokens = mm.Explicit((p.boi_token_id, *[p.image_token_id] * n, p.eoi_token_id), (1, n + 1))
        return mm.Plan(tokens, mm.Geometry(h, w, (rows // k, cols // k)))

    def aux(self, plan: mm.Plan) -> Mapping[str, mm.Tensor]:
        p = self.params
        g = plan.geometry
        rows, cols = g.height // p.patch_size, g.width // p.patch_size
        n = rows * cols // p.pooling_kernel_size**2
        return {
            "image_position_ids": mm.Tensor(position_ids(rows, cols, p.max_patches), "int64"),
            "num_soft_tokens_per_image": mm.Tensor(np.array([n], dtype=np.int64), "int64"),
        }

    @classmethod
    def spec_from_hf(
        cls,
        model: mm.ModelDir | str | Path | Mapping[str, Mapping[str, Any]],
        **options: Any,
    ) -> dict[str, Any]:
        """A spec for a HuggingFace model directory (``resample`` and ``token_ids`` as
        `sglang_mm_gemma4.hf.spec_from_hf` takes them)."""
        from .hf import spec_from_hf

        return spec_from_hf(model, **options)
