"""The transformers drop-in ``Kimi_K25ImageProcessorSglangMm``. transformers has
``Kimi_K25ImageProcessor`` for its torchvision backend only, so the plugin offers the drop-in
exactly where torchvision is installed. Without it (CI) nothing is offered and nothing is
replaced; with it (the torch venv: ``pytest plugins/kimi/tests/test_kimi_transformers.py``
there, and bench/check_transformers_torchvision.py on every input form) the drop-in equals the
real class bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from _kimi_corpus import make_input
from transformers.utils.import_utils import is_torchvision_available

import sglang_mm_core.hf as mmhf
from sglang_mm_core.errors import PluginError, SpecError


def _ours() -> list[type]:
    return [c for c in mmhf.processor_classes() if c.replaces == "Kimi_K25ImageProcessor"]


def test_offered_exactly_where_transformers_has_the_class() -> None:
    if not is_torchvision_available():
        assert _ours() == []
        with pytest.raises(PluginError, match="Kimi_K25ImageProcessor"):
            mmhf.class_for("Kimi_K25ImageProcessor")
        return
    from transformers import Kimi_K25ImageProcessor

    from sglang_mm_core.conformance.hf import assert_batch_features_equal

    (cls,) = _ours()
    assert "kimi_k25" in mmhf.model_types(cls)
    ours, ref = cls(), Kimi_K25ImageProcessor()
    images = [
        make_input({"mosaic": ["coffee.webp", 2600, 1900]}),
        make_input({"noise": [9, 40, 1]}),
    ]
    for tensors in (None, "np", "pt"):
        assert_batch_features_equal(
            ours(images, return_tensors=tensors), ref(images, return_tensors=tensors)
        )
    small = {"max_patches": 1024, "size": {"max_height": 256, "max_width": 256}}
    assert_batch_features_equal(
        ours(images, return_tensors="np", **small), ref(images, return_tensors="np", **small)
    )
    assert ours.get_number_of_image_patches(1080, 1920) == ref.get_number_of_image_patches(
        1080, 1920
    )
    with pytest.raises(SpecError, match="no PIL backend"):
        cls(resample="pil")(images[1])
    with pytest.raises(SpecError, match="do_normalize"):
        ours(images[1], do_normalize=False)
    assert np.asarray(ours(images[1], return_tensors="np")["image_grid_thw"]).tolist() == [
        [1, 4, 2]
    ]
