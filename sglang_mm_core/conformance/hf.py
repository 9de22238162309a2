"""Checks for a family's transformers drop-in (`sglang_mm_core.hf.ImageProcessor`): every
input form HF accepts, made from one RGB image, and a bit-for-bit comparison of two
`BatchFeature` answers. A plugin's tests feed the same inputs to its class and to HF's.

    for form in input_forms(rgb):
        ours = mine(form.image, **form.kwargs)
        theirs = hf(form.reference_image, **form.kwargs)
        assert_batch_features_equal(ours, theirs)

Needs transformers and Pillow (the extra ``sglang-mm-core[transformers]``)."""

from __future__ import annotations

import io
import json
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class InputForm:
    """One way of handing the same picture to a processor. ``reference_image`` is what HF is
    given where ours takes a form HF cannot (encoded bytes: HF gets the decoded PIL image);
    ``kwargs`` are call keywords the form needs (``do_rescale=False`` for [0, 1] floats)."""

    name: str
    image: Any
    reference_image: Any
    kwargs: Mapping[str, Any] = field(default_factory=dict)


def _alpha(h: int, w: int, seed: int) -> npt.NDArray[np.uint8]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (h, w), dtype=np.uint8)
    a[: h // 4] = 0
    a[h // 4 : h // 2] = 255
    return a


def input_forms(rgb: npt.NDArray[np.uint8], *, tmp_dir: Path | None = None) -> Iterator[InputForm]:
    """Every input form of ``rgb`` (uint8 ``[h, w, 3]``): PIL images in RGB, RGBA, LA, L, P
    (with and without transparency), I;16, CMYK and 1; numpy HWC and CHW, RGBA and grey
    arrays, integer-valued float, [0, 1] float; torch tensors where torch is installed; a 4-D
    batch, a list and a nested list; PNG bytes, and a PNG path when ``tmp_dir`` is given."""
    from PIL import Image

    h, w, _ = rgb.shape
    pil = Image.fromarray(rgb)
    rgba = np.dstack([rgb, _alpha(h, w, 1)])

    def same(name: str, image: Any, **kw: Any) -> InputForm:
        return InputForm(name, image, image, kw)

    yield same("pil_rgb", pil)
    yield same("pil_rgba", Image.fromarray(rgba, "RGBA"))
    yield same("pil_la", Image.fromarray(np.dstack([rgb[..., 0], _alpha(h, w, 2)]), "LA"))
    yield same("pil_l", pil.convert("L"))
    pal = pil.quantize(64)
    yield same("pil_p", pal)
    pal_t = pal.copy()
    pal_t.info["transparency"] = 3
    yield same("pil_p_transparency", pal_t)
    deep = (rgb[..., 1].astype(np.uint32) * 257 // 2).astype("<u2")
    yield same("pil_i16", Image.frombytes("I;16", (w, h), deep.tobytes()))
    yield same("pil_cmyk", pil.convert("CMYK"))
    yield same("pil_1", pil.convert("1"))
    yield same("np_hwc_u8", rgb.copy())
    yield same("np_chw_u8", np.ascontiguousarray(rgb.transpose(2, 0, 1)))
    yield same("np_hwc_rgba_u8", rgba)
    yield same("np_hwc_grey_u8", rgb[..., :1].copy())
    yield same("np_hwc_f64_integral", rgb.astype(np.float64))
    yield same("np_hwc_f32_unit", (rgb.astype(np.float32) / 255), do_rescale=False)
    yield same("np_batch_4d", np.stack([rgb, rgb[::-1].copy()]))
    yield same("list", [pil, Image.fromarray(rgb[::-1].copy())])
    yield same("nested_list", [[pil], [Image.fromarray(rgb[:, ::-1].copy()), pil]])
    try:
        import torch
    except ImportError:
        pass  # torch tensors only where torch is (CI has none: the torch venv checks them)
    else:
        chw = np.ascontiguousarray(rgb.transpose(2, 0, 1))
        yield same("torch_chw_u8", torch.from_numpy(chw))
        yield same("torch_hwc_u8", torch.from_numpy(rgb.copy()))
        yield same(
            "torch_chw_f32_unit", torch.from_numpy(chw.astype(np.float32) / 255), do_rescale=False
        )
    buf = io.BytesIO()
    pil.save(buf, "PNG")
    yield InputForm("png_bytes", buf.getvalue(), pil)
    if tmp_dir is not None:
        path = Path(tmp_dir) / "input_form.png"
        path.write_bytes(buf.getvalue())
        yield same("png_path", str(path))


def _as_numpy(value: Any) -> Any:
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    return value


def assert_batch_features_equal(ours: Mapping[str, Any], reference: Mapping[str, Any]) -> None:
    """Same keys, and for each the same container type, dtype, shape, values and bits (lists
    of arrays element by element)."""
    assert sorted(ours.keys()) == sorted(reference.keys()), (
        f"keys differ: {sorted(ours.keys())} vs {sorted(reference.keys())}"
    )
    for key in reference.keys():
        _equal(ours[key], reference[key], key)


def _equal(a: Any, b: Any, where: str) -> None:
    assert type(a) is type(b), f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(b, (list, tuple)):
        assert len(a) == len(b), f"{where}: {len(a)} vs {len(b)} entries"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _equal(x, y, f"{where}[{i}]")
        return
    if hasattr(b, "dtype"):
        x, y = _as_numpy(a), _as_numpy(b)
        assert x.dtype == y.dtype, f"{where}: dtype {x.dtype} vs {y.dtype}"
        assert x.shape == y.shape, f"{where}: shape {x.shape} vs {y.shape}"
        np.testing.assert_array_equal(x, y, err_msg=where, strict=True)
        if x.dtype.kind == "f":  # bits too: -0.0 is not +0.0, and NaN payloads count
            bits = f"u{x.dtype.itemsize}"
            np.testing.assert_array_equal(x.view(bits), y.view(bits), err_msg=f"{where} (bits)")
        return
    assert a == b, f"{where}: {a!r} vs {b!r}"


def check_refused_forms(reference: Any, ours: Any, rgb: npt.NDArray[np.uint8]) -> None:
    """Where HF's processor raises (an out-of-range float or integer image, a non-RGB PIL image
    with ``do_convert_rgb`` off, a string that is no image, a 5-D array, a number), ours
    raises a typed `KernelArgumentError` naming the fault; and a [0, 1] float image with
    ``do_rescale`` on, which HF answers rescaled twice, ours refuses rather than guess."""
    from PIL import Image

    from ..errors import KernelArgumentError

    unit = rgb.astype(np.float32) / 255
    rgba = Image.fromarray(np.dstack([rgb, rgb[..., 0]]), "RGBA")
    raising: list[tuple[Any, dict[str, Any], str]] = [
        (unit * 300, {"do_rescale": False}, "range"),
        (rgb.astype(np.uint16) * 200, {}, "range"),
        (rgba, {"do_convert_rgb": False}, "do_convert_rgb"),
        (Image.fromarray(rgb[..., 0]), {"do_convert_rgb": False}, "do_convert_rgb"),
        ("not an image", {}, "not a file"),
        (rgb[None, None], {}, "dimensions"),
        (3, {}, "unsupported image type"),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for image, kw, fault in raising:
            try:
                reference(image, **kw)
            except (ValueError, TypeError):
                pass
            else:
                raise AssertionError(f"HF answered {type(image).__name__} {kw}: not a refusal")
            try:
                ours(image, **kw)
            except KernelArgumentError as e:
                assert fault in str(e), (fault, str(e))
            else:
                raise AssertionError(f"ours answered {type(image).__name__} {kw}")
        reference(unit)  # HF answers (rescaled twice)
        for image, kw in ((unit, {}), (rgb, {"do_rescale": False})):
            try:
                ours(image, **kw)
            except KernelArgumentError as e:
                assert "do_rescale" in str(e), str(e)
            else:
                raise AssertionError(f"ours answered a {image.dtype} image with {kw}")


def _model_dir(root: Path, config: Mapping[str, Any], model_type: str) -> Path:
    root.mkdir(parents=True)
    (root / "preprocessor_config.json").write_text(json.dumps(dict(config)))
    (root / "config.json").write_text(json.dumps({"model_type": model_type}))
    return root


def check_registration(
    cls: type,
    preprocessor_config: Mapping[str, Any],
    tmp_dir: Path,
    *,
    expect: Sequence[str] = (),
    unnamed: Sequence[str] = (),
) -> list[str]:
    """`sglang_mm_core.hf.register` registers ``cls`` for (at least) the model types
    ``expect``, in `model_types` order, and is idempotent; for each registered type a model
    directory naming the replaced class loads as ``cls`` through
    ``AutoImageProcessor.from_pretrained(dir, backend="sglang_mm")`` and through
    `sglang_mm_core.hf.image_processor`, and so does one that names no class for each of
    ``unnamed`` (found from ``config.json``'s model type). Returns the registered types."""
    from transformers import AutoImageProcessor

    from .. import hf as mmhf

    done = mmhf.register()
    types = done[cls.__name__]
    assert set(expect) <= set(types), (expect, types)
    assert types == [t for t in mmhf.model_types(cls) if t in types]
    assert mmhf.register() == done  # idempotent
    config = {k: v for k, v in preprocessor_config.items() if k != "image_processor_type"}
    named = {**config, "image_processor_type": cls.replaces}  # type: ignore[attr-defined]
    dirs = [(_model_dir(tmp_dir / f"{t}-named", named, t), t) for t in types]
    dirs += [(_model_dir(tmp_dir / f"{t}-unnamed", config, t), t) for t in unnamed]
    for d, model_type in dirs:
        got = AutoImageProcessor.from_pretrained(d, backend=mmhf.BACKEND)  # type: ignore[no-untyped-call]
        assert type(got) is cls, (model_type, d.name, type(got))
        assert type(mmhf.image_processor(d)) is cls, (model_type, d.name)
    return types


def check_never_falls_back(tmp_dir: Path, hf_class: str = "SiglipImageProcessor") -> None:
    """`sglang_mm_core.hf.image_processor` raises `PluginError` naming a class no installed
    family replaces, rather than handing back HF's own."""
    from .. import hf as mmhf
    from ..errors import PluginError

    d = tmp_dir / "unreplaced"
    d.mkdir(parents=True)
    (d / "preprocessor_config.json").write_text(json.dumps({"image_processor_type": hf_class}))
    try:
        mmhf.image_processor(d)
    except PluginError as e:
        assert hf_class in str(e), str(e)
    else:
        raise AssertionError(f"image_processor loaded a processor for {hf_class}")


def check_thread_safety(calls: Sequence[Callable[[], Any]], threads: int = 12) -> None:
    """The calls (one shared instance, different images or overrides), run from ``threads``
    threads released at once, each give what they give alone."""
    want = [call() for call in calls]
    got: dict[int, Any] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(threads)

    def work(k: int) -> None:
        barrier.wait()
        try:
            got[k] = calls[k % len(calls)]()
        except BaseException as e:  # reported below, on the main thread
            errors.append(e)

    pool = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert not errors, errors
    assert sorted(got) == list(range(threads))
    for k in range(threads):
        assert_batch_features_equal(got[k], want[k % len(calls)])


__all__ = [
    "InputForm",
    "assert_batch_features_equal",
    "check_never_falls_back",
    "check_refused_forms",
    "check_registration",
    "check_thread_safety",
    "input_forms",
]
