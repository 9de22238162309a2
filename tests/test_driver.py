"""The request driver: flow, checks in order, the par seam, first-error rule, plugin bugs,
batches and header-only token counting. Decoding goes through the real `_native` kernels."""

from __future__ import annotations

import base64
import threading
from pathlib import Path
from typing import Any, ClassVar

import blake3
import corpus
import numpy as np
import pytest
from core_helpers import png_bytes
from PIL import Image
from pydantic import Field
from sglang_mm_toy import ToyFamily, ToyMRopeFamily

from sglang_mm_core import (
    DecodeError,
    FetchError,
    KernelArgumentError,
    LayoutError,
    LimitError,
    MmError,
    MmInput,
    MmOutput,
    MmRequestError,
    MRope,
    Pipeline,
    PluginError,
    Registry,
    Rope1D,
    SpecError,
    UnsupportedModalityError,
    load_spec,
    pipeline_from_spec,
)
from sglang_mm_core._threads import available_cores, env_threads, resolve_threads
from sglang_mm_core.conformance import generated_image
from sglang_mm_core.plugin import (
    Family,
    FamilyParams,
    Features,
    Geometry,
    HwcPatches,
    Part,
    Placeholder,
    Plan,
    Repeat,
    Table,
    Tensor,
    mrope_positions,
)

SIZES = [(13, 9), (40, 17), (8, 8), (3, 50), (64, 33)]


def images(n: int = 2, seed: int = 0) -> list[np.ndarray]:
    return [generated_image(*SIZES[k % len(SIZES)], seed=seed + k) for k in range(n)]


def prompt(n: int, token: int = 5) -> list[int]:
    return [9] + [t for _ in range(n) for t in (token, 9)]


def pipe(registry: Registry, **spec: Any) -> Pipeline:
    return pipeline_from_spec({"family": "toy", **spec}, registry=registry)


def reference_hash(data: bytes) -> int:
    return int.from_bytes(blake3.blake3(data).digest()[:8], "big")


def same(a: MmOutput, b: MmOutput) -> bool:
    return (
        np.array_equal(a.input_ids, b.input_ids)
        and a.offsets == b.offsets
        and a.hashes == b.hashes
        and a.positions == b.positions
        and all(
            x.feature == y.feature and dict(x.aux) == dict(y.aux) and x.geometry == y.geometry
            for x, y in zip(a.items, b.items, strict=True)
        )
    )


def test_process_toy(registry: Registry) -> None:
    imgs = images(2)
    datas = [png_bytes(im) for im in imgs]
    with pipe(registry) as p:
        out = p.process(MmInput(input_ids=prompt(2), images=datas, rid="r1"))
    family = ToyFamily(ToyFamily.Params())
    n = [family.plan(im.shape[1], im.shape[0]).content for im in imgs]
    want = [9, 3, *[5] * n[0], 4, 9, 3, *[5] * n[1], 4, 9]
    assert out.input_ids.dtype == np.int64 and out.input_ids.tolist() == want
    assert out.offsets == [(2, 1 + n[0]), (5 + n[0], 4 + n[0] + n[1])]
    assert out.positions == Rope1D(len(want))
    assert out.family == "toy" and out.rid == "r1"
    assert out.spec_fingerprint == p.spec_fingerprint and len(out.spec_fingerprint) == 64
    for k, item in enumerate(out.items):
        decoded = np.asarray(Image.open(__import__("io").BytesIO(datas[k])).convert("RGB"))
        ref = family.process_item(decoded)
        assert item.feature == ref.feature and dict(item.aux) == dict(ref.aux)
        assert item.geometry == ref.geometry and item.tokens == n[k]
        assert item.hash == reference_hash(datas[k])


def test_mrope_family(registry: Registry) -> None:
    imgs = images(3)
    with pipeline_from_spec({"family": "toy_mrope"}, registry=registry) as p:
        out = p.process(MmInput(prompt(3), [png_bytes(im) for im in imgs]))
    fam = ToyMRopeFamily(ToyMRopeFamily.Params())
    grids = [(1, it.geometry.grid[1] // 2, it.geometry.grid[2] // 2) for it in out.items]
    assert isinstance(out.positions, MRope)
    assert out.positions == mrope_positions(len(out.input_ids), out.offsets, grids)
    assert [it.feature.shape[0] for it in out.items] == [
        4 * fam.plan(im.shape[1], im.shape[0]).content for im in imgs
    ]


@pytest.mark.parametrize("threads", [0, 1, 2, 3, 8])
def test_bit_identical_for_every_pool_size(registry: Registry, threads: int) -> None:
    req = MmInput(prompt(5), [png_bytes(im) for im in images(5, seed=3)])
    with pipe(registry, threads=0) as p0, pipe(registry, threads=threads) as p:
        assert same(p0.process(req), p.process(req))
        batch = p.process_batch([req, req])
        assert all(same(p0.process(req), b) for b in batch)  # type: ignore[arg-type]


def test_resolve_threads(monkeypatch: pytest.MonkeyPatch) -> None:

    monkeypatch.delenv("SGLANG_MM_THREADS", raising=False)
    assert resolve_threads(None) == min(8, available_cores())
    assert resolve_threads(None, cores=3) == 3
    assert resolve_threads(None, cores=40) == 8
    assert env_threads() is None
    monkeypatch.setenv("SGLANG_MM_THREADS", "  ")
    assert env_threads() is None  # blank is unset
    monkeypatch.setenv("SGLANG_MM_THREADS", "3")
    assert env_threads() == 3
    assert resolve_threads(None, cores=40) == 3
    assert resolve_threads(None) == 3
    assert resolve_threads(0) == 0  # the spec wins
    monkeypatch.setenv("SGLANG_MM_THREADS", "0")
    assert resolve_threads(None) == 0
    for bad in ("x", "-1", "1.5"):
        monkeypatch.setenv("SGLANG_MM_THREADS", bad)
        with pytest.raises(SpecError, match="SGLANG_MM_THREADS must be a non-negative integer"):
            resolve_threads(None)


def test_available_cores_follows_the_affinity_set(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    if hasattr(os, "sched_getaffinity"):
        assert available_cores() == len(os.sched_getaffinity(0))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3, 5}, raising=False)
    assert available_cores() == 2
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert available_cores() == 6
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert available_cores() == 1


def test_env_threads_reach_the_pipeline(registry: Registry, monkeypatch) -> None:
    monkeypatch.setenv("SGLANG_MM_THREADS", "3")
    with pipe(registry) as p, pipe(registry, threads=1) as q:
        assert p.threads == 3 and q.threads == 1


class Recording(ToyFamily):
    """Records the kernel thread budget and the thread of each kernel call."""

    name = "rec"
    calls: ClassVar[list[tuple[int, int]]] = []

    def kernel(self, image: np.ndarray, plan: Plan, *, codes: bool, threads: int) -> Any:
        self.calls.append((threads, threading.get_ident()))
        return super().kernel(image, plan, codes=codes, threads=threads)


@pytest.mark.parametrize(
    ("pool", "n_items", "want"),
    [(4, 1, 4), (4, 2, 2), (4, 3, 1), (4, 5, 1), (8, 3, 2), (1, 1, 1), (0, 1, 1), (0, 3, 1)],
)
def test_spare_threads_go_to_the_kernel(pool: int, n_items: int, want: int) -> None:
    reg = Registry()
    reg.register_family(Recording)
    Recording.calls.clear()
    with pipeline_from_spec({"family": "rec", "threads": pool}, registry=reg) as p:
        p.process(MmInput(prompt(n_items), [png_bytes(im) for im in images(n_items)]))
    assert [c[0] for c in Recording.calls] == [want] * n_items


@pytest.mark.parametrize(
    ("pool", "share", "n_items", "want"),
    [(8, 4, 1, 4), (8, 4, 2, 2), (8, 4, 4, 1), (8, 2, 1, 2), (2, 8, 1, 2), (4, 1, 2, 1)],
)
def test_request_threads_bound_each_request(pool: int, share: int, n_items: int, want: int) -> None:
    """A server's shared pipeline: the pool stays whole, each request's kernels get a share."""
    reg = Registry()
    reg.register_family(Recording)
    Recording.calls.clear()
    spec = load_spec({"family": "rec", "threads": pool}, registry=reg)
    with Pipeline(spec, request_threads=share) as p:
        assert (p.threads, p.par.request_threads) == (pool, share)
        p.process(MmInput(prompt(n_items), [png_bytes(im) for im in images(n_items)]))
    assert [c[0] for c in Recording.calls] == [want] * n_items


def test_threads_zero_is_inline() -> None:
    reg = Registry()
    reg.register_family(Recording)
    Recording.calls.clear()
    before = threading.active_count()
    with pipeline_from_spec({"family": "rec", "threads": 0}, registry=reg) as p:
        p.process(MmInput(prompt(4), [png_bytes(im) for im in images(4)]))
        assert p.par._pool is None
    assert {c[1] for c in Recording.calls} == {threading.get_ident()}
    assert threading.active_count() == before


def test_pool_is_reused_and_closed(registry: Registry) -> None:
    req = MmInput(prompt(3), [png_bytes(im) for im in images(3)])
    p = pipe(registry, threads=2)
    p.process(req)
    pool = p.par._pool
    assert pool is not None
    p.process(req)
    assert p.par._pool is pool
    p.close()
    with pytest.raises(RuntimeError, match="closed"):
        p.process(req)


# -- checks in order --------------------------------------------------------------------------


@pytest.mark.parametrize("ids", [[], np.zeros(0, dtype=np.int64)])
def test_empty_input_ids(registry: Registry, ids: Any) -> None:
    with pipe(registry) as p, pytest.raises(MmRequestError, match="input_ids is empty"):
        p.process(MmInput(ids, [b"whatever"]))


@pytest.mark.parametrize("ids", [[1.5, 2.0], [[1, 2]], ["a"]])
def test_bad_input_ids(registry: Registry, ids: Any) -> None:
    with pipe(registry) as p, pytest.raises(MmRequestError, match="input_ids must be"):
        p.process(MmInput(ids, []))


def test_requires_images(registry: Registry) -> None:
    with pipeline_from_spec({"family": "toy_mrope"}, registry=registry) as p:
        with pytest.raises(MmRequestError, match="without image sources"):
            p.process(MmInput([1, 2, 3], []))


def test_text_only_request(registry: Registry) -> None:
    with pipe(registry) as p:
        out = p.process(MmInput([1, 2, 3]))
    assert out.input_ids.tolist() == [1, 2, 3] and out.items == [] and out.offsets == []


class VideoOnly(ToyFamily):
    name = "video_only"
    modalities = frozenset({"video"})

    def video_placeholder(self) -> Placeholder:
        return Placeholder(self.placeholder().token + 1)


def test_unsupported_modality(registry: Registry) -> None:
    reg = Registry()
    reg.register_family(VideoOnly)
    with pipeline_from_spec({"family": "video_only"}, registry=reg) as p:
        with pytest.raises(UnsupportedModalityError, match="does not accept images"):
            p.process(MmInput(prompt(1), [png_bytes(images(1)[0])]))
    with pipe(registry) as p:
        with pytest.raises(UnsupportedModalityError, match="does not accept videos"):
            p.process(MmInput(prompt(0), videos=[b"not read"]))


class VideoWithoutPlaceholder(ToyFamily):
    name = "video_no_placeholder"
    modalities = frozenset({"image", "video"})


def test_a_video_family_states_its_placeholder() -> None:
    reg = Registry()
    reg.register_family(VideoWithoutPlaceholder)
    with pytest.raises(PluginError, match="no video_placeholder"):
        pipeline_from_spec({"family": "video_no_placeholder"}, registry=reg)


class VideoNeedsAParam(ToyFamily):
    name = "video_needs_a_param"
    modalities = frozenset({"image", "video"})

    def video_placeholder(self) -> Placeholder:
        raise UnsupportedModalityError("videos need the spec param 'video_token_id'")


def test_an_instance_without_what_videos_need_refuses_them_in_its_words() -> None:
    """The family's UnsupportedModalityError from video_placeholder: images are served, every
    request with videos (processed or counted) is refused with it, before any fetch."""
    reg = Registry()
    reg.register_family(VideoNeedsAParam)
    with pipeline_from_spec({"family": "video_needs_a_param"}, registry=reg) as p:
        assert p.process(MmInput(prompt(1), [png_bytes(images(1)[0])])).items
        for call in (p.process, p.count_tokens):
            with pytest.raises(UnsupportedModalityError, match=r"^videos need the spec param"):
                call(MmInput(prompt(0), videos=["/no/such/file.mp4"]))


def test_max_items_before_any_fetch(registry: Registry) -> None:
    # were these fetched, the first would be a FetchError (no such file)
    srcs = ["/no/such/file.png", "/no/such/other.png", "/no/such/third.png"]
    with pipe(registry, limits={"max_items": 2}) as p:
        with pytest.raises(LimitError, match=r"3 image\(s\), over limits.max_items = 2"):
            p.process(MmInput(prompt(3), srcs))
        with pytest.raises(FetchError, match=r"image 0 \(file\)"):
            p.process(MmInput(prompt(2), srcs[:2]))


def test_placeholder_mismatch(registry: Registry) -> None:
    data = png_bytes(images(1)[0])
    with pipe(registry) as p:
        with pytest.raises(LayoutError, match=r"2 media placeholder\(s\) but 1 media item"):
            p.process(MmInput(prompt(2), [data]))


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("threads", [0, 2, 4])
def test_first_error_by_item_index(registry: Registry, threads: int) -> None:
    good = png_bytes(images(1)[0])
    srcs = [good, b"not an image", good, good[:40]]
    with pipe(registry, threads=threads) as p:
        with pytest.raises(DecodeError) as info:
            p.process(MmInput(prompt(4), srcs))
    assert info.value.item == 1 and info.value.source_kind == "bytes"
    assert str(info.value).startswith("image 1 (bytes): ")


class SlowFailure(ToyFamily):
    """Image 0 (width 13) fails late; a later image fails fast in decode."""

    name = "slow_failure"

    def kernel(self, image: np.ndarray, plan: Plan, *, codes: bool, threads: int) -> Any:
        if image.shape[1] == 13:
            threading.Event().wait(0.3)
            raise KernelArgumentError("late failure")
        return super().kernel(image, plan, codes=codes, threads=threads)


@pytest.mark.parametrize("threads", [0, 2, 4])
def test_lowest_index_wins_whatever_the_timing(threads: int) -> None:
    reg = Registry()
    reg.register_family(SlowFailure)
    good = [png_bytes(im) for im in images(3)]
    with pipeline_from_spec({"family": "slow_failure", "threads": threads}, registry=reg) as p:
        with pytest.raises(KernelArgumentError, match=r"^image 0 \(bytes\): late failure"):
            p.process(MmInput(prompt(4), [good[0], good[1], b"junk", good[2]]))


class Buggy(ToyFamily):
    name = "buggy"

    def kernel(self, image: np.ndarray, plan: Plan, *, codes: bool, threads: int) -> Any:
        if image.shape[1] == 40:
            return 1 // 0
        return super().kernel(image, plan, codes=codes, threads=threads)


def test_plugin_bug_is_a_plugin_error() -> None:
    reg = Registry()
    reg.register_family(Buggy)
    with pipeline_from_spec({"family": "buggy", "threads": 2}, registry=reg) as p:
        with pytest.raises(
            PluginError, match="family 'buggy' failed in processing image 1: ZeroDivisionError"
        ) as info:
            p.process(MmInput(prompt(2), [png_bytes(im) for im in images(2)]))
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert info.value.__cause__.__traceback__ is not None


class NotAPlan(ToyFamily):
    name = "not_a_plan"

    def plan(self, width: int, height: int) -> Plan:
        return (width, height)  # type: ignore[return-value]


class WrongPositions(ToyFamily):
    name = "wrong_positions"

    def positions(self, length: int, offsets: Any, geometries: Any, input_ids: Any) -> Rope1D:
        return Rope1D(length + 1)


class RaisingPlan(ToyFamily):
    name = "raising_plan"

    def plan(self, width: int, height: int) -> Plan:
        raise KeyError("x")


class ShortKernel(ToyFamily):
    """Its kernel writes fewer values than its writer's shape for the plan."""

    name = "short_kernel"

    def kernel(self, image: np.ndarray, plan: Plan, *, codes: bool, threads: int) -> Any:
        return super().kernel(image, plan, codes=codes, threads=threads)[1:]


class JunkFeatures(ToyFamily):
    name = "junk_features"

    def features(self) -> Any:
        return "planes"


@pytest.mark.parametrize(
    ("family", "message"),
    [
        (NotAPlan, "plan returned tuple, not a Plan"),
        (WrongPositions, "positions \\(Rope1D\\) do not fit"),
        (RaisingPlan, "failed in processing image 0: KeyError"),
        (ShortKernel, "'short_kernel': kernel returned a float32 array of .* values; its writer"),
    ],
)
def test_family_contract_violations(family: type[ToyFamily], message: str) -> None:
    reg = Registry()
    reg.register_family(family)
    with pipeline_from_spec({"family": family.name}, registry=reg) as p:
        with pytest.raises(PluginError, match=message):
            p.process(MmInput(prompt(1), [png_bytes(images(1)[0])]))


def test_junk_features_fail_when_the_pipeline_is_built() -> None:
    reg = Registry()
    reg.register_family(JunkFeatures)
    with pytest.raises(PluginError, match="features\\(\\) returned str, not Features"):
        pipeline_from_spec({"family": "junk_features"}, registry=reg)


def test_image_limits(registry: Registry) -> None:
    data = png_bytes(generated_image(40, 30))
    with pipe(registry, limits={"max_image_pixels": 1000}) as p:
        with pytest.raises(LimitError, match=r"^image 0 \(bytes\)") as decoded:
            p.process(MmInput(prompt(1), [data]))
        with pytest.raises(LimitError, match=r"^image 0 \(bytes\)") as counted:
            p.count_tokens(MmInput(prompt(1), [data]))
        # One limit rule (the kernels'), so counting and decoding refuse with one message.
        assert (
            str(counted.value)
            == str(decoded.value)
            == (
                "image 0 (bytes): PNG image of 40x30 = 1200 pixels exceeds the limit of 1000 pixels"
            )
        )
    with pipe(registry, limits={"max_image_side": 39}) as p:
        with pytest.raises(LimitError):
            p.process(MmInput(prompt(1), [data]))


# -- sources and decode options ---------------------------------------------------------------


def test_source_forms_agree(registry: Registry, tmp_path: Path) -> None:
    data = png_bytes(images(1)[0])
    path = tmp_path / "a.png"
    path.write_bytes(data)
    b64 = base64.b64encode(data).decode()
    forms = [
        data,
        bytearray(data),
        memoryview(data),
        str(path),
        f"file://{path}",
        b64,
        "data:image/png;base64," + b64,
    ]
    with pipe(registry, threads=2) as p:
        outs = [p.process(MmInput(prompt(1), [f])) for f in forms]
    assert all(same(outs[0], o) for o in outs)
    assert outs[0].hashes == [reference_hash(data)]


def test_decode_options_reach_the_decoder(registry: Registry) -> None:
    rgba = np.dstack([images(1)[0], np.arange(13 * 9, dtype=np.uint8).reshape(9, 13)])
    data = png_bytes(rgba, mode="RGBA")
    fam = ToyFamily(ToyFamily.Params())
    refs = {}
    for alpha in ("white", "drop"):
        with pipe(registry, decode={"alpha": alpha}) as p:
            out = p.process(MmInput(prompt(1), [data]))
        refs[alpha] = fam.process_item(corpus.pillow_decode(data, alpha)).feature
        assert out.items[0].feature == refs[alpha]
    assert refs["white"] != refs["drop"]  # the option is visible in the output


# -- batches ----------------------------------------------------------------------------------


def test_batch_errors_per_request(registry: Registry) -> None:
    good = [png_bytes(im) for im in images(3, seed=7)]
    reqs = [
        MmInput(prompt(2), good[:2], rid="a"),
        MmInput(prompt(2), [good[0], b"junk"], rid="b"),
        MmInput([], [], rid="c"),
        MmInput(prompt(1), ["/no/such.png"], rid="d"),
        MmInput(prompt(3), good, rid="e"),
    ]
    with pipe(registry, threads=3) as p:
        outs = p.process_batch(reqs, return_exceptions=True)
        singles = [p.process(reqs[0]), p.process(reqs[4])]
        with pytest.raises(DecodeError, match="image 1"):
            p.process_batch(reqs)
    assert isinstance(outs[0], MmOutput) and same(outs[0], singles[0]) and outs[0].rid == "a"
    assert isinstance(outs[1], DecodeError) and outs[1].item == 1
    assert isinstance(outs[2], MmRequestError) and "empty" in str(outs[2])
    assert isinstance(outs[3], FetchError)
    assert isinstance(outs[4], MmOutput) and same(outs[4], singles[1])
    assert all(isinstance(o, MmError) for o in outs[1:4])


# -- token counting ---------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["toy", "toy_mrope"])
def test_count_tokens_matches_process(registry: Registry, family: str) -> None:
    req = MmInput(prompt(4), [png_bytes(im) for im in images(4, seed=2)])
    with pipeline_from_spec({"family": family}, registry=registry) as p:
        out = p.process(req)
        count = p.count_tokens(req)
    assert count.length == len(out.input_ids)
    assert count.per_item == [it.tokens for it in out.items]


def test_count_tokens_refuses_what_process_refuses(registry: Registry) -> None:
    """A prompt without a placeholder for its image is a LayoutError in both, before any
    fetch (the server's /tokens and the CLI count through here)."""
    req = MmInput([9, 6, 7], [png_bytes(generated_image(8, 8))])
    with pipe(registry) as p:
        with pytest.raises(LayoutError) as processed:
            p.process(req)
        with pytest.raises(LayoutError) as counted:
            p.count_tokens(req)
    assert str(counted.value) == str(processed.value)


def test_count_tokens_reads_headers_only(registry: Registry) -> None:
    data = png_bytes(generated_image(40, 17))
    idat = data.index(b"IDAT")
    header_only = data[: idat + 4] + b"\x00" * 4  # IDAT cut off: not decodable
    with pipe(registry) as p:
        with pytest.raises(DecodeError):
            p.process(MmInput(prompt(1), [header_only]))
        count = p.count_tokens(MmInput(prompt(1), [header_only]))
    fam = ToyFamily(ToyFamily.Params())
    assert count.per_item == [fam.plan(40, 17).content]
    assert count.length == len(prompt(1)) - 1 + fam.plan(40, 17).length


def test_expansion_is_the_familys_expand(registry: Registry) -> None:
    imgs = images(3, seed=11)
    with pipe(registry) as p:
        out = p.process(MmInput(prompt(3), [png_bytes(im) for im in imgs]))
    fam = ToyFamily(ToyFamily.Params())
    exp = fam.expand(prompt(3), [fam.plan(im.shape[1], im.shape[0]) for im in imgs])
    assert out.input_ids.tolist() == exp.input_ids.tolist() and out.offsets == exp.offsets


def test_images_must_be_a_list(registry: Registry) -> None:
    with pipe(registry) as p, pytest.raises(MmRequestError, match="not a single str"):
        p.process(MmInput(prompt(1), "/some/file.png"))  # type: ignore[arg-type]


class BuggyCount(ToyFamily):
    name = "buggy_count"

    def plan(self, width: int, height: int) -> Plan:
        raise ValueError("oops")


def test_plugin_bug_in_count_tokens() -> None:
    reg = Registry()
    reg.register_family(BuggyCount)
    with pipeline_from_spec({"family": "buggy_count"}, registry=reg) as p:
        with pytest.raises(PluginError, match=r"^image 0 \(bytes\): family 'buggy_count' failed"):
            p.count_tokens(MmInput(prompt(1), [png_bytes(images(1)[0])]))


# -- a family's own kernel and the core's composition of the same features ---------------------


class HwcParams(FamilyParams):
    patch: int = Field(4, gt=0)
    frames: int = Field(2, gt=0)
    image_token_id: int = Field(5, ge=0)


class ComposedHwc(Family[HwcParams]):
    """Padded HWC patches (Inkling's layout) with two broadcast frames, composed by the core."""

    name = "composed_hwc"

    def plan(self, width: int, height: int) -> Plan:
        ps = self.params.patch
        rows, cols = -(-height // ps), width // ps + 1
        part = Part((width, height), pad_to=(cols * ps, rows * ps))
        tokens = Repeat(self.params.image_token_id, rows * cols)
        return Plan(tokens, Geometry(height, width, (rows, cols)), (part,))

    def features(self) -> Features:
        table = Table((0.5, 0.4, 0.3), (0.2, 0.3, 0.25), arithmetic="float32", pad_sample=-1)
        return Features(table, HwcPatches(self.params.patch, self.params.frames), "pil_bicubic")


class OwnHwc(ComposedHwc):
    """The same features written by a numpy kernel of its own (no resize: the plan keeps the
    size), which hands back one frame, as the writer lays it out."""

    name = "own_hwc"

    def features(self) -> Features:
        f = super().features()
        return Features(f.table, f.writer)

    def kernel(self, image: np.ndarray, plan: Plan, *, codes: bool, threads: int) -> Any:
        ps = self.params.patch
        rows, cols = plan.geometry.grid
        h, w, _ = image.shape
        table = self.features().table
        assert table is not None and table.pad is not None
        if codes:
            canvas = np.zeros((rows * ps, cols * ps, 3), np.uint8)
            canvas[:h, :w] = image
        else:
            canvas = np.broadcast_to(table.pad, (rows * ps, cols * ps, 3)).copy()
            canvas[:h, :w] = table.values[np.arange(3), image]
        patches = canvas.reshape(rows, ps, cols, ps, 3).transpose(0, 2, 1, 3, 4)
        return np.ascontiguousarray(patches).reshape(rows * cols, ps, ps, 3)


@pytest.mark.parametrize(("w", "h"), [(1, 1), (9, 4), (13, 17), (40, 3)])
def test_an_own_kernel_and_the_composition_agree_in_both_forms(w: int, h: int) -> None:
    image = generated_image(w, h, seed=w * h)
    core, own = ComposedHwc(), OwnHwc()
    for compact in (False, True):
        a = core.process_item(image, compact=compact).feature
        b = own.process_item(image, compact=compact).feature
        assert a == b, (w, h, compact)
    full = own.process_item(image).feature
    assert isinstance(full, Tensor) and full.shape[1] == 2 and full.array.strides[1] == 0
