"""The drop-ins at their default reference where torchvision is installed, against HF's
torchvision classes (what ``AutoImageProcessor.from_pretrained`` picks there), on every input
form of `sglang_mm_core.conformance.hf.input_forms` and on the benches' photo mosaics. CI has
no torch, so this runs from a torch venv (see bench_transformers.py) and prints, per class and
form, ``equal``, ``both refuse`` or ``ours refuses`` (with the reason); it exits 1 on any
difference in bits, dtype, shape or container.

Run: /path/to/torchenv/bin/python bench/check_transformers_torchvision.py"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
warnings.simplefilter("ignore")

import torch  # noqa: E402
import transformers  # noqa: E402
from _images import mosaic  # noqa: E402
from bench_transformers import decoded  # noqa: E402

import sglang_mm_core.hf as mmhf  # noqa: E402
from sglang_mm_core.conformance.hf import assert_batch_features_equal, input_forms  # noqa: E402
from sglang_mm_core.conformance.images import generated_image  # noqa: E402
from sglang_mm_core.errors import MmError  # noqa: E402


def main() -> int:
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    bad = 0
    for cls in mmhf.processor_classes():
        tv = getattr(transformers, cls.replaces)()
        ours = cls()
        assert ours.reference == "aten_u8", ours.reference
        cases = list(input_forms(generated_image(173, 97), tmp_dir=tempfile.mkdtemp()))
        for size in ((1920, 1080), (4032, 3024)):
            pil = decoded(mosaic(size, 4, 3)).convert("RGB")
            cases.append(type(cases[0])(f"mosaic_{size[0]}x{size[1]}", pil, pil, {}))
        for form in cases:
            try:
                want = tv(form.reference_image, **form.kwargs)
            except Exception as e:  # HF's own refusals are plain exceptions
                want = e
            try:
                got = ours(form.image, **form.kwargs)
            except MmError as e:
                got = e
            if isinstance(got, Exception):
                verdict = "both refuse" if isinstance(want, Exception) else f"ours refuses: {got}"
            elif isinstance(want, Exception):
                verdict = f"DIFFERENT: HF raises {type(want).__name__}: {want}"
                bad += 1
            else:
                try:
                    assert_batch_features_equal(got, want)
                    verdict = "equal"
                except AssertionError as e:
                    verdict = f"DIFFERENT: {e}"
                    bad += 1
            print(f"{cls.__name__:34} {form.name:22} {verdict}", flush=True)
    # torch tensors against the PIL classes too (HF's PIL backend takes them as numpy)
    for cls in mmhf.processor_classes():
        pil_ref = next(
            b for b in cls.__mro__[1:] if b.__module__.startswith("transformers.models.")
        )()
        ours = cls(resample="pil")
        for form in input_forms(generated_image(173, 97)):
            if not form.name.startswith("torch_"):
                continue
            try:
                assert_batch_features_equal(
                    ours(form.image, **form.kwargs), pil_ref(form.reference_image, **form.kwargs)
                )
                verdict = "equal"
            except AssertionError as e:
                verdict = f"DIFFERENT: {e}"
                bad += 1
            print(f"{cls.__name__:34} {form.name + ' (pil)':22} {verdict}", flush=True)
        # return_tensors="pt" on both backends
        rgb = generated_image(211, 133)
        for ours_pt, ref_pt, name in (
            (ours, pil_ref, "pt (pil)"),
            (cls(), getattr(transformers, cls.replaces)(), "pt (torchvision)"),
        ):
            try:
                assert_batch_features_equal(
                    ours_pt([rgb, rgb[::-1].copy()], return_tensors="pt"),
                    ref_pt([rgb, rgb[::-1].copy()], return_tensors="pt"),
                )
                verdict = "equal"
            except AssertionError as e:
                verdict = f"DIFFERENT: {e}"
                bad += 1
            print(f"{cls.__name__:34} {name:22} {verdict}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
