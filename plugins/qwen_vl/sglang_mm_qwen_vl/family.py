"""The `qwen_vl` family: Qwen2-VL, Qwen2.5-VL, Qwen3-VL and Qwen3.5 images, bit-exact with
HuggingFace's image processor (either backend), its placeholder expansion and its MRoPE.

An image is resized to `smart_resize`'s size, its samples normalized by a per-channel table
and laid out as ``pixel_values`` rows of patches in merge-block order: a composition of the
core's kernels (bicubic resize, table, patch rows), so the family has no kernel of its own."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from sglang_mm_core import plugin as mm

from .params import QwenVLParams
from .sizes import smart_resize
from .video_plan import plan_video


class QwenVLFamily(mm.Family[QwenVLParams]):
    """One family for every Qwen-VL generation; the generations differ only in params."""

    name: ClassVar[str] = "qwen_vl"
    # HF's processor on a PIL image: convert_to_rgb composites alpha on white; load_image applies
    # the EXIF orientation (docs/families/qwen_vl.md: paths and URLs drop alpha in HF instead).
    decode_defaults: ClassVar[mm.DecodeDefaults] = mm.DecodeDefaults(
        alpha="white", exif_orientation=True
    )
    modalities: ClassVar[frozenset[str]] = frozenset({"image", "video"})

    def __init__(self, params: mm.FamilyParams | Mapping[str, Any] | None = None) -> None:
        super().__init__(params)
        path = self.params.tokenizer
        #: Qwen3-VL's timestamp tokenizer (loaded once per path; None without the param).
        self.timestamp_tokenizer = mm.load_tokenizer(path) if path is not None else None

    def plan(self, width: int, height: int) -> mm.Plan:
        """`smart_resize`'s size, its unmerged patch grid ``(1, gh, gw)``, and one image token
        per merged block."""
        p = self.params
        h, w = smart_resize(height, width, p.factor, p.min_pixels, p.max_pixels, p.smart_resize)
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
        """The image features, but under ``video_sampling="qwen_vl_utils"``: qwen-vl-utils
        resizes the frames itself, with torchvision's float bicubic (``aten_f32``), and HF's
        video processor (torchvision arithmetic, whatever ``resample`` says) normalizes the
        exact-size float frames, whose values are the uint8 codes, so the table applies."""
        p = self.params
        features = self.features()
        if p.video_sampling != "qwen_vl_utils":
            return features
        table = mm.Table.hf(p.image_mean, p.image_std, "aten_u8")
        return dataclasses.replace(features, table=table, resample="aten_f32")

    def video_plan(self, video: mm.VideoHeader, options: mm.VideoOptions) -> mm.VideoPlan:
        """The sampled frames, their one size and the grid, by the params' ``video_sampling``
        reference (`video_plan.plan_video`)."""
        return plan_video(self.params, video, options, self.timestamp_tokenizer)

    def placeholder(self) -> mm.Placeholder:
        """Under ``strict_layout`` each placeholder must be ``vision_start, image,
        vision_end``, as HF's chat template writes it."""
        return mm.Placeholder(self.params.image_token_id, between=self._markers())

    def video_placeholder(self) -> mm.Placeholder:
        """``vision_start, video, vision_end`` under ``strict_layout``."""
        return mm.Placeholder(self.params.video_token_id, between=self._markers())

    def _markers(self) -> tuple[int, int] | None:
        p = self.params
        return (p.vision_start_token_id, p.vision_end_token_id) if p.strict_layout else None

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
        m = self.params.merge_size
        grids = [(g.grid[0], g.grid[1] // m, g.grid[2] // m) for g in geometries]
        if self.params.generation == "qwen3_vl":
            return self._qwen3_positions(length, offsets, grids, geometries, input_ids)
        if all(g.seconds_per_grid_t is None for g in geometries):
            return mm.mrope_positions(length, offsets, grids)
        steps = [self._time_step(g.seconds_per_grid_t) for g in geometries]
        return mm.mrope_positions(length, offsets, grids, time_intervals=steps)

    def _qwen3_positions(
        self,
        length: int,
        offsets: Sequence[tuple[int, int]],
        grids: Sequence[tuple[int, int, int]],
        geometries: Sequence[mm.Geometry],
        input_ids: npt.NDArray[np.int64],
    ) -> mm.MRope:
        """Qwen3-VL's and Qwen3.5's ``get_rope_index``: a video is its temporal groups, each a
        ``(1, h, w)`` block of its own, with the timestamp and marker tokens between them as
        text. A video's groups are the runs of video tokens inside its offsets."""
        vt = self.params.video_token_id
        spans: list[tuple[int, int]] = []
        blocks: list[tuple[int, int, int]] = []
        for (s, e), (t, h, w), g in zip(offsets, grids, geometries, strict=True):
            if g.seconds_per_grid_t is None or t <= 1:  # an image, or a video of one group
                spans.append((s, e))
                blocks.append((t, h, w))
                continue
            runs = mm.token_runs(input_ids, (s, e), vt)
            if len(runs) != t:
                raise mm.LayoutError(
                    f"video tokens [{s}, {e}] hold {len(runs)} run(s) of id {vt}, not its "
                    f"{t} temporal groups"
                )
            spans += runs
            blocks += [(1, h, w)] * t
        order = sorted(range(len(spans)), key=spans.__getitem__)
        return mm.mrope_positions(length, [spans[k] for k in order], [blocks[k] for k in order])

    def _time_step(self, seconds: float | None) -> float | None:
        """A video's step between temporal positions: 1 for Qwen2-VL; Qwen2.5-VL's
        ``second_per_grid_t * tokens_per_second``, in float32 as its model computes it."""
        if seconds is None:
            return None
        p = self.params
        if p.generation != "qwen2_5_vl":
            return 1.0
        return float(np.float32(p.tokens_per_second) * np.float32(seconds))

    def rejected_conformance_sizes(self) -> tuple[mm.Size, ...]:
        """Aspect ratio 200 is the largest HF accepts, whatever the params; 201 is refused (a
        typed request error)."""
        return ((201, 1), (1, 201))

    @classmethod
    def spec_from_hf(
        cls,
        model: mm.ModelDir | str | Path | Mapping[str, Mapping[str, Any]],
        **options: Any,
    ) -> dict[str, Any]:
        """A spec for a HuggingFace model directory (``resample="aten_u8"`` or ``"pil"``)."""
        from .hf import spec_from_hf

        return spec_from_hf(model, **options)


__all__ = ["QwenVLFamily"]
