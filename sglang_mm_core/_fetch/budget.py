"""What one request may still fetch: items and bytes left, and the cap of the next stream."""

from __future__ import annotations

from .._spec import Limits
from ..errors import LimitError


class Budget:
    """Running totals of one request's fetches (sequential, so no locking)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.items = 0
        self.total_bytes = 0

    def take_item(self) -> None:
        """Count one more source; past `max_items` the request is refused."""
        if self.items >= self.limits.max_items:
            raise LimitError(f"more than limits.max_items ({self.limits.max_items}) image sources")
        self.items += 1

    @property
    def remaining_bytes(self) -> int:
        return max(self.limits.max_total_bytes - self.total_bytes, 0)

    def check_size(self, size: int, what: str = "source") -> None:
        """Refuse a source of known `size` that would take the request over its total."""
        if size > self.remaining_bytes:
            raise LimitError(
                f"{what} of {size} bytes exceeds limits.max_total_bytes "
                f"({self.limits.max_total_bytes}) with {self.total_bytes} bytes already fetched"
            )

    def charge(self, size: int, what: str = "source") -> None:
        self.check_size(size, what)
        self.total_bytes += size

    def stream_cap(self) -> tuple[int, str]:
        """Most bytes the next file or HTTP stream may have, and the limit that sets it."""
        stream = self.limits.max_stream_bytes
        if self.remaining_bytes < stream:
            return self.remaining_bytes, "max_total_bytes"
        return stream, "max_stream_bytes"

    def over_cap(self, limit: str, what: str) -> LimitError:
        """The error for a stream found larger than its cap; `what` says how it was found."""
        value = getattr(self.limits, limit)
        done = self.total_bytes
        already = f", {done} bytes already fetched" if limit == "max_total_bytes" else ""
        return LimitError(f"{what} exceeds limits.{limit} ({value}{already})")
