"""Colour for text reports: severity and verdicts only, and only where asked (``--color=auto|always|never``).

``auto`` colours a terminal and never a pipe or a file; ``NO_COLOR`` (any non-empty value, no-color.org) turns
``auto`` off; ``always`` and ``never`` win over both. The choice is made in cli/ (``common.color_enabled``) and
handed to the renderer as a ``Palette``.
"""

from __future__ import annotations

from dataclasses import dataclass

_CODES = {"red": "31", "yellow": "33", "green": "32", "bold": "1", "dim": "2"}


@dataclass(frozen=True)
class Palette:
    enabled: bool = False

    def paint(self, text: str, style: str) -> str:
        if not self.enabled or not text:
            return text
        return f"\x1b[{_CODES[style]}m{text}\x1b[0m"

    def severity(self, text: str, severity: str) -> str:
        """``error`` red, ``warning`` yellow, ``info`` (a note) dim, ``ok`` green."""
        return self.paint(text, {"error": "red", "warning": "yellow", "info": "dim", "ok": "green"}.get(severity, "bold"))


PLAIN = Palette(False)
