"""The Kimi family: every image is resized (never up) by the NaViT rule to fit a patch budget
and a per-side cap, zero-padded as uint8 on the right and bottom to a multiple of
``merge_size * patch_size``, normalized, and cut into ``patch_size`` square patches, each three
channel planes (``pixel_values`` ``[patches, 3, 14, 14]``, with ``image_grid_thw``). Its
placeholder ``<|media_pad|>`` becomes one ``<|media_pad|>`` per merged token. The pixels are a
composition of the core's kernels: the bicubic resize, the table of the reference's
normalize, a canvas part whose colour is the sample 0, the `ChwPatches` writer.

Kimi K3 (``generation: "k3"``) lowers the patch budget until the padded grid fits its token
limit, wraps each image in ``<|media_begin|>image WxH<|media_content|>`` ... ``<|media_end|>``,
and refuses, through the core's ``decode.source_modes``, the source modes its checkpoint
resizes or composites apart from that RGB path (`k3`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from sglang_mm_core import plugin as mm

from .k3 import image_ids, source_modes
from .navit import NavitSize, capped_navit_size, check_side_limit, navit_size
from .params import KimiParams
from .video import plan_video

#: The padding: the uint8 sample 0 in every channel, as both references pad (``np.pad`` and
#: torchvision's ``pad`` with fill 0) before normalizing; its value is the table's value of 0.
PAD_COLOUR = (0, 0, 0)


class KimiFamily(mm.Family[KimiParams]):
    name: ClassVar[str] = "kimi"
    # As the checkpoint's media_utils.py loads an image: Image.open(...).convert("RGB") drops
    # alpha and ignores the EXIF orientation. Specs matching transformers' class
    # (resample "aten_u8") set decode {"alpha": "white", "exif_orientation": true}.
    decode_defaults: ClassVar[mm.DecodeDefaults] = mm.DecodeDefaults(
        alpha="drop", exif_orientation=False
    )
    modalities: ClassVar[frozenset[str]] = frozenset({"image", "video"})

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        path = self.params.tokenizer
        self.tokenizer = None if path is None else mm.load_tokenizer(path)
        #: The tokenizer of Kimi K3's image text (None for K2.5, whose images have none).
        self.k3_tokenizer = self.tokenizer if self.params.generation == "k3" else None

    @classmethod
    def decode_defaults_for(cls, params: KimiParams) -> mm.DecodeDefaults:
        """Kimi K3 refuses, before decoding them, the source modes its checkpoint treats
        apart from K2.5's path (`k3.source_modes`)."""
        if params.generation != "k3":
            return cls.decode_defaults
        modes, why = source_modes(params)
        return mm.DecodeDefaults(
            alpha="drop", exif_orientation=False, source_modes=modes, source_modes_reason=why
        )

    def navit(self, width: int, height: int) -> NavitSize:
        """The resized and padded size of an upright ``width x height`` image."""
        p = self.params
        geometry = {
            "patch_size": p.patch_size,
            "merge_size": p.merge_size,
            "max_patches": p.max_patches,
            "max_size_per_side": p.max_size_per_side,
        }
        if p.generation == "k3":
            return capped_navit_size(width, height, **geometry)
        size = navit_size(width, height, **geometry)
        if p.resample == "pil":
            check_side_limit(size, width, height, p.merge_size, p.max_size_per_side)
        return size

    def plan(self, width: int, height: int) -> mm.Plan:
        p = self.params
        size = self.navit(width, height)
        rows, cols = size.grid
        tokens = size.patches // p.merge_size**2
        part = mm.Part(
            (size.width, size.height),
            pad_to=(size.pad_width, size.pad_height),
            fill=PAD_COLOUR,
        )
        pattern: mm.Pattern
        if self.k3_tokenizer is not None:
            pattern = image_ids(p, self.k3_tokenizer, width, height, tokens)
        else:
            pattern = mm.Repeat(p.image_token_id, tokens)
        return mm.Plan(
            pattern, mm.Geometry(size.pad_height, size.pad_width, (1, rows, cols)), (part,)
        )

    def features(self) -> mm.Features:
        p = self.params
        resample, _ = mm.hf_backend(p.resample, "bicubic")
        return mm.Features(
            mm.Table.hf(p.image_mean, p.image_std, p.resample),
            mm.ChwPatches(p.patch_size),
            resample=resample,
        )

    def video_plan(self, video: mm.VideoHeader, options: mm.VideoOptions) -> mm.VideoPlan:
        """transformers' ``Kimi_K25VideoProcessor`` and ``Kimi_K25Processor`` (`video`)."""
        return plan_video(self.params, video, options, self.tokenizer)

    def video_placeholder(self) -> mm.Placeholder:
        """``<|kimi_k25_video_placeholder|>``; without its id the pipeline refuses every video
        with this error, which names the param."""
        token = self.params.video_token_id
        if self.params.generation == "k3":
            raise mm.UnsupportedModalityError(
                "Kimi K3 takes images only (its checkpoint's processor and SGLang's refuse videos)"
            )
        if token is None:
            raise mm.UnsupportedModalityError(
                "Kimi K2.5 videos need the spec param 'video_token_id': the id of "
                "<|kimi_k25_video_placeholder|> in the model's tokenizer"
            )
        return mm.Placeholder(token)

    def aux(self, plan: mm.Plan) -> Mapping[str, mm.Tensor]:
        grid = np.array([plan.geometry.grid], dtype=np.int64)
        return {"image_grid_thw": mm.Tensor(grid, "int64")}

    @classmethod
    def spec_from_hf(
        cls,
        model: mm.ModelDir | str | Path | Mapping[str, Mapping[str, Any]],
        **options: Any,
    ) -> dict[str, Any]:
        """A spec for a HuggingFace model directory (see `sglang_mm_kimi.hf.spec_from_hf`)."""
        from .hf import spec_from_hf

        return spec_from_hf(model, **options)
