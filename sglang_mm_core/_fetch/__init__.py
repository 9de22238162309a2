"""Fetch: each media source of a request -> its encoded bytes (docs/architecture.md). Runs
inline and sequentially before the fan-out; every source is charged to one
request budget and every error names the item index and the source kind.

String sources are read in this order: ``http://`` / ``https://`` URL, ``file://`` URL or a
path starting with ``/``, ``data:`` URL, else bare base64. ``data:`` URLs follow RFC 2397: with
``;base64`` the part after the first comma is base64, without it the data is percent-encoded.
``bytes`` / ``bytearray`` / ``memoryview`` pass through untouched (no copy); an
``os.PathLike`` is a file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from .._dict_init import dict_init
from .._spec import FetchPolicy, Limits
from ..errors import FetchError, LimitError, MmError
from .budget import Budget
from .cancel import CancelScope, cancel_scope, check_cancelled
from .http import MAX_REDIRECTS, fetch_http
from .policy import resolve_timeout
from .sources import (
    Buffer,
    Source,
    decode_base64,
    decode_data_url,
    passthrough,
    read_file,
    source_kind,
)


@dict_init  # one per image on every request
@dataclass(frozen=True)
class Fetched:
    """The encoded bytes of one source and the form it came in."""

    data: Buffer  # bytes-like sources pass through without a copy
    kind: str  # "bytes" | "data_url" | "base64" | "file" | "http"


def fetch_one(
    source: Source,
    *,
    policy: FetchPolicy,
    limits: Limits,
    item: int = 0,
    budget: Budget | None = None,
    modality: str = "image",
    sniff: bool = False,
) -> Fetched:
    """Fetch request item `item` (of its ``modality``'s list), charged to `budget` (a fresh
    one for this item if None). With ``sniff``, an image's ``data:`` URL or base64 payload
    whose first decoded bytes are no image format we decode is refused before the rest is
    decoded, with the decoder's own `DecodeError`."""
    kind = source_kind(source)
    if budget is None:
        budget = Budget(limits)
    try:
        budget.take_item()
        return Fetched(_fetch(source, kind, policy, budget, sniff and modality == "image"), kind)
    except MmError as err:
        raise err.at_item(item, kind, modality) from None


def _fetch(source: Source, kind: str, policy: FetchPolicy, budget: Budget, image: bool) -> Buffer:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return passthrough(source, budget)
    if kind == "file" and isinstance(source, (str, os.PathLike)):
        return read_file(source, policy, budget)
    if isinstance(source, str):
        if kind == "http":
            return fetch_http(source, policy, budget)
        if kind == "data_url":
            return decode_data_url(source, budget, sniff=image)
        return decode_base64(source, budget, sniff=image)
    raise FetchError(
        f"unsupported source type {type(source).__name__} (expected a URL, path, base64 "
        "string or bytes)"
    )


def fetch_all(
    sources: Sequence[Source],
    *,
    policy: FetchPolicy,
    limits: Limits,
    n_images: int | None = None,
    sniff_images: bool = True,
) -> list[Fetched]:
    """Fetch every source of one request in order under one budget; the item count is checked
    before anything is fetched, and the first failure ends the request. With ``n_images``,
    the sources past the first ``n_images`` are the request's videos, and their errors name
    them so (``video 0``). ``sniff_images``: see `fetch_one` (a request's images are images)."""
    if isinstance(sources, (str, bytes, bytearray, memoryview)):
        raise FetchError("sources must be a list of sources, not a single string or buffer")
    if len(sources) > limits.max_items:
        raise LimitError(
            f"{len(sources)} media sources exceed limits.max_items ({limits.max_items})"
        ).at_item(limits.max_items)
    fast = _all_in_memory(sources, limits)
    if fast is not None:
        return fast
    budget = Budget(limits)
    first_video = len(sources) if n_images is None else n_images
    out = []
    for k, source in enumerate(sources):
        check_cancelled()  # between sources: a cancelled request fetches nothing more
        item, modality = (k, "image") if k < first_video else (k - first_video, "video")
        out.append(
            fetch_one(
                source,
                policy=policy,
                limits=limits,
                item=item,
                budget=budget,
                modality=modality,
                sniff=sniff_images,
            )
        )
    return out


def _all_in_memory(sources: Sequence[Source], limits: Limits) -> list[Fetched] | None:
    """The common case of in-memory sources within the request budget, in one pass (a dataset
    or an embedding host sends bytes); None sends the request down the item-by-item path,
    which names the item that fails."""
    total = 0
    out: list[Fetched] = []
    for source in sources:
        if type(source) is bytes or type(source) is bytearray:
            total += len(source)
        elif type(source) is memoryview and source.c_contiguous:
            total += source.nbytes
        else:
            return None
        out.append(Fetched(source, "bytes"))
    if total > limits.max_total_bytes:
        return None
    check_cancelled()
    return out


def fetch_bytes(
    source: Source, policy: FetchPolicy | None = None, limits: Limits | None = None
) -> bytes:
    """One source to ``bytes`` under the library defaults (or the given policy and limits)."""
    fetched = fetch_one(source, policy=policy or FetchPolicy(), limits=limits or Limits())
    data = fetched.data
    return data if isinstance(data, bytes) else bytes(data)


__all__ = [
    "MAX_REDIRECTS",
    "Budget",
    "CancelScope",
    "Fetched",
    "Source",
    "cancel_scope",
    "check_cancelled",
    "fetch_all",
    "fetch_bytes",
    "fetch_one",
    "resolve_timeout",
    "source_kind",
]
