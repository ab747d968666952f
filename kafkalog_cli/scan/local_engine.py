"""The embedded engine: ``scan_segment`` over a process pool, Parquet written with pyarrow. No Java, no Spark.

Why processes: the per-segment work is Python (header walk, CRC calls, row building) and holds the GIL; two
processes on two files beat two threads on one (field notes). Workers return pyarrow tables (Arrow IPC pickles
compactly), results come back in submission order so the output files are deterministic, and a partition's batch
rows are kept only until its last segment arrives, then its partition pass runs and they are dropped (or, with
enough partitions, a whole partition is one task and its pass runs in the worker).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pyarrow as pa

from kafkalog_cli.scan.extract import scan_segment
from kafkalog_cli.scan.output import DatasetWriter
from kafkalog_cli.scan.partition import COLUMNS, partition_problems
from kafkalog_cli.scan.paths import locate
from kafkalog_cli.scan.schema import to_rows, to_table


def _task(args: tuple[list[str], bool, bool]) -> dict[str, pa.Table]:
    """Scan some segments; with ``whole`` they are all the segments of one partition, so its partition pass runs
    here in the worker too (then the parent only writes)."""
    paths, records, whole = args
    names = ("batches", "problems", "records") if records else ("batches", "problems")
    rows: dict[str, list] = {name: [] for name in names}
    for path in paths:
        for name, r in scan_segment(path, records=records).items():
            if name in rows:
                rows[name].extend(r)
    if whole:
        rows["problems"].extend(partition_problems(rows["batches"]))
    return {name: to_table(name, r) for name, r in rows.items()}


def run_local(segments: list[str], out_dir: str, *, records: bool = False, jobs: int = 1,
              progress: Callable[[str], None] | None = None) -> None:
    """Scan ``segments`` (absolute paths, sorted by partition then base offset) into ``out_dir``.

    With at least as many partitions as ``jobs``, a task is one partition (its pass runs in the worker). With fewer
    (one huge partition), a task is one segment so all processes stay busy, and the parent holds a partition's
    slim batch columns until its last segment arrives, then runs its pass.
    """
    by_part: dict[tuple[str, str], list[str]] = {}
    for p in segments:
        loc = locate(p)
        by_part.setdefault((loc.log_dir, loc.partition_dir), []).append(p)
    whole = len(by_part) >= jobs
    tasks = [(paths, records, True) for paths in by_part.values()] if whole else [([p], records, False)
                                                                                    for p in segments]
    remaining = {key: len(paths) for key, paths in by_part.items()}
    held: dict[tuple[str, str], list[pa.Table]] = {}
    writers = {name: DatasetWriter(out_dir, name) for name in (("batches", "problems", "records") if records
                                                                else ("batches", "problems"))}
    try:
        for (paths, _r, _w), tables in zip(tasks, _results(tasks, jobs)):
            for name, table in tables.items():
                writers[name].write(table)
            if not whole:
                loc = locate(paths[0])
                key = (loc.log_dir, loc.partition_dir)
                held.setdefault(key, []).append(tables["batches"].select(COLUMNS))
                remaining[key] -= 1
                if remaining[key] == 0:
                    rows = to_rows(pa.concat_tables(held.pop(key)), COLUMNS)
                    writers["problems"].write(to_table("problems", partition_problems(rows)))
            if progress is not None:
                for p in paths:
                    progress(p)
    finally:
        for w in writers.values():
            w.close()


def _results(tasks: list[tuple[list[str], bool, bool]], jobs: int):
    if jobs <= 1 or len(tasks) <= 1:
        yield from map(_task, tasks)
        return
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks))) as pool:
        yield from pool.map(_task, tasks)


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)
