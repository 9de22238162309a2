"""sglang-mm inside transformers: every installed family's image processor as a transformers
backend named ``"sglang_mm"``, returning HF's `BatchFeature` bit for bit (needs the extra
``sglang-mm-core[transformers]``).

    import sglang_mm_core.hf as mmhf

    mmhf.register()
    ip = AutoImageProcessor.from_pretrained(path, backend="sglang_mm")
    # or, never falling back to HF's class:
    ip = mmhf.image_processor(path)
    # or a whole processor (tokenizer and all), with only its image processor swapped:
    processor = mmhf.accelerate(AutoProcessor.from_pretrained(path))

Family authors subclass `ImageProcessor` (or `PatchRowsImageProcessor`, for Qwen2-VL-style
processors; docs/plugins.md) and offer the class through the
``sglang_mm_hf_image_processors`` hook."""

from __future__ import annotations

try:
    import transformers as _transformers  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised in a venv without the extra
    raise ImportError(
        "sglang_mm_core.hf needs transformers: pip install 'sglang-mm-core[transformers]'"
    ) from e

from ._inputs import Prepared
from ._processor import (
    BACKEND,
    ImageProcessor,
    PatchRowsImageProcessor,
    Reference,
    channels,
    check_resample,
    check_rescale_factor,
    concat,
    default_reference,
    feature_array,
    installed_pass_order,
    parts,
    require,
    stack,
)
from ._register import (
    accelerate,
    class_for,
    image_processor,
    model_types,
    processor_classes,
    register,
)

__all__ = [
    "BACKEND",
    "ImageProcessor",
    "PatchRowsImageProcessor",
    "Prepared",
    "Reference",
    "accelerate",
    "channels",
    "check_resample",
    "check_rescale_factor",
    "class_for",
    "concat",
    "default_reference",
    "feature_array",
    "image_processor",
    "installed_pass_order",
    "model_types",
    "parts",
    "processor_classes",
    "register",
    "require",
    "stack",
]
