"""The test corpus: scikit-image's bundled photographs and their encodings. (A module of its
own, not conftest.py, so tests can import it whatever other conftest modules are loaded.)"""

from __future__ import annotations

import io

import numpy as np
import numpy.typing as npt
from PIL import Image
from skimage import data as skdata

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "camera")


def load_photo(name: str) -> npt.NDArray[np.uint8]:
    arr = getattr(skdata, name)()
    if arr.ndim == 2:
        arr = np.stack([arr] * 3, axis=-1)
    return np.ascontiguousarray(arr[..., :3], dtype=np.uint8)


def encode(arr: npt.NDArray[np.uint8], fmt: str, **kw: object) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format=fmt, **kw)
    return buf.getvalue()


def gray_jpeg() -> bytes:
    """A grayscale JPEG straight from the 2-D sample, as a camera would write it."""
    return encode(skdata.camera(), "JPEG", quality=85)
