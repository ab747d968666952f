"""What one scan worker does, the same for both engines: whole partitions, segment after segment, as a stream of
Arrow chunks.

Why whole partitions: the partition pass (``partition.PartitionPass``) needs a partition's batches in (segment,
position) order; walking the segments of a partition in order in one worker lets it run as a stream next to the
walk, so no process ever holds a partition's rows. The parallelism is across partitions (and, inside one segment,
the compiled walk computes CRCs on two threads).

Why ``SmallRows``: a fleet is mostly small segments (50,000 partitions of one batch each is a real shape). Building
Arrow arrays costs tens of microseconds per call whatever the row count, so tables per small segment would cost
milliseconds per segment. Small segments are walked into Python rows instead, gathered across segments and
partitions, and turned into one table per dataset every ~64k rows.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from kafkalog_cli.scan import columns as C
from kafkalog_cli.scan import decode
from kafkalog_cli.scan.extract import scan_segment_chunks, scan_segment_rows
from kafkalog_cli.scan.partition import PartitionPass
from kafkalog_cli.scan.paths import file_size
from kafkalog_cli.scan.schema import RECORDS, WIRE, to_table

SMALL_SEGMENT = 256 << 10  # segments up to this size are gathered as Python rows
# A test seam: a worker process that is about to scan this segment path kills itself with SIGKILL, so the tests can
# check what a worker dying (SIGBUS on a failing disk, the OOM killer) does to a scan. Read in the worker only.
CRASH_ENV = "KAFKALOG_SCAN_TEST_CRASH_ON"
_PASS_KEYS = ("position", "size", "base_offset", "last_offset", "max_timestamp", "producer_id", "producer_epoch",
              "base_sequence", "last_sequence", "control", "crc_ok")
_PASS_IDX = [C.RAW_NAMES.index(k) for k in _PASS_KEYS]


class SmallRows:
    """Rows of small segments, gathered across segments and partitions. ``tables()`` turns them into one table per
    dataset, with the partition index of every run of rows (the local engine's bookkeeping for retries)."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.batches: list[tuple] = []
        self.batch_locs: list[dict[str, Any]] = []
        self.problems: list[dict[str, Any]] = []
        self.rec: dict[str, list[Any]] = {f.name: [] for f in RECORDS if f.name not in C.LOCATION}
        self.rec_locs: list[dict[str, Any]] = []
        self.parts: dict[str, list[int]] = {"batches": [], "problems": [], "records": []}

    def __len__(self) -> int:
        return len(self.batches) + len(self.problems) + len(self.rec_locs)

    def add(self, part: int, loc: dict[str, Any], rows: list[tuple], problems: list[dict[str, Any]],
            rec: dict[str, list[Any]]) -> None:
        self.batches.extend(rows)
        self.batch_locs.extend([loc] * len(rows))
        self.parts["batches"].extend([part] * len(rows))
        self.add_problems(part, problems)
        n = len(rec.get("offset", ()))
        if n:
            for k, v in rec.items():
                self.rec[k].extend(v)
            self.rec_locs.extend([loc] * n)
            self.parts["records"].extend([part] * n)

    def add_problems(self, part: int, problems: list[dict[str, Any]]) -> None:
        self.problems.extend(problems)
        self.parts["problems"].extend([part] * len(problems))

    def tables(self) -> list[tuple[str, pa.Table, list[tuple[int, int]]]]:
        """(dataset, table, [(partition index, rows)...]) for what was gathered; then empties itself."""
        out = []
        if self.batches:
            raw = C.rows_to_raw(self.batches)
            out.append(("batches", C.batch_table(C.location_columns_of(self.batch_locs, WIRE["batches"]), raw)))
        if self.problems:
            out.append(("problems", to_table("problems", self.problems)))
        if self.rec_locs:
            cols = C.location_columns_of(self.rec_locs, WIRE["records"])
            n = len(self.rec_locs)
            for f in RECORDS:
                if f.name not in cols:
                    vals = self.rec[f.name]
                    cols[f.name] = pa.array(vals, type=f.type) if len(vals) == n else pa.nulls(n, f.type)
            out.append(("records", decode.attach(pa.Table.from_arrays([cols[f.name] for f in WIRE["records"]],
                                                                      schema=WIRE["records"]))))
        result = [(name, table, _runs(self.parts[name])) for name, table in out]
        self.clear()
        return result


def _runs(parts: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for p in parts:
        if runs and runs[-1][0] == p:
            runs[-1] = (p, runs[-1][1] + 1)
        else:
            runs.append((p, 1))
    return runs


def scan_partition(paths: list[str], *, records: bool, start: int = 0,
                   on_segment: Callable[[int], None] | None = None, small: SmallRows | None = None,
                   part: int = 0) -> Iterator[tuple[str, pa.Table]]:
    """Chunks ``(dataset, table)`` for the segments ``paths[start:]`` of ONE partition directory (in offset order),
    followed by the problems of the partition pass. With ``small``, segments of at most SMALL_SEGMENT bytes go
    into it as rows (tagged ``part``) instead of coming out as tables. ``on_segment(k)`` runs after segment ``k``."""
    from kafkalog_cli.scan.settings import in_worker

    pp = PartitionPass()
    crash_on = os.environ.get(CRASH_ENV)  # a test's hook (test_scan_failing_disk), read, never written
    for k in range(start, len(paths)):
        path = paths[k]
        if crash_on and crash_on == path and in_worker():
            import signal

            os.kill(os.getpid(), signal.SIGKILL)
        if small is not None and "://" not in path and file_size(path) <= SMALL_SEGMENT \
                and _encoded(path, path) is None:
            from kafkalog_cli.scan.impact import gentle

            with gentle(path):  # --low-impact / --max-read-rate (no-ops unless set)
                loc, rows, problems, rec = scan_segment_rows(path, records=records)
            small.add(part, loc, rows, problems, rec)
            good = [{**loc, **{key: r[i] for key, i in zip(_PASS_KEYS, _PASS_IDX)}} for r in rows if r[-1]]
            found = pp.feed_rows(good)
            if found:
                small.add_problems(part, found)
        else:
            for name, table in _segment_chunks(path, records):  # staged objects, encoded remote objects
                if name == "records":
                    table = decode.attach(table)
                yield name, table
                if name == "batches":
                    found = pp.feed(table)
                    if found:
                        yield "problems", to_table("problems", found)
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
    storage.tiered), so it is reported instead of misparsed; None for everything else."""
    from kafkalog_cli.scan.paths import locate
    from kafkalog_cli.storage.tiered import encoding_problem

    why = encoding_problem(label, local)
    if why is None:
        return None
    size = os.path.getsize(local) if os.path.exists(local) else 0
    row = {**locate(label).as_dict(), "file": os.path.basename(label), "position": 0, "end": size,
           "kind": "remote-encoded", "severity": "warning", "message": why, "offset": None}
    return "problems", to_table("problems", [row])

