"""Writes examples/kimi_k3/tokenizer.json: the tests' Kimi tokenizer (Kimi's real special-token
ids, its digit splitting, a word-level vocabulary of the words the tests write) with the pieces
of Kimi K3's ``image WxH`` text. The K3 example spec and the K3 tests read it; Kimi's own
tokenizer is a tiktoken model that cannot be downloaded here. Run from the repository root with
the development venv: ``.venv/bin/python plugins/kimi/tests/gen_k3_tokenizer.py``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _kimi_refs import K3_TOKENIZER_JSON, tokenizer_object


def main() -> None:
    K3_TOKENIZER_JSON.parent.mkdir(parents=True, exist_ok=True)
    tokenizer_object(k3=True).save(str(K3_TOKENIZER_JSON))
    print(f"wrote {K3_TOKENIZER_JSON}")


if __name__ == "__main__":
    main()
