"""Generate the goldens of the real reference, which needs torch (run it where torch is, e.g.
``/path/to/torchenv/bin/python plugins/deepseek_v41/tests/gen_goldens.py``, after `make
sglang-ext` has put SGLang's module in dist/sglang-ext):

``fixtures/reference_goldens.json``: SGLang 0.5.23's ``patchify_image`` and
``image_token_types`` (``sglang/srt/multimodal/deepseek_v41_image_processing.py``, pinned by
its sha256 in the Makefile), with torch's own float32 arithmetic and bfloat16 cast, over the
corpus of _dsv41_corpus.py. Each golden is the SHA-256 of the bfloat16 bits, the grid sizes
and the token types' SHA-256, plus the input's SHA-256 so that a changed corpus is reported as
such. The versions of torch, Pillow and numpy are recorded."""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _dsv41_corpus import CASES, case_args, make_image
from _dsv41_refs import REFERENCE, args, reference

OUT = Path(__file__).parent / "fixtures" / "reference_goldens.json"


def sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def main() -> None:
    import PIL
    import torch

    torch.set_num_threads(1)
    ref = reference()
    cases = []
    for cid, source, overrides in CASES:
        image = make_image(source)
        patches, nh, nw, lh, lw = ref.patchify_image(image, args(**case_args(overrides)))
        bits = patches.contiguous().view(torch.int16).numpy().view(np.uint16)
        types = ref.image_token_types(lh, lw).numpy()
        cases.append(
            {
                "id": cid,
                "source": source,
                "overrides": overrides,
                "input_sha256": sha256(np.asarray(image)),
                "shape": list(bits.shape),
                "n_vit": [nh, nw],
                "n_llm": [lh, lw],
                "patches_sha256": sha256(bits),
                "token_types_sha256": sha256(types.astype(np.int64)),
            }
        )
    meta = {
        "reference": "sglang 0.5.23 deepseek_v41_image_processing.patchify_image",
        "reference_sha256": hashlib.sha256(REFERENCE.read_bytes()).hexdigest(),
        "torch": torch.__version__,
        "pillow": PIL.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps({"meta": meta, "cases": cases}, indent=1) + "\n")
    print(f"wrote {len(cases)} goldens to {OUT}")


if __name__ == "__main__":
    main()
