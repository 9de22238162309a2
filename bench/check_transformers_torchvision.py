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


def _qwen_tokenizer() -> object:
    """A word-level tokenizer with Qwen2-VL's real vision token ids."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    special = {"<|vision_start|>": 151652, "<|vision_end|>": 151653, "<|image_pad|>": 151655}
    special["<|video_pad|>"] = 151656
    vocab = {w: i for i, w in enumerate(["<unk>", "hello", "world", "two", "photos"])}
    tok = Tokenizer(models.WordLevel({**vocab, **special}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"<\|[a-z_]+\|>| |[^\s<]+"), behavior="isolated")
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        pad_token="<unk>",
        additional_special_tokens=list(special),
    )


def check_accelerate() -> int:
    """`accelerate` on the stock torchvision ``Qwen2VLProcessor`` (its video processor
    needs torchvision, so CI cannot build it): the whole answer, both tensor types."""
    stock = transformers.Qwen2VLProcessor(
        image_processor=transformers.Qwen2VLImageProcessor(),
        tokenizer=_qwen_tokenizer(),
        video_processor=transformers.Qwen2VLVideoProcessor(),
    )
    fast = mmhf.accelerate(stock)
    pad = "<|vision_start|><|image_pad|><|vision_end|>"
    text = [f"hello {pad} world", f"two {pad} photos {pad}"]
    rgb = generated_image(300, 200)
    images = [[rgb], [generated_image(90, 200), rgb[::-1].copy()]]
    bad = 0
    for tensors in (None, "pt"):
        try:
            assert_batch_features_equal(
                fast(text=text, images=images, padding=True, return_tensors=tensors),
                stock(text=text, images=images, padding=True, return_tensors=tensors),
            )
            verdict = "equal"
        except AssertionError as e:
            verdict, bad = f"DIFFERENT: {e}", bad + 1
        print(f"accelerate(Qwen2VLProcessor) return_tensors={tensors}: {verdict}", flush=True)
    return bad


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
    # torch tensors against the PIL classes too (HF's PIL backend takes them as numpy); a
    # class transformers has for torchvision only (Kimi K2.5) has no PIL class to compare with
    from transformers.image_processing_backends import TorchvisionBackend

    for cls in mmhf.processor_classes():
        pil_cls = next(
            b for b in cls.__mro__[1:] if b.__module__.startswith("transformers.models.")
        )
        if issubclass(pil_cls, TorchvisionBackend):
            print(f"{cls.__name__:34} (pil): transformers has no PIL class", flush=True)
            continue
        pil_ref = pil_cls()
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
    bad += check_accelerate()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
