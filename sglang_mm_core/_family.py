"""The plugin contract: what a model family describes. A family says what one image becomes
from its upright size alone (`Family.plan`) and how its pixels become the feature
(`Family.features`, composed by the core or written by the family's own `Family.kernel`);
the driver runs the request and derives everything else (token counts, the layout, the
compact form) from those two answers."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Generic,
    Literal,
    NamedTuple,
    TypeAlias,
    TypeVar,
    get_args,
    get_origin,
)

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, field_validator

from ._carriers import ProcessedItem, Tensor
from ._features import Features, Table, Writer
from ._layout import (
    Expanded,
    Repeat,
    TokenLayout,
    apply_layout,
    layout_by_placeholder,
    layout_by_placeholder_patterns,
)
from ._plan import Placeholder, Plan
from ._positions import MRope, Rope1D
from ._source_mode import canonical_source_modes
from .errors import MmRequestError, PluginError

if TYPE_CHECKING:
    from . import _native
    from ._carriers import Geometry
    from ._hf import ModelDir
    from ._video import VideoHeader
    from ._video_items import VideoOptions, VideoPlan


class DecodeDefaults(BaseModel):
    """A family's reference decode behaviour, used where the spec's ``decode`` is silent.

    ``source_modes``: the source modes (`SOURCE_MODES` labels: Pillow's mode, with
    ``+transparency``) whose images the family reproduces; the driver refuses the others
    before decoding them, with a `DecodeError` naming the mode and ``source_modes_reason``.
    None accepts every image."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    alpha: Literal["white", "drop"] = "white"
    exif_orientation: bool = True
    source_modes: tuple[str, ...] | None = None
    source_modes_reason: str | None = None

    @field_validator("source_modes")
    @classmethod
    def _known_modes(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if value is None else canonical_source_modes(value)


class FamilyParams(BaseModel):
    """Base of every family's ``Params``: unknown fields are rejected, values are frozen."""

    model_config = ConfigDict(frozen=True, extra="forbid")


#: An image size ``(width, height)``, as the conformance hooks list them.
Size: TypeAlias = tuple[int, int]

#: ``(width, height)`` of the images the conformance suite generates by default: 1x1, odd sizes,
#: aspect ratios up to 200:1 both ways, and a large photo-sized one.
DEFAULT_CONFORMANCE_SIZES: tuple[Size, ...] = (
    (1, 1),
    (2, 1),
    (1, 3),
    (7, 5),
    (33, 17),
    (200, 1),
    (1, 200),
    (641, 479),
    (2048, 1536),
)

P = TypeVar("P", bound=FamilyParams)

#: The numpy dtype of each feature dtype tag (bfloat16 travels as its uint16 bits).
_NUMPY_DTYPE = {"float32": np.float32, "bfloat16": np.uint16}


class _Built(NamedTuple):
    """What a family's declarations compile to, once per instance."""

    features: Features
    recipe: Any  # the native recipe, or None for a family's own kernel
    placeholder: Placeholder


class Family(ABC, Generic[P]):
    """Subclass per model family, typed by its params: ``class MyFamily(Family[MyParams])``
    (``Params`` is taken from the type argument). Instances are built by the pipeline from
    validated params and must be safe to call from many threads at once.

    A family implements `plan` and `features`; optionally `placeholder`, `aux`, `positions`,
    `kernel` (its own Rust kernel), `spec_from_hf` and the conformance sizes."""

    name: ClassVar[str]
    Params: ClassVar[type[FamilyParams]]
    decode_defaults: ClassVar[DecodeDefaults] = DecodeDefaults()
    #: The modalities a request may bring this family; the driver refuses the others.
    modalities: ClassVar[frozenset[str]] = frozenset({"image"})
    #: Whether a request without any image is refused.
    requires_images: ClassVar[bool] = False

    params: P

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "Params" in cls.__dict__:
            return
        for base in getattr(cls, "__orig_bases__", ()):
            if get_origin(base) is Family:
                (arg,) = get_args(base)
                if isinstance(arg, type) and issubclass(arg, FamilyParams):
                    cls.Params = arg

    def __init__(self, params: FamilyParams | Mapping[str, Any] | None = None) -> None:
        """Keep ``params`` as this family's `Params`: an instance as it is; another
        `FamilyParams` or a mapping validated (None: the defaults), so that a family built by
        hand gets the checks of one built from a spec."""
        cls = type(self).Params
        if not isinstance(params, cls):
            raw = params.model_dump() if isinstance(params, FamilyParams) else dict(params or {})
            params = cls.model_validate(raw)
        self.params = params  # type: ignore[assignment]
        self._built: _Built | None = None

    # -- what a family describes ----------------------------------------------------------

    @abstractmethod
    def plan(self, width: int, height: int) -> Plan:
        """What an upright ``width x height`` image becomes: its placeholder's tokens, its
        geometry and the parts its pixels are cut into. Pure and cheap: token counting calls
        it with sizes read from headers, and processing with the decoded size, so the two
        agree by construction. Refuse a size by design with a `KernelArgumentError` (an
        `MmRequestError`) naming it."""

    @abstractmethod
    def features(self) -> Features:
        """How the pixels become the feature: the table, the writer and (when the core
        composes it) the resampler. Called once per instance."""

    def kernel(
        self, image: npt.NDArray[np.uint8], plan: Plan, *, codes: bool, threads: int
    ) -> npt.NDArray[Any]:
        """The family's own kernel, for a feature the core cannot compose (`Features`
        without ``resample``): the writer's output for ``image`` and ``plan``, the table's
        values or (``codes``) the uint8 samples themselves, with the GIL released and at most
        ``threads`` threads. Build the table in Rust from the same constants
        (``mm_kernels::features::Table``) so the compact form expands to the full one."""
        raise NotImplementedError(
            f"family {self.name!r} declares no resample in features() and no kernel()"
        )

    @classmethod
    def decode_defaults_for(cls, params: P) -> DecodeDefaults:
        """The decode defaults of a spec with these validated ``params`` (`decode_defaults`
        unless the family overrides this): for a family whose params select references that
        decode differently, e.g. one that accepts fewer source modes."""
        return cls.decode_defaults

    def placeholder(self) -> Placeholder:
        """The prompt token each item replaces (``params.image_token_id`` by default) and
        the ids that must surround it."""
        token = getattr(self.params, "image_token_id", None)
        if not isinstance(token, int):
            raise PluginError(
                f"family {self.name!r} has no params.image_token_id: override placeholder()"
            )
        return Placeholder(token)

    def video_plan(self, video: VideoHeader, options: VideoOptions) -> VideoPlan:
        """What a video becomes, from its header and the request's options for it (a family
        whose ``modalities`` hold ``"video"`` implements it): the frames to sample, the one
        size they are resized to, its tokens and aux. Pure and cheap, like `plan`: token
        counting calls it with the header alone. Refuse an option or a video by design with a
        `KernelArgumentError` naming it."""
        raise NotImplementedError(f"family {self.name!r} declares no video_plan")

    def video_placeholder(self) -> Placeholder:
        """The prompt token each video replaces, and the ids that must surround it."""
        raise PluginError(f"family {self.name!r} takes videos but has no video_placeholder()")

    def video_features(self) -> Features:
        """How a video's frames become its feature (`features` by default): a core resampler,
        a table and a writer that lays out a time axis (`Writer.video`)."""
        return self.features()

    def aux(self, plan: Plan) -> Mapping[str, Tensor]:
        """Auxiliary tensors of an item (named as HF names them, e.g. ``image_grid_thw``)."""
        return {}

    def positions(
        self,
        length: int,
        offsets: Sequence[tuple[int, int]],
        geometries: Sequence[Geometry],
        input_ids: npt.NDArray[np.int64],
    ) -> Rope1D | MRope:
        """Position ids of the expanded prompt; plain RoPE unless the family overrides it."""
        return Rope1D(length)

    @classmethod
    def spec_from_hf(
        cls, model: ModelDir | str | Path | Mapping[str, Mapping[str, Any]], **options: Any
    ) -> dict[str, Any]:
        """A spec document for a HuggingFace model directory (every JSON file it holds, as a
        `ModelDir`, a path or a mapping of file names to parsed files); refuses, with a
        `SpecError` naming it, whatever it cannot match bit for bit."""
        raise NotImplementedError(f"family {cls.name!r} has no spec_from_hf")

    def accepted_conformance_sizes(self) -> tuple[Size, ...]:
        """Image sizes ``(width, height)`` the conformance suite must see processed under
        these params (`DEFAULT_CONFORMANCE_SIZES` unless overridden)."""
        return DEFAULT_CONFORMANCE_SIZES

    def rejected_conformance_sizes(self) -> tuple[Size, ...]:
        """Image sizes these params refuse by design; the conformance suite checks each fails
        with an `MmRequestError`, not a crash."""
        return ()

    # -- what the core derives ------------------------------------------------------------

    @property
    def offers_compact(self) -> bool:
        """Whether items have a compact form: always, when the feature is a table."""
        return self._compiled().features.table is not None

    def process_item(
        self, image: npt.NDArray[np.uint8], *, threads: int = 1, compact: bool = False
    ) -> ProcessedItem:
        """One decoded RGB uint8 ``[h, w, 3]`` image through the plan of its size and the
        feature pipeline: the item the driver would make of it, the feature as a
        `CompactTensor` under ``compact``. The result does not depend on ``threads``."""
        from .common import as_rgb

        img = as_rgb(image)
        return self._process(
            img, self.checked_plan(int(img.shape[1]), int(img.shape[0])), threads, compact
        )

    def checked_plan(self, width: int, height: int) -> Plan:
        """`plan`, with its answer checked to be a `Plan` (else a `PluginError`)."""
        got = self.plan(width, height)
        if not isinstance(got, Plan):
            raise PluginError(
                f"family {self.name!r}: plan returned {type(got).__name__}, not a Plan"
            )
        return got

    def example_prompt(self, n_images: int) -> list[int]:
        """A minimal valid prompt for ``n_images`` images: text ids around one placeholder
        per image, inside its markers (the conformance suite and the demos use it)."""
        ph = self._compiled().placeholder
        marks = () if ph.between is None else ph.between
        used = {ph.token, *marks}
        text = next(t for t in range(1, 5) if t not in used)
        per = (*marks[:1], ph.token, *marks[1:], text)
        return [text, text] + [tok for _ in range(n_images) for tok in per]

    def expand(self, input_ids: npt.ArrayLike, plans: Sequence[Plan]) -> Expanded:
        """The prompt expanded around items of these plans (the driver's layout): each
        placeholder replaced by its item's tokens, with the items' inclusive offsets; a
        `LayoutError` when the placeholders do not fit the items."""
        ids = np.ascontiguousarray(input_ids, dtype=np.int64).reshape(-1)
        return apply_layout(ids, self.layout(ids, plans), len(plans))

    def layout(self, input_ids: npt.NDArray[np.int64], plans: Sequence[Plan]) -> TokenLayout:
        """The `TokenLayout` of `expand` (runs of the placeholder itself take the native fast
        path). Derived from `placeholder` and the plans; not a hook."""
        ph = self._compiled().placeholder
        patterns = [p.tokens for p in plans]
        if all(type(t) is Repeat and t.token == ph.token for t in patterns):
            counts = [t.count for t in patterns]  # type: ignore[union-attr]
            return layout_by_placeholder(input_ids, ph.token, counts, between=ph.between)
        return layout_by_placeholder_patterns(input_ids, ph.token, patterns, between=ph.between)

    def _compiled(self) -> _Built:
        built = self._built
        if built is None:
            features = self._checked_features(self.features(), "features")
            placeholder = self.placeholder()
            if not isinstance(placeholder, Placeholder):
                raise PluginError(
                    f"family {self.name!r}: placeholder() returned "
                    f"{type(placeholder).__name__}, not a Placeholder"
                )
            built = _Built(features, features.recipe(), placeholder)
            self._built = built
        return built

    def _checked_features(self, features: Any, hook: str) -> Features:
        """What a features hook returned, checked to be `Features` with a writer (and a
        `Table`, when it has one), else a `PluginError` naming the hook."""
        if not isinstance(features, Features) or not isinstance(features.writer, Writer):
            raise PluginError(
                f"family {self.name!r}: {hook}() returned {type(features).__name__}, "
                "not Features with a writer"
            )
        if features.table is not None and not isinstance(features.table, Table):
            raise PluginError(f"family {self.name!r}: {hook}().table is not a Table")
        return features

    def _video_compiled(self) -> tuple[Features, Any]:
        """The video features and their native recipe, built once."""
        got: tuple[Features, Any] | None = self.__dict__.get("_video_built")
        if got is None:
            features = self._checked_features(self.video_features(), "video_features")
            got = (features, features.recipe())
            self.__dict__["_video_built"] = got
        return got

    def _check_kernel_output(self, out: Any, plan: Plan, compact: bool) -> None:
        """A family kernel's output must hold what its writer lays out for the plan."""
        f = self._compiled().features
        want_dtype = np.dtype(np.uint8 if compact else _NUMPY_DTYPE[f.dtype])
        shape = f.writer.shape(plan)
        size = f.writer.kernel_size(plan, compact)
        if not isinstance(out, np.ndarray) or out.dtype != want_dtype or out.size != size:
            got = (
                f"{out.dtype} array of {out.size} values"
                if isinstance(out, np.ndarray)
                else type(out).__name__
            )
            raise PluginError(
                f"family {self.name!r}: kernel returned a {got}; its writer lays out "
                f"{size} {want_dtype} values for shape {shape}"
            )

    def _process(
        self,
        image: npt.NDArray[np.uint8],
        plan: Plan,
        threads: int,
        compact: bool,
        cancel: _native.CancelFlag | None = None,
    ) -> ProcessedItem:
        """The item of ``image``; ``cancel`` (the request's flag) stops the core's feature
        kernel between bands (a family kernel runs to its end)."""
        b = self._compiled()
        f = b.features
        table = f.table
        if compact and table is None:
            raise MmRequestError(f"family {self.name!r} does not offer the compact form")
        if b.recipe is not None:
            assert table is not None
            parts = [p._native() for p in plan.parts]
            out = b.recipe.run(image, parts, table._native, compact, max(1, threads), cancel=cancel)
        else:
            out = self.kernel(image, plan, codes=compact, threads=max(1, threads))
            self._check_kernel_output(out, plan, compact)
        return self._item(out, plan, compact)

    def _process_encoded(
        self,
        data: bytes | bytearray | memoryview,
        size: tuple[int, int],
        plan: Plan,
        decode: Mapping[str, Any],
        threads: int,
        compact: bool,
        cancel: _native.CancelFlag | None = None,
    ) -> ProcessedItem:
        """The item of the encoded image ``data``, whose upright ``size`` the header gave
        (``_native.image_stream_size``) and ``plan`` was made for, decoded as ``decode`` (the
        driver's decode options and limits) says straight into the core's composition: with
        threads to spare, the row bands start while the rest of the image is decoded. The same
        item, bit for bit, as `_process` of the decoded image. Only for a family whose feature
        the core composes (``features().resample`` set)."""
        b = self._compiled()
        table = b.features.table
        if b.recipe is None or table is None:
            raise PluginError(f"family {self.name!r}: its feature is not composed by the core")
        parts = [p._native() for p in plan.parts]
        out = b.recipe.run_encoded(
            data, size, parts, table._native, compact, max(1, threads), cancel, **decode
        )
        return self._item(out, plan, compact)

    def _item(self, out: npt.NDArray[Any], plan: Plan, compact: bool) -> ProcessedItem:
        """The flat output of the feature for ``plan``, shaped by the writer (the compact form
        from the table), with the family's aux."""
        f = self._compiled().features
        if compact:
            assert f.table is not None
            feature: Any = f.writer.compact(out, plan, f.table)
        else:
            feature = f.writer.full(out, plan, f.dtype)
        return ProcessedItem(feature, self.aux(plan), plan.geometry, plan)


__all__ = [
    "DEFAULT_CONFORMANCE_SIZES",
    "DecodeDefaults",
    "Family",
    "FamilyParams",
    "Size",
]
