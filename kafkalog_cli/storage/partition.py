"""A partition directory's segments, from one directory listing (no file is opened).

Every command that walks a partition in offset order lists its segments here, so they all agree on what a segment
is: a file named ``<20 ASCII digits>.log``.
"""

from __future__ import annotations

import os

from kafkalog_cli.errors import UnreadableFileError, unreadable

INT64_MAX = (1 << 63) - 1


def segment_bases(partition_dir: str) -> list[int]:
    """Sorted base offsets of the ``.log`` segments (possibly empty); typed errors for an unreadable directory."""
    try:
        names = os.listdir(partition_dir)
    except OSError as exc:
        raise unreadable(exc, partition_dir, want="directory") from None
    bases = []
    for n in names:  # cheaper than a regex per name: this loop is the whole cost on 10,000-segment partitions
        if len(n) == 24 and n.endswith(".log") and n[:20].isascii() and n[:20].isdigit():
            base = int(n[:20])
            if base > INT64_MAX:
                # Long.parseLong fails on such a name and the broker refuses to load the log (errata-repair E15)
                raise UnreadableFileError(
                    "segment file name is not a valid offset (above 2^63-1): the broker refuses to load this partition",
                    file=os.path.join(partition_dir, n),
                    expected="a base offset <= 9223372036854775807",
                    found=n[:20],
                )
            bases.append(base)
    bases.sort()
    return bases


def segment_name(base: int, ext: str = "log") -> str:
    return f"{base:020d}.{ext}"


def segment_logs(partition_dir: str) -> list[tuple[int, str]]:
    """(base offset, .log path) of every segment, in offset order."""
    return [(b, os.path.join(partition_dir, segment_name(b))) for b in segment_bases(partition_dir)]
