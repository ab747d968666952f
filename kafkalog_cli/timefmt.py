"""Times as people read them: UTC ISO-8601 and a human age ("3d 4h ago"), one rule for every text output.

JSON outputs keep their raw epoch milliseconds; this module is for text only.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone


def iso_utc(ms: int) -> str:
    """Epoch milliseconds as RFC 3339 in UTC with milliseconds (``2024-06-15T10:20:27.000Z``)."""
    seconds, millis = divmod(ms, 1000)
    try:
        dt = datetime.fromtimestamp(seconds, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return "(outside the calendar)"
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + f".{millis:03d}Z"


def duration(ms: int) -> str:
    """A length of time in its two largest units: ``3y 18d``, ``3d 4h``, ``5h 12m``, ``4m 2s``, ``850ms``."""
    if ms < 0:
        return "-" + duration(-ms)
    if ms < 1000:
        return f"{ms}ms"
    s = ms // 1000
    units = (("y", 365 * 86400), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
    parts: list[str] = []
    for name, size in units:
        n, s = divmod(s, size)
        if n or parts:
            parts.append(f"{n}{name}")
        if len(parts) == 2:
            break
    if len(parts) == 2 and parts[1].startswith("0"):
        parts.pop()
    return " ".join(parts)


def age(ms: int, now_ms: int | None = None) -> str:
    """How long ago ``ms`` was: ``3d 4h ago`` (``in 5m`` for a time in the future)."""
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    delta = now - ms
    return f"in {duration(-delta)}" if delta < 0 else f"{duration(delta)} ago"


def when(ms: int, now_ms: int | None = None) -> str:
    """A timestamp for text output: ``2024-06-15T10:00:00.000Z (3d 4h ago)``."""
    return f"{iso_utc(ms)} ({age(ms, now_ms)})"
