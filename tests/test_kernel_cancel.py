"""Cancelling kernel work already running: the request's cancel scope owns a native flag
that the core's feature kernels read between bands, so an item whose request is cancelled
(deadline passed, client gone) stops inside its resize and write, and raises
`RequestCancelledError` instead of returning what it had half made."""

from __future__ import annotations

import io
import threading
import time

import numpy as np
import pytest
from PIL import Image
from test_cache import TableToy

from sglang_mm_core import MmInput, Registry, _native, pipeline_from_spec
from sglang_mm_core._fetch.cancel import CancelScope, cancel_scope
from sglang_mm_core.errors import MmRequestError, RequestCancelledError
from sglang_mm_core.plugin import ChannelPlanes, Features, Part, Plan, Table


def _features() -> Features:
    table = Table.hf((0.5, 0.25, 0.75), (0.25, 0.5, 0.125), "pil")
    return Features(table, ChannelPlanes(), resample="pil_bicubic")


def _run(image: np.ndarray, size: tuple[int, int], threads: int, flag=None) -> np.ndarray:
    f = _features()
    assert f.table is not None
    recipe = f.recipe()
    parts = [Part(size)._native()]
    return recipe.run(image, parts, f.table._native, False, threads, cancel=flag)


def _image(w: int, h: int) -> np.ndarray:
    return np.random.default_rng(1).integers(0, 256, (h, w, 3), dtype=np.uint8)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_clear_flag_changes_no_bit(threads: int) -> None:
    img = _image(301, 207)
    plain = _run(img, (190, 123), threads)
    watched = _run(img, (190, 123), threads, _native.CancelFlag())
    np.testing.assert_array_equal(plain.view(np.uint32), watched.view(np.uint32))


def test_a_set_flag_refuses_the_call() -> None:
    flag = _native.CancelFlag()
    flag.set()
    assert flag.is_set
    with pytest.raises(RequestCancelledError, match="cancelled") as info:
        _run(_image(64, 48), (32, 24), 1, flag)
    assert isinstance(info.value, MmRequestError)


def test_the_scope_sets_its_flag() -> None:
    scope = CancelScope()
    assert not scope.flag.is_set
    scope.cancel("the client went away")
    assert scope.flag.is_set
    with pytest.raises(RequestCancelledError, match="stopped: the client went away"):
        scope.check()


class CancelsInPlan(TableToy):
    """TableToy whose plan (made after the decode and after the driver's last check of the
    scope, just before the kernel) cancels the request: only the kernel can notice it."""

    name = "cancels_in_plan"
    scope: CancelScope | None = None

    def plan(self, width: int, height: int) -> Plan:
        scope = type(self).scope
        if scope is not None:
            scope.cancel("the request's deadline passed")
        return super().plan(width, height)


@pytest.mark.parametrize("threads", [0, 2, 3])
@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "BMP"])
def test_a_request_cancelled_once_its_kernel_is_due_raises_and_returns_nothing(
    fmt: str, threads: int
) -> None:
    """Through the driver: the request's scope reaches the kernel call, which stops at its
    first band, or, for an image whose rows stream (PNG, JPEG), whose plan is made from the
    header, in its decode before the first rows. (That a flag set while a kernel runs stops it
    at the next band is mm-kernels' own test, where a band sets it: a timer thread here would
    race the kernel.)"""
    reg = Registry()
    reg.register_family(CancelsInPlan)
    buf = io.BytesIO()
    Image.fromarray(_image(640, 480)).save(buf, fmt)
    req = MmInput([9, 5, 9], [buf.getvalue()])
    spec = {"family": "cancels_in_plan", "threads": threads}
    with pipeline_from_spec(spec, registry=reg) as pipe:
        CancelsInPlan.scope = scope = CancelScope()
        try:
            with cancel_scope(scope), pytest.raises(RequestCancelledError, match="cancelled"):
                pipe.process(req)
        finally:
            CancelsInPlan.scope = None
        out = pipe.process(req)  # the pipeline itself is unharmed
        assert out.items[0].feature.shape == (3, 480, 640)


def test_a_cancelled_computation_is_not_its_waiters_error() -> None:
    """Single flight: request A computes an entry that request B waits for; A is cancelled
    mid-kernel. B was not: it computes the entry itself instead of inheriting A's error."""
    from sglang_mm_core import Geometry, Tensor
    from sglang_mm_core._cache import FeatureCache
    from sglang_mm_core._carriers import ProcessedItem

    cache = FeatureCache(1 << 20, ("full",))
    item = ProcessedItem(Tensor(np.zeros(4, np.float32), "float32"), {}, Geometry(2, 2, (1, 1)))
    got: list[tuple[ProcessedItem, bool]] = []
    b = threading.Thread(target=lambda: got.append(cache.get_or_compute("k", "full", lambda: item)))

    def cancelled() -> ProcessedItem:  # A's computation: B joins its flight, then A stops
        b.start()
        deadline = time.monotonic() + 20
        while cache.stats().by_form["full"].waits < 1:
            assert time.monotonic() < deadline, "B never waited"
            time.sleep(0.001)
        raise RequestCancelledError("stopped: the client went away")

    with pytest.raises(RequestCancelledError):
        cache.get_or_compute("k", "full", cancelled)
    b.join(20)
    assert len(got) == 1 and got[0][1] is False  # B's own computation, not A's error
    stats = cache.stats().by_form["full"]
    assert (stats.misses, stats.waits, stats.entries) == (2, 1, 1)
