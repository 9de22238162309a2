"""`common.image_source_mode` against Pillow on every file of a folder (recursively), for
image collections CI does not hold, such as Pillow's own test images (``Tests/images`` of
python-pillow/Pillow). For each file in a format the core decodes it prints nothing when the two
agree (Pillow's ``mode`` and ``"transparency" in info`` after it tried to load the pixels) and a
line otherwise, saying what each side made of the file and whether the core's decode refuses it
anyway; files neither opens are skipped. It exits 1 when a file both open differs (a
difference where one side refuses the whole image is listed, not counted).

Run: .venv/bin/python bench/check_source_modes.py DIR"""

from __future__ import annotations

import io
import sys
import warnings
from pathlib import Path

from PIL import Image

from sglang_mm_core.common import image_decode_rgb, image_source_mode
from sglang_mm_core.errors import MmError

FORMATS = {"JPEG", "MPO", "PNG", "WEBP", "GIF", "BMP"}


def pillow(data: bytes) -> tuple[str, bool, str] | None:
    """``(mode, transparency, format)`` as Pillow has them, or None when it cannot open it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            im = Image.open(io.BytesIO(data))
        except Exception:
            return None
        try:
            im.load()
        except Exception:
            pass
        return im.mode, "transparency" in im.info, str(im.format)


def ours(data: bytes) -> tuple[str, bool] | str:
    try:
        m = image_source_mode(data)
    except MmError as e:
        return f"{type(e).__name__}: {e}"
    return m.mode, m.transparency


def decode_refuses(data: bytes) -> str | None:
    try:
        image_decode_rgb(data)
    except MmError as e:
        return f"{type(e).__name__}: {e}"
    return None


def main(root: Path) -> int:
    total = agree = differ = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        theirs, got = pillow(data), ours(data)
        if theirs is None and isinstance(got, str):
            continue  # neither opens it
        if theirs is not None and theirs[2] not in FORMATS and isinstance(got, str):
            continue  # a format the core does not decode
        total += 1
        if theirs is not None and got == theirs[:2]:
            agree += 1
            continue
        refused = decode_refuses(data)
        whole = theirs is None or isinstance(got, str) or refused is not None
        differ += not whole
        print(
            f"{path.relative_to(root)}: Pillow {theirs if theirs else 'cannot open it'}, "
            f"ours {got}; decode {'refuses: ' + refused if refused else 'decodes'}"
            + ("" if whole else "  <-- DIFFERS")
        )
    print(f"{total} files in the decoded formats, {agree} agree, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
