"""The embedded engine: ``scan_segment`` over a process pool, Parquet written with pyarrow. No Java, no Spark.

Why processes: the per-segment work is Python (header walk, CRC calls, row building) and holds the GIL; two
processes on two files beat two threads on one (field notes). Workers return pyarrow tables (Arrow IPC pickles
compactly), results come back in submission order so the output files are deterministic, and a partition's batch
rows are kept only until its last segment arrives, then its partition pass runs and they are dropped.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pyarrow as pa

from kafkalog_cli.scan.extract import scan_segment
from kafkalog_cli.scan.output import DatasetWriter
from kafkalog_cli.scan.partition import partition_problems
from kafkalog_cli.scan.paths import locate
from kafkalog_cli.scan.schema import to_table


def _task(args: tuple[str, bool]) -> dict[str, pa.Table]:
    path, records = args
    rows = scan_segment(path, records=records)
    return {name: to_table(name, r) for name, r in rows.items() if name != "records" or records}


def run_local(segments: list[str], out_dir: str, *, records: bool = False, jobs: int = 1,
              progress: Callable[[str], None] | None = None) -> None:
    """Scan ``segments`` (absolute paths, sorted by partition then base offset) into ``out_dir``."""
    remaining: dict[tuple[str, str], int] = {}
    for p in segments:
        loc = locate(p)
        key = (loc.log_dir, loc.partition_dir)
        remaining[key] = remaining.get(key, 0) + 1
    held: dict[tuple[str, str], list[pa.Table]] = {}
    writers = {name: DatasetWriter(out_dir, name) for name in (("batches", "problems", "records") if records
                                                                else ("batches", "problems"))}
    try:
        for path, tables in zip(segments, _results(segments, records, jobs)):
            for name, table in tables.items():
                writers[name].write(table)
            loc = locate(path)
            key = (loc.log_dir, loc.partition_dir)
            held.setdefault(key, []).append(tables["batches"])
            remaining[key] -= 1
            if remaining[key] == 0:
                rows = pa.concat_tables(held.pop(key)).to_pylist()
                writers["problems"].write(to_table("problems", partition_problems(rows)))
            if progress is not None:
                progress(path)
    finally:
        for w in writers.values():
            w.close()


def _results(segments: list[str], records: bool, jobs: int):
    work = [(p, records) for p in segments]
    if jobs <= 1 or len(segments) <= 1:
        yield from map(_task, work)
        return
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=min(jobs, len(segments))) as pool:
        yield from pool.map(_task, work)


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)
