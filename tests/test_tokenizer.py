"""The model tokenizer a family writes item text with (`load_tokenizer`, `TokenizerPath`):
the ids are the ``tokenizers`` package's own for the same file, it is loaded once per path, and
a bad path or file is a spec error naming the params field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field, ValidationError

from sglang_mm_core.plugin import (
    TOKENIZER_FILE,
    FamilyParams,
    SpecError,
    TextTokenizer,
    TokenizerPath,
    load_tokenizer,
    tokenizer_file,
)


def _write_tokenizer(folder: Path) -> Path:
    """A small BPE tokenizer.json (digits, ':' and ' ' merged into a few tokens) and one
    special token, built by the tokenizers package itself."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(" ", behavior="merged_with_next")
    trainer = trainers.BpeTrainer(special_tokens=["<unk>", "<|video|>"], vocab_size=60)
    tok.train_from_iterator([f"{m:02d}:{s:02d} " for m in range(3) for s in range(60)], trainer)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / TOKENIZER_FILE
    tok.save(str(path))
    return path


def test_ids_are_the_tokenizers_package_own(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    path = _write_tokenizer(tmp_path / "model")
    ref = Tokenizer.from_file(str(path))
    tok = load_tokenizer(path)
    for text in ("00:00 ", "01:59 ", " 02:07 ", "<|video|>00:01"):
        want = tuple(ref.encode(text, add_special_tokens=False).ids)
        assert tok.ids(text) == want
        assert tok.ids(text) == want  # the remembered answer is the same
    assert tok.token_id("<|video|>") == ref.token_to_id("<|video|>")
    assert tok.token_id("<|no such token|>") is None


def test_loaded_once_per_resolved_path(tmp_path: Path) -> None:
    path = _write_tokenizer(tmp_path / "model")
    a = load_tokenizer(path)
    assert isinstance(a, TextTokenizer)
    assert load_tokenizer(path.parent) is a  # the directory names the same file
    assert tokenizer_file(path.parent) == path.resolve() == a.path


def test_bad_paths_and_files_are_spec_errors(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"neither a tokenizer\.json nor a directory"):
        load_tokenizer(tmp_path / "missing")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / TOKENIZER_FILE).write_text(json.dumps({"not": "a tokenizer"}))
    with pytest.raises(SpecError, match=r"is not a tokenizer\.json"):
        load_tokenizer(bad)


class _Params(FamilyParams):
    tokenizer: TokenizerPath | None = Field(None, description="the model's tokenizer.json")


def test_a_tokenizer_field_loads_at_validation(tmp_path: Path) -> None:
    path = _write_tokenizer(tmp_path / "model")
    assert _Params(tokenizer=str(path)).tokenizer == str(path)
    assert _Params().tokenizer is None
    for bad in (str(tmp_path / "missing"), ""):
        with pytest.raises(ValidationError) as e:
            _Params(tokenizer=bad)
        assert e.value.errors()[0]["loc"] == ("tokenizer",)


def test_a_spec_files_relative_tokenizer_is_relative_to_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From a spec file, a relative tokenizer path is the file's folder's (and is stored
    resolved); a document without a file keeps the working directory's."""
    from sglang_mm_core import Registry
    from sglang_mm_core._spec import load_spec
    from sglang_mm_core.conformance import ConformanceTarget
    from sglang_mm_core.plugin import DecodeDefaults, Family, Geometry, Plan, Repeat

    class TokParams(FamilyParams):
        image_token_id: int = 7
        tokenizer: TokenizerPath | None = None

    class TokFamily(Family[TokParams]):
        name = "tok_family"
        decode_defaults = DecodeDefaults()

        def plan(self, width: int, height: int) -> Plan:
            return Plan(Repeat(7, 1), Geometry(2, 2, (1, 1)))

        def features(self) -> Any:
            raise NotImplementedError

    reg = Registry()
    reg.register_family(TokFamily)
    folder = tmp_path / "specs"
    _write_tokenizer(folder / "model")
    spec_file = folder / "spec.json"
    spec = {"family": "tok_family", "params": {"tokenizer": "model/tokenizer.json"}}
    spec_file.write_text(json.dumps(spec))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    want = str(folder / "model" / "tokenizer.json")
    for source in (spec_file, str(spec_file)):
        assert load_spec(source, registry=reg).params.tokenizer == want  # type: ignore[attr-defined]
    target = ConformanceTarget.from_spec(spec_file, reg)
    assert target.resolved.params.tokenizer == want  # type: ignore[attr-defined]
    with pytest.raises(SpecError, match=r"params\.tokenizer"):
        load_spec(spec, registry=reg)  # a document alone: the working directory's
