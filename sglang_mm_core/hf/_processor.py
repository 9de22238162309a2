"""The generic base of every family's transformers image processor.

A family's class inherits from this base and from the HF class it replaces (its PIL backend,
which imports without torch): HF's own code then reads the ``preprocessor_config.json``,
resolves every per-call keyword, serializes and round-trips the processor, and answers the
helpers engines call (``get_number_of_image_patches``, ``merge_size``, ...). This base takes
over at the one point where pixels are made (``_preprocess_image_like_inputs``): the images
become RGB uint8 arrays as HF's pipeline would have them, the resolved keywords become the
family's params, and the family's kernel writes the feature."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt
from pydantic import ValidationError
from transformers.feature_extraction_utils import BatchFeature
from transformers.image_processing_utils import BaseImageProcessor
from transformers.utils.import_utils import is_torch_available, is_torchvision_available

from .._carriers import ProcessedItem, Tensor
from .._family import Family
from .._threads import resolve_threads
from ..errors import KernelArgumentError, SpecError
from ._inputs import Prepared, flatten, prepare

#: The transformers backend name our classes are registered under.
BACKEND = "sglang_mm"

#: Our names of HF's two backends, as a family's ``resample`` param spells them.
Reference = Literal["pil", "aten_u8"]
_REFERENCE_ALIASES = {"pil": "pil", "aten_u8": "aten_u8", "torchvision": "aten_u8"}

# Built families, shared by every processor instance and thread (families are immutable and
# thread-safe); bounded, since per-call overrides can make many.
_FAMILIES: OrderedDict[tuple[type, Any], Family[Any]] = OrderedDict()
_FAMILIES_LOCK = threading.Lock()
_FAMILIES_MAX = 64


def default_reference() -> Reference:
    """The backend ``AutoImageProcessor.from_pretrained(path)`` itself picks here."""
    return "aten_u8" if is_torchvision_available() else "pil"


class ImageProcessor(BaseImageProcessor):
    """Base of a family's drop-in for a transformers image processor.

    Subclass it together with the HF class replaced, this base first::

        class Qwen2VLImageProcessorSglangMm(ImageProcessor, Qwen2VLImageProcessorPil):
            family = QwenVLFamily
            replaces = "Qwen2VLImageProcessor"

    and implement `check_config`, `family_params` and `batch`. The instance equals the HF
    backend named by ``resample="pil"`` or ``"aten_u8"`` (also ``"torchvision"``) at
    construction, else the one transformers would pick in this environment (`reference`);
    HF's filter codes in ``resample`` keep their meaning."""

    #: The sglang-mm family whose kernel makes the pixels.
    family: ClassVar[type[Family[Any]]]
    #: The name of the HF class (its torchvision spelling) this class stands in for.
    replaces: ClassVar[str]
    #: Threads one image may use (None: the product's default pool size); not saved.
    threads: int | None = None

    def __init__(self, **kwargs: Any) -> None:
        reference = kwargs.pop("sglang_mm_resample", None)
        resample = kwargs.get("resample")
        if isinstance(resample, str) and resample in _REFERENCE_ALIASES:
            reference = kwargs.pop("resample")
        if reference is not None and reference not in _REFERENCE_ALIASES:
            raise SpecError(f"resample={reference!r} names no HF backend (use 'pil' or 'aten_u8')")
        type(self).check_config(kwargs)
        super().__init__(**kwargs)
        self.sglang_mm_resample = None if reference is None else _REFERENCE_ALIASES[reference]
        # The configured values must already make a valid family (refused at construction).
        self._family(self._own_settings())

    # -- what a family's class implements ----------------------------------------------

    @classmethod
    def check_config(cls, config: Mapping[str, Any]) -> None:
        """Refuse, with a `SpecError` naming it, every configuration key that would change
        pixels in a way the family cannot reproduce bit for bit (the family's
        ``check_hf_settings`` rule, as its ``spec_from_hf`` applies it)."""
        raise NotImplementedError

    def family_params(self, settings: Mapping[str, Any]) -> Mapping[str, Any]:
        """The family's params for HF's resolved settings of one call (every valid keyword,
        with ``size`` a ``SizeDict``); refuse a value the family cannot honour with a
        `SpecError` naming the keyword."""
        raise NotImplementedError

    def batch(
        self,
        items: Sequence[ProcessedItem],
        images: Sequence[Prepared],
        settings: Mapping[str, Any],
    ) -> dict[str, Any]:
        """The `BatchFeature` data HF returns for these items (numpy arrays; the base turns
        them into ``return_tensors``)."""
        raise NotImplementedError

    # -- what the base provides ---------------------------------------------------------

    @property
    def backend(self) -> str:
        """The HF backend whose answer this instance gives (``"pil"`` or ``"torchvision"``),
        as HF's own classes report theirs: callers read it to know what the answer holds.
        The name it is registered under is `BACKEND`."""
        return "torchvision" if self.reference == "aten_u8" else "pil"

    @property
    def reference(self) -> Reference:
        """The HF backend this instance is bit-exact with."""
        return self.sglang_mm_resample or default_reference()  # type: ignore[return-value]

    def _own_settings(self) -> dict[str, Any]:
        names = getattr(self, "_valid_kwargs_names", None) or list(
            self.valid_kwargs.__annotations__
        )
        return {k: getattr(self, k, None) for k in names}

    def _family(self, settings: Mapping[str, Any]) -> Family[Any]:
        try:
            params = type(self).family.Params.model_validate(dict(self.family_params(settings)))
        except ValidationError as e:
            raise SpecError(f"{type(self).__name__}: settings not valid for the family: {e}") from e
        key = (type(self).family, params)
        with _FAMILIES_LOCK:
            fam = _FAMILIES.get(key)
            if fam is not None:
                _FAMILIES.move_to_end(key)
                return fam
        fam = type(self).family(params)
        with _FAMILIES_LOCK:
            _FAMILIES[key] = fam
            while len(_FAMILIES) > _FAMILIES_MAX:
                _FAMILIES.popitem(last=False)
        return fam

    def _preprocess_image_like_inputs(  # type: ignore[override]
        self, images: Any, *args: Any, **kwargs: Any
    ) -> BatchFeature:
        if args:
            raise SpecError(f"{type(self).__name__} takes images and keywords only")
        family = self._family(kwargs)
        reference = self.reference
        prepared = [
            prepare(
                img,
                do_convert_rgb=bool(kwargs.get("do_convert_rgb")),
                input_data_format=kwargs.get("input_data_format"),
                torchvision=reference == "aten_u8",
                owner=self,
            )
            for img in flatten(images)
        ]
        self._check_rescale(prepared, kwargs)
        threads = max(1, resolve_threads(self.threads))
        items = []
        for i, p in enumerate(prepared):
            try:
                items.append(family.process_item(p.rgb, threads=threads))
            except KernelArgumentError as e:
                raise e.at_item(i, p.kind) from None
        data = self.batch(items, prepared, kwargs)
        tensors = kwargs.get("return_tensors")
        if tensors is None and reference == "aten_u8" and is_torch_available():
            # HF's torchvision backend answers its arrays as torch tensors, in the same lists
            data = {k: _torch_arrays(v) for k, v in data.items()}
        return BatchFeature(data=data, tensor_type=tensors)

    @staticmethod
    def _check_rescale(prepared: Sequence[Prepared], settings: Mapping[str, Any]) -> None:
        """HF multiplies a [0, 1] float image by 255 for PIL and divides the result again;
        with ``do_rescale`` on as well it would divide twice. Only one division is the
        family's table."""
        rescale = bool(settings.get("do_rescale"))
        for i, p in enumerate(prepared):
            if p.prescaled and rescale:
                raise KernelArgumentError(
                    f"image {i}: float values in [0, 1] with do_rescale=True are rescaled twice "
                    "by HF; pass do_rescale=False for such images"
                )
            if not p.prescaled and not rescale:
                raise KernelArgumentError(
                    f"image {i}: do_rescale=False is supported only for float images in [0, 1]"
                )

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["image_processor_type"] = type(self).replaces
        out.pop("threads", None)
        if out.get("sglang_mm_resample") is None:
            out.pop("sglang_mm_resample", None)
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}(reference={self.reference!r}) {self.to_json_string()}"


class PatchRowsImageProcessor(ImageProcessor):
    """Base of the drop-ins for HF's Qwen2-VL-style image processors (Qwen2-VL's, GLM-4.xV's):
    their answer is ``pixel_values`` patch rows concatenated over the batch and
    ``image_grid_thw``, from ``patch_size``, ``merge_size``, ``temporal_patch_size``, ``size``
    (``shortest_edge`` / ``longest_edge``: pixel counts), ``image_mean`` and ``image_std``
    with bicubic and a rescale by 1/255. The family's params take those names
    (``min_pixels`` / ``max_pixels`` for ``size``) plus ``resample``, ``pil_pass_order`` and
    ``strict_layout`` (off: a drop-in lays out no prompt), and each item's aux holds
    ``image_grid_thw``. A subclass sets ``family`` and ``replaces`` and implements
    `check_config`."""

    def family_params(self, settings: Mapping[str, Any]) -> Mapping[str, Any]:
        for key in ("do_resize", "do_normalize"):
            require(settings, key, True)
        check_resample(settings)
        check_rescale_factor(settings)
        size = settings.get("size") or {}
        lo, hi = getattr(size, "shortest_edge", None), getattr(size, "longest_edge", None)
        if not lo or not hi:
            raise SpecError(f"size must hold shortest_edge and longest_edge, got {size}")
        return {
            "patch_size": settings["patch_size"],
            "merge_size": settings["merge_size"],
            "temporal_patch_size": settings["temporal_patch_size"],
            "min_pixels": lo,
            "max_pixels": hi,
            "image_mean": channels(settings["image_mean"], "image_mean"),
            "image_std": channels(settings["image_std"], "image_std"),
            "resample": self.reference,
            "pil_pass_order": installed_pass_order(),
            "strict_layout": False,
        }

    def batch(
        self,
        items: Sequence[ProcessedItem],
        images: Sequence[Prepared],
        settings: Mapping[str, Any],
    ) -> dict[str, Any]:
        if not items:  # HF's concatenation of nothing fails too
            raise KernelArgumentError("no images given")
        return {
            "pixel_values": concat([feature_array(it) for it in items]),
            "image_grid_thw": concat([it.aux["image_grid_thw"].array for it in items]),
        }


def _torch_arrays(value: Any) -> Any:
    """numpy arrays as torch tensors (sharing memory), lists and tuples kept."""
    if isinstance(value, np.ndarray):
        import torch

        return torch.from_numpy(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_torch_arrays(v) for v in value)
    return value


def require(settings: Mapping[str, Any], key: str, want: Any) -> None:
    """Refuse a resolved setting other than ``want``, naming it (None means HF's default)."""
    got = settings.get(key)
    if got is not None and got != want:
        raise SpecError(f"{key}={got!r} is not supported: only {want!r} is reproduced exactly")


def check_resample(settings: Mapping[str, Any], want: int = 3) -> None:
    """Refuse another interpolation than PIL's code ``want`` (3 bicubic, 2 bilinear)."""
    got = settings.get("resample")
    code = getattr(got, "value", got)
    if got is not None and code != want:
        raise SpecError(f"resample={got!r} is not supported: only {want} is reproduced exactly")


def check_rescale_factor(settings: Mapping[str, Any]) -> None:
    """The families' tables rescale by 1/255 exactly."""
    factor = settings.get("rescale_factor")
    if factor is not None and factor != 1 / 255:
        raise SpecError(f"rescale_factor={factor!r} is not supported: only 1/255")


def channels(value: Any, key: str) -> tuple[float, float, float]:
    """A per-channel setting as three floats (HF also takes one number for all three)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (float(value),) * 3
    if isinstance(value, (list, tuple)) and len(value) == 3:
        return (float(value[0]), float(value[1]), float(value[2]))
    raise SpecError(f"{key}={value!r} must be 3 numbers")


def installed_pass_order() -> Literal["pillow13", "pillow12"]:
    """The resampling pass order of the installed Pillow, which HF's PIL backend uses."""
    import PIL

    major = int(PIL.__version__.split(".", 1)[0])
    return "pillow13" if major >= 13 else "pillow12"


def feature_array(item: ProcessedItem) -> npt.NDArray[Any]:
    """An item's full feature (the drop-ins never ask for the compact form)."""
    feature = item.feature
    if not isinstance(feature, Tensor):
        raise TypeError("expected a full feature, got the compact form")
    return feature.array


def parts(items: Sequence[ProcessedItem], settings: Mapping[str, Any]) -> Any:
    """HF's ``pixel_values`` for images that each make several ``[3, S, S]`` parts (crops,
    tiles): every part in one flat list, or, asked for numpy, the parts stacked into one array
    (each item's feature already is its parts stacked, so one image is not copied)."""
    features = [feature_array(it) for it in items]
    tensors = settings.get("return_tensors")
    if str(getattr(tensors, "value", tensors)) == "np":
        return concat(features)
    return [part for f in features for part in f]


def stack(arrays: Sequence[npt.NDArray[Any]]) -> npt.NDArray[Any]:
    """Items' features as one batch array along a new first axis (one item: a view)."""
    arrays = list(arrays)
    if len(arrays) == 1:
        return arrays[0][None]
    return np.stack(arrays, axis=0)


def concat(arrays: Sequence[npt.NDArray[Any]]) -> npt.NDArray[Any]:
    """Items' features concatenated along their first axis (HF's ragged patch batches); one
    item's array is its own (fresh) array, not a copy."""
    arrays = list(arrays)
    if len(arrays) == 1:
        return arrays[0]
    return np.concatenate(arrays, axis=0)


__all__ = [
    "BACKEND",
    "ImageProcessor",
    "PatchRowsImageProcessor",
    "Reference",
    "channels",
    "check_resample",
    "check_rescale_factor",
    "concat",
    "default_reference",
    "feature_array",
    "installed_pass_order",
    "parts",
    "require",
    "stack",
]
