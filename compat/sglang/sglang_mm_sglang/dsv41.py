"""The extension's ``dsv41`` submodule (DeepSeek-V4.1), on the `sglang_mm_deepseek_v41`
plugin: same name, parameters and return value, so SGLang's own ``patchify_image_rust`` runs
on it unchanged. The resize follows Pillow 13 (the pass order of the installed Pillow that
SGLang's PIL reference runs on); the extension keeps Pillow 12's (docs/compat-sglang.md)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ._support import missing_plugin, threads
from .errors import value_errors

try:
    import sglang_mm_deepseek_v41 as _dsv41
except ModuleNotFoundError as e:  # installed without its dependencies
    raise missing_plugin(e, "sglang-mm-deepseek-v41", "dsv41")  # noqa: B904 (the cause is kept)


@value_errors
def resize_patchify(
    arr: npt.NDArray[np.uint8],
    output_size: tuple[int, int],
    resize_size: tuple[int, int],
    padding_start: tuple[int, int],
    patch_size: int,
) -> npt.NDArray[np.uint16]:
    """Flat bfloat16 bits (uint16) ``[(H / ps) * (W / ps) * 3 * ps * ps]`` of an RGB uint8
    ``[h, w, 3]`` image resized (bicubic) to ``resize_size`` ``(rh, rw)`` and pasted at
    ``padding_start`` ``(top, left)`` on a grey (127) ``output_size`` ``(H, W)`` canvas, as
    ``(x / 255 - 0.5) / 0.5``, in ``[n, 3, ps, ps]`` patches, row-major: what
    ``deepseek_v41_image_processing.prepare_image`` plans."""
    return _dsv41.resize_patchify(
        arr, output_size, resize_size, padding_start, patch_size, threads=threads()
    )


__all__ = ["resize_patchify"]
