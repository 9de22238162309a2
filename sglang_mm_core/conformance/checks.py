"""The conformance checks. Each takes a `ConformanceTarget` and raises `AssertionError` with a
message naming what is wrong; `checks_for` yields the ones that apply to a target.

Token counts derive from the family's plan by construction (the driver computes them), so the
checks prove what construction cannot: that the plan is a pure function of the size that
agrees with the item processed, that the feature has the writer's shape for it, that the
kernel is deterministic and thread-invariant, and that the compact form expands exactly."""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .. import _native
from .._carriers import MmInput, MmOutput, ProcessedItem, Tensor
from .._compact import CompactTensor
from .._family import Family
from .._outputs import encode_safetensors, load_output, save_output
from .._plan import Plan
from .._positions import MRope, Rope1D
from .._registry import installed_entry_points
from .._spec import spec_json_schema
from ..errors import DecodeError, LayoutError, MmError, MmRequestError
from .images import encode_png, generated_image
from .target import ConformanceTarget

if TYPE_CHECKING:
    from .._driver import Pipeline

Check = Callable[[ConformanceTarget], None]

# Pipeline checks use images up to this many pixels, to keep the suite quick.
_PIPELINE_MAX_PIXELS = 400_000


def _expect(cond: bool, message: str) -> None:
    if not cond:
        raise AssertionError(message)


def _tensor_bytes(t: Tensor | CompactTensor) -> tuple[str, tuple[int, ...], bytes]:
    if isinstance(t, CompactTensor):
        t = t.expand()
    return t.dtype, t.shape, np.ascontiguousarray(t.array).tobytes()


def _same_item(a: ProcessedItem, b: ProcessedItem) -> bool:
    return (
        _tensor_bytes(a.feature) == _tensor_bytes(b.feature)
        and sorted(a.aux) == sorted(b.aux)
        and all(_tensor_bytes(a.aux[k]) == _tensor_bytes(b.aux[k]) for k in a.aux)
        and a.geometry == b.geometry
    )


def _same_output(a: MmOutput, b: MmOutput) -> bool:
    if not (
        np.array_equal(a.input_ids, b.input_ids)
        and a.offsets == b.offsets
        and a.hashes == b.hashes
        and a.positions == b.positions
        and len(a.items) == len(b.items)
    ):
        return False
    return all(
        _same_item(
            ProcessedItem(x.feature, x.aux, x.geometry), ProcessedItem(y.feature, y.aux, y.geometry)
        )
        for x, y in zip(a.items, b.items, strict=True)
    )


def _sizes(target: ConformanceTarget) -> tuple[tuple[int, int], ...]:
    return tuple(target.family.accepted_conformance_sizes())


def _rejected_sizes(target: ConformanceTarget) -> tuple[tuple[int, int], ...]:
    return tuple(target.family.rejected_conformance_sizes())


def _pipeline_sizes(target: ConformanceTarget, n: int = 3) -> list[tuple[int, int]]:
    """Up to ``n`` small accepted sizes, spread over the declared list."""
    small = [s for s in _sizes(target) if s[0] * s[1] <= _PIPELINE_MAX_PIXELS]
    _expect(bool(small), f"conformance_sizes has no size up to {_PIPELINE_MAX_PIXELS} pixels")
    if len(small) <= n:
        return small
    step = (len(small) - 1) / (n - 1)
    return [small[round(i * step)] for i in range(n)]


def _png(size: tuple[int, int], seed: int = 0) -> bytes:
    return encode_png(generated_image(*size, seed=seed))


def _process(target: ConformanceTarget, image: npt.NDArray[np.uint8], threads: int = 1) -> Any:
    out = target.family.process_item(image, threads=threads)
    _expect(
        isinstance(out, ProcessedItem),
        f"process_item returned {type(out).__name__}, not a ProcessedItem",
    )
    return out


def _request(target: ConformanceTarget, n_images: int, seed: int = 0) -> MmInput:
    sizes = _pipeline_sizes(target)
    images = [_png(sizes[k % len(sizes)], seed=seed + k) for k in range(n_images)]
    return MmInput(input_ids=target.family.example_prompt(n_images), images=images)


# -- the checks -------------------------------------------------------------------------------


def check_entry_point(target: ConformanceTarget) -> None:
    """The installed entry point loads and its hook offers this family."""
    info = target.info
    _expect(info is not None, f"family {target.spec.get('family')!r} is not known to the registry")
    assert info is not None
    entry = installed_entry_points().get(info.plugin)
    _expect(entry is not None, f"no installed entry point named {info.plugin!r}")
    assert entry is not None
    module = entry.ep.load()
    hook = getattr(module, "sglang_mm_families", None)
    _expect(callable(hook), f"entry point {entry.ep.value!r} has no sglang_mm_families hook")
    assert hook is not None
    names = [f.name for f in hook()]
    _expect(info.name in names, f"entry point {entry.ep.value!r} offers {names}, not {info.name}")


def check_params_json_roundtrip(target: ConformanceTarget) -> None:
    """Params survive JSON both ways, and unknown fields are refused."""
    params = target.resolved.params
    cls = type(params)
    again = cls.model_validate_json(params.model_dump_json())
    _expect(again == params, f"{cls.__name__} changes through JSON: {params!r} -> {again!r}")
    again = cls.model_validate(params.model_dump(mode="json"))
    _expect(again == params, f"{cls.__name__} changes through a JSON dict")
    try:
        cls.model_validate({**params.model_dump(mode="json"), "__not_a_field__": 1})
    except ValueError:
        pass
    else:
        raise AssertionError(f"{cls.__name__} accepts unknown fields (set extra='forbid')")


def _validator(schema: dict[str, Any]) -> Any:
    try:
        import jsonschema  # type: ignore[import-untyped,unused-ignore]
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise AssertionError(
            "the JSON Schema checks need jsonschema: pip install jsonschema "
            "(the 'conformance' extra of sglang-mm-core)"
        ) from e
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def check_params_json_schema(target: ConformanceTarget) -> None:
    """The Params schema is valid JSON Schema; the defaults and the spec's params satisfy it,
    and so does the whole canonical spec against `spec_json_schema`."""
    params = target.resolved.params
    cls = type(params)
    validator = _validator(cls.model_json_schema())
    errors = [e.message for e in validator.iter_errors(params.model_dump(mode="json"))]
    _expect(not errors, f"{cls.__name__} JSON does not satisfy its own schema: {errors}")
    try:
        defaults = cls()
    except ValueError:
        defaults = None
    if defaults is not None:
        errors = [e.message for e in validator.iter_errors(defaults.model_dump(mode="json"))]
        _expect(not errors, f"{cls.__name__} defaults do not satisfy its schema: {errors}")
    spec_validator = _validator(spec_json_schema(target.family_class))
    doc = target.resolved.spec.model_dump(mode="json")
    errors = [e.message for e in spec_validator.iter_errors(doc)]
    _expect(not errors, f"the canonical spec does not satisfy spec_json_schema: {errors}")


def check_plan(target: ConformanceTarget) -> None:
    """For every accepted size: the plan is a `Plan`, the same on every call (a pure
    function of the size), with at least one content token, parts that are non-empty, and the
    item processed at that size carries it: its geometry, and a feature of the writer's shape
    with Tensor aux."""
    fam = target.family
    writer = fam._compiled().features.writer
    for w, h in _sizes(target):
        where = f"image {w}x{h}"
        plan = fam.checked_plan(w, h)
        _expect(plan == fam.checked_plan(w, h), f"{where}: two plans of one size differ")
        _expect(plan.content >= 1, f"{where}: the plan's tokens have no content")
        _expect(
            all(min(p.size) >= 1 and min(p.extent) >= 1 for p in plan.parts),
            f"{where}: an empty part in {plan.parts}",
        )
        item = _process(target, generated_image(w, h))
        _expect(isinstance(item.feature, Tensor), f"{where}: feature is not a Tensor")
        _expect(
            all(isinstance(t, Tensor) for t in item.aux.values()),
            f"{where}: aux values must be Tensors",
        )
        _expect(item.plan == plan, f"{where}: the item was not made by the plan of its size")
        _expect(item.geometry == plan.geometry, f"{where}: item geometry is not the plan's")
        want = writer.shape(plan)
        _expect(item.feature.shape == want, f"{where}: feature {item.feature.shape}, want {want}")


def check_rejected_sizes(target: ConformanceTarget) -> None:
    """Sizes the family refuses by design fail with an `MmRequestError`, not a crash, both
    when planned from a header and when processed."""
    for w, h in _rejected_sizes(target):
        try:
            target.family.checked_plan(w, h)
        except MmRequestError:
            pass
        else:
            raise AssertionError(f"image {w}x{h} is declared rejected but plan accepted it")
        try:
            target.family.process_item(generated_image(w, h), threads=1)
        except MmRequestError:
            continue
        raise AssertionError(f"image {w}x{h} is declared rejected but process_item accepted it")


def check_deterministic(target: ConformanceTarget) -> None:
    """The same image twice gives the same bits."""
    for w, h in _sizes(target):
        image = generated_image(w, h, seed=1)
        a, b = _process(target, image), _process(target, image.copy())
        _expect(_same_item(a, b), f"image {w}x{h}: two runs differ")


def check_kernel_threads_invariant(target: ConformanceTarget) -> None:
    """The kernel's thread budget never changes the result."""
    for w, h in _sizes(target):
        image = generated_image(w, h, seed=2)
        ref = _process(target, image, threads=1)
        for threads in (2, 3):
            got = _process(target, image, threads=threads)
            _expect(_same_item(ref, got), f"image {w}x{h}: threads={threads} differs from 1")


def check_thread_safety(target: ConformanceTarget) -> None:
    """The same item from 8 threads at once (one shared family instance) gives 8 equal
    results, equal to the inline one."""
    size = max(_pipeline_sizes(target), key=lambda s: s[0] * s[1])
    image = generated_image(*size, seed=3)
    ref = _process(target, image)
    barrier = threading.Barrier(8)

    def run(_: int) -> ProcessedItem:
        barrier.wait()
        return target.family.process_item(image, threads=1)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(run, range(8)))
    _expect(all(_same_item(ref, r) for r in results), "concurrent calls disagree")
    req = _request(target, 2, seed=3)
    with target.pipeline(threads=2) as pipe:
        base = pipe.process(req)
        with ThreadPoolExecutor(4) as pool:
            outs = list(pool.map(lambda _: pipe.process(req), range(4)))
    _expect(all(_same_output(base, o) for o in outs), "concurrent pipeline requests disagree")


def check_pool_sizes_identical(target: ConformanceTarget) -> None:
    """Inline (threads=0) and pooled pipelines give bit-identical outputs."""
    req = _request(target, 3, seed=4)
    outs = []
    for threads in (0, 1, 2, 3):
        with target.pipeline(threads=threads) as pipe:
            outs.append(pipe.process(req))
    _expect(all(_same_output(outs[0], o) for o in outs[1:]), "pool sizes 0/1/2/3 disagree")


def check_pipeline_matches_process_item(target: ConformanceTarget) -> None:
    """Through the pipeline (PNG bytes, decoded by the core) each item equals process_item on
    the original pixels, and carries its plan's content tokens."""
    sizes = _pipeline_sizes(target)
    images = [generated_image(*s, seed=5 + k) for k, s in enumerate(sizes)]
    req = MmInput(
        input_ids=target.family.example_prompt(len(images)),
        images=[encode_png(im) for im in images],
    )
    with target.pipeline() as pipe:
        out = pipe.process(req)
    _expect(len(out.items) == len(images), f"{len(out.items)} items for {len(images)} images")
    for k, (item, image) in enumerate(zip(out.items, images, strict=True)):
        ref = _process(target, image)
        got = ProcessedItem(item.feature, item.aux, item.geometry)
        _expect(_same_item(ref, got), f"image {k}: pipeline result differs from process_item")
        tokens = target.family.checked_plan(*sizes[k]).content
        _expect(item.tokens == tokens, f"image {k}: item.tokens {item.tokens} != {tokens}")


def check_compact_expands(target: ConformanceTarget) -> None:
    """A family that offers the compact form: at every size, and through the pipeline, the
    compact feature expands to the full one bit for bit, with the same aux and geometry."""
    for w, h in _sizes(target):
        image = generated_image(w, h, seed=6)
        full = _process(target, image)
        compact = target.family.process_item(image, threads=2, compact=True)
        _expect(
            isinstance(compact, ProcessedItem) and isinstance(compact.feature, CompactTensor),
            f"image {w}x{h}: process_item(compact=True) did not give a CompactTensor feature",
        )
        _expect(_same_item(full, compact), f"image {w}x{h}: compact form differs from full")
    req = _request(target, 2, seed=6)
    with target.pipeline() as pipe:
        a, b = pipe.process(req), pipe.process(req, compact=True)
    _expect(all(isinstance(it.feature, CompactTensor) for it in b.items), "compact=True items")
    _expect(_same_output(a, b), "pipeline compact=True differs from the full output")


def process_item_and_compact(
    family: Family[Any], image: npt.NDArray[np.uint8], *, threads: int = 1
) -> ProcessedItem:
    """``family.process_item(image)``, after asserting that the compact form of the same
    image is a `CompactTensor` that expands to it bit for bit, with the same aux and geometry.
    A parity test that compares this result with its reference then proves the compact form
    against that reference too."""
    full = family.process_item(image, threads=threads)
    compact = family.process_item(image, threads=threads, compact=True)
    _expect(
        isinstance(compact, ProcessedItem) and isinstance(compact.feature, CompactTensor),
        "process_item(compact=True) did not give a CompactTensor feature",
    )
    _expect(_same_item(full, compact), "the compact form does not expand to process_item's")
    return full


def compact_round_trips(pipe: Pipeline, request: MmInput, folder: Path) -> MmOutput:
    """The compact output of ``request``, after asserting that it equals the full output bit
    for bit (every feature expanded), as one request and twice in a batch, and again after a
    safetensors and an ``.npz`` round trip (written into ``folder``). A family's own tests call
    it with their params grid."""
    full = pipe.process(request)
    compact = pipe.process(request, compact=True)
    _expect(all(isinstance(it.feature, CompactTensor) for it in compact.items), "compact items")
    _expect(_same_output(full, compact), "compact=True differs from the full output")
    for out in pipe.process_batch([request, request], compact=True):
        _expect(isinstance(out, MmOutput) and _same_output(full, out), "a batch's compact output")
    body = b"".join(bytes(c) for c in encode_safetensors(compact))
    back = load_output(body)
    _expect(
        all(a.feature == b.feature for a, b in zip(back.items, compact.items, strict=True)),
        "the compact features read back from safetensors differ",
    )
    _expect(_same_output(full, back), "compact output after safetensors")
    save_output(compact, folder / "compact.npz")
    _expect(_same_output(full, load_output(folder / "compact.npz")), "compact output after .npz")
    return compact


def check_layout(target: ConformanceTarget) -> None:
    """Through the pipeline: every item's offsets are in bounds, ordered, disjoint and as long
    as its plan's content, each placeholder replaced by its plan's whole pattern; the prompt
    the family offers as an example is accepted; `count_tokens`, from headers alone, gives the
    pipeline's lengths."""
    fam = target.family
    sizes = _pipeline_sizes(target)
    images = [generated_image(*s, seed=6 + k) for k, s in enumerate(sizes)]
    plans: list[Plan] = [fam.checked_plan(*s) for s in sizes]
    ids = np.asarray(fam.example_prompt(len(images)), dtype=np.int64)
    req = MmInput(input_ids=ids, images=[encode_png(im) for im in images])
    with target.pipeline() as pipe:
        try:
            pipe.check_prompt(ids, len(images))
        except LayoutError as err:
            raise AssertionError(f"example_prompt({len(images)}) is refused: {err}") from err
        out = pipe.process(req)
        count = pipe.count_tokens(req)
    length = len(out.input_ids)
    _expect(
        length == len(ids) - len(images) + sum(p.length for p in plans),
        f"{length} expanded tokens, the plans say {sum(p.length for p in plans)} for the items",
    )
    prev = -1
    for k, (s, e) in enumerate(out.offsets):
        _expect(0 <= s <= e < length, f"image {k}: offsets {(s, e)} outside 0..{length - 1}")
        _expect(s > prev, f"image {k}: offsets {(s, e)} overlap or precede the previous item")
        prev = e
        _expect(e - s + 1 == plans[k].content, f"image {k}: spans {e - s + 1} tokens")
    _expect(
        count.length == length
        and count.per_item == [it.tokens for it in out.items]
        and count.modalities == [it.modality for it in out.items],
        f"count_tokens says {count}, the pipeline made {length} tokens "
        f"{[it.tokens for it in out.items]} of {[it.modality for it in out.items]}",
    )


def check_positions(target: ConformanceTarget) -> None:
    """Rope1D has the expanded length; MRope is int64 [3, L], non-negative, with
    delta == max + 1 - L."""
    for n in (0, 1, 3):
        if n == 0 and target.family_class.requires_images:
            continue
        with target.pipeline() as pipe:
            out = pipe.process(_request(target, n, seed=7))
        length = len(out.input_ids)
        pos = out.positions
        if isinstance(pos, Rope1D):
            _expect(pos.length == length, f"{n} image(s): Rope1D({pos.length}) for {length}")
            continue
        _expect(isinstance(pos, MRope), f"positions are {type(pos).__name__}")
        assert isinstance(pos, MRope)
        p = pos.positions
        _expect(p.dtype == np.int64, f"MRope positions are {p.dtype}, not int64")
        _expect(p.shape == (3, length), f"MRope shape {p.shape}, want (3, {length})")
        _expect(bool((p >= 0).all()), "MRope has negative positions")
        want = int(p.max()) + 1 - length if length else 0
        _expect(pos.delta == want, f"MRope delta {pos.delta}, max + 1 - L = {want}")


def check_placeholder_mismatch(target: ConformanceTarget) -> None:
    """More or fewer images than placeholders fails with a `LayoutError`, in the pipeline and
    in `Pipeline.check_prompt` (what `sglang-mm tokens` applies before counting)."""
    fam = target.family
    img = _png(_pipeline_sizes(target)[0])
    cases = [(2, 1), (1, 2), (3, 2)]
    if not target.family_class.requires_images:
        cases.append((1, 0))
    with target.pipeline() as pipe:
        for placeholders, n_images in cases:
            ids = fam.example_prompt(placeholders)
            try:
                pipe.check_prompt(ids, n_images)
            except LayoutError:
                pass
            else:
                raise AssertionError(
                    f"check_prompt accepts {placeholders} placeholder(s) with {n_images} "
                    "image(s), which the layout refuses"
                )
            req = MmInput(input_ids=ids, images=[img] * n_images)
            try:
                pipe.process(req)
            except LayoutError:
                continue
            except MmError as e:
                raise AssertionError(
                    f"{placeholders} placeholder(s) with {n_images} image(s) raised "
                    f"{type(e).__name__} instead of LayoutError: {e}"
                ) from e
            raise AssertionError(
                f"{placeholders} placeholder(s) with {n_images} image(s) did not fail with "
                "LayoutError"
            )


def check_corrupt_bytes(target: ConformanceTarget) -> None:
    """Random, truncated and header-only bytes fail with a `DecodeError` naming the item."""
    good = _png(_pipeline_sizes(target)[-1], seed=8)
    rng = np.random.default_rng(8)
    bad = {
        "random bytes": rng.integers(0, 256, 512, dtype=np.uint8).tobytes(),
        "truncated PNG": good[: len(good) // 2],
        "header-only PNG": good[:33],
    }
    with target.pipeline() as pipe:
        for what, data in bad.items():
            req = MmInput(input_ids=target.family.example_prompt(2), images=[good, data])
            try:
                pipe.process(req)
            except DecodeError as e:
                _expect(e.item == 1, f"{what}: DecodeError names item {e.item}, not 1: {e}")
                continue
            raise AssertionError(f"{what}: no DecodeError")


def check_hash(target: ConformanceTarget) -> None:
    """Each item's hash is content_hash of its encoded bytes, whatever the source form."""
    data = _png(_pipeline_sizes(target)[0], seed=9)
    b64 = base64.b64encode(data).decode()
    sources: Sequence[bytes | str] = [data, b64, "data:image/png;base64," + b64]
    req = MmInput(input_ids=target.family.example_prompt(len(sources)), images=sources)
    with target.pipeline() as pipe:
        out = pipe.process(req)
    want = _native.content_hash(data)
    _expect(out.hashes == [want] * len(sources), f"hashes {out.hashes}, want {want} for each")
    _expect(
        out.spec_fingerprint == target.resolved.fingerprint,
        "output spec_fingerprint differs from the spec's",
    )


ALL_CHECKS: tuple[Check, ...] = (
    check_entry_point,
    check_params_json_roundtrip,
    check_params_json_schema,
    check_plan,
    check_rejected_sizes,
    check_deterministic,
    check_kernel_threads_invariant,
    check_thread_safety,
    check_pool_sizes_identical,
    check_pipeline_matches_process_item,
    check_compact_expands,
    check_layout,
    check_positions,
    check_placeholder_mismatch,
    check_corrupt_bytes,
    check_hash,
)


def checks_for(target: ConformanceTarget) -> Iterator[Check]:
    """The checks that apply: the entry point only for installed families, the rejected sizes
    only when the family declares some, the compact form only when the family offers it."""
    for check in ALL_CHECKS:
        if check is check_entry_point and not target.installed:
            continue
        if check is check_rejected_sizes and not _declares_rejected_sizes(target):
            continue
        if check is check_compact_expands and not _offers_compact(target):
            continue
        yield check


def _offers_compact(target: ConformanceTarget) -> bool:
    """Whether the family has a compact form; one that cannot be built keeps the check."""
    try:
        return target.family.offers_compact
    except Exception:
        return True


def _declares_rejected_sizes(target: ConformanceTarget) -> bool:
    """Whether the target's params refuse some sizes; a family that cannot even be built keeps
    the check, so the failure is reported by a test rather than at collection."""
    try:
        return bool(_rejected_sizes(target))
    except Exception:
        return True


__all__ = [
    "ALL_CHECKS",
    "Check",
    "checks_for",
    "compact_round_trips",
    "process_item_and_compact",
    *[c.__name__ for c in ALL_CHECKS],
]
