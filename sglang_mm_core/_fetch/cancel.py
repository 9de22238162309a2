"""Cancelling one request's fetches from another thread (the server, when the request's
deadline passes or its client leaves).

The worker running a request enters its `CancelScope` (a context variable, so the fetch code
needs no extra argument); fetches check it between redirect hops, between reads and between
sources, and a download in progress registers a hook that shuts its sockets down, so a blocked
read returns at once. The scope also owns the native flag the feature kernels watch between
their bands, so the work of an item already running stops too. Cancelled work raises
`RequestCancelledError` (the request has been answered already; the error only ends the
work)."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .. import _native
from ..errors import RequestCancelledError


class CancelScope:
    """A one-way flag plus the hooks to run when it is set (thread-safe)."""

    def __init__(self, reason: str = "the request was cancelled") -> None:
        self.reason = reason
        self._lock = threading.Lock()
        self._cancelled = False
        self._hooks: list[Callable[[], None]] = []
        self.flag = _native.CancelFlag()  # given to the kernels (`Recipe.run`'s cancel)

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self, reason: str | None = None) -> None:
        with self._lock:
            if self._cancelled:
                return
            if reason is not None:
                self.reason = reason
            self._cancelled = True
            self.flag.set()
            hooks, self._hooks = self._hooks, []
        for hook in hooks:
            hook()

    def add_hook(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` on cancellation (at once if already cancelled)."""
        with self._lock:
            if not self._cancelled:
                self._hooks.append(hook)
                return
        hook()

    def remove_hook(self, hook: Callable[[], None]) -> None:
        with self._lock:
            if hook in self._hooks:
                self._hooks.remove(hook)

    def check(self) -> None:
        if self._cancelled:
            raise RequestCancelledError(f"stopped: {self.reason}")


_SCOPE: contextvars.ContextVar[CancelScope | None] = contextvars.ContextVar(
    "sglang_mm_cancel_scope", default=None
)


def current_scope() -> CancelScope | None:
    return _SCOPE.get()


def check_cancelled() -> None:
    """Raise `RequestCancelledError` if the current request has been cancelled."""
    scope = _SCOPE.get()
    if scope is not None:
        scope.check()


@contextmanager
def cancel_scope(scope: CancelScope) -> Iterator[CancelScope]:
    """Run the enclosed fetches under ``scope``."""
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


__all__ = ["CancelScope", "cancel_scope", "check_cancelled", "current_scope"]
