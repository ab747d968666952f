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
                          "timeindex-mismatch", "index-missing", "timeindex-missing"})
ORDER = frozenset({"offset-order", "segment-order", "offset-below-base"})
STATE_FILES = frozenset({"leader-epoch-checkpoint", "leader-epoch", "snapshot", "txnindex", "leftover",
                         "offset-overflow"})


def _partition_dir(path: str) -> str:
    return path if os.path.isdir(path) else os.path.dirname(path) or "."


def _segment_base(path: str) -> int | None:
    from kafkalog_cli.storage.layout import is_segment_name

    name = os.path.basename(path)
    return int(name[:20]) if name.endswith(".log") and is_segment_name(name) else None


def _log_damage_steps(d: str, first_bad: dict[int, Any]) -> list[str]:
    """The broker recovers only the segments from the one holding the recovery point, and only after an unclean
    shutdown (LogLoader.java:464-476): damage below it stays. The same rule and words as ``recover``'s NOT REPAIRED
    line (``loader.Unrepaired``), so both commands tell one story."""
    from kafkalog_cli.broker import loader as ld
    from kafkalog_cli.storage.layout import segment_bases

    try:
        reach = ld.recovery_reach(d)
        first = reach.first_recovered(segment_bases(d))
    except Exception:  # noqa: BLE001 - an unreadable dir or checkpoint: fall back to the unclean-start rule
        reach, first = None, min(first_bad)
    steps = []
    for base in sorted(first_bad):
        if reach is not None and (first is None or base < first):
            p = first_bad[base]
            off = p.last_good_offset + 1 if p.last_good_offset is not None else base
            steps.append(f"{d}: " + ld.Unrepaired(base, p.position, off, p.kind).advice(
                d, reach.recovery_point, reach.clean_shutdown))
    if any(first is not None and base >= first for base in first_bad) or reach is None:
        steps.append(f"{d}: at its next unclean start the broker truncates the first damaged segment at the bad "
                     f"batch and deletes every later segment; preview that with 'kafkalog recover {d}', or keep "
                     f"every intact batch with 'kafkalog salvage {d}' (both write only with --execute)")
    return steps


def next_steps(problems: Iterable[Any]) -> list[str]:
    """One sentence per (partition, cause) for the errors and warnings among ``problems`` (info has no step)."""
    causes: dict[tuple[str, str], None] = {}
    log_damage: dict[str, dict[int, Any]] = {}
    for p in problems:
        if p.severity == "info":
            continue
        d = _partition_dir(p.file)
        if p.kind in LOG_DAMAGE:
            causes[(d, "log")] = None
            base = _segment_base(p.file)
            if base is not None:
                seg = log_damage.setdefault(d, {})
                if base not in seg or p.position < seg[base].position:
                    seg[base] = p
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
        if cause == "log" and d in log_damage:
            steps += _log_damage_steps(d, log_damage[d])
        elif cause == "log":
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
