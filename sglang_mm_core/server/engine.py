"""The server's core, shared by the standalone service and embedded mode: the bounded queue,
the worker threads running the pipeline, the ring of parked requests, and the one rule that
every accepted request is answered exactly once.

A `Ticket` is one accepted request. Its answer is set at most once, under the engine lock, by
whoever gets there first: a worker (result or error), the ingress (deadline, client gone), the
host (``push_result``/``push_error``) or shutdown. The ingress awaits the answer on its event
loop; the answer is handed over with ``call_soon_threadsafe``.

States: QUEUED -> RUNNING -> (DONE | PARKED -> DRAINED -> DONE). Only embedded ``submit``
tickets park; the others go straight from RUNNING to DONE.

A parked ticket is drainable once it is in the ring proper (``_ring``, hand-over order). In
completion order it enters at once. In arrival order every submit ticket also waits in
``_order`` (acceptance order) from acceptance on, and `_advance` moves the longest parked
prefix of it into the ring, dropping tickets that left for good (answered, client gone) as they
reach the front: a request still queued or running holds back those accepted after it, a failed
one does not."""

from __future__ import annotations

import asyncio
import enum
import json
import logging
import threading
import time
import uuid
from collections import deque
from typing import Literal

from .._carriers import MmInput, MmOutput
from .._driver import Pipeline
from .._fetch.cancel import CancelScope, cancel_scope
from .._spec import ResolvedSpec
from .._threads import resolve_threads
from ..errors import LimitError, RidError
from . import codec
from .config import ServerConfig, request_share
from .cores import pin_current_thread
from .errors import (
    Answer,
    answer_for,
    deadline_exceeded,
    error_answer,
    not_ready,
    queue_full,
    shutting_down,
)
from .metrics import Metrics
from .ring import IdArena, IngressBatch, Parked, build_batch

log = logging.getLogger("sglang_mm.server")

Kind = Literal["preprocess", "tokens", "submit"]
Format = Literal["safetensors", "json"]
_RECENT_RIDS = 4096  # answered rids remembered for clearer push_* errors


class State(enum.Enum):
    QUEUED = "queued"
    RUNNING = "running"
    PARKED = "parked"
    DRAINED = "drained"
    DONE = "done"


class Ticket:
    """One accepted request and the future its HTTP handler awaits."""

    __slots__ = (
        "accepted",
        "cancel",
        "compact",
        "deadline",
        "fmt",
        "future",
        "gone",
        "kind",
        "loop",
        "parked",
        "ready",
        "request",
        "rid",
        "state",
    )

    def __init__(
        self,
        kind: Kind,
        request: MmInput,
        rid: str,
        fmt: Format,
        loop: asyncio.AbstractEventLoop,
        deadline: float,
    ) -> None:
        self.kind = kind
        self.request = request
        self.rid = rid
        self.fmt = fmt
        self.loop = loop
        self.future: asyncio.Future[Answer] = loop.create_future()
        self.accepted = time.monotonic()
        self.deadline = deadline
        self.state = State.QUEUED
        self.gone = False
        self.parked: Parked | None = None
        self.ready = False  # parked and in the ring proper (drainable); stays set once drained
        self.compact = False  # answer features in the compact form (`?compact=1`)
        self.cancel = CancelScope()  # set when the request leaves early: its fetches stop


def _resolve(future: asyncio.Future[Answer], answer: Answer) -> None:
    if not future.done():
        future.set_result(answer)


class Engine:
    """Pipeline + queue + workers + ring. Thread-safe; the HTTP layer is in `app`."""

    def __init__(
        self,
        spec: ResolvedSpec,
        config: ServerConfig,
        *,
        server_cores: tuple[int, ...] | None = None,
    ) -> None:
        config.validate()
        self.spec = spec
        self.config = config
        self.server_cores = server_cores
        self.family = spec.family.name
        self.fingerprint = spec.fingerprint
        self.pipeline: Pipeline | None = None
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)  # queue not empty / stopping
        self._parked_cv = threading.Condition(self._lock)  # something drainable / closed
        self._space = threading.Condition(self._lock)  # ring has room / new head / closing
        self._queue: deque[Ticket] = deque()
        self._ring: deque[Ticket] = deque()  # drainable tickets, in hand-over order
        self._arrival = config.order == "arrival"
        self._order: deque[Ticket] = deque()  # arrival order: submit tickets not yet drainable
        self._parked_n = 0  # PARKED tickets, drainable or not (what ring_size bounds)
        self._pending: dict[str, Ticket] = {}  # submit tickets from acceptance to answer
        self._live: set[Ticket] = set()  # every accepted ticket not yet answered
        self._recent: deque[str] = deque(maxlen=_RECENT_RIDS)
        self._recent_set: set[str] = set()
        self._arena = IdArena(config.ring_chunk_ids)
        self._workers: list[threading.Thread] = []
        self._ready = False
        self._accepting = True
        self._closing = False  # shutdown begun: nothing new parks
        self._stopping = False  # workers exit once the queue is empty
        self.failed: BaseException | None = None  # pipeline build failure
        self.metrics = Metrics(
            lambda: len(self._queue),
            lambda: self._parked_n,
            lambda: None if self.pipeline is None else self.pipeline.cache_stats(),
        )

    # -- lifecycle ---------------------------------------------------------------------------
    def build(self) -> None:
        """Build the pipeline and start the workers; the engine is ready afterwards. The
        workers share the pipeline and its pool; each request's kernels get one worker's
        share of it (`request_share`)."""
        try:
            pool = resolve_threads(self.spec.spec.threads)
            share = request_share(pool, self.config.workers)
            self.pipeline = Pipeline(self.spec, request_threads=share)
        except BaseException as e:
            self.failed = e
            raise
        for k in range(self.config.workers):
            t = threading.Thread(
                target=self._worker, args=(k,), name=f"sglang-mm-worker-{k}", daemon=True
            )
            t.start()
            self._workers.append(t)
        with self._lock:
            self._ready = True

    @property
    def ready(self) -> bool:
        return self._ready and self._accepting

    @property
    def accepting(self) -> bool:
        return self._accepting

    def queue_depth(self) -> int:
        return len(self._queue)

    def parked_count(self) -> int:
        """Processed requests waiting for the host, drainable or held back by arrival order."""
        return self._parked_n

    def drainable_count(self) -> int:
        return len(self._ring)

    # -- ingress side ------------------------------------------------------------------------
    def new_rid(self) -> str:
        return uuid.uuid4().hex

    def submit(self, ticket: Ticket) -> Answer | None:
        """Accept ``ticket`` into the queue, or the 503/409 answer refusing it."""
        with self._lock:
            if not self._ready:
                return not_ready()
            if not self._accepting:
                return shutting_down()
            if len(self._queue) >= self.config.queue_size:
                return queue_full()
            if ticket.kind == "submit":
                if ticket.rid in self._pending:
                    return error_answer(
                        409,
                        "DuplicateRid",
                        f"rid {ticket.rid!r} is already in flight; rids must be unique",
                    )
                self._pending[ticket.rid] = ticket
                if self._arrival:
                    self._order.append(ticket)
            self._live.add(ticket)
            self._queue.append(ticket)
            self._work.notify()
        return None

    def expire(self, ticket: Ticket) -> bool:
        """The ingress's deadline passed: answer 503 unless processing is over (a parked or
        drained request is the host's to answer). Returns whether the ticket was answered."""
        with self._lock:
            if ticket.state in (State.QUEUED, State.RUNNING):
                self._answer(ticket, deadline_exceeded(self.config.deadline_s))
                ticket.cancel.cancel("the request's deadline passed")
                return True
            return False

    def forget(self, ticket: Ticket) -> None:
        """The client went away: drop the ticket and its buffers. A drained ticket stays known
        (marked gone) so the host's later ``push_*`` for it is accepted quietly."""
        with self._lock:
            if ticket.state is State.DONE:
                return
            self.metrics.disconnects.inc()
            if ticket.state is State.DRAINED:
                ticket.gone = True
                return
            self._finish(ticket)
            ticket.parked = None
            ticket.cancel.cancel("the client went away")

    # -- workers -----------------------------------------------------------------------------
    def _worker(self, k: int) -> None:
        pin_current_thread(self.server_cores, f"worker {k}")
        while True:
            with self._lock:
                while not self._queue and not self._stopping:
                    self._work.wait()
                if not self._queue:
                    return
                ticket = self._queue.popleft()
                if ticket.state is not State.QUEUED:
                    continue  # answered meanwhile (deadline, client gone)
                if time.monotonic() >= ticket.deadline:
                    self._answer(ticket, deadline_exceeded(self.config.deadline_s))
                    continue
                ticket.state = State.RUNNING
            try:
                with cancel_scope(ticket.cancel):
                    self._run(ticket)
            except BaseException as e:  # a bug in the engine itself: answer, log, carry on
                with self._lock:
                    self._answer(ticket, answer_for(e, f"request {ticket.rid!r}"))

    def _run(self, ticket: Ticket) -> None:
        pipe = self.pipeline
        assert pipe is not None
        req = ticket.request
        if ticket.kind == "tokens":
            try:
                count = pipe.count_tokens(req)
            except Exception as e:
                self._complete(ticket, answer_for(e, f"request {ticket.rid!r}"))
                return
            body = {
                "rid": req.rid,
                "length": count.length,
                "per_item": count.per_item,
                "modalities": count.modalities,
            }
            self._complete(ticket, Answer(200, json.dumps(body).encode(), "application/json"))
            return
        # A JSON answer is built from the compact form where there is one: its size is then
        # known exactly from the codes and tables, so an answer over the cap is refused
        # before a float is expanded or formatted (the JSON form sends features expanded).
        compact = ticket.compact or (
            ticket.fmt == "json" and ticket.kind != "submit" and pipe.family.offers_compact
        )
        try:
            out = pipe.process(req, compact=compact)
        except Exception as e:
            self._complete(ticket, answer_for(e, f"request {ticket.rid!r}"))
            return
        self.metrics.images.inc(len(out.items))
        if ticket.kind == "submit":
            self._park(ticket, out)
        else:
            try:
                answer = encode_answer(out, ticket.fmt, self.config.max_json_bytes)
            except LimitError as e:
                answer = answer_for(e, f"request {ticket.rid!r}")
            self._complete(ticket, answer)

    def _complete(self, ticket: Ticket, answer: Answer) -> None:
        with self._lock:
            if ticket.state is State.RUNNING:
                self._answer(ticket, answer)

    def _park(self, ticket: Ticket, out: MmOutput) -> None:
        parked = Parked.of(ticket.rid, out)
        with self._lock:
            while (
                self._parked_n >= self.config.ring_size
                and not self._closing
                and ticket.state is State.RUNNING
                and not self._holds_back_all(ticket)
            ):
                self._space.wait()
            if ticket.state is not State.RUNNING:
                return  # answered meanwhile (deadline, client gone)
            if self._closing:
                self._answer(ticket, shutting_down())
                return
            ticket.parked = parked
            ticket.state = State.PARKED
            self._parked_n += 1
            if self._arrival:
                self._advance()
            else:
                self._make_ready(ticket)
                self._parked_cv.notify_all()

    def _holds_back_all(self, ticket: Ticket) -> bool:
        """Arrival order, full ring, nothing drainable, and ``ticket`` first in line: the host
        can free no space until it parks, so it may park past ``ring_size`` (by one)."""
        return self._arrival and not self._ring and bool(self._order) and self._order[0] is ticket

    # -- the ring (engine lock held) ---------------------------------------------------------
    def _make_ready(self, ticket: Ticket) -> None:
        """Make a parked ticket drainable: its ids enter the arena now, in hand-over order, so
        a drain usually views one back-to-back run."""
        ticket.parked.place(self._arena)  # type: ignore[union-attr]  # parked tickets have it
        ticket.ready = True
        self._ring.append(ticket)

    def _advance(self) -> None:
        """Arrival order: move the parked front of ``_order`` into the ring, dropping tickets
        that left for good, up to the first ticket still queued or running."""
        if self._closing:
            return  # shutdown answers whatever is parked; nothing becomes drainable any more
        order, moved, popped = self._order, False, False
        while order:
            head = order[0]
            if head.state is State.PARKED:
                order.popleft()
                self._make_ready(head)
                moved = True
            elif head.state is State.DONE:
                order.popleft()
                popped = True
            else:
                break
        if moved or popped:
            self._space.notify_all()  # a new first in line may park past a full ring
        if moved:
            self._parked_cv.notify_all()

    # -- answering (engine lock held) --------------------------------------------------------
    def _finish(self, ticket: Ticket) -> None:
        was = ticket.state
        ticket.state = State.DONE
        self._live.discard(ticket)
        if was is State.QUEUED:  # answered before a worker took it: drop it and its buffers
            try:
                self._queue.remove(ticket)
            except ValueError:
                pass  # a worker popped it this moment and will skip it
        if was is State.PARKED:  # withdrawn before the host drained it
            self._parked_n -= 1
            if ticket.ready:
                self._ring.remove(ticket)
            self._space.notify_all()  # room, and perhaps an empty ring (see _holds_back_all)
        if ticket.kind == "submit" and self._pending.get(ticket.rid) is ticket:
            del self._pending[ticket.rid]
            if len(self._recent) == self._recent.maxlen:
                self._recent_set.discard(self._recent[0])
            self._recent.append(ticket.rid)
            self._recent_set.add(ticket.rid)
        if self._arrival and self._order and self._order[0] is ticket:
            self._advance()  # it held back those after it

    def _answer(self, ticket: Ticket, answer: Answer) -> bool:
        if ticket.state is State.DONE:
            return False
        if ticket.state is State.RUNNING:
            self._space.notify_all()  # its worker may be waiting for ring space: let it go
        self._finish(ticket)
        ticket.parked = None
        try:
            ticket.loop.call_soon_threadsafe(_resolve, ticket.future, answer)
        except RuntimeError:  # the event loop is closed: nobody is waiting any more
            pass
        return True

    # -- host side (embedded mode) -----------------------------------------------------------
    def wait_ingress(self, timeout_ms: float) -> bool:
        """Block (GIL released) until a request is drainable or ``timeout_ms`` passes."""
        with self._lock:
            if not self._ring and not self._closing:
                end = time.monotonic() + max(0.0, timeout_ms) / 1000.0
                while not self._ring and not self._closing:
                    left = end - time.monotonic()
                    if left <= 0 or not self._parked_cv.wait(left):
                        break
            return bool(self._ring)

    def drain(self, max_n: int) -> IngressBatch:
        """Take up to ``max_n`` drainable requests, in hand-over order, without blocking."""
        if max_n < 0:
            raise ValueError(f"max_n must be >= 0, got {max_n}")
        parked: list[Parked] = []
        take, drained = parked.append, State.DRAINED
        with self._lock:
            n = min(max_n, len(self._ring))
            pop = self._ring.popleft
            for _ in range(n):
                t = pop()
                t.state = drained
                take(t.parked)  # type: ignore[arg-type]  # a parked ticket has its entry
                t.parked = None
            if n:
                self._parked_n -= n
                self._space.notify_all()
        return build_batch(parked, self.family, self.fingerprint)

    def _host_ticket(self, rid: str, what: str) -> Ticket:
        ticket = self._pending.get(rid)
        if ticket is None:
            if rid in self._recent_set:
                raise RidError(f"{what}: rid {rid!r} was already answered")
            raise RidError(f"{what}: unknown rid {rid!r}")
        if ticket.state not in (State.PARKED, State.DRAINED):
            raise RidError(f"{what}: rid {rid!r} is still {ticket.state.value}, not yet parked")
        return ticket

    def push_answer(self, rid: str, answer: Answer, what: str) -> bool:
        """Answer a parked or drained request; False if its client had already left."""
        with self._lock:
            ticket = self._host_ticket(rid, what)
            if ticket.gone:
                self._finish(ticket)
                ticket.parked = None
                return False
            return self._answer(ticket, answer)

    # -- shutdown ----------------------------------------------------------------------------
    def stop_accepting(self) -> None:
        """New requests get 503 from now on; queued and parked ones are answered 503."""
        with self._lock:
            self._accepting = False
            self._closing = True
            while self._queue:
                self._answer(self._queue.popleft(), shutting_down())
            while self._ring:
                self._answer(self._ring[0], shutting_down())  # leaves the ring as it is answered
            for ticket in [t for t in self._order if t.state is State.PARKED]:
                self._answer(ticket, shutting_down())
            self._stopping = True
            self._work.notify_all()
            self._space.notify_all()
            self._parked_cv.notify_all()

    def join_workers(self, timeout_s: float) -> bool:
        """Wait for the workers to finish their current request; True if all did."""
        end = time.monotonic() + max(0.0, timeout_s)
        for t in self._workers:
            t.join(max(0.0, end - time.monotonic()))
        return not any(t.is_alive() for t in self._workers)

    def answer_all_pending(self) -> int:
        """The last word of shutdown: every request still unanswered (parked after the first
        sweep, drained but never answered by the host, or still running past the timeout)
        gets 503. Returns how many."""
        with self._lock:
            n = 0
            while self._ring:
                n += self._answer(self._ring[0], shutting_down())
            for ticket in list(self._live):
                n += self._answer(ticket, shutting_down())
            return n

    def close(self) -> None:
        if self.pipeline is not None:
            self.pipeline.close()


def encode_answer(out: MmOutput, fmt: Format, max_json_bytes: int | None = None) -> Answer:
    """The 200 answer of ``/v1/preprocess`` in the requested body format; a JSON one over
    ``max_json_bytes`` raises `LimitError`."""
    headers: dict[str, str] = {"X-Format": fmt}
    if fmt == "json":
        body = codec.encode_json_chunks(out, max_json_bytes)
        return Answer(200, list(body), codec.JSON_MEDIA_TYPE, headers)
    return Answer(200, codec.encode_safetensors(out), codec.SAFETENSORS_MEDIA_TYPE, headers)


__all__ = ["Engine", "Format", "Kind", "State", "Ticket", "encode_answer"]
