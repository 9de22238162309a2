"""``python -m sglang_mm_core``: the ``sglang-mm`` command."""

from ._cli import main

raise SystemExit(main())
