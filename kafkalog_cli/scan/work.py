"""What one scan worker does, the same for both engines: whole partitions, segment after segment, as a stream of
Arrow chunks.

Why whole partitions: the partition pass (``partition.PartitionPass``) needs a partition's batches in (segment,
position) order; walking the segments of a partition in order in one worker lets it run as a stream next to the
walk, so no process ever holds a partition's rows. The parallelism is across partitions (and, inside one segment,
the compiled walk computes CRCs on two threads).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pyarrow as pa

from kafkalog_cli.scan.extract import scan_segment_chunks
from kafkalog_cli.scan.partition import PartitionPass
from kafkalog_cli.scan.schema import to_table

# A test seam: a worker process that is about to scan this segment path kills itself with SIGKILL, so the tests can
# check what a worker dying (SIGBUS on a failing disk, the OOM killer) does to a scan. Read in the worker only.
CRASH_ENV = "KAFKALOG_SCAN_TEST_CRASH_ON"


def scan_partition(paths: list[str], *, records: bool, start: int = 0,
                   on_segment: Callable[[int], None] | None = None) -> Iterator[tuple[str, pa.Table]]:
    """Chunks ``(dataset, table)`` for the segments ``paths[start:]`` of ONE partition directory (in offset order),
    followed by the problems of the partition pass. ``on_segment(k)`` runs after segment ``k`` is complete."""
    pp = PartitionPass()
    crash_on = os.environ.get(CRASH_ENV)
    for k in range(start, len(paths)):
        path = paths[k]
        if crash_on and crash_on == path and os.environ.get("KAFKALOG_SCAN_WORKER"):
            import signal

            os.kill(os.getpid(), signal.SIGKILL)
        for name, table in _segment_chunks(path, records):
            yield name, table
            if name == "batches":
                problems = pp.feed(table)
                if problems:
                    yield "problems", to_table("problems", problems)
        if on_segment is not None:
            on_segment(k)


def _segment_chunks(path: str, records: bool) -> Iterator[tuple[str, pa.Table]]:
    """``scan_segment_chunks``; an object-store segment is staged to a temporary file first (scan.uri) and its rows
    relabelled with the object's location."""
    if "://" not in path:
        from kafkalog_cli.scan.impact import gentle

        encoded = _encoded(path, path)
        if encoded is not None:
            yield encoded
            return
        with gentle(path):  # --low-impact / --max-read-rate (no-ops unless set)
            yield from scan_segment_chunks(path, records=records)
        return
    from kafkalog_cli.scan import uri
    from kafkalog_cli.scan.identity import broker_id
    from kafkalog_cli.scan.paths import locate

    log_dir = locate(path).log_dir
    bid = broker_id(log_dir)
    with uri.staged(path) as local:
        encoded = _encoded(path, local)
        if encoded is not None:
            yield encoded[0], uri.relabel(encoded[1], log_dir, bid)
            return
        for name, table in scan_segment_chunks(local, records=records):
            yield name, uri.relabel(table, log_dir, bid)


def _encoded(label: str, local: str) -> tuple[str, pa.Table] | None:
    """A problems chunk for a tiered-storage object whose bytes are not a segment (compressed or encrypted chunks,
    scan.tiered), so it is reported instead of misparsed; None for everything else."""
    from kafkalog_cli.scan.paths import locate
    from kafkalog_cli.scan.tiered import encoding_problem

    why = encoding_problem(label, local)
    if why is None:
        return None
    size = os.path.getsize(local) if os.path.exists(local) else 0
    row = {**locate(label).as_dict(), "file": os.path.basename(label), "position": 0, "end": size,
           "kind": "remote-encoded", "severity": "warning", "message": why, "offset": None}
    return "problems", to_table("problems", [row])
