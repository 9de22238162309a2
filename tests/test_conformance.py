"""The conformance suite: it passes on the toy families (the helper used as a plugin author
would), catches broken families check by check, and runs through its pytest plugin and
`sglang-mm conformance` on a really installed (entry point) family."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from core_helpers import toy_env
from pydantic import ConfigDict, Field
from sglang_mm_toy import ToyFamily, ToyMRopeFamily, ToyParams

from sglang_mm_core import (
    Geometry,
    KernelArgumentError,
    LayoutError,
    MRope,
    PluginError,
    Registry,
    Rope1D,
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
from sglang_mm_core.plugin import (
    ChannelPlanes,
    Explicit,
    Family,
    FamilyParams,
    Features,
    Placeholder,
    Plan,
    Repeat,
    Table,
)


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


class ImpurePlan(ToyFamily):
    """Its plan depends on how often it was asked."""

    name = "impure"
    _n = 0

    def plan(self, width: int, height: int) -> Plan:
        type(self)._n += 1
        p = super().plan(width, height)
        return p if type(self)._n % 2 else Plan(p.tokens, Geometry(height, width, (0, 0)))


class EmptyPlan(ToyFamily):
    name = "empty_plan"

    def plan(self, width: int, height: int) -> Plan:
        p = self.params
        return Plan(Explicit((p.start_id, p.end_id), (1, 1)), Geometry(height, width, (0, 0)))


class NonDeterministic(ToyFamily):
    name = "nondet"
    _n = 0

    def kernel(self, image: Any, plan: Plan, *, codes: bool, threads: int) -> Any:
        type(self)._n += 1
        return super().kernel(image, plan, codes=codes, threads=threads) + np.float32(self._n)


class ThreadDependent(ToyFamily):
    name = "thread_dep"

    def kernel(self, image: Any, plan: Plan, *, codes: bool, threads: int) -> Any:
        return super().kernel(image, plan, codes=codes, threads=threads) * np.float32(threads)


class BadDelta(ToyMRopeFamily):
    name = "bad_delta"

    def positions(self, length: int, offsets: Any, geometries: Any, input_ids: Any) -> Any:
        pos = super().positions(length, offsets, geometries, input_ids)
        assert isinstance(pos, MRope)
        return MRope(pos.positions, pos.delta + 1)


class AcceptsAll(ToyFamily):
    name = "accepts_all"

    def plan(self, width: int, height: int) -> Plan:
        return super().plan(1, 1)


class LooseParams(ToyParams):
    model_config = ConfigDict(frozen=True, extra="ignore")


class LooseFamily(ToyFamily):
    name = "loose"
    Params = LooseParams


class PluginCrashOnOddWidths(ToyFamily):
    name = "crashy"

    def kernel(self, image: Any, plan: Plan, *, codes: bool, threads: int) -> Any:
        if image.shape[1] == 33:
            raise IndexError("bug")
        return super().kernel(image, plan, codes=codes, threads=threads)


class Rope1DWrong(ToyFamily):
    name = "rope_wrong"

    def positions(self, length: int, offsets: Any, geometries: Any, input_ids: Any) -> Any:
        return Rope1D(length)


@pytest.mark.parametrize(
    ("family", "check", "message"),
    [
        (ImpurePlan, C.check_plan, "two plans of one size differ"),
        (EmptyPlan, C.check_plan, "the plan's tokens have no content"),
        (NonDeterministic, C.check_deterministic, "two runs differ"),
        (ThreadDependent, C.check_kernel_threads_invariant, "threads=2 differs"),
        (BadDelta, C.check_positions, "MRope delta"),
        (AcceptsAll, C.check_rejected_sizes, "declared rejected"),
        (LooseFamily, C.check_params_json_roundtrip, "accepts unknown fields"),
        (PluginCrashOnOddWidths, C.check_plan, "bug"),
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


# -- CHW families: one composed by the core, one with a kernel of its own -----------------------


class ChwParams(FamilyParams):
    crop: int = Field(12, gt=0, description="Side of the square the image is resized to.")
    patch: int = Field(4, gt=0, description="Patch side; crop // patch squared tokens.")
    image_token_id: int = Field(7, ge=0)


class ChwFamily(Family[ChwParams]):
    """LLaVA-style, composed from core kernels: every image resized (Pillow bicubic) to one
    ``pixel_values [3, crop, crop]`` through HF's numpy table, ``(crop // patch) ** 2``
    tokens; it has a compact form because its feature is a table."""

    name = "chw"

    def plan(self, width: int, height: int) -> Plan:
        c, side = self.params.crop, self.params.crop // self.params.patch
        return Plan(Repeat(self.params.image_token_id, side * side), Geometry(c, c, (side, side)))

    def features(self) -> Features:
        table = Table.hf((0.5, 0.4, 0.3), (0.2, 0.3, 0.25), "pil")
        return Features(table, ChannelPlanes(), resample="pil_bicubic")


class NearestChw(ChwFamily):
    """The same layout with its own (nearest-neighbour, numpy) kernel and no table."""

    name = "chw_nearest"

    def features(self) -> Features:
        return Features(None, ChannelPlanes())

    def kernel(self, image: Any, plan: Plan, *, codes: bool, threads: int) -> Any:
        h, w, _ = image.shape
        c = self.params.crop
        rows = np.arange(c) * h // c
        cols = np.arange(c) * w // c
        chw = image[rows][:, cols].transpose(2, 0, 1).astype(np.float32) / np.float32(255)
        return np.ascontiguousarray(chw)


_CHW_REGISTRY = Registry()
_CHW_REGISTRY.register_family(ChwFamily, NearestChw)


@parametrize_with_checks(
    [
        ChwFamily,
        NearestChw,
        ConformanceTarget({"family": "chw", "params": {"crop": 8}}, _CHW_REGISTRY),
    ],
    registry=_CHW_REGISTRY,
)
def test_chw_families_conform(target: ConformanceTarget, check: C.Check) -> None:
    check(target)


def test_the_composed_family_matches_pillow_and_numpy() -> None:
    """The core's composition is Pillow's bicubic resize then HF's numpy rescale/normalize."""
    from PIL import Image

    fam = ChwFamily()
    image = generated_image(37, 23, seed=4)
    got = fam.process_item(image).feature.array
    resized = np.asarray(Image.fromarray(image).resize((12, 12), Image.Resampling.BICUBIC))
    x = (resized.astype(np.float64) * (1 / 255)).astype(np.float32)
    want = (x - np.float32([0.5, 0.4, 0.3])) / np.float32([0.2, 0.3, 0.25])
    np.testing.assert_array_equal(got, want.transpose(2, 0, 1))
    assert C.check_compact_expands in list(checks_for(ConformanceTarget.from_family(ChwFamily)))
    assert C.check_compact_expands not in list(
        checks_for(ConformanceTarget.from_family(NearestChw))
    )


class ChwShort(NearestChw):
    """One column short on wide images."""

    name = "chw_short"

    def kernel(self, image: Any, plan: Plan, *, codes: bool, threads: int) -> Any:
        out = super().kernel(image, plan, codes=codes, threads=threads)
        return np.ascontiguousarray(out[:, :, :-1]) if image.shape[1] > image.shape[0] else out


def test_a_kernel_that_does_not_fill_its_writer_is_a_plugin_error() -> None:
    with pytest.raises(
        PluginError,
        match=r"^family 'chw_short': kernel returned a float32 array of 396 values; its writer "
        r"lays out 432 float32 values for shape \(3, 12, 12\)$",
    ):
        C.check_plan(ConformanceTarget.from_family(ChwShort))


# -- sizes from the params ----------------------------------------------------------------------


class AspectParams(ToyParams):
    max_aspect: int = Field(250, gt=0)


class AspectToy(Family[AspectParams]):
    """The toy with its aspect-ratio limit as a param: the refused sizes follow it."""

    name = "aspect_toy"

    def plan(self, width: int, height: int) -> Plan:
        if max(width, height) > self.params.max_aspect * min(width, height):
            raise KernelArgumentError(f"{width}x{height} is over {self.params.max_aspect}:1")
        return ToyFamily(ToyParams(patch=self.params.patch)).plan(width, height)

    def features(self) -> Features:
        return ToyFamily().features()

    def kernel(self, image: Any, plan: Plan, *, codes: bool, threads: int) -> Any:
        return ToyFamily(ToyParams(patch=self.params.patch)).kernel(
            image, plan, codes=codes, threads=threads
        )

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
    for check in (C.check_rejected_sizes, C.check_plan):
        check(target)


def test_rejected_sizes_that_are_accepted_are_caught() -> None:
    class Lenient(AspectToy):
        name = "lenient"

        def rejected_conformance_sizes(self) -> tuple[tuple[int, int], ...]:
            return ((self.params.max_aspect, 1),)  # exactly at the limit: accepted

    target = ConformanceTarget.from_family(Lenient, {"max_aspect": 20})
    with pytest.raises(AssertionError, match=r"^image 20x1 is declared rejected but plan"):
        C.check_rejected_sizes(target)


def test_placeholder_rules_come_from_the_familys_placeholder() -> None:
    """Markers the family names are required around every placeholder, by the pipeline and by
    its header-only checks alike; the example prompt carries them."""

    class Marked(ToyFamily):
        name = "marked"

        def placeholder(self) -> Placeholder:
            return Placeholder(self.params.image_token_id, between=(21, 22))

    target = ConformanceTarget.from_family(Marked)
    assert target.family.example_prompt(1) == [1, 1, 21, 5, 22, 1]
    for check in (C.check_layout, C.check_placeholder_mismatch):
        check(target)
    with target.pipeline() as pipe, pytest.raises(LayoutError, match="directly between"):
        pipe.check_prompt([1, 5, 22, 1], 1)


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
        [sys.executable, "-m", "sglang_mm_core", "conformance", "--family", "toy_mrope", "-q"],
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
        [sys.executable, "-m", "sglang_mm_core", "conformance", "--family", "ghost"],
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
        [sys.executable, "-m", "sglang_mm_core", "conformance"],
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
        [sys.executable, "-m", "sglang_mm_core", "conformance", "-q", "-k", "toy-check_layout"],
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
        [sys.executable, "-m", "sglang_mm_core", "conformance", "--family", "badinit"],
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
