"""A partition directory's segments, from one directory listing (no file is opened).

The rule itself (what a segment is: a file named ``<20 ASCII digits>.log``) lives in ``storage.layout``; this module
keeps the names its callers import.
"""

from __future__ import annotations

from kafkalog_cli.storage.layout import INT64_MAX, segment_bases, segment_logs, segment_name

__all__ = ["INT64_MAX", "segment_bases", "segment_logs", "segment_name"]
