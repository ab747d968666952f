"""The output directory: ``DIR/batches``, ``DIR/problems`` and (with ``--records``) ``DIR/records``, each a Parquet
dataset directory (``part-*.parquet``), the layout Spark writes too, so either engine's output reads the same way
(``pyarrow.parquet.read_table(DIR/batches)``, ``spark.read.parquet``, DuckDB ``read_parquet('DIR/batches/*.parquet')``).
"""

from __future__ import annotations

import os
import queue
import shutil
import threading
from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from kafkalog_cli.scan.schema import DATASETS, WIRE

NAMES = ("batches", "problems", "records")


def _ours(name: str) -> bool:
    return name.startswith(("part-", "_", ".")) or name.endswith(".crc")


def prepare(out_dir: str, records: bool, *, replace: bool = True) -> None:
    """Create ``out_dir`` and check that datasets already there are ours (only dataset files and ``key=value``
    directories, so a mistyped ``--out`` never mixes with someone's data). Raises ValueError otherwise.

    ``replace`` (tests and the old single-writer layout): remove them. The CLI passes ``replace=False``: a shared
    ``--out`` keeps other hosts' files, and ``fleet.publish`` replaces only this source's earlier files."""
    os.makedirs(out_dir, exist_ok=True)
    for name in NAMES:
        d = os.path.join(out_dir, name)
        if not os.path.exists(d):
            continue
        if not os.path.isdir(d) or not _all_ours(d):
            raise ValueError(f"{d} exists and does not look like a kafkalog scan dataset; choose another --out")
        if replace:
            shutil.rmtree(d)


def _all_ours(d: str) -> bool:
    for root, _dirs, files in os.walk(d):
        if root != d and "=" not in os.path.basename(root) and not os.path.basename(root).startswith((".", "_")):
            return False
        if not all(_ours(f) for f in files):
            return False
    return True


ROW_GROUP = 1 << 17  # rows per Parquet row group (readers such as DuckDB pay per row group, not per row)
MIN_ROW_GROUP = 1 << 16
MAX_PENDING_BYTES = 128 << 20  # a group is cut earlier (at >= MIN_ROW_GROUP rows) when its rows are this big
ENCODERS = min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
# columns whose values repeat (besides strings): dictionary-encoded in Parquet
# (not the small int32 ones, partition, count, magic, producer_epoch, partition_leader_epoch: hashing every value
# into a dictionary cost twice PLAIN + snappy, 6 % of a scan's CPU on 1 GiB of 100-byte batches, for a few more
# bytes of output; bench/HISTORY.md, "Issue 14, session 4")
REPEATING = {"size", "producer_id", "transactional", "control", "crc_ok", "key_size", "value_size", "severity", "kind"}


# columns nobody selects row groups by: no min/max statistics (see DatasetWriter)
UNPRUNED = {"size", "count", "magic", "producer_epoch", "base_sequence", "last_sequence", "key_size", "value_size"}

# columns whose values mostly ascend in file order: delta-encoded (see DatasetWriter)
ASCENDING = {"position", "base_offset", "last_offset", "first_timestamp", "max_timestamp", "batch_position", "offset",
             "timestamp"}


class DatasetWriter:
    """Streams tables of one dataset into ``DIR/<name>/part-00000.parquet`` (an empty file when no rows came), and
    from its second row group on also into ``part-00000-1.parquet`` (see ``_Encoders``).

    Tables of any size come in (one window's batches, one partition's problems); rows are buffered until a row
    group of ``ROW_GROUP`` rows is full, so the files have few large row groups whatever the shape of the input, and
    memory stays bounded by a few groups."""

    def __init__(self, out_dir: str, name: str, row_group: int = ROW_GROUP, subdir: str = "",
                 filename: str = "part-00000.parquet", encoders: int | None = None) -> None:
        self.schema = WIRE[name]
        self.dir = os.path.join(out_dir, name, subdir) if subdir else os.path.join(out_dir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.filename = filename
        self._encoders = _Encoders(self._open, ENCODERS if encoders is None else encoders)
        self.row_group = row_group
        self.pending: list[pa.Table] = []
        self.pending_rows = 0
        self.pending_bytes = 0
        self.rows = 0
        self.groups = 0

    def _open(self, k: int) -> pq.ParquetWriter:
        """The Parquet writer of part file ``k`` (0: ``filename``; k: ``<stem>-<k>.parquet``)."""
        stem, ext = os.path.splitext(self.filename)
        path = os.path.join(self.dir, self.filename if k == 0 else f"{stem}-{k}{ext}")
        # statistics only for the non-string columns a query filters by: min/max of every page of a long path string
        # cost more than the rest of the write, and nobody prunes by log_dir ranges; nor by sizes or sequence numbers
        # (6 % of the encoding CPU of the batches dataset)
        stats = [f.name for f in self.schema if not _stringish(f.type) and f.name not in UNPRUNED]
        # dictionary encoding only where values repeat: for unique columns (positions, offsets, timestamps) the
        # writer would hash every value until the dictionary overflows, then write them plain anyway (3x the CPU)
        dictionary = [f.name for f in self.schema if f.name in REPEATING or _stringish(f.type)]
        # columns that grow row by row (positions, offsets, times): DELTA_BINARY_PACKED stores the small steps, so
        # they need no dictionary attempt and compress to almost nothing; 30 % less encoding CPU than PLAIN + snappy
        # on the batches dataset (bench/HISTORY.md, "Issue 14, session 3"). Every Parquet reader we target reads it
        # (pyarrow, DuckDB, Spark >= 3.3); the values and the schema are the same.
        delta = {f.name: "DELTA_BINARY_PACKED" for f in self.schema if f.name in ASCENDING}
        writer = pq.ParquetWriter(path, self.schema, compression="snappy", write_statistics=stats,
                                  use_dictionary=dictionary, column_encoding=delta or None, store_schema=False)
        writer.add_key_value_metadata({k.decode(): v.decode() for k, v in (self.schema.metadata or {}).items()})
        return writer

    def write(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        self.pending.append(table)
        self.pending_rows += table.num_rows
        self.pending_bytes += table.nbytes
        self.rows += table.num_rows
        if self.pending_rows >= self.row_group + MIN_ROW_GROUP or (self.pending_bytes >= MAX_PENDING_BYTES
                                                                    and self.pending_rows >= MIN_ROW_GROUP):
            self._flush(final=False)

    def _flush(self, final: bool) -> None:
        """Write full groups, keeping back at least MIN_ROW_GROUP rows (so the file's last group, written by
        ``close``, is never smaller than that unless the whole file is): every group has 64k..192k rows."""
        if not self.pending:
            return
        table = pa.concat_tables(self.pending)
        if not table.schema.equals(self.schema):  # metadata (window facts) aside, the chunks are in the wire schema
            table = table.cast(self.schema)
        self.pending, self.pending_rows, self.pending_bytes = [], 0, 0
        n = table.num_rows
        if final or n < self.row_group + MIN_ROW_GROUP:  # the rest, or a group cut early by its size in bytes
            groups = [(0, n)]
        else:
            full = (n - MIN_ROW_GROUP) // self.row_group * self.row_group
            groups = [(k, self.row_group) for k in range(0, full, self.row_group)]
        for start, size in groups:
            self._encoders.put(table.slice(start, size), size)
            self.groups += 1
        done = groups[-1][0] + groups[-1][1]
        if done < n:
            rest = table.slice(done)
            self.pending, self.pending_rows, self.pending_bytes = [rest], rest.num_rows, rest.nbytes

    def close(self) -> None:
        try:
            self._flush(final=True)
        finally:
            self._encoders.close()


def _stringish(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_dictionary(t)


class _Encoders:
    """Encodes row groups on up to ``n`` threads, each writing its own part file, so the scan goes on meanwhile
    (pyarrow releases the GIL while it encodes, compresses and writes). The first part file is opened at once (a
    dataset with no rows is one empty file); thread ``k`` and its file start with the ``k+1``-th group.

    Why several files: encoding is the scan's critical path on a big segment of small batches (about 1 s of CPU for
    10.7 M rows of 24 columns; none of the writer's settings saves more than a few percent, bench/HISTORY.md), and a
    Parquet file is written one column chunk after another by one thread, so the only way to use a second core is a
    second file. Groups go to the threads in turn (group k to thread k mod n: the same input makes the same files,
    and no file is left empty), so rows of one stream are spread over the files by groups, in order within each;
    a dataset has no row order (docs/scan.md). At most ``max(2, n)`` groups are queued or being encoded (one
    thread: one encoding, one waiting), so memory stays bounded as with one thread."""

    def __init__(self, open_file: Callable[[int], pq.ParquetWriter], n: int) -> None:
        self.open_file = open_file
        self.n = max(1, n)
        self.slots = threading.Semaphore(max(2, self.n))
        self.error: BaseException | None = None
        self.queues: list[queue.SimpleQueue] = []
        self.threads: list[threading.Thread] = []
        self.writers: list[pq.ParquetWriter] = [open_file(0)]
        self.put_count = 0
        self.stop = False  # set when close() is interrupted: groups still queued are skipped
        # jemalloc gives freed pages back by itself; other pools keep them until told (scan/memory_pool.py)
        self.release = pa.default_memory_pool().backend_name != "jemalloc"

    def _run(self, writer: pq.ParquetWriter, q: queue.SimpleQueue) -> None:
        while True:
            item = q.get()
            if item is None:
                return
            try:
                if self.error is None and not self.stop:
                    writer.write_table(item[0], row_group_size=item[1])
                    if self.release:
                        pa.default_memory_pool().release_unused()  # give freed chunks back: keeps the RSS flat
            except BaseException as exc:  # re-raised in the scanning thread
                self.error = exc
            finally:
                del item
                self.slots.release()

    def put(self, table: pa.Table, size: int) -> None:
        if self.error is not None:
            raise self.error
        k = self.put_count % self.n
        if k == len(self.threads):
            if k >= len(self.writers):
                self.writers.append(self.open_file(k))
            q: queue.SimpleQueue = queue.SimpleQueue()
            t = threading.Thread(target=self._run, args=(self.writers[k], q), name=f"parquet-writer-{k}", daemon=True)
            t.start()
            self.queues.append(q)
            self.threads.append(t)
        self.put_count += 1
        self.slots.acquire()
        self.queues[k].put((table, size))

    def close(self) -> None:
        """Let the threads finish the groups they were given, then close the files. Interrupted while waiting
        (Ctrl-C), the files are left open: a thread may be inside ``write_table`` on its writer, and closing that
        writer under it failed with "Column N had ... rows" or crashed. The threads are told to skip what is left
        and given a moment to leave pyarrow before the interrupt goes on (the files are staging files the scan
        removes)."""
        for q in self.queues:
            q.put(None)
        try:
            for t in self.threads:
                t.join()
        except BaseException:
            self.stop = True
            for t in self.threads:
                t.join(timeout=2.0)
            raise
        if self.error is not None:  # the writers are in an unknown state: left unclosed, as the error goes on
            raise self.error
        for w in self.writers:
            w.close()


def read_dataset(out_dir: str, name: str, columns: list[str] | None = None) -> pa.Table:
    """One dataset as a table cast to our schema (Spark's list and nullability metadata differ; values don't)."""
    from kafkalog_cli.scan.fleet import dataset_files, fill_columns

    path = os.path.join(out_dir, name)
    schema = DATASETS[name]
    if columns is not None:
        schema = pa.schema([schema.field(c) for c in columns])
    tables = []
    for f, values in dataset_files(path):
        present = set(pq.read_schema(f).names)
        t = pq.read_table(f, columns=[c for c in schema.names if c in present])
        tables.append(fill_columns(t, list(schema), values).select(schema.names).cast(schema))
    return pa.concat_tables(tables) if tables else schema.empty_table()
