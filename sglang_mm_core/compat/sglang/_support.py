"""What every compat submodule needs: the thread count and its plugin."""

from __future__ import annotations

from ...driver import resolve_threads


def threads() -> int:
    """The pool size of one call: ``$SGLANG_MM_THREADS``, else ``$SGL_MM_RS_THREADS``, else the
    core's default (the rule: `sglang_mm_core.driver.env_threads`). Read on every call, so a
    change of the environment takes effect (the extension reads it once per process)."""
    return resolve_threads(None, sglang_compat=True)


def missing_plugin(err: ModuleNotFoundError, distribution: str, submodule: str) -> Exception:
    """The error to raise when importing a family plugin failed with ``err``: an `ImportError`
    saying which distribution to install when the plugin itself is missing, else ``err``
    (the plugin is there but broken, and its own error says why)."""
    module = distribution.replace("-", "_")
    if err.name != module:
        return err
    return ImportError(
        f"sglang_mm_core.compat.sglang.{submodule} needs the {module} plugin: "
        f"pip install {distribution}",
        name=module,
    )
