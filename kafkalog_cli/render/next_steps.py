"""What to do next after ``verify-crc``: one line per partition and cause, naming what the broker will do and the
kafkalog command that previews or performs it.

Why here and not in each finding's message: the same cause (e.g. three CRC regions in one partition) has one next
step, and the step depends on the partition, not on the byte range. The engine's findings stay data; this module
only turns their kinds into advice, so every output form (lines, table, JSON) carries the same steps.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

# damage inside a .log segment: what the broker's recovery stops at
LOG_DAMAGE = frozenset({"crc-mismatch", "bad-size", "size-too-large", "bad-magic", "truncated", "partial-entry"})
# the CRC verifies but the records inside do not decode: recovery checks only the CRC, so the broker keeps it
RECORD_DAMAGE = frozenset({"bad-records", "bad-count", "bad-codec"})
INDEX_DAMAGE = frozenset({"index-size", "timeindex-size", "index-position", "index-order", "index-offset",
                          "timeindex-offset", "timeindex-order",
                          "timeindex-mismatch"})
ORDER = frozenset({"offset-order", "segment-order", "offset-below-base"})
STATE_FILES = frozenset({"leader-epoch-checkpoint", "leader-epoch", "snapshot", "txnindex", "leftover",
                         "offset-overflow"})


def _partition_dir(path: str) -> str:
    return path if os.path.isdir(path) else os.path.dirname(path) or "."


def next_steps(problems: Iterable[Any]) -> list[str]:
    """One sentence per (partition, cause) for the errors and warnings among ``problems`` (info has no step)."""
    causes: dict[tuple[str, str], None] = {}
    for p in problems:
        if p.severity == "info":
            continue
        d = _partition_dir(p.file)
        if p.kind in LOG_DAMAGE:
            causes[(d, "log")] = None
        elif p.kind in RECORD_DAMAGE:
            causes[(d, "records")] = None
        elif p.kind in INDEX_DAMAGE:
            causes[(d, "index")] = None
        elif p.kind in ORDER:
            causes[(d, "order")] = None
        elif p.kind == "partition-metadata":
            causes[(d, "topic-id")] = None
        elif p.kind in STATE_FILES:
            causes[(d, "state")] = None
    steps = []
    for d, cause in causes:
        if cause == "log":
            steps.append(f"{d}: at its next unclean start the broker truncates the first damaged segment at the bad "
                         f"batch and deletes every later segment; preview that with 'kafkalog recover {d}', or keep "
                         f"every intact batch with 'kafkalog salvage {d}' (both write only with --execute)")
        elif cause == "records":
            steps.append(f"{d}: the batch CRC verifies, so the broker keeps it and its consumers fail on it; "
                         f"'kafkalog dump --deep-iteration --print-data-log' on the segment shows the records, "
                         f"'kafkalog seek-offset {d} OFFSET' finds where to resume a stuck consumer")
        elif cause == "index":
            steps.append(f"{d}: the broker serves lookups from these indexes and rebuilds them only when it recovers "
                         f"the segment; 'kafkalog rebuild-index {d}' rebuilds them by its recovery rule (dry run, "
                         "then --execute)")
        elif cause == "order":
            steps.append(f"{d}: offsets go backwards or segments overlap (often a stray copied segment); the broker "
                         f"serves wrong data or fails to load; 'kafkalog recover {d}' shows what its loader does, "
                         "and moving the segment that does not belong out of the directory fixes it")
        elif cause == "topic-id":
            steps.append(f"{d}: the broker cannot load this partition with this partition.metadata; write the topic "
                         "id back ('kafka-topics.sh --describe' shows it), or move the file out of the directory so "
                         "the broker writes it again from the cluster metadata")
        else:
            steps.append(f"{d}: 'kafkalog recover {d}' shows what the broker's loader does with these files at "
                         "start-up (finish or discard leftovers, rebuild producer state, drop bad epoch entries)")
    return steps
