"""How transformers finds our classes: registration under the ``sglang_mm`` backend, a loader
that never falls back to HF's own class, and the swap inside a loaded ``ProcessorMixin``."""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from typing import Any

from .._registry import default_registry
from ..errors import PluginError, SpecError
from ._processor import BACKEND, ImageProcessor


def processor_classes() -> list[type[ImageProcessor]]:
    """Every installed family's image processor class (from the plugins' hooks)."""
    out = default_registry().hf_image_processors()
    for cls in out:
        if not (isinstance(cls, type) and issubclass(cls, ImageProcessor)):
            raise PluginError(f"{cls!r} is not a sglang_mm_core.hf.ImageProcessor subclass")
    return out


def _base_name(name: str) -> str:
    for suffix in ("Fast", "Pil"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _mapping_names() -> dict[str, dict[str, Any]]:
    from transformers.models.auto import image_processing_auto as auto

    return dict(getattr(auto, "IMAGE_PROCESSOR_MAPPING_NAMES"))  # noqa: B009 (not re-exported)


def model_types(cls: type[ImageProcessor]) -> list[str]:
    """The model types transformers maps to the HF class ``cls`` replaces."""
    want = cls.replaces
    out = []
    for model_type, classes in _mapping_names().items():
        names = classes.values() if isinstance(classes, dict) else [classes]
        if any(isinstance(n, str) and _base_name(n) == want for n in names):
            out.append(model_type)
    return out


def register() -> dict[str, list[str]]:
    """Register every installed family's class with ``AutoImageProcessor`` under the backend
    ``"sglang_mm"``, for every config class whose model type transformers maps to the class
    it replaces; idempotent. Returns ``{class name: [model types]}``."""
    from transformers import AutoImageProcessor
    from transformers.models.auto import image_processing_auto as auto
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    names = _mapping_names()
    done: dict[str, list[str]] = {}
    for cls in processor_classes():
        types = []
        for model_type in model_types(cls):
            try:
                config_class = CONFIG_MAPPING[model_type]
            except (KeyError, ImportError, AttributeError):
                continue  # a model type whose config this transformers cannot import
            # typed as a (slow, fast) pair; in transformers 5 it is the backend -> class dict
            current: dict[str, Any] = auto.IMAGE_PROCESSOR_MAPPING[config_class]  # type: ignore[assignment]
            if BACKEND in current:
                current[BACKEND] = cls  # ours already (the table holds names: see below)
            else:
                AutoImageProcessor.register(
                    config_class, image_processor_classes={BACKEND: cls}, exist_ok=True
                )
                current = auto.IMAGE_PROCESSOR_MAPPING[config_class]  # type: ignore[assignment]
            _keep_class_names(current, names[model_type])
            types.append(model_type)
        done[cls.__name__] = types
    return done


def _keep_class_names(registered: dict[str, Any], stock: Mapping[str, Any]) -> None:
    """Registering resolves the stock entries to classes; without torchvision its entry
    resolves to the PIL class, and ``from_pretrained`` then no longer finds the mapping by
    the ``image_processor_type`` a config names (it matches class names). Such an entry gets
    its name back, as transformers' own table spells it."""
    for backend, name in stock.items():
        value = registered.get(backend)
        if isinstance(name, str) and isinstance(value, type) and value.__name__ != name:
            registered[backend] = name


def class_for(name: str) -> type[ImageProcessor]:
    """Our class standing in for the HF image processor class ``name`` (any backend's
    spelling), or a `PluginError` listing the installed ones."""
    want = _base_name(name)
    classes = processor_classes()
    for cls in classes:
        if cls.replaces == want:
            return cls
    have = ", ".join(sorted(c.replaces for c in classes)) or "none"
    raise PluginError(
        f"no installed sglang-mm family replaces {name}; installed replacements: {have}"
    )


def _hf_class_name(path: str | os.PathLike[str], kwargs: dict[str, Any]) -> str:
    from transformers.image_processing_base import ImageProcessingMixin

    try:
        config, _ = ImageProcessingMixin.get_image_processor_dict(os.fspath(path), **kwargs)
    except OSError as e:
        raise SpecError(f"cannot read the image processor config of {path}: {e}") from e
    kind = config.get("image_processor_type")
    if isinstance(kind, str):
        return kind
    from transformers import AutoConfig

    try:
        model_type = AutoConfig.from_pretrained(os.fspath(path), **kwargs).model_type
    except (OSError, ValueError) as e:
        raise SpecError(f"{path} names no image_processor_type and has no config: {e}") from e
    classes = _mapping_names().get(model_type)
    names = list(classes.values()) if isinstance(classes, dict) else []
    for n in names:
        if isinstance(n, str):
            return n
    raise SpecError(f"{path}: transformers maps model type {model_type!r} to no image processor")


def image_processor(path: str | os.PathLike[str], **kwargs: Any) -> ImageProcessor:
    """Our image processor for the model at ``path`` (a directory or a hub id in the local
    cache), built as ``AutoImageProcessor.from_pretrained(path, **kwargs)`` would build HF's;
    a `PluginError` when no installed family replaces its class: never HF's own class."""
    keys = ("cache_dir", "revision", "token", "local_files_only")
    hub: dict[str, Any] = {k: kwargs[k] for k in keys if k in kwargs}
    cls = class_for(_hf_class_name(path, hub))
    return cls.from_pretrained(path, **kwargs)


def accelerate(processor: Any) -> Any:
    """A shallow copy of a loaded transformers ``ProcessorMixin`` whose ``image_processor``
    is ours, built from the stock one's settings and bit-exact with its backend; everything
    else (tokenizer, video processor, chat template) is the same object. The stock processor
    is left as it was."""
    stock = getattr(processor, "image_processor", None)
    if stock is None:
        raise PluginError(f"{type(processor).__name__} has no image_processor to replace")
    if isinstance(stock, ImageProcessor):
        return processor
    cls = class_for(type(stock).__name__)
    settings = stock.to_dict()
    settings.pop("image_processor_type", None)
    backend = getattr(stock, "backend", None)
    settings["sglang_mm_resample"] = "aten_u8" if backend == "torchvision" else "pil"
    ours = cls(**settings)
    out = copy.copy(processor)
    out.image_processor = ours
    return out


__all__ = [
    "accelerate",
    "class_for",
    "image_processor",
    "model_types",
    "processor_classes",
    "register",
]
