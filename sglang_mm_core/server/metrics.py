"""Prometheus metrics of one server. Each server has its own registry, so several servers in
one process (tests, a host embedding two) never share or clash on counters."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

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


class Metrics:
    """Requests and errors by kind, latency, queue depth, images processed."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self, queue_depth: Callable[[], int], parked: Callable[[], int]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
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
