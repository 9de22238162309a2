"""The `glm4v` family: GLM-4.1V, GLM-4.5V and GLM-4.6V images and videos, bit-exact with
HuggingFace's image processors (either backend), video processors, processors' expansion and
the models' ``get_rope_index``.

An image is resized to the core's `temporal_smart_resize` size (a still counts as
``temporal_patch_size`` frames), its samples normalized by a per-channel table and laid out as
Qwen-VL-style ``pixel_values`` rows of patches in merge-block order: the same composition of
the core's kernels as the ``qwen_vl`` family (bicubic resize, `Table`, `PatchRows`, whose
``video_sink`` writes a video's rows frame by frame), so the family has no kernel of its own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from sglang_mm_core import plugin as mm

from .params import Glm4vParams
from .video import plan_video


def mm_token_type_ids(input_ids: npt.ArrayLike, p: Glm4vParams) -> npt.NDArray[np.int64]:
    """HF's ``mm_token_type_ids`` of an expanded prompt (``Glm4vProcessor``'s and
    ``Glm46VProcessor``'s ``create_mm_token_type_ids``): 2 on image tokens inside
    ``<|begin_of_video|> ... <|end_of_video|>``, 1 on the other image tokens, 0 elsewhere."""
    ids = np.asarray(input_ids)
    inside = np.cumsum(ids == p.video_start_token_id) > np.cumsum(ids == p.video_end_token_id)
    image = ids == p.image_token_id
    return np.where(image & inside, 2, np.where(image, 1, 0)).astype(np.int64)


class Glm4vFamily(mm.Family[Glm4vParams]):
    """One family for every GLM-4.xV generation; the generations differ only in params."""

    name: ClassVar[str] = "glm4v"
    # HF's processors on a PIL image: convert_to_rgb composites alpha on white; load_image
    # applies the EXIF orientation.
    decode_defaults: ClassVar[mm.DecodeDefaults] = mm.DecodeDefaults(
        alpha="white", exif_orientation=True
    )
    modalities: ClassVar[frozenset[str]] = frozenset({"image", "video"})

    def __init__(self, params: mm.FamilyParams | Mapping[str, Any] | None = None) -> None:
        super().__init__(params)
        path = self.params.tokenizer
        #: The timestamps' tokenizer (loaded once per path; None without the param).
        self.timestamp_tokenizer = mm.load_tokenizer(path) if path is not None else None

    def target_size(self, width: int, height: int) -> tuple[int, int]:
        """``(height, width)`` an upright ``width x height`` image is resized to: HF's
        ``smart_resize(num_frames=temporal_patch_size, ...)``, as its image processors call
        it."""
        p = self.params
        return mm.temporal_smart_resize(
            p.temporal_patch_size,
            height,
            width,
            temporal_factor=p.temporal_patch_size,
            factor=p.factor,
            min_pixels=p.min_pixels,
            max_pixels=p.max_pixels,
        )

    def plan(self, width: int, height: int) -> mm.Plan:
        """The target size, its unmerged patch grid ``(1, gh, gw)``, one image token per
        merged block."""
        p = self.params
        h, w = self.target_size(width, height)
        gh, gw = h // p.patch_size, w // p.patch_size
        tokens = mm.Repeat(p.image_token_id, gh * gw // p.merge_size**2)
        return mm.Plan(tokens, mm.Geometry(h, w, (1, gh, gw)))

    def features(self) -> mm.Features:
        p = self.params
        resample, _ = mm.hf_backend(p.resample)
        return mm.Features(
            table=mm.Table.hf(p.image_mean, p.image_std, p.resample),
            writer=mm.PatchRows(p.patch_size, p.merge_size, p.temporal_patch_size),
            resample=resample,
            pass_order=p.pil_pass_order,
        )

    def video_features(self) -> mm.Features:
        """HF's video processors are torchvision-only: frames are resized with torchvision's
        uint8 bicubic and normalized with its arithmetic, whatever ``resample`` says."""
        p = self.params
        return mm.Features(
            table=mm.Table.hf(p.image_mean, p.image_std, "aten_u8"),
            writer=mm.PatchRows(p.patch_size, p.merge_size, p.temporal_patch_size),
            resample="aten_u8",
        )

    def video_plan(self, video: mm.VideoHeader, options: mm.VideoOptions) -> mm.VideoPlan:
        """The sampled frames, their one size, the grid and the timestamped expansion
        (`video.plan_video`)."""
        return plan_video(self.params, video, options, self.timestamp_tokenizer)

    def placeholder(self) -> mm.Placeholder:
        """Under ``strict_layout`` each image placeholder must be ``<|begin_of_image|>
        <|image|> <|end_of_image|>``, as the chat template writes it."""
        p = self.params
        between = (p.image_start_token_id, p.image_end_token_id) if p.strict_layout else None
        return mm.Placeholder(p.image_token_id, between=between)

    def video_placeholder(self) -> mm.Placeholder:
        """``<|begin_of_video|> <|video|> <|end_of_video|>`` under ``strict_layout``."""
        p = self.params
        between = (p.video_start_token_id, p.video_end_token_id) if p.strict_layout else None
        return mm.Placeholder(p.video_token_id, between=between)

    def aux(self, plan: mm.Plan) -> Mapping[str, mm.Tensor]:
        grid = np.array([plan.geometry.grid], dtype=np.int64)
        return {"image_grid_thw": mm.Tensor(grid, "int64")}

    def positions(
        self,
        length: int,
        offsets: Sequence[tuple[int, int]],
        geometries: Sequence[mm.Geometry],
        input_ids: npt.NDArray[np.int64],
    ) -> mm.MRope:
        """The models' ``get_rope_index`` (Glm4vModel, Glm4vMoeModel and Glm46VModel share
        it): every run of image tokens is a ``(1, gh / m, gw / m)`` block placed at the running
        position, which then moves on by ``max(gh, gw) / m``; a video's runs are its frames
        (``video_grid_thw`` split into ``t`` grids of one), with the markers and timestamps
        between them as text. That is the Qwen2-VL walk on blocks of one frame."""
        p = self.params
        m = p.merge_size
        spans: list[tuple[int, int]] = []
        blocks: list[tuple[int, int, int]] = []
        for (s, e), g in zip(offsets, geometries, strict=True):
            t, gh, gw = g.grid
            if t == 1:
                spans.append((s, e))
                blocks.append((1, gh // m, gw // m))
                continue
            runs = mm.token_runs(input_ids, (s, e), p.image_token_id)
            if len(runs) != t:
                raise mm.LayoutError(
                    f"video tokens [{s}, {e}] hold {len(runs)} run(s) of image id "
                    f"{p.image_token_id}, not its {t} frames"
                )
            spans += runs
            blocks += [(1, gh // m, gw // m)] * t
        order = sorted(range(len(spans)), key=spans.__getitem__)
        return mm.mrope_positions(length, [spans[k] for k in order], [blocks[k] for k in order])

    def rejected_conformance_sizes(self) -> tuple[mm.Size, ...]:
        """After the upscale of a side under the factor, an aspect ratio over 200 is refused
        (as HF refuses it): 1x201 becomes 28x5628."""
        return ((201, 1), (1, 201), (5700, 28))

    @classmethod
    def spec_from_hf(
        cls,
        model: mm.ModelDir | str | Path | Mapping[str, Mapping[str, Any]],
        **options: Any,
    ) -> dict[str, Any]:
        """A spec for a HuggingFace model directory (``resample="aten_u8"`` or ``"pil"``;
        `sglang_mm_glm4v.hf.spec_from_hf`)."""
        from .hf import spec_from_hf

        return spec_from_hf(model, **options)


__all__ = ["Glm4vFamily", "mm_token_type_ids"]
