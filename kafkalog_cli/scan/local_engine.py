"""The embedded engine: whole partitions scanned in worker processes, rows streamed to the parent, which writes each
dataset with one Parquet writer in large row groups. No Java, no Spark.

Why it is built this way:
- processes, not threads: the walk's Python parts hold the GIL;
- workers send Arrow chunks of at most ~64k rows as they go (never a partition's or a segment's rows at once), and
  the parent writes them as they arrive, so memory is flat in the input size on both sides;
- one writer per dataset in the parent: 50,000 one-batch partitions make one file with a few 128k-row groups,
  not 50,000 files or row groups (DuckDB and Spark pay per row group and per footer entry);
- our own small pool over pipes instead of ``ProcessPoolExecutor``: when a worker dies (SIGBUS on a failing disk,
  the OOM killer), ``ProcessPoolExecutor`` breaks and fails every task in flight, and a shared queue can be left
  locked or half-written. Here each worker has its own pipe; a dead worker is replaced, the partitions it had
  finished stay, the one it was scanning is scanned again alone (rows already written are skipped: the scan is
  deterministic), and a segment that kills a worker twice becomes an ``unreadable`` problem row. Other partitions'
  results are never lost.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

import pyarrow as pa

from kafkalog_cli.scan.fleet import PartitionedWriter
from kafkalog_cli.scan.output import DatasetWriter
from kafkalog_cli.scan.paths import file_size, locate
from kafkalog_cli.scan.schema import to_table
from kafkalog_cli.scan.settings import ScanSettings, applied, current, install
from kafkalog_cli.scan.summary import Summary
from kafkalog_cli.scan.work import SmallRows, scan_partition

FLUSH_ROWS = 1 << 16  # rows a worker gathers before sending them
FLUSH_BYTES = 32 << 20


@dataclass
class Task:
    """Partitions to scan: ``items`` of (partition index, its segment paths, first segment index). ``alone``: a
    retry after a worker died; it reports progress after every segment so that the segment at fault can be named."""

    items: list[tuple[int, list[str], int]]
    alone: bool = False
    fresh: bool = False  # starts after a segment at fault: nothing of it was written yet, nothing to skip


@dataclass
class _Running:
    task: Task
    done: set[int] = field(default_factory=set)
    progress: tuple[int, int] | None = None  # (partition, segments complete in it) as last reported


def group_partitions(segments: list[str]) -> list[list[str]]:
    """Segment paths (sorted by partition then base offset) grouped per partition directory, in order."""
    by_part: dict[tuple[str, str], list[str]] = {}
    for p in segments:
        loc = locate(p)
        by_part.setdefault((loc.log_dir, loc.partition_dir), []).append(p)
    return list(by_part.values())


def bins(parts: list[list[str]], n: int) -> list[list[int]]:
    """Partition indices in at most ``n`` runs of consecutive partitions (in the given order) of about equal bytes.

    Why runs, not a size-balanced mix: the partitions come sorted by path, so a run holds whole topics, and the
    output is one file per (broker, topic) (``fleet.PartitionedWriter``, at most 32 open). Bins that each held a
    slice of every topic made every chunk touch every topic: with 50 topics the writers closed and reopened files
    all the time (400 files of 125-row groups for 50,000 one-batch partitions, and DuckDB paid per file). Balance
    comes from the bytes (a partition larger than a bin's share is a run of its own) and from the queue of
    several bins per worker."""
    sizes = [sum(file_size(p) + 4096 for p in paths) for paths in parts]
    n = max(1, n)
    left = sum(sizes)
    out: list[list[int]] = []
    run: list[int] = []
    acc = 0
    for i, size in enumerate(sizes):
        still = n - len(out)  # bins still to fill, this one included
        if run and still > 1 and size >= left / still:  # a big partition starts a run of its own
            out.append(run)
            left -= acc
            run, acc = [], 0
            still -= 1
        run.append(i)
        acc += size
        if still > 1 and acc >= left / still:
            out.append(run)
            left -= acc
            run, acc = [], 0
    if run:
        out.append(run)
    return out



def run_local(segments: list[str], out_dir: str, *, records: bool = False, jobs: int = 1,
              progress: Callable[[str], None] | None = None, summary: Summary | None = None,
              settings: ScanSettings | None = None) -> dict[str, Any]:
    """Scan ``segments`` (absolute paths, sorted by partition then base offset) into ``out_dir``. With ``summary``,
    every chunk written is also aggregated into it (the report, without reading the datasets back). ``settings``
    (default: this process's ``settings.current()``) apply here and are handed to every worker process.

    Returns a few facts about the run (rows and row groups per dataset, workers that died)."""
    # The scan allocates a few objects per window, never cycles of interest; without this the collector's full
    # passes walk every object of pyarrow and the CLI again and again (3.5 % of a 256 MiB scan's CPU under perf).
    gc.freeze()
    before = one_crc_thread()
    chosen = current() if settings is None else settings
    try:
        with applied(chosen):
            return _run_local(segments, out_dir, records, jobs, progress, summary, chosen)
    finally:
        if before is not None:
            from kafkalog_cli.storage import accel

            accel.parallel_config(threads=before)


def _run_local(segments: list[str], out_dir: str, records: bool, jobs: int,
               progress: Callable[[str], None] | None, summary: Summary | None,
               settings: ScanSettings) -> dict[str, Any]:
    parts = group_partitions(segments)
    names = ("batches", "problems", "records") if records else ("batches", "problems")
    writers: dict[str, Any] = {name: PartitionedWriter(out_dir, name) for name in names}  # broker_id=<id>/
    if summary is not None:
        writers = {name: _Tee(w, summary) for name, w in writers.items()}
    stats: dict[str, Any] = {"workers_died": 0}
    try:
        if jobs <= 1 or len(parts) <= 1:
            small = SmallRows()
            for paths in parts:
                for name, table in scan_partition(paths, records=records, small=small):
                    writers[name].write(table)
                if len(small) >= FLUSH_ROWS:
                    for name, table, _runs in small.tables():
                        writers[name].write(table)
                if progress is not None:
                    for p in paths:
                        progress(p)
            for name, table, _runs in small.tables():
                writers[name].write(table)
        else:
            _Pool(parts, writers, records, jobs, progress, stats, settings).run()
    finally:
        for w in writers.values():
            w.close()
    for name, w in writers.items():
        stats[name] = {"rows": w.rows, "row_groups": w.groups}
    return stats


class _Tee:
    """A dataset writer that also feeds each table to the report's aggregates."""

    def __init__(self, writer: DatasetWriter | PartitionedWriter, summary: Summary) -> None:
        self.writer = writer
        self.summary = summary
        self.name = os.path.basename(writer.dir)

    def write(self, table: pa.Table) -> None:
        self.writer.write(table)
        self.summary.add(self.name, table)

    def close(self) -> None:
        self.writer.close()

    @property
    def rows(self) -> int:
        return self.writer.rows

    @property
    def groups(self) -> int:
        return self.writer.groups


# ------------------------------------------------------------------------------------------------------ workers
def _worker(conn: Connection, records: bool, settings: ScanSettings) -> None:
    """Worker loop: receive a Task, send ("chunk", tables, runs, done, progress) messages, then ("end",).
    ``settings``: the scan's, pickled by the spawn context (no environment variable carries them)."""
    import signal

    # Ctrl-C reaches the whole process group: the parent stops the scan (and kills its workers, Pool.run's finally);
    # a worker's own KeyboardInterrupt only printed a traceback per worker over the progress bar (issue 27)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    install(settings, worker=True)
    one_crc_thread()
    while True:
        task = conn.recv()
        if task is None:
            return
        _run_task(conn, task, records)


def _run_task(conn: Connection, task: Task, records: bool) -> None:
    tables: dict[str, list[pa.Table]] = {}
    runs: dict[str, list[tuple[int, int]]] = {}
    state: dict[str, Any] = {"rows": 0, "bytes": 0, "done": [], "progress": None}
    small = SmallRows()

    def flush() -> None:
        for name, table, parts in small.tables():  # the gathered rows of small segments go last, with their runs
            tables.setdefault(name, []).append(table)
            runs.setdefault(name, []).extend(parts)
        conn.send(("chunk", {k: pa.concat_tables(v) for k, v in tables.items()}, dict(runs), state["done"],
                   state["progress"]))
        tables.clear()
        runs.clear()
        state.update(rows=0, bytes=0, done=[])

    for part, paths, start in task.items:
        def on_segment(k: int, part: int = part) -> None:
            state["progress"] = (part, k + 1)
            if task.alone:
                flush()

        state["progress"] = (part, start)
        for name, table in scan_partition(paths, records=records, start=start, on_segment=on_segment, small=small,
                                          part=part):
            tables.setdefault(name, []).append(table)
            r = runs.setdefault(name, [])
            if r and r[-1][0] == part:
                r[-1] = (part, r[-1][1] + table.num_rows)
            else:
                r.append((part, table.num_rows))
            state["rows"] += table.num_rows
            state["bytes"] += table.nbytes
            if state["rows"] >= FLUSH_ROWS or state["bytes"] >= FLUSH_BYTES:
                flush()
        state["done"].append(part)  # reported with the flush that carries its last rows (small ones included)
        if len(small) >= FLUSH_ROWS:
            flush()
    flush()
    conn.send(("end",))


class _Pool:
    """A few worker processes, each with its own pipe; see the module docstring."""

    def __init__(self, parts: list[list[str]], writers: dict[str, Any], records: bool, jobs: int,
                 progress: Callable[[str], None] | None, stats: dict[str, Any], settings: ScanSettings) -> None:
        self.parts = parts
        self.settings = settings
        self.writers = writers
        self.records = records
        self.jobs = min(jobs, len(parts))
        self.progress = progress
        self.stats = stats
        # a few bins per worker, so a slow bin does not leave the others idle at the end
        self.queue: deque[Task] = deque(Task([(i, parts[i], 0) for i in b]) for b in bins(parts, self.jobs * 4))
        self.seen: dict[int, dict[str, int]] = {}  # rows of a partition already written, per dataset
        self.cursor: dict[int, dict[str, int]] = {}  # rows of a partition received in its current attempt
        self.ctx = mp.get_context("spawn")  # no fork of a parent whose Arrow threads may hold locks
        self.workers: dict[Connection, tuple[Any, _Running | None]] = {}

    def _start(self) -> Connection:
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=_worker, args=(child, self.records, self.settings), daemon=True)
        import signal

        # a Ctrl-C while the worker's interpreter starts (before _worker ignores SIGINT) printed its traceback
        # (issue 27). A blocked mask does not reach the child (the spawn's exec starts it with an empty mask: tested),
        # but an ignored disposition survives execve and Python keeps SIGINT ignored when it starts that way
        # (signalmodule.c installs its KeyboardInterrupt handler only over SIG_DFL). So SIGINT is ignored for the
        # few milliseconds of the fork and exec; a Ctrl-C in exactly that window is dropped, the next one is not.
        handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            proc.start()
        finally:
            signal.signal(signal.SIGINT, handler)
        child.close()
        self.workers[parent] = (proc, None)
        return parent

    def _assign(self, conn: Connection) -> None:
        proc, _ = self.workers[conn]
        if not self.queue:
            conn.send(None)
            conn.close()
            proc.join()
            del self.workers[conn]
            return
        task = self.queue.popleft()
        for part, _paths, _start in task.items:
            self.cursor[part] = {}
            if task.fresh:
                self.seen[part] = {}
        conn.send(task)
        self.workers[conn] = (proc, _Running(task))

    def run(self) -> None:
        for _ in range(self.jobs):
            self._assign(self._start())
        try:
            while self.workers:
                for conn in wait(list(self.workers)):
                    assert isinstance(conn, Connection)
                    try:
                        msg = conn.recv()
                    except (EOFError, OSError):
                        self._died(conn)
                        continue
                    if msg[0] == "end":
                        self._assign(conn)
                    else:
                        self._chunk(conn, *msg[1:])
        finally:
            for conn, (proc, _r) in list(self.workers.items()):
                proc.kill()
                proc.join()
                conn.close()

    def _chunk(self, conn: Connection, tables: dict[str, pa.Table], runs: dict[str, list[tuple[int, int]]],
               done: list[int], progress: tuple[int, int] | None) -> None:
        running = self.workers[conn][1]
        assert running is not None
        for name, table in tables.items():
            keep: list[tuple[int, int]] = []  # [start, end) row ranges to write, adjacent ones merged
            at = 0
            for part, n in runs[name]:
                seen = self.seen.setdefault(part, {}).get(name, 0)
                cur = self.cursor.setdefault(part, {}).get(name, 0)
                drop = max(0, min(n, seen - cur))  # rows an earlier attempt already wrote
                if drop < n:
                    if keep and keep[-1][1] == at + drop:
                        keep[-1] = (keep[-1][0], at + n)
                    else:
                        keep.append((at + drop, at + n))
                self.cursor[part][name] = cur + n
                self.seen[part][name] = max(seen, cur + n)
                at += n
            for start, end in keep:
                self.writers[name].write(table if (start, end) == (0, table.num_rows) else table.slice(start, end - start))
        running.done.update(done)
        running.progress = progress
        if self.progress is not None:
            for part in done:
                for p in self.parts[part]:
                    self.progress(p)

    def _died(self, conn: Connection) -> None:
        proc, running = self.workers.pop(conn)
        proc.join()
        conn.close()
        self.stats["workers_died"] += 1
        if running is not None:
            task = running.task
            rest = [item for item in task.items if item[0] not in running.done]
            current = running.progress[0] if running.progress else (rest[0][0] if rest else None)
            for part, paths, start in rest:
                if part != current:
                    self.queue.append(Task([(part, paths, start)]))
                    continue
                at = running.progress[1] if running.progress and running.progress[0] == part else start
                if task.alone:  # died again, alone: the segment it was reading is at fault
                    self._fault(paths[at], proc.exitcode)
                    if at + 1 < len(paths):
                        self.queue.appendleft(Task([(part, paths, at + 1)], alone=True, fresh=True))
                else:
                    self.queue.appendleft(Task([(part, paths, start)], alone=True))
        self._assign(self._start())

    def _fault(self, path: str, exitcode: int | None) -> None:
        how = f"signal {-exitcode}" if exitcode is not None and exitcode < 0 else f"exit code {exitcode}"
        loc = locate(path)
        row = {**loc.as_dict(), "file": loc.segment, "position": 0, "end": 0,  # end 0: the file as a whole
               "kind": "unreadable", "severity": "error", "offset": None,
               "message": f"the scan worker died ({how}) twice while reading this segment (a failing disk, or the file "
                          "changed under the scan); rows of it before that point are kept; copy the file off the disk "
                          "and scan the copy"}
        self.writers["problems"].write(to_table("problems", [row]))


def one_crc_thread() -> int | None:
    """The compiled walks compute their CRCs on one thread in a local scan (``accel.parallel_config``): the scan
    keeps every core busy itself (the walk beside the verify pass and two Parquet encoders, or a worker process per
    core), and a second CRC thread there only adds hand-offs (bench/HISTORY.md, "Issue 14, session 4"). Results do
    not depend on it. Returns the thread count it replaced (None: nothing changed), for ``run_local`` to restore;
    leaves alone a count the user chose (``KAFKALOG_ACCEL_THREADS``) and a build without the accelerator."""
    from kafkalog_cli.storage import accel

    if os.environ.get("KAFKALOG_ACCEL_THREADS"):
        return None
    try:
        return accel.parallel_config(threads=1).threads
    except RuntimeError:
        return None


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)
