"""The output directory: ``DIR/batches``, ``DIR/problems`` and (with ``--records``) ``DIR/records``, each a Parquet
dataset directory (``part-*.parquet``), the layout Spark writes too, so either engine's output reads the same way
(``pyarrow.parquet.read_table(DIR/batches)``, ``spark.read.parquet``, DuckDB ``read_parquet('DIR/batches/*.parquet')``).
"""

from __future__ import annotations

import os
import shutil

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
MAX_PENDING_BYTES = 128 << 20
# columns whose values repeat (besides strings): dictionary-encoded in Parquet
REPEATING = {"partition", "size", "count", "magic", "producer_id", "producer_epoch", "partition_leader_epoch",
             "transactional", "control", "crc_ok", "key_size", "value_size", "severity", "kind"}  # a group is cut earlier (at >= MIN_ROW_GROUP rows) when its rows are this big


# columns whose values mostly ascend in file order: delta-encoded (see DatasetWriter)
ASCENDING = {"position", "base_offset", "last_offset", "first_timestamp", "max_timestamp", "batch_position", "offset",
             "timestamp"}


class DatasetWriter:
    """Streams tables of one dataset into ``DIR/<name>/part-00000.parquet`` (an empty file when no rows came).

    Tables of any size come in (one window's batches, one partition's problems); rows are buffered until a row
    group of ``ROW_GROUP`` rows is full, so the file has few large row groups whatever the shape of the input, and
    memory stays bounded by one group."""

    def __init__(self, out_dir: str, name: str, row_group: int = ROW_GROUP, subdir: str = "",
                 filename: str = "part-00000.parquet") -> None:
        self.schema = WIRE[name]
        self.dir = os.path.join(out_dir, name, subdir) if subdir else os.path.join(out_dir, name)
        os.makedirs(self.dir, exist_ok=True)
        # statistics only for the non-string columns: min/max of every page of a long path string cost more than
        # the rest of the write, and nobody prunes by log_dir ranges
        stats = [f.name for f in self.schema if not _stringish(f.type)]
        # dictionary encoding only where values repeat: for unique columns (positions, offsets, timestamps) the
        # writer would hash every value until the dictionary overflows, then write them plain anyway (3x the CPU)
        dictionary = [f.name for f in self.schema if f.name in REPEATING or _stringish(f.type)]
        # columns that grow row by row (positions, offsets, times): DELTA_BINARY_PACKED stores the small steps, so
        # they need no dictionary attempt and compress to almost nothing; 30 % less encoding CPU than PLAIN + snappy
        # on the batches dataset (BENCHMARKS.md, "Issue 14, session 3"). Every Parquet reader we target reads it
        # (pyarrow, DuckDB, Spark >= 3.3); the values and the schema are the same.
        delta = {f.name: "DELTA_BINARY_PACKED" for f in self.schema if f.name in ASCENDING}
        self.writer = pq.ParquetWriter(os.path.join(self.dir, filename), self.schema,
                                       compression="snappy", write_statistics=stats, use_dictionary=dictionary,
                                       column_encoding=delta or None, store_schema=False)
        self.writer.add_key_value_metadata({k.decode(): v.decode() for k, v in (self.schema.metadata or {}).items()})
        self._thread = _WriteThread(self.writer)
        self.row_group = row_group
        self.pending: list[pa.Table] = []
        self.pending_rows = 0
        self.pending_bytes = 0
        self.rows = 0
        self.groups = 0

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
        table = pa.concat_tables(self.pending).cast(self.schema)
        self.pending, self.pending_rows, self.pending_bytes = [], 0, 0
        n = table.num_rows
        if final or n < self.row_group + MIN_ROW_GROUP:  # the rest, or a group cut early by its size in bytes
            groups = [(0, n)]
        else:
            full = (n - MIN_ROW_GROUP) // self.row_group * self.row_group
            groups = [(k, self.row_group) for k in range(0, full, self.row_group)]
        for start, size in groups:
            self._thread.put(table.slice(start, size), size)
            self.groups += 1
        done = groups[-1][0] + groups[-1][1]
        if done < n:
            rest = table.slice(done)
            self.pending, self.pending_rows, self.pending_bytes = [rest], rest.num_rows, rest.nbytes

    def close(self) -> None:
        try:
            self._flush(final=True)
        finally:
            self._thread.close()
            self.writer.close()


def _stringish(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_dictionary(t)


class _WriteThread:
    """Encodes row groups on a second thread (pyarrow releases the GIL while it compresses and writes), so the
    scan goes on meanwhile; at most one group waits, so memory stays bounded."""

    def __init__(self, writer: pq.ParquetWriter) -> None:
        import queue
        import threading

        self.writer = writer
        self.q: queue.Queue = queue.Queue(maxsize=1)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="parquet-writer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            item = self.q.get()
            if item is None:
                return
            if self.error is None:
                try:
                    self.writer.write_table(item[0], row_group_size=item[1])
                    pa.default_memory_pool().release_unused()  # give freed chunks back: keeps the RSS flat
                except BaseException as exc:  # re-raised in the scanning thread
                    self.error = exc

    def put(self, table: pa.Table, size: int) -> None:
        if self.error is not None:
            raise self.error
        self.q.put((table, size))

    def close(self) -> None:
        self.q.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error


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
