"""The `ext` fixture: SGLang's extension (compat_helpers.load_extension)."""

from __future__ import annotations

from types import ModuleType

import pytest
from compat_helpers import load_extension


@pytest.fixture(scope="session")
def ext() -> ModuleType:
    return load_extension()
