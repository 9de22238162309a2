"""The Kimi family (`kimi`): Kimi K2.5's NaViT resize (a patch budget, a per-side cap, never
upscaled), zero padding to whole merged tokens, and 14x14 channel-first patches, bit-exact
with the checkpoint's own processor (Pillow) or transformers' (torchvision); videos as
transformers' ``Kimi_K25VideoProcessor``, in chunks of 4 frames with their timestamps."""

from .family import KimiFamily
from .navit import NavitSize, navit_size
from .params import KimiParams, MaxSize, checkpoint_table

__all__ = ["KimiFamily", "KimiParams", "MaxSize", "NavitSize", "checkpoint_table", "navit_size"]
