"""Prometheus metrics of one server. Each server has its own registry, so several servers in
one process (tests, a host embedding two) never share or clash on counters."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from .._cache import CacheStats

LATENCY_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)


class _CacheCollector(Collector):
    """The feature cache's counters, read from `Pipeline.cache_stats` at each scrape (the cache
    keeps them under its own lock; nothing is counted twice). Nothing is exported while there
    is no cache (no ``cache`` in the spec, or the pipeline not built yet).

    Counters and the bytes / entries gauges carry a ``form`` label (``full``, and ``compact``
    for a family that offers it; each form's series is there from the first scrape): the
    cache's totals are their ``sum``. ``max_bytes`` is the one bound both forms share."""

    def __init__(self, stats: Callable[[], CacheStats | None]) -> None:
        self._stats = stats

    def describe(self) -> Iterator[Metric]:
        return iter(())  # the families exist only with a cache: nothing to declare up front

    def collect(self) -> Iterator[Metric]:
        s = self._stats()
        if s is None:
            return
        forms = sorted(s.by_form.items())
        for name, doc in (
            ("hits", "Items served from a stored entry of their form (no decode), by form."),
            ("misses", "Items not in the cache in their form, computed once, by form."),
            ("waits", "Items that waited for a concurrent miss of theirs, by form."),
            ("evictions", "Entries dropped to stay under max_bytes, by form."),
        ):
            counter = CounterMetricFamily(f"sglang_mm_cache_{name}", doc, labels=["form"])
            for form, fs in forms:
                counter.add_metric([form], getattr(fs, name))
            yield counter
        for name, doc in (
            ("bytes", "Bytes the cache holds (features and aux), by form."),
            ("entries", "Entries the cache holds now, by form."),
        ):
            gauge = GaugeMetricFamily(f"sglang_mm_cache_{name}", doc, labels=["form"])
            for form, fs in forms:
                gauge.add_metric([form], getattr(fs, name))
            yield gauge
        yield GaugeMetricFamily(
            "sglang_mm_cache_max_bytes",
            "The cache's byte bound, shared by the forms (spec cache.max_bytes).",
            value=s.max_bytes,
        )


class Metrics:
    """Requests and errors by kind, latency, queue depth, images processed, and the feature
    cache's counters (``cache_stats``: the pipeline's, None while there is none)."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(
        self,
        queue_depth: Callable[[], int],
        parked: Callable[[], int],
        cache_stats: Callable[[], CacheStats | None] = lambda: None,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        r.register(_CacheCollector(cache_stats))
        self.requests = Counter(
            "sglang_mm_requests",
            "HTTP requests answered, by endpoint and status code.",
            ["endpoint", "status"],
            registry=r,
        )
        self.errors = Counter(
            "sglang_mm_errors",
            "Requests answered with an error, by error type (FetchError, QueueFull, ...).",
            ["type"],
            registry=r,
        )
        self.latency = Histogram(
            "sglang_mm_request_seconds",
            "Time from accepting a request to its answer, by endpoint.",
            ["endpoint"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.images = Counter(
            "sglang_mm_images_processed", "Images processed successfully.", registry=r
        )
        self.disconnects = Counter(
            "sglang_mm_client_disconnects", "Clients gone before their answer.", registry=r
        )
        depth = Gauge(
            "sglang_mm_queue_depth", "Accepted requests waiting for a worker.", registry=r
        )
        depth.set_function(lambda: float(queue_depth()))
        ring = Gauge(
            "sglang_mm_parked",
            "Processed requests parked for the host (embedded mode).",
            registry=r,
        )
        ring.set_function(lambda: float(parked()))

    def render(self) -> bytes:
        return generate_latest(self.registry)


__all__ = ["Metrics"]
