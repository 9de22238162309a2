"""What a transformers image processor is handed, as the RGB uint8 arrays our kernels take.

Every input form HF accepts is turned into the samples HF's own pipeline would resize, by HF's
own conversion code where the input is already decoded (a PIL image, an array, a tensor): so the
alpha, palette and channel rules are HF's by construction. Encoded bytes and paths, which HF
cannot take, go through our decoder instead and never touch PIL."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..common import as_rgb, base64_decode, image_decode_rgb
from ..errors import KernelArgumentError

_SOURCES = (bytes, bytearray, memoryview, str, os.PathLike)


@dataclass(frozen=True)
class Prepared:
    """One image as the kernels take it. ``prescaled`` says HF would have multiplied it by 255
    to make it PIL-able and divides the resized result by 255 again, which stands in for its
    ``do_rescale``."""

    rgb: npt.NDArray[np.uint8]
    prescaled: bool = False
    kind: str = "array"


def _is_pil(x: Any) -> bool:
    mod = type(x).__module__
    return mod.startswith("PIL.") and hasattr(x, "getbands")


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "numpy")


def _is_image(x: Any) -> bool:
    return isinstance(x, (np.ndarray, *_SOURCES)) or _is_pil(x) or _is_torch(x)


def _ndim(x: Any) -> int | None:
    if isinstance(x, np.ndarray) or _is_torch(x):
        return int(x.ndim)
    return None


def flatten(images: Any) -> list[Any]:
    """HF's ``make_flat_list_of_images``: one image, a list of them, a list of lists (one per
    prompt), or a 4-D batch array, as one flat list in order; encoded sources count as
    images. An empty list stays empty: what a batch of no images is, is the family's
    answer (`ImageProcessor.batch`), as it is HF's."""

    def one(x: Any) -> list[Any]:
        if not _is_image(x):
            raise KernelArgumentError(
                f"unsupported image type {type(x).__name__}: expected a PIL image, a numpy "
                "array, a torch tensor, encoded bytes or a path"
            )
        nd = _ndim(x)
        if nd == 4:
            return list(x)
        if nd is not None and nd not in (2, 3):
            raise KernelArgumentError(f"an image array must have 2, 3 or 4 dimensions, not {nd}")
        return [x]

    if isinstance(images, (list, tuple)):
        out: list[Any] = []
        for entry in images:
            if isinstance(entry, (list, tuple)):
                for x in entry:
                    out.extend(one(x))
            else:
                out.extend(one(entry))
        return out
    return one(images)


def _decode(data: bytes | bytearray | memoryview, kind: str) -> Prepared:
    # HF's load_image: EXIF orientation applied, then convert("RGB") (alpha dropped).
    return Prepared(image_decode_rgb(data, alpha="drop", exif_orientation=True), kind=kind)


def _source(x: Any) -> Prepared:
    if isinstance(x, (bytes, bytearray, memoryview)):
        return _decode(x, "bytes")
    path = os.fspath(x)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if path.startswith(("http://", "https://")):
        from transformers.image_utils import load_image

        return _pil(load_image(path), do_convert_rgb=True)
    if isinstance(x, os.PathLike) or os.path.isfile(path):
        try:
            data = Path(path).read_bytes()
        except OSError as e:
            raise KernelArgumentError(f"cannot read image file {path!r}: {e}") from None
        return _decode(data, "path")
    text = path.split(",", 1)[1] if path.startswith("data:image/") else path
    try:
        data = base64_decode(text)
    except Exception as e:
        shown = path if len(path) <= 60 else path[:57] + "..."
        raise KernelArgumentError(
            f"image source {shown!r} is not a file, an http(s) URL, a data: URL or base64: {e}"
        ) from None
    return _decode(data, "base64")


def _rgb_samples(img: Any) -> npt.NDArray[np.uint8]:
    """An RGB PIL image's samples as ``[h, w, 3]`` uint8: Pillow's own raw encoder (what
    ``tobytes`` and so ``np.asarray`` run, 64 KiB at a time, then join and copy) writing the
    whole image in one piece, a third of ``np.asarray``'s time on a 12 MP image. Same bytes
    by construction; ``np.asarray`` where this Pillow lacks the encoder entry point."""
    img.load()
    w, h = img.size
    try:
        from PIL.Image import _getencoder

        encoder = _getencoder("RGB", "raw", "RGB")
        encoder.setimage(img.im, (0, 0, w, h))
        chunks = []
        while True:
            _, status, data = encoder.encode(max(65536, w * h * 3))
            chunks.append(data)
            if status:
                break
    except (ImportError, AttributeError, TypeError, ValueError):
        return as_rgb(np.asarray(img))
    if status < 0 or w * h == 0:
        return as_rgb(np.asarray(img))
    buf = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    return np.frombuffer(buf, dtype=np.uint8).reshape(h, w, 3)


def _pil(img: Any, *, do_convert_rgb: bool) -> Prepared:
    if img.mode == "RGB" and img.info.get("transparency") is None:
        return Prepared(_rgb_samples(img), kind="pil")
    if not do_convert_rgb:
        raise KernelArgumentError(
            f"a {img.mode} PIL image needs do_convert_rgb=True: with it off HF keeps the mode, "
            "and only RGB samples are processed"
        )
    from transformers.image_transforms import convert_to_rgb

    return Prepared(as_rgb(convert_to_rgb(img, return_numpy=True)), kind="pil")


def _array(
    x: Any, *, do_convert_rgb: bool, input_data_format: Any, torchvision: bool, owner: Any
) -> Prepared:
    arr = x.detach().cpu().numpy() if _is_torch(x) else np.asarray(x)
    if torchvision:
        return _array_torchvision(arr, input_data_format, do_convert_rgb)
    # HF's PIL backend: its own process_image (channels first, RGB), then the uint8 round trip
    # its resize makes through PIL (to_pil_image: scaled by 255 when the values are in [0, 1]).
    from transformers.image_processing_backends import PilBackend
    from transformers.image_transforms import _rescale_for_pil_conversion, rescale

    try:
        chw = PilBackend.process_image(
            owner, arr, do_convert_rgb=do_convert_rgb, input_data_format=input_data_format
        )
        if chw.shape[0] != 3:
            raise KernelArgumentError(
                f"an image with {chw.shape[0]} channel(s) needs do_convert_rgb=True"
            )
        prescaled = bool(_rescale_for_pil_conversion(chw))  # type: ignore[no-untyped-call]
    except ValueError as e:
        raise KernelArgumentError(f"image array {arr.dtype} {list(arr.shape)}: {e}") from None
    hwc = np.moveaxis(chw, 0, -1)
    if prescaled:
        hwc = rescale(hwc, 255)
    return Prepared(np.ascontiguousarray(hwc.astype(np.uint8)), prescaled, kind="array")


def _array_torchvision(
    arr: npt.NDArray[Any], input_data_format: Any, do_convert_rgb: bool
) -> Prepared:
    # The torchvision backend resizes float tensors in float: only uint8 is the kernel's; a
    # grey image is repeated to RGB as tvF.grayscale_to_rgb does. Its RGBA composite runs in
    # torch's float32 and is not reproduced.
    if arr.dtype != np.uint8:
        raise KernelArgumentError(
            f"a {arr.dtype} image array is resized in floating point by HF's torchvision "
            "backend, which this processor does not reproduce: pass uint8, a PIL image, or use "
            "the PIL reference (resample='pil')"
        )
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim == 3:
        fmt = str(getattr(input_data_format, "value", input_data_format) or "")
        if not fmt:
            fmt = "channels_first" if arr.shape[0] in (1, 3, 4) else "channels_last"
        hwc = np.moveaxis(arr, 0, -1) if fmt == "channels_first" else arr
        if hwc.shape[2] == 1 and do_convert_rgb:
            hwc = np.repeat(hwc, 3, axis=2)
        if hwc.shape[2] == 3:
            return Prepared(np.ascontiguousarray(hwc))
    raise KernelArgumentError(
        f"under the torchvision reference an image array must be uint8 RGB or grey (with "
        f"do_convert_rgb), [h, w, c] or [c, h, w], got {list(arr.shape)}"
    )


def prepare(
    x: Any,
    *,
    do_convert_rgb: bool,
    input_data_format: Any = None,
    torchvision: bool = False,
    owner: Any = None,
) -> Prepared:
    """One flat-list entry as RGB uint8 ``[h, w, 3]``, as HF's pipeline would have it before
    its resize."""
    if isinstance(x, _SOURCES):
        return _source(x)
    if _is_pil(x):
        return _pil(x, do_convert_rgb=do_convert_rgb)
    return _array(
        x,
        do_convert_rgb=do_convert_rgb,
        input_data_format=input_data_format,
        torchvision=torchvision,
        owner=owner,
    )


__all__ = ["Prepared", "flatten", "prepare"]
