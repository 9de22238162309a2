"""The server's JSON answer size is known exactly from a compact Inkling answer (bfloat16
tables and a pad value outside the image), before anything is expanded or encoded."""

from __future__ import annotations

import json

from test_inkling_compact import TOK, _jpeg

from sglang_mm_core import MmInput, pipeline_from_spec
from sglang_mm_core.server.codec import json_size_floor


def _text(arr) -> int:
    return len(json.dumps(arr.tolist(), separators=(",", ":")))


def test_json_size_of_a_compact_answer_is_exact() -> None:
    req = MmInput([5, TOK, 6, TOK, 7], [_jpeg(90, 61, 1), _jpeg(41, 7, 2)])
    with pipeline_from_spec({"family": "inkling"}) as pipe:
        full, compact = pipe.process(req), pipe.process(req, compact=True)
    assert any(it.feature.pad_rules for it in compact.items)  # the pad rule is exercised
    want = _text(full.input_ids) + sum(
        _text(it.feature.array) + sum(_text(t.array) for t in it.aux.values()) for it in full.items
    )
    assert json_size_floor(compact) == want
