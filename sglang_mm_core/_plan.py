"""What one item becomes, decided from its upright size alone (a header is enough): the
family's `Plan`. Every token count the core reports derives from it, and so does the
feature's geometry, so a count from headers and the processed item agree by construction."""

from __future__ import annotations

from dataclasses import dataclass

from ._carriers import Geometry
from ._features import Part
from ._layout import Explicit, Pattern, Repeat, replaced_tokens


@dataclass(frozen=True)
class Plan:
    """One item's plan.

    - ``tokens``: what its placeholder becomes, a `Repeat` or an `Explicit` (whose
      ``content`` range is the item's offsets; wrapper tokens stay outside; with
      ``replaces_markers`` it replaces the placeholder's markers too);
    - ``geometry``: the resized ``(height, width)`` and the family's grid, which the output
      carries and the positions read;
    - ``parts``: how the pixels are cut and resized (`Part`); empty means one part, the
      whole image resized to the geometry's ``(width, height)``;
    - ``frames``: frames the item holds (1 for an image)."""

    tokens: Pattern
    geometry: Geometry
    parts: tuple[Part, ...] = ()
    frames: int = 1

    def __post_init__(self) -> None:
        if not self.parts:
            g = self.geometry
            object.__setattr__(self, "parts", (Part((g.width, g.height)),))

    @property
    def length(self) -> int:
        """Tokens the placeholder expands to, wrappers included."""
        t = self.tokens
        return t.count if isinstance(t, Repeat) else len(t.ids)

    @property
    def replaces(self) -> int:
        """Prompt tokens the item's tokens replace: its placeholder, and the two markers
        around it when ``tokens`` `Explicit.replaces_markers` (so a prompt's expanded length
        is its own plus ``length - replaces`` per item)."""
        return replaced_tokens(self.tokens)

    @property
    def content(self) -> int:
        """Tokens of the item's offsets (the positions the model fills with its embeddings)."""
        t = self.tokens
        if isinstance(t, Repeat):
            return t.count
        a, b = t.content if t.content is not None else (0, len(t.ids))
        return b - a


@dataclass(frozen=True)
class Placeholder:
    """The prompt token each item replaces, and the ids that must surround it (``between``:
    ``(before, after)``, e.g. Qwen's ``vision_start`` and ``vision_end``), or None."""

    token: int
    between: tuple[int, int] | None = None


__all__ = ["Explicit", "Placeholder", "Plan", "Repeat"]
