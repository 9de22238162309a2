"""The dataset tests' corpus: about 200 samples of small generated images (seeded, so the
bytes are the same every run) with bad rows mixed in, as a JSONL manifest of relative paths
(Qwen2-VL) and a Parquet manifest of image bytes (Inkling)."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
QWEN_SPEC = EXAMPLES / "qwen2_vl" / "spec.json"
INKLING_SPEC = EXAMPLES / "inkling" / "spec.json"
MAX_SIDE = 400
# The layout every test run of the same manifest shares, so their shards compare byte for byte.
LAYOUT: dict[str, Any] = {
    "shard_rows": 48,
    "row_group_rows": 8,
    "progress": False,
}  # the over-limit rows carry an image with a longer side

# Qwen2-VL chat pieces, one vision block per image (strict_layout)
Q_START, Q_IMG, Q_END = 151652, 151655, 151653
Q_HEAD = [151644, 872, 198]
Q_TAIL = [3838, 374, 419, 30, 151645, 198]
I_IMG = 200054
I_HEAD = [200000, 1639, 553, 261]
I_TAIL = [30, 200001, 200003]


def spec_doc(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text())
    doc["limits"] = {**doc.get("limits", {}), "max_image_side": MAX_SIDE}
    doc["threads"] = None
    return doc


def image_bytes(rng: np.random.Generator, w: int, h: int, fmt: str) -> bytes:
    base = rng.integers(0, 256, size=(1, 1, 3))
    ramp = np.linspace(0, 255, w)[None, :, None] * rng.random(3)
    noise = rng.integers(0, 40, size=(h, w, 3))
    px = np.clip(base + ramp + noise, 0, 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(px).save(buf, format=fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return buf.getvalue()


@dataclass
class Corpus:
    jsonl: Path  # Qwen2-VL, relative paths
    parquet: Path  # Inkling, bytes columns
    qwen_spec: dict[str, Any]
    inkling_spec: dict[str, Any]
    n_rows: int
    bad_kinds: dict[str, int]  # what was mixed in, by kind


def _qwen_ids(n_images: int, extra: int = 0) -> list[int]:
    block = [Q_START, Q_IMG, Q_END] * (n_images + extra)
    return [*Q_HEAD, *block, *Q_TAIL]


def _inkling_ids(n_images: int, extra: int = 0) -> list[int]:
    return [*I_HEAD, *([I_IMG, 13] * (n_images + extra)), *I_TAIL]


def build_corpus(root: Path, n_rows: int = 200) -> Corpus:
    """Both manifests with the same row plan: row ``i`` is bad every 9th row (in turn a
    missing file / corrupt bytes, an over-limit image, a placeholder mismatch, a malformed
    row), otherwise 0-2 images of sizes 24..160 px."""
    rng = np.random.default_rng(20261201)
    img_dir = root / "images"
    img_dir.mkdir(parents=True)
    lines: list[str] = []
    prows: list[dict[str, Any]] = []
    bad: dict[str, int] = {}
    for i in range(n_rows):
        n_img = int(rng.integers(0, 3)) if i % 5 else 1
        fmt = "PNG" if i % 7 == 0 else "JPEG"
        imgs = [
            image_bytes(rng, int(rng.integers(24, 161)), int(rng.integers(24, 161)), fmt)
            for _ in range(n_img)
        ]
        kind = None if i % 9 != 4 else ("source", "limit", "layout", "row")[(i // 9) % 4]
        extra = 0
        if kind == "source":  # a missing file in JSONL, corrupt bytes in Parquet
            imgs = imgs or [b""]
        elif kind == "limit":
            imgs = [image_bytes(rng, MAX_SIDE + 37, 20, "JPEG")]
        elif kind == "layout":
            extra = 1
        if kind is not None:
            bad[kind] = bad.get(kind, 0) + 1
        names = []
        for k, data in enumerate(imgs):
            name = f"images/s{i:03d}_{k}.{fmt.lower()}"
            if not (kind == "source" and k == 0):
                (root / name).write_bytes(data)
            names.append(name)
        pbytes = list(imgs)
        if kind == "source":
            pbytes[0] = b"\xff\xd8\xff\xe0 this is not a JPEG" + bytes(20)
        sid = f"s{i:03d}"
        if kind == "row":
            lines.append(f'{{"id": "{sid}", "images": {json.dumps(names)}}}')  # no input_ids
            lines.append("{not json")
            prows.append({"id": sid, "input_ids": None, "images": pbytes})
            prows.append({"id": None, "input_ids": None, "images": None})
            continue
        lines.append(
            json.dumps({"id": sid, "input_ids": _qwen_ids(len(names), extra), "images": names})
        )
        prows.append({"id": sid, "input_ids": _inkling_ids(len(pbytes), extra), "images": pbytes})
    jsonl = root / "manifest.jsonl"
    text = []
    for k, line in enumerate(lines):
        text.append(line)
        if k % 50 == 7:
            text.append(" \t ")  # whitespace-only and empty lines are no samples
        elif k % 50 == 8:
            text.append("")
    jsonl.write_text("\n".join(text) + "\n")
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(
        prows,
        schema=pa.schema(
            [
                ("id", pa.string()),
                ("input_ids", pa.list_(pa.int64())),
                ("images", pa.list_(pa.binary())),
            ]
        ),
    )
    parquet = root / "manifest.parquet"
    pq.write_table(table, parquet, row_group_size=64)
    return Corpus(jsonl, parquet, spec_doc(QWEN_SPEC), spec_doc(INKLING_SPEC), len(lines), bad)


def manifest_samples(path: Path) -> list[Any]:
    """The manifest's rows as the job reads them (sources resolved), for the references."""
    from sglang_mm_core.dataset import Manifest

    return list(Manifest(path).samples())


def shard_bytes(folder: Path) -> dict[str, str]:
    """Each shard's SHA-256 (equal digests: the same bytes; a failure stays readable)."""
    import hashlib

    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.glob("part-*.parquet"))
    }
