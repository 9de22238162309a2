"""The conformance suite: it passes on the toy families (the helper used as a plugin author
would), catches broken families check by check, and runs through its pytest plugin and
`sglang-mm conformance` on a really installed (entry point) family."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from core_helpers import toy_env
from pydantic import ConfigDict
from sglang_mm_toy import ToyFamily, ToyMRopeFamily, ToyParams

from sglang_mm_core import Geometry, MRope, ProcessedItem, Rope1D, Tensor
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
    assert set(toy) == set(ALL_CHECKS) - {C.check_entry_point}
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
