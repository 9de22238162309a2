"""The manifest: one sample per row (JSONL or Parquet), each with an ``id``, the prompt's
``input_ids`` and its image sources, read in row order and streamed (never loaded whole).

Image sources are ``images`` (a list) or ``image`` (one): strings (a path relative to the
manifest's folder, an absolute path, an http(s)/file/data URL, base64), bytes (Parquet binary
columns), or ``{"bytes": ..., "path": ...}`` structs (the image column of many public
datasets: the bytes when present, else the path). A row without ``id`` (or ``rid``, as in
request files) has a null id (its ``index`` column still names it). Video sources are
``videos`` (a list) or ``video`` (one): a source as above, or a mapping holding the source under
``"video"`` beside its per-video options (``fps``, ``nframes``, ...; null ones are left out,
as a Parquet struct column has them). Messages never name the row index, which a
distributed reader does not know, so that every engine writes the same rows."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._carriers import Source, VideoSource
from .._requests_io import _resolve_source
from ..errors import ManifestError, MmError
from . import _deps

FORMATS = ("jsonl", "parquet")
_READ_ROWS = 256  # rows per Parquet batch while streaming


@dataclass(frozen=True)
class Sample:
    """One manifest row, sources resolved; ``error`` is set (and the rest empty) when the row
    itself is malformed, so that it becomes an error row rather than failing the job."""

    id: str | None
    input_ids: Any
    images: list[Source]
    error: MmError | None = None
    videos: list[VideoSource] = field(default_factory=list)


def manifest_format(path: Path) -> str:
    name = path.name.lower()
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    raise ManifestError(f"manifest {str(path)!r}: unknown format (name it *.jsonl or *.parquet)")


def _video(value: Any, base: Path, where: str) -> VideoSource:
    """A video source, or its mapping with the options given (nulls dropped)."""
    if isinstance(value, Mapping) and "video" in value:
        options = {str(k): v for k, v in value.items() if k != "video" and v is not None}
        return {"video": _source(value["video"], base, where, "a video"), **options}
    return _source(value, base, where, "a video")


def _sources(row: Mapping[str, Any], many: str, one: str, where: str, read: Any) -> list[Any]:
    """The row's ``many`` list (or its single ``one``) read by ``read``."""
    if many in row and row[many] is not None:
        raw = row[many]
        if isinstance(raw, (str, bytes, bytearray, Mapping)) or not hasattr(raw, "__iter__"):
            raise ManifestError(f"{where}: {many} must be a list of sources")
        return [read(v, f"{where}, {one} {k}") for k, v in enumerate(raw)]
    if row.get(one) is not None:
        return [read(row[one], f"{where}, {one} 0")]
    return []


def _source(value: Any, base: Path, where: str, what: str = "an image") -> Source:
    if isinstance(value, Mapping):
        data, path = value.get("bytes"), value.get("path")
        value = data if data is not None else path
    if isinstance(value, (bytes, bytearray, memoryview)):
        return value
    if isinstance(value, str) and value:
        return _resolve_source(value, base)
    raise ManifestError(
        f"{where}: {what} source must be a path, URL, base64 string or bytes, "
        f"got {type(value).__name__}"
    )


def sample_from_row(row: Any, base: Path) -> Sample:
    """One row (a JSON object or an Arrow row as a dict) as a `Sample`; a malformed row
    gives a `Sample` carrying its `ManifestError`."""
    where = "manifest row"
    if not isinstance(row, Mapping):
        return Sample(None, None, [], ManifestError(f"{where} is not a JSON object"))
    raw_id = row.get("id")
    if raw_id is None:
        raw_id = row.get("rid")  # the request files' name for it
    sid = None if raw_id is None else str(raw_id)
    try:
        ids = row.get("input_ids")
        if ids is None:
            raise ManifestError(f"{where} has no input_ids")
        images = _sources(row, "images", "image", where, lambda v, w: _source(v, base, w))
        videos = _sources(row, "videos", "video", where, lambda v, w: _video(v, base, w))
    except ManifestError as e:
        return Sample(sid, None, [], e)
    return Sample(sid, ids, images, videos=videos)


def parse_line(line: str | bytes, base: Path) -> Sample:
    """One JSONL line as a `Sample` (invalid JSON gives an error sample)."""
    try:
        obj = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        return Sample(None, None, [], ManifestError(f"manifest row is not valid JSON: {e}"))
    return sample_from_row(obj, base)


def table_rows(batch: Any) -> list[dict[str, Any]]:
    """An Arrow table or record batch as row dicts, cheaply: a list<int> ``input_ids``
    column becomes one int64 numpy view per row (no Python int per token), the other
    columns Python values."""
    import numpy as np

    pa = _deps.pyarrow()
    n = batch.num_rows
    cols: dict[str, list[Any]] = {}
    for name in batch.column_names:
        col = batch.column(name)
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        if (
            name == "input_ids"
            and pa.types.is_list(col.type)
            and pa.types.is_integer(col.type.value_type)
            and col.null_count == 0
        ):
            offsets = col.offsets.to_numpy()
            values = col.values.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
            cols[name] = [values[offsets[i] : offsets[i + 1]] for i in range(n)]
        elif name in ("images", "videos") and _is_binary_list(pa, col):
            cols[name] = _binary_lists(col, n)
        else:
            cols[name] = col.to_pylist()
    return [{k: v[i] for k, v in cols.items()} for i in range(n)]


def _is_binary_list(pa: Any, col: Any) -> bool:
    return bool(
        pa.types.is_list(col.type)
        and pa.types.is_binary(col.type.value_type)
        and col.null_count == 0
        and col.values.null_count == 0
        and col.offset == 0
        and col.values.offset == 0
    )


def _binary_lists(col: Any, n: int) -> list[list[memoryview]]:
    """A list<binary> column as lists of memoryviews into its Arrow buffer: the image bytes
    are not copied (the pipeline takes a memoryview as it takes bytes)."""
    import numpy as np

    values = col.values
    outer = col.offsets.to_numpy().tolist()
    _, offsets, data = values.buffers()
    inner = np.frombuffer(offsets, dtype=np.int32, count=len(values) + 1).tolist()
    view = memoryview(data) if data is not None else memoryview(b"")
    return [
        [view[inner[j] : inner[j + 1]] for j in range(outer[i], outer[i + 1])] for i in range(n)
    ]


class Manifest:
    """An opened manifest: its format, row count and folder; `samples` streams its rows."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).absolute()
        self.format = manifest_format(self.path)
        self.base = self.path.parent
        self.columns: list[str] = []  # Parquet: the columns read
        if not self.path.exists():
            raise ManifestError(f"manifest {str(self.path)!r} does not exist")
        if not self.path.is_file():
            raise ManifestError(f"manifest {str(self.path)!r} is not a file")
        self.num_rows = self._count()

    def _count(self) -> int:
        if self.format == "jsonl":
            n = 0
            try:
                with self.path.open("rb") as f:
                    for line in f:
                        n += bool(line.strip())
            except OSError as e:
                raise ManifestError(f"cannot read manifest {str(self.path)!r}: {e}") from None
            return n
        pq = _deps.parquet()
        try:
            meta = pq.ParquetFile(self.path)
        except Exception as e:  # pyarrow raises ArrowInvalid / OSError on a bad file
            raise ManifestError(
                f"manifest {str(self.path)!r} is not a readable Parquet file: {e}"
            ) from None
        names = set(meta.schema_arrow.names)
        if "input_ids" not in names:
            raise ManifestError(
                f"manifest {str(self.path)!r} has no input_ids column (columns: "
                f"{', '.join(sorted(names))})"
            )
        wanted = ("id", "rid", "input_ids", "images", "image", "videos", "video")
        self.columns = [c for c in wanted if c in names]
        return int(meta.metadata.num_rows)

    def samples(self, start: int = 0, stop: int | None = None) -> Iterator[Sample]:
        """Rows ``start .. stop-1`` in order, as samples."""
        stop = self.num_rows if stop is None else min(stop, self.num_rows)
        if start >= stop:
            return
        if self.format == "jsonl":
            yield from self._jsonl(start, stop)
        else:
            yield from self._parquet(start, stop)

    def _jsonl(self, start: int, stop: int) -> Iterator[Sample]:
        index = 0
        with self.path.open("rb") as f:
            for line in f:
                if not line.strip():
                    continue
                if index >= start:
                    yield parse_line(line, self.base)
                index += 1
                if index >= stop:
                    return

    def _parquet(self, start: int, stop: int) -> Iterator[Sample]:
        pq = _deps.parquet()
        # Mapped, not read through a buffered stream: image bytes are most of a manifest, and
        # the stream's reads cost several times the decode (128 vs 76 us for a 45 KB image;
        # 12 us when the file is uncompressed).
        pf = pq.ParquetFile(self.path, memory_map=True)
        index = 0
        for g in range(pf.metadata.num_row_groups):
            n = pf.metadata.row_group(g).num_rows
            if index + n <= start:  # a whole row group before the range: not read
                index += n
                continue
            for batch in pf.iter_batches(
                batch_size=_READ_ROWS, row_groups=[g], columns=self.columns
            ):
                for row in table_rows(batch):
                    if start <= index < stop:
                        yield sample_from_row(row, self.base)
                    index += 1
                    if index >= stop:
                        return
