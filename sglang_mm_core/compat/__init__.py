"""Drop-in replacements for other projects' preprocessing APIs, built on the core and its
family plugins (never copies of them). One subpackage per project:

- `sglang_mm_core.compat.sglang`: SGLang's compiled extension
  ``sglang.srt.rust_extensions._multimodal`` (docs/compat-sglang.md)."""
