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
from core_helpers import png_bytes
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


@pytest.mark.parametrize("threads", [1, 2])
def test_a_flag_set_while_the_kernel_runs_stops_it(threads: int) -> None:
    """A resize of a few tenths of a second is stopped once the flag is set from another
    thread (the GIL is released while it runs, so the timer thread gets to set it). The
    timer may be late on a loaded machine and the kernel finish first: a few tries, of which
    one must be stopped (a kernel that never looks at the flag never is)."""
    img = _image(6000, 4000)
    stopped = 0
    for _ in range(5):
        flag = _native.CancelFlag()
        timer = threading.Timer(0.02, flag.set)
        timer.start()
        try:
            _run(img, (5800, 3900), threads, flag)
        except RequestCancelledError:
            stopped += 1
            break
        finally:
            timer.cancel()
    assert stopped == 1


def test_the_scope_sets_its_flag() -> None:
    scope = CancelScope()
    assert not scope.flag.is_set
    scope.cancel("the client went away")
    assert scope.flag.is_set
    with pytest.raises(RequestCancelledError, match="stopped: the client went away"):
        scope.check()


class CancelsInPlan(TableToy):
    """TableToy whose plan (made after the decode, just before the kernel) cancels the
    request 20 ms later, from a timer thread: the cancellation lands inside the kernel."""

    name = "cancels_in_plan"
    scope: CancelScope | None = None

    def plan(self, width: int, height: int) -> Plan:
        scope = type(self).scope
        if scope is not None:
            threading.Timer(0.02, scope.cancel, args=("the request's deadline passed",)).start()
        return super().plan(width, height)


def test_a_request_cancelled_mid_kernel_raises_and_returns_nothing() -> None:
    """Through the driver: the request's scope reaches the pool thread's kernel call."""
    reg = Registry()
    reg.register_family(CancelsInPlan)
    buf = io.BytesIO()
    y, x = np.mgrid[0:4000, 0:6000]
    arr = np.stack([x % 256, y % 256, (x ^ y) % 256], axis=-1).astype(np.uint8)
    Image.fromarray(arr).save(buf, "JPEG", quality=80)
    req = MmInput([9, 5, 9], [buf.getvalue()])  # a kernel of about 0.5 s on one thread
    with pipeline_from_spec({"family": "cancels_in_plan", "threads": 1}, registry=reg) as pipe:
        errors: list[RequestCancelledError] = []
        for _ in range(3):  # a loaded machine may run the timer after the kernel: retry
            CancelsInPlan.scope = scope = CancelScope()
            try:
                with cancel_scope(scope):
                    pipe.process(req)
            except RequestCancelledError as e:
                errors.append(e)
                break
            finally:
                CancelsInPlan.scope = None
        assert errors and "cancelled" in str(errors[0])
        small = MmInput([9, 5, 9], [png_bytes(_image(64, 48))])
        out = pipe.process(small)  # the pipeline itself is unharmed
        assert out.items[0].feature.shape == (3, 48, 64)


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
