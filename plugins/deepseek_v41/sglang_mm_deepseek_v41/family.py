"""The DeepSeek-V4.1 family: every image becomes a grid of 14x14 bfloat16 patches
``[n_vit_h * n_vit_w, 3, 14, 14]`` of its bicubic contain-fit, centred on a grey (127) canvas
whose sides are multiples of the patch; its placeholder becomes ``n_llm_h * (n_llm_w + 1) + 2``
positions that all carry ``image_token_id``, their roles going out of band as
``image_token_types``. A composition of the core's kernels: Pillow's bicubic onto a canvas
part, a table rounded to bfloat16, patches in channel planes."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from sglang_mm_core import plugin as mm

from .grid import Grid, plan_grid, token_grid, token_types
from .params import DeepseekV41Params

#: The canvas colour of ``ImageOps.pad(..., color=(127, 127, 127))``.
GREY = (127, 127, 127)


class DeepseekV41Family(mm.Family[DeepseekV41Params]):
    """Spec name ``deepseek_v41``; see docs/families/deepseek_v41.md."""

    name: ClassVar[str] = "deepseek_v41"
    # SGLang's load_image: Image.open(...).load(), no EXIF transpose; convert("RGB") then
    # drops alpha rather than compositing it.
    decode_defaults: ClassVar[mm.DecodeDefaults] = mm.DecodeDefaults(
        alpha="drop", exif_orientation=False
    )

    def grid(self, width: int, height: int) -> Grid:
        """The reference's plan of an upright ``width x height`` image."""
        return plan_grid(width, height, self.params)

    def plan(self, width: int, height: int) -> mm.Plan:
        g = self.grid(width, height)
        p = self.params
        if g.stretch:
            part = mm.Part((g.width, g.height))
        else:
            part = mm.Part.on_canvas(g.content, (g.width, g.height), GREY, g.at)
        return mm.Plan(
            mm.Repeat(p.image_token_id, g.tokens),
            mm.Geometry(g.height, g.width, (g.n_vit_h, g.n_vit_w)),
            (part,),
        )

    def features(self) -> mm.Features:
        p = self.params
        # The reference computes ``(x / 255 - 0.5) / 0.5`` in float32 then rounds to
        # bfloat16. At a rescale of 1/255 the numpy arithmetic (the float64 product, cast)
        # equals that float32 quotient for every sample (a core test shows it), the
        # float32-product one does not.
        table = mm.Table((0.5,) * 3, (0.5,) * 3, arithmetic="numpy", dtype="bfloat16")
        resample, _ = mm.hf_backend("pil", "bicubic")
        return mm.Features(
            table, mm.ChwPatches(p.patch_size), resample=resample, pass_order=p.pil_pass_order
        )

    def aux(self, plan: mm.Plan) -> Mapping[str, mm.Tensor]:
        n_vit_h, n_vit_w = plan.geometry.grid
        lh, lw = token_grid(n_vit_h, n_vit_w, self.params.downsample_ratio)
        return {
            "image_token_types": mm.Tensor(np.array(token_types(lh, lw), np.int64), "int64"),
            "n_vit_h": mm.Tensor(np.array([n_vit_h], np.int64), "int64"),
            "n_vit_w": mm.Tensor(np.array([n_vit_w], np.int64), "int64"),
        }

    @classmethod
    def spec_from_hf(
        cls,
        model: mm.ModelDir | str | Path | Mapping[str, Mapping[str, Any]],
        **options: Any,
    ) -> dict[str, Any]:
        """A spec for a DeepSeek-V4.1 model directory (its ``config.json``); see
        `sglang_mm_deepseek_v41.hf.spec_from_hf`."""
        from .hf import spec_from_hf

        return spec_from_hf(model, **options)

    def rejected_conformance_sizes(self) -> tuple[mm.Size, ...]:
        return ()
