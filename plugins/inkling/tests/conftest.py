"""Shared fixtures of the Inkling plugin tests: the real-photo corpus and its encodings."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from inkling_corpus import PHOTOS, encode, gray_jpeg, load_photo


@pytest.fixture(scope="session")
def photos() -> dict[str, npt.NDArray[np.uint8]]:
    return {name: load_photo(name) for name in PHOTOS}


@pytest.fixture(scope="session")
def photo_jpegs(photos: dict[str, npt.NDArray[np.uint8]]) -> dict[str, bytes]:
    out = {name: encode(arr, "JPEG", quality=90) for name, arr in photos.items()}
    out["camera_gray"] = gray_jpeg()
    return out


@pytest.fixture(scope="session")
def photo_pngs(photos: dict[str, npt.NDArray[np.uint8]]) -> dict[str, bytes]:
    return {name: encode(arr, "PNG") for name, arr in photos.items()}
