"""The Kimi family (`kimi`): Kimi K2.5's NaViT resize (a patch budget, a per-side cap, never
upscaled), zero padding to whole merged tokens, and 14x14 channel-first patches, bit-exact
with the checkpoint's own processor (Pillow) or transformers' (torchvision); videos as
transformers' ``Kimi_K25VideoProcessor``, in chunks of 4 frames with their timestamps; Kimi K3's
images (its budget loop, its ``image WxH`` text, the source modes it serves bit for bit)."""

from .family import KimiFamily
from .navit import NavitSize, capped_navit_size, navit_size
from .params import KimiParams, MaxSize, TransparentBgConfig, checkpoint_table

__all__ = [
    "KimiFamily",
    "KimiParams",
    "MaxSize",
    "NavitSize",
    "TransparentBgConfig",
    "capped_navit_size",
    "checkpoint_table",
    "navit_size",
]
