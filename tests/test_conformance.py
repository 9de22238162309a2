"""The conformance suite: it passes on the toy families (the helper used as a plugin author
would), catches broken families check by check, and runs through its pytest plugin and
`sglang-mm conformance` on a really installed (entry point) family."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from core_helpers import toy_env
from pydantic import ConfigDict, Field
from sglang_mm_toy import ToyFamily, ToyMRopeFamily, ToyParams

from sglang_mm_core import (
    Family,
    FamilyParams,
    Geometry,
    KernelArgumentError,
    LayoutError,
    MRope,
    ProcessedItem,
    Registry,
    Rope1D,
    Tensor,
    layout_by_placeholder,
)
from sglang_mm_core.conformance import (
    ALL_CHECKS,
    ConformanceTarget,
    checks_for,
    encode_png,
    generated_image,
    iter_checks,
    parametrize_with_checks,
)
from sglang_mm_core.conformance import checks as C


@parametrize_with_checks([ToyFamily, ToyMRopeFamily])
def test_toy_families_conform(target: ConformanceTarget, check: C.Check) -> None:
    check(target)


def test_which_checks_apply() -> None:
    toy = [c for _, c in iter_checks(ToyFamily)]
    mrope = [c for _, c in iter_checks(ToyMRopeFamily)]
    assert C.check_entry_point not in toy  # registered in-process, not installed
    assert C.check_rejected_sizes in toy and C.check_rejected_sizes not in mrope
    # The toy families do not offer the compact form, so its check does not apply to them.
    assert set(toy) == set(ALL_CHECKS) - {C.check_entry_point, C.check_compact_expands}
    target = ConformanceTarget.from_family(ToyFamily, params={"patch": 5})
    assert target.resolved.params.patch == 5  # type: ignore[attr-defined]
    assert list(checks_for(target)) == toy


def test_generated_images_roundtrip_through_pillow() -> None:
    import io

    from PIL import Image

    for w, h in [(1, 1), (7, 5), (200, 1)]:
        img = generated_image(w, h)
        assert img.shape == (h, w, 3) and img.dtype == np.uint8
        np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(encode_png(img)))), img)
    np.testing.assert_array_equal(generated_image(9, 4, seed=2), generated_image(9, 4, seed=2))


# -- broken families, each caught by the check that owns the rule -------------------------------


class BadTokensForDims(ToyFamily):
    name = "bad_dims"

    def tokens_for_dimensions(self, width: int, height: int) -> int:
        return super().tokens_for_dimensions(width, height) + (width == 7)


class NonDeterministic(ToyFamily):
    name = "nondet"
    _n = 0

    def process_item(self, image: Any, *, threads: int = 1) -> ProcessedItem:
        out = super().process_item(image, threads=threads)
        type(self)._n += 1
        feature = out.feature.array + np.float32(type(self)._n)
        return ProcessedItem(Tensor.of(feature), out.aux, out.geometry)


class ThreadDependent(ToyFamily):
    name = "thread_dep"

    def process_item(self, image: Any, *, threads: int = 1) -> ProcessedItem:
        out = super().process_item(image, threads=threads)
        return ProcessedItem(Tensor.of(out.feature.array * threads), out.aux, out.geometry)


class RaggedRows(ToyMRopeFamily):
    """Feature rows per token vary with the image."""

    name = "ragged"

    def process_item(self, image: Any, *, threads: int = 1) -> ProcessedItem:
        out = super().process_item(image, threads=threads)
        if image.shape[1] % 2:
            arr = np.ascontiguousarray(out.feature.array[: out.feature.shape[0] // 4])
            return ProcessedItem(Tensor.of(arr), out.aux, out.geometry)
        return out


class BadDelta(ToyMRopeFamily):
    name = "bad_delta"

    def positions(self, length: int, offsets: Any, geometries: Any, input_ids: Any) -> Any:
        pos = super().positions(length, offsets, geometries, input_ids)
        assert isinstance(pos, MRope)
        return MRope(pos.positions, pos.delta + 1)


class WrongWrapperCount(ToyFamily):
    name = "wrong_wrappers"

    def prompt_tokens_for_dimensions(self, width: int, height: int) -> int:
        return self.tokens_for_dimensions(width, height)


class AcceptsAll(ToyFamily):
    name = "accepts_all"

    def _grid(self, width: int, height: int) -> tuple[int, int]:
        p = self.params.patch
        return -(-height // p), -(-width // p)


class LooseParams(ToyParams):
    model_config = ConfigDict(frozen=True, extra="ignore")


class LooseFamily(ToyFamily):
    name = "loose"
    Params = LooseParams


class CountMismatchValueError(ToyFamily):
    """Checks the counts itself, with the wrong error type."""

    name = "count_value_error"

    def layout(self, input_ids: Any, geometries: Sequence[Geometry]) -> Any:
        n = int((np.asarray(input_ids) == self.params.image_token_id).sum())
        if n != len(geometries):
            raise ValueError("counts differ")
        return super().layout(input_ids, geometries)


class PluginCrashOnOddWidths(ToyFamily):
    name = "crashy"

    def process_item(self, image: Any, *, threads: int = 1) -> ProcessedItem:
        if image.shape[1] == 33:
            raise IndexError("bug")
        return super().process_item(image, threads=threads)


class Rope1DWrong(ToyFamily):
    name = "rope_wrong"

    def positions(self, length: int, offsets: Any, geometries: Any, input_ids: Any) -> Any:
        return Rope1D(length)


@pytest.mark.parametrize(
    ("family", "check", "message"),
    [
        (BadTokensForDims, C.check_item_shapes, "tokens_for_dimensions gives"),
        (NonDeterministic, C.check_deterministic, "two runs differ"),
        (ThreadDependent, C.check_kernel_threads_invariant, "threads=2 differs"),
        (RaggedRows, C.check_item_shapes, "rows per token differ"),
        (BadDelta, C.check_positions, "MRope delta"),
        (WrongWrapperCount, C.check_layout, "prompt_tokens_for_dims"),
        (AcceptsAll, C.check_rejected_sizes, "declared rejected"),
        (LooseFamily, C.check_params_json_roundtrip, "accepts unknown fields"),
        (CountMismatchValueError, C.check_placeholder_mismatch, "PluginError instead of Layout"),
        (PluginCrashOnOddWidths, C.check_item_shapes, "bug"),
    ],
)
def test_broken_families_are_caught(family: type[ToyFamily], check: C.Check, message: str) -> None:
    target = ConformanceTarget.from_family(family)
    with pytest.raises((AssertionError, IndexError), match=message):
        check(target)


def test_conforming_variant_passes_the_same_checks() -> None:
    target = ConformanceTarget.from_family(Rope1DWrong)  # a harmless override
    for check in (C.check_positions, C.check_layout):
        check(target)


# -- a CHW family: the feature contract comes from the family -----------------------------------


class ChwParams(FamilyParams):
    crop: int = Field(12, gt=0, description="Side of the square the image is resized to.")
    patch: int = Field(4, gt=0, description="Patch side; crop // patch squared tokens.")
    image_token_id: int = Field(7, ge=0)


class ChwFamily(Family):
    """LLaVA-style: every image becomes one ``pixel_values [3, crop, crop]`` (nearest-neighbour
    resize, CHW float32) and a constant ``(crop // patch) ** 2`` tokens."""

    name = "chw"
    Params = ChwParams
    params: ChwParams

    def _tokens(self) -> int:
        return (self.params.crop // self.params.patch) ** 2

    def process_item(self, image: Any, *, threads: int = 1) -> ProcessedItem:
        h, w, _ = image.shape
        c = self.params.crop
        rows = np.arange(c) * h // c
        cols = np.arange(c) * w // c
        chw = image[rows][:, cols].transpose(2, 0, 1).astype(np.float32) / np.float32(255)
        side = c // self.params.patch
        return ProcessedItem(Tensor.of(np.ascontiguousarray(chw)), {}, Geometry(c, c, (side, side)))

    def layout(self, input_ids: Any, geometries: Sequence[Geometry]) -> Any:
        counts = [self.tokens_for(g) for g in geometries]
        return layout_by_placeholder(input_ids, self.params.image_token_id, counts)

    def tokens_for(self, geometry: Geometry) -> int:
        return self._tokens()

    def tokens_for_dimensions(self, width: int, height: int) -> int:
        return self._tokens()

    def expected_feature_shape(self, geometry: Geometry) -> tuple[int | None, ...] | None:
        return (3, self.params.crop, self.params.crop)


_CHW_REGISTRY = Registry()
_CHW_REGISTRY.register_family(ChwFamily)


@parametrize_with_checks(
    [ChwFamily, ConformanceTarget({"family": "chw", "params": {"crop": 8}}, _CHW_REGISTRY)],
    registry=_CHW_REGISTRY,
)
def test_chw_family_conforms(target: ConformanceTarget, check: C.Check) -> None:
    check(target)


class ChwWithoutContract(ChwFamily):
    """The same feature without its stated shape: the generic token-major rule refuses it."""

    name = "chw_plain"

    def expected_feature_shape(self, geometry: Geometry) -> tuple[int | None, ...] | None:
        return None


class ChwWrongShape(ChwFamily):
    """One column short on wide images."""

    name = "chw_short"

    def process_item(self, image: Any, *, threads: int = 1) -> ProcessedItem:
        out = super().process_item(image, threads=threads)
        if image.shape[1] > image.shape[0]:
            arr = np.ascontiguousarray(out.feature.array[:, :, :-1])
            return ProcessedItem(Tensor.of(arr), out.aux, out.geometry)
        return out


class ChwHwc(ChwFamily):
    """HWC instead of the stated CHW."""

    name = "chw_hwc"

    def process_item(self, image: Any, *, threads: int = 1) -> ProcessedItem:
        out = super().process_item(image, threads=threads)
        arr = np.ascontiguousarray(out.feature.array.transpose(1, 2, 0))
        return ProcessedItem(Tensor.of(arr), out.aux, out.geometry)


class ChwAnyBatch(ChwFamily):
    """A stated shape with a free axis: ``(*, 3, crop, crop)``."""

    name = "chw_any"

    def process_item(self, image: Any, *, threads: int = 1) -> ProcessedItem:
        out = super().process_item(image, threads=threads)
        arr = np.ascontiguousarray(np.repeat(out.feature.array[None], 1 + image.shape[1] % 2, 0))
        return ProcessedItem(Tensor.of(arr), out.aux, out.geometry)

    def expected_feature_shape(self, geometry: Geometry) -> tuple[int | None, ...] | None:
        return (None, 3, self.params.crop, self.params.crop)


@pytest.mark.parametrize(
    ("family", "message"),
    [
        (
            ChwWithoutContract,
            r"image 1x1: feature has 3 row\(s\), not a multiple of tokens_for 9 \(a feature that "
            r"is not token-major states its shape in expected_feature_shape\)",
        ),
        (
            ChwWrongShape,
            r"image 2x1: feature shape \(3, 12, 11\), expected_feature_shape "
            r"\(3, 12, 12\)",
        ),
        (ChwHwc, r"image 1x1: feature shape \(12, 12, 3\), expected_feature_shape \(3, 12, 12\)"),
    ],
)
def test_feature_contract_catches_wrong_shapes(family: type[ChwFamily], message: str) -> None:
    with pytest.raises(AssertionError, match=f"^{message}$"):
        C.check_item_shapes(ConformanceTarget.from_family(family))


def test_feature_contract_free_axis() -> None:
    C.check_item_shapes(ConformanceTarget.from_family(ChwAnyBatch))


# -- sizes from the params, and the deprecated class attribute ---------------------------------


class AspectParams(ToyParams):
    max_aspect: int = Field(250, gt=0)


class AspectToy(ToyFamily):
    """The toy with its aspect-ratio limit as a param: the refused sizes follow it."""

    name = "aspect_toy"
    Params = AspectParams
    params: AspectParams  # type: ignore[assignment]

    def _grid(self, width: int, height: int) -> tuple[int, int]:
        if max(width, height) > self.params.max_aspect * min(width, height):
            raise KernelArgumentError(f"{width}x{height} is over {self.params.max_aspect}:1")
        p = self.params.patch
        return -(-height // p), -(-width // p)

    def accepted_conformance_sizes(self) -> tuple[tuple[int, int], ...]:
        m = self.params.max_aspect
        return tuple(s for s in super().accepted_conformance_sizes() if max(s) <= m * min(s))

    def rejected_conformance_sizes(self) -> tuple[tuple[int, int], ...]:
        m = self.params.max_aspect
        return ((m + 1, 1), (1, m + 1))


@pytest.mark.parametrize("max_aspect", [250, 20, 1])
def test_rejected_sizes_follow_the_params(max_aspect: int) -> None:
    target = ConformanceTarget.from_family(AspectToy, {"max_aspect": max_aspect})
    assert C.check_rejected_sizes in list(checks_for(target))
    assert target.family.rejected_conformance_sizes() == ((max_aspect + 1, 1), (1, max_aspect + 1))
    for check in (C.check_rejected_sizes, C.check_item_shapes):
        check(target)


def test_rejected_sizes_that_are_accepted_are_caught() -> None:
    class Lenient(AspectToy):
        name = "lenient"

        def rejected_conformance_sizes(self) -> tuple[tuple[int, int], ...]:
            return ((self.params.max_aspect, 1),)  # exactly at the limit: accepted

    target = ConformanceTarget.from_family(Lenient, {"max_aspect": 20})
    with pytest.raises(AssertionError, match=r"^image 20x1 is declared rejected but process_item"):
        C.check_rejected_sizes(target)


class LegacyToy(ToyFamily):
    """A family written against 0.1: its refused sizes as the class attribute."""

    name = "legacy_toy"
    rejected_conformance_sizes = Family.rejected_conformance_sizes  # the 0.1 default method
    conformance_rejected_sizes = ((251, 1), (1, 251))


def test_deprecated_rejected_sizes_attribute_still_works() -> None:
    target = ConformanceTarget.from_family(LegacyToy)
    with pytest.warns(
        DeprecationWarning,
        match=r"LegacyToy.conformance_rejected_sizes .*"
        r"override the method rejected_conformance_sizes\(self\)",
    ):
        assert C.check_rejected_sizes in list(checks_for(target))
    with pytest.warns(DeprecationWarning):
        C.check_rejected_sizes(target)
    broken = ConformanceTarget.from_family(
        type(
            "LegacyAccepts",
            (LegacyToy,),
            {"name": "legacy_accepts", "conformance_rejected_sizes": ((250, 1),)},
        )
    )
    with pytest.warns(DeprecationWarning), pytest.raises(AssertionError, match="250x1"):
        C.check_rejected_sizes(broken)


def test_check_prompt_must_agree_with_the_layout() -> None:
    class Lax(ToyFamily):
        name = "lax"

        def check_prompt(self, input_ids: Any, n_items: int) -> None:
            return None

    class Strict(ToyFamily):
        name = "strict"

        def check_prompt(self, input_ids: Any, n_items: int) -> None:
            raise LayoutError("never")

    with pytest.raises(AssertionError, match="check_prompt accepts 2 placeholder"):
        C.check_placeholder_mismatch(ConformanceTarget.from_family(Lax))
    with pytest.raises(AssertionError, match="check_prompt refuses example_prompt"):
        C.check_layout(ConformanceTarget.from_family(Strict))


# -- test ids name the target -------------------------------------------------------------------


def _ids(targets: Any, registry: Registry | None = None) -> list[str]:
    def test(target: Any, check: Any) -> None: ...

    marked = parametrize_with_checks(targets, registry=registry)(test)
    return list(marked.pytestmark[0].kwargs["ids"])  # type: ignore[attr-defined]


def test_ids_name_family_and_params() -> None:
    assert ConformanceTarget.from_family(ToyFamily).id == "toy"
    assert ConformanceTarget.from_family(ToyFamily, {"patch": 8}).id == "toy"  # the default
    assert ConformanceTarget.from_family(ToyFamily, {"patch": 5}).id == "toy[patch=5]"
    reg = Registry()
    reg.register_family(ToyFamily)
    spec = {"family": "toy", "params": {"end_id": 9, "patch": 5}, "decode": {"alpha": "drop"}}
    assert ConformanceTarget(spec, reg).id == "toy[decode.alpha=drop,end_id=9,patch=5]"
    ids = _ids([ToyFamily, ConformanceTarget.from_family(ToyFamily, {"patch": 5})])
    assert "toy-check_layout" in ids and "toy[patch=5]-check_layout" in ids
    assert len(set(ids)) == len(ids)  # no pytest de-duplication suffixes needed
    named = ConformanceTarget.from_family(ToyFamily, {"patch": 5})
    named.id = "toy_small"
    assert _ids(named)[0] == "toy_small-check_params_json_roundtrip"


def test_long_ids_are_shortened_stably() -> None:
    reg = Registry()
    reg.register_family(AspectToy)

    def target(max_aspect: int) -> ConformanceTarget:
        params = {"patch": 5, "image_token_id": 11, "start_id": 12, "max_aspect": max_aspect}
        spec = {"family": "aspect_toy", "params": params, "threads": 2}
        return ConformanceTarget({**spec, "decode": {"exif_orientation": False}}, reg)

    long, other = target(30), target(31)
    assert re.fullmatch(
        r"aspect_toy\[decode\.exif_orientation=false,[^\]]*,\+\d+~[0-9a-f]{8}\]", long.id
    ), long.id
    assert len(long.id) <= len("aspect_toy[]") + 64
    assert target(30).id == long.id != other.id


# -- through pytest and the CLI, with the toy distribution really installed ----------------------


def test_pytest_plugin_runs_installed_families(tmp_path: Path) -> None:
    test = tmp_path / "test_plugin_conformance.py"
    test.write_text(
        textwrap.dedent(
            """
            def test_conformance(sglang_mm_target, sglang_mm_check):
                sglang_mm_check(sglang_mm_target)

            def test_untouched():
                pass
            """
        )
    )
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(test),
            "--sglang-mm-family",
            "toy",
            "-k",
            "entry_point or layout or untouched",
        ],
        env=toy_env("site"),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "3 passed" in res.stdout, res.stdout


def test_cli_conformance_on_installed_toy() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "sglang_mm_core.cli", "conformance", "--family", "toy_mrope", "-q"],
        env=toy_env("site"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    n = len(list(checks_for(ConformanceTarget.from_family(ToyMRopeFamily)))) + 1  # + entry point
    assert f"{n} passed" in res.stdout, res.stdout


def test_cli_conformance_unknown_family() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "sglang_mm_core.cli", "conformance", "--family", "ghost"],
        env=toy_env("site"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode != 0
    assert res.stderr.strip().startswith("sglang-mm: error: SpecError: unknown family 'ghost'")
    assert "Traceback" not in res.stderr


def test_cli_conformance_without_families() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "sglang_mm_core.cli", "conformance"],
        env=toy_env("site", SGLANG_MM_PLUGINS=""),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 1
    assert (
        res.stderr.strip() == "sglang-mm: error: SpecError: no families installed: nothing to check"
    )


def test_cli_conformance_reports_broken_plugins(broken_plugins_site: Path) -> None:
    """A plugin that fails to load fails the run, named; the other families are still checked."""
    from test_registry import BROKEN_ERRORS

    res = subprocess.run(
        [sys.executable, "-m", "sglang_mm_core.cli", "conformance", "-q", "-k", "toy-check_layout"],
        env=toy_env("site", str(broken_plugins_site)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 1, res.stdout + res.stderr
    assert "1 passed" in res.stdout, res.stdout
    assert res.stderr.splitlines() == [
        f"sglang-mm: error: PluginError: {BROKEN_ERRORS[name]}" for name in sorted(BROKEN_ERRORS)
    ]
    res = subprocess.run(
        [sys.executable, "-m", "sglang_mm_core.cli", "conformance", "--family", "badinit"],
        env=toy_env("site", str(broken_plugins_site)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 1
    assert res.stderr.strip() == (
        "sglang-mm: error: PluginError: family 'badinit' is unavailable: "
        + BROKEN_ERRORS["badinit"]
    )
