"""The time formats ``seek-time`` accepts, and the sentence that echoes how a time was understood.

Why a module: a time given in the wrong unit once silently answered about January 1970 (``1718446827`` read as
milliseconds). Every accepted form is unambiguous by its shape, and the command always echoes the instant it
searched for, so a misread can be seen at once.

Accepted:

* epoch seconds (up to 11 digits, e.g. ``1718446827``) or milliseconds (12 digits or more, e.g. ``1718446827000``);
  an explicit unit wins: ``1718446827s``, ``1718446827000ms``;
* ISO-8601 / RFC 3339: ``2024-06-15T10:20:27Z``, ``2024-06-15 12:20:27+02:00``, ``2024-06-15T10:20:27.5``,
  ``2024-06-15``; without a zone the time is UTC (never the machine's zone, so that a command gives the same answer
  on every host), and the echo says so;
* relative to now: ``-1h``, ``-30m``, ``-2d``, ``-1h30m``, ``-45s``, ``-1w``; and ``now``.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from kafkalog_cli.timefmt import iso_utc

FORMATS_HINT = ("use epoch seconds (1718446827), epoch milliseconds (1718446827000), ISO-8601 "
                "(2024-06-15T10:20:27Z; without a zone UTC is assumed) or a time relative to now (-1h, -30m, -2d)")

_UNITS_MS = {"w": 604_800_000, "d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1000}
_RELATIVE = re.compile(r"^-(?:\d+[wdhms])+$")
_RELATIVE_PART = re.compile(r"(\d+)([wdhms])")
_EPOCH = re.compile(r"^(\d+)(s|ms)?$")
_EPOCH0 = datetime(1970, 1, 1, tzinfo=timezone.utc)
MINUS_SIGN = "\u2212"  # accepted for "-" in a relative time (and used by seek-time to get -1h past click's parser)


def is_relative(text: str) -> bool:
    """``-1h``, ``-30m``, ``-1h30m``... (with "-" or U+2212 MINUS SIGN)."""
    return bool(_RELATIVE.match(text.strip().replace(MINUS_SIGN, "-", 1)))


@dataclass(frozen=True)
class TimeSpec:
    """A parsed time: epoch milliseconds and how the text was read (for the echo)."""

    ms: int
    how: str

    def echo(self, text: str) -> str:
        text = text.strip()
        if text.startswith(MINUS_SIGN):
            text = "-" + text[1:]
        return f"time: {text!r} read as {self.how} = {iso_utc(self.ms)} ({self.ms} ms since the epoch)"


def parse_time(text: str, now_ms: int | None = None) -> TimeSpec:
    """Parse ``text`` by the rules of the module docstring; ValueError with the accepted forms otherwise."""
    t = text.strip()
    if t.startswith(MINUS_SIGN):
        t = "-" + t[1:]
    if not t:
        raise ValueError(f"empty time; {FORMATS_HINT}")
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    if t.lower() == "now":
        return TimeSpec(now, "now")
    m = _EPOCH.match(t)
    if m:
        digits, unit = m.group(1), m.group(2)
        n = int(digits)
        if unit == "s" or (unit is None and len(digits) <= 11):
            return TimeSpec(n * 1000, "epoch seconds" + ("" if unit else f" ({len(digits)} digits)"))
        return TimeSpec(n, "epoch milliseconds" + ("" if unit else f" ({len(digits)} digits)"))
    if _RELATIVE.match(t):
        delta = sum(int(n) * _UNITS_MS[u] for n, u in _RELATIVE_PART.findall(t))
        return TimeSpec(now - delta, f"{t[1:]} before now")
    iso = t[:-1] + "+00:00" if t.endswith(("Z", "z")) else t
    try:
        dt = datetime.fromisoformat(iso)
    except ValueError:
        raise ValueError(f"cannot read the time {text!r}; {FORMATS_HINT}") from None
    how = "ISO-8601"
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
        how = "ISO-8601 without a zone, UTC assumed"
    since = dt - _EPOCH0
    return TimeSpec((since.days * 86400 + since.seconds) * 1000 + since.microseconds // 1000, how)
