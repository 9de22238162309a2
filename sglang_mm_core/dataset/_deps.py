"""The optional dependencies of the dataset job, imported only when a job runs, so that the
core imports without them; a missing one is a `MissingExtraError` naming the extra."""

from __future__ import annotations

from types import ModuleType

from ..errors import MissingExtraError


def _need(module: str, extra: str, what: str) -> ModuleType:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingExtraError(
            f"{what} needs the {module.split('.')[0]} package: pip install "
            f"'sglang-mm-core[{extra}]' ({e})"
        ) from None


def pyarrow() -> ModuleType:
    return _need("pyarrow", "dataset", "sglang-mm dataset")


def parquet() -> ModuleType:
    return _need("pyarrow.parquet", "dataset", "sglang-mm dataset")


def ray() -> ModuleType:
    _need("pyarrow", "ray", "the Ray engine")
    return _need("ray", "ray", "the Ray engine")


def ray_data() -> ModuleType:
    ray()
    return _need("ray.data", "ray", "the Ray engine")
