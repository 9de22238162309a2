"""The server's JSON answer size is known exactly from a compact Qwen-VL answer (float32
tables, MRoPE positions), before anything is expanded or encoded."""

from __future__ import annotations

import json

from _qwen_refs import QWEN2
from test_qwen_compact import _request
from test_qwen_pipeline import spec

from sglang_mm_core import pipeline_from_spec
from sglang_mm_core.plugin import MRope
from sglang_mm_core.server.codec import json_size_floor


def _text(arr) -> int:
    return len(json.dumps(arr.tolist(), separators=(",", ":")))


def test_json_size_of_a_compact_answer_is_exact() -> None:
    req = _request([(64, 48), (33, 90)])
    with pipeline_from_spec(spec(QWEN2)) as pipe:
        full, compact = pipe.process(req), pipe.process(req, compact=True)
    assert isinstance(full.positions, MRope)
    want = (
        _text(full.input_ids)
        + _text(full.positions.positions)
        + sum(
            _text(it.feature.array) + sum(_text(t.array) for t in it.aux.values())
            for it in full.items
        )
    )
    assert json_size_floor(compact) == want
    assert json_size_floor(full) < want  # the full form's floats are only bounded
