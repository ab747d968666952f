"""One shared dataset written by many broker hosts: Hive-style ``broker_id=<id>/topic=<name>`` directories, unique
part files, and a publish step that never touches another scan's files.

Why: every host of a fleet runs ``kafkalog scan /var/lib/kafka --out <shared>``. The first layout had one
``part-00000.parquet`` per dataset and removed the datasets before writing, so concurrent scans crashed each other
(ArrowInvalid, FileNotFoundError) and the last writer won. Now:

- both engines write into a private staging directory ``<out>/.incoming-<scan id>/`` (hidden: readers skip it);
- ``publish`` renames each staged file to
  ``<out>/<dataset>/broker_id=<id>/topic=<topic>/part-<source>-<scan id>-<n>.parquet``
  (a rename within one file system is atomic: a reader sees a whole file or none) and only then removes the files an
  EARLIER scan of the same source wrote (``part-<source>-*`` with another scan id). ``<source>`` is a digest of the
  host name and the scanned log dirs, so a re-run of a host replaces its own output, and nothing else;
- a null broker id (no meta.properties, no ``--broker-id``) goes to ``broker_id=__HIVE_DEFAULT_PARTITION__``, the
  Hive/Spark/pyarrow spelling of null;
- a topic value is escaped as Hive escapes path values (``FileUtils.escapePathName``, which Spark's
  ``ExternalCatalogUtils.escapePathName`` copies): ``%XX`` for control characters and ``"#%'*/:=?\\{[]^`` and DEL.
  Kafka topic names are ``[a-zA-Z0-9._-]`` (``Topic.validate``), none of which is escaped, so a real topic's
  directory is ``topic=<name>`` as is; the escape only matters for partition directories that are not Kafka's
  (the topic comes from the directory name). pyarrow (``segment_encoding="uri"``), Spark and DuckDB decode ``%XX``.

Files keep both columns (the local engine's; Spark's ``partitionBy`` keeps them in the path only), so a file read on
its own is complete. Readers (``summary.iter_dataset``, ``output.read_dataset``) walk the directories and take a
column missing from a file from the (unescaped) directory name.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import uuid
from collections import OrderedDict
from typing import Any
from urllib.parse import unquote

import pyarrow as pa

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
PARTITION_COLUMN = "broker_id"
PARTITION_COLUMNS = ("broker_id", "topic")
MAX_OPEN_WRITERS = 32  # open part files per dataset: a log dir of 5,000 topics must not hold 5,000 row-group buffers
# Hive's FileUtils.charToEscape (also Spark's ExternalCatalogUtils.charToEscape, minus its Windows-only extras)
_ESCAPE = frozenset([chr(c) for c in range(1, 0x20)] + list('"#%\'*/:=?\\\x7f{[]^'))


def new_scan_id() -> str:
    return uuid.uuid4().hex[:12]


def source_key(segments: list[str]) -> str:
    """A digest of this host and the log dirs scanned: a re-run of the same scan replaces its own files only."""
    from kafkalog_cli.scan.paths import locate

    log_dirs = sorted({locate(p).log_dir for p in segments})
    h = hashlib.sha1("\0".join([socket.gethostname(), *log_dirs]).encode())
    return h.hexdigest()[:12]


def staging_dir(out_dir: str, scan_id: str) -> str:
    return os.path.join(out_dir, f".incoming-{scan_id}")


def escape_path_value(value: str) -> str:
    """A partition value as Hive writes it in a directory name (``%XX`` for the characters it escapes)."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPE else c for c in value)


def partition_dir_name(value: Any, column: str = PARTITION_COLUMN) -> str:
    if value is None or value == "":  # Hive and Spark write an empty string as null too
        return f"{column}={NULL_PARTITION}"
    return f"{column}={escape_path_value(str(value))}"


def partition_path(broker_id: Any, topic: Any) -> str:
    """``broker_id=<id>/topic=<topic>``: the directories of one (broker, topic) below a dataset."""
    return os.path.join(partition_dir_name(broker_id), partition_dir_name(topic, "topic"))


class PartitionedWriter:
    """A dataset writer that splits each table by (``broker_id``, ``topic``) into one ``DatasetWriter`` per pair.
    Same interface as DatasetWriter.

    At most MAX_OPEN_WRITERS part files are open: the least recently written one is closed when another pair comes,
    and a later row of that pair starts a new part file in its directory. The engines hand over whole partitions
    (one worker scans one partition after another), so few pairs are live at a time and reopening is rare."""

    def __init__(self, out_dir: str, name: str, max_open: int = MAX_OPEN_WRITERS) -> None:
        self.out_dir = out_dir
        self.name = name
        self.dir = os.path.join(out_dir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.max_open = max_open
        self.writers: OrderedDict[tuple[Any, Any], Any] = OrderedDict()
        self.files: dict[tuple[Any, Any], int] = {}
        self.closed_rows = self.closed_groups = 0

    def _writer(self, key: tuple[Any, Any]) -> Any:
        w = self.writers.get(key)
        if w is not None:
            self.writers.move_to_end(key)
            return w
        from kafkalog_cli.scan.output import DatasetWriter

        while len(self.writers) >= self.max_open:
            _k, old = self.writers.popitem(last=False)
            self._close(old)
        n = self.files.get(key, 0)
        self.files[key] = n + 1
        w = self.writers[key] = DatasetWriter(self.out_dir, self.name, subdir=partition_path(*key),
                                              filename=f"part-{n:05d}.parquet")
        return w

    def _close(self, w: Any) -> None:
        w.close()
        self.closed_rows += w.rows
        self.closed_groups += w.groups

    def write(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        from kafkalog_cli.scan.summary import single_key

        one = single_key(table, list(PARTITION_COLUMNS))  # cheap for the one-entry dictionaries of a segment's chunk
        if one is not None:
            self._writer(tuple(one[c] for c in PARTITION_COLUMNS)).write(table)
            return
        cols = [table.column(c) for c in PARTITION_COLUMNS]
        cols = [c.cast(pa.string()) if pa.types.is_dictionary(c.type) else c for c in cols]
        # several pairs (small partitions batched together): the row indices of each pair, in row order
        keys = pa.table({"b": cols[0], "t": cols[1], "i": pa.array(range(table.num_rows), pa.int64())})
        for r in keys.group_by(["b", "t"], use_threads=False).aggregate([("i", "list")]).to_pylist():
            self._writer((r["b"], r["t"])).write(table.take(pa.array(r["i_list"], pa.int64())))

    def close(self) -> None:
        while self.writers:
            _k, w = self.writers.popitem(last=False)
            self._close(w)

    @property
    def rows(self) -> int:
        return self.closed_rows + sum(w.rows for w in self.writers.values())

    @property
    def groups(self) -> int:
        return self.closed_groups + sum(w.groups for w in self.writers.values())


def publish(out_dir: str, scan_id: str, source: str, names: tuple[str, ...] | list[str]) -> list[str]:
    """Move the staged files of scan ``scan_id`` into the datasets, then remove what earlier scans of ``source``
    left. Returns the published paths. Files of other sources (other hosts, other log dirs) are never touched."""
    staging = staging_dir(out_dir, scan_id)
    published: list[str] = []
    for name in names:
        os.makedirs(os.path.join(out_dir, name), exist_ok=True)
        src_root = os.path.join(staging, name)
        n = 0
        for root, dirs, files in os.walk(src_root):
            dirs.sort()
            for f in sorted(files):
                if not f.endswith(".parquet") or f.startswith(("_", ".")):
                    continue
                rel = os.path.relpath(root, src_root)
                target_dir = os.path.join(out_dir, name, rel)
                os.makedirs(target_dir, exist_ok=True)
                target = os.path.join(target_dir, f"part-{source}-{scan_id}-{n:05d}.parquet")
                os.replace(os.path.join(root, f), target)
                published.append(target)
                n += 1
        for root, _dirs, files in os.walk(os.path.join(out_dir, name)):
            for f in files:
                if f.startswith(f"part-{source}-") and not f.startswith(f"part-{source}-{scan_id}-"):
                    try:
                        os.remove(os.path.join(root, f))
                    except FileNotFoundError:  # a concurrent re-run of the same source removed it first
                        pass
    shutil.rmtree(staging, ignore_errors=True)
    return published


def dataset_files(path: str) -> list[tuple[str, dict[str, str]]]:
    """The Parquet files of a dataset directory, recursively, each with the ``key=value`` directory names above it
    (hidden and ``_`` names skipped: staging directories, Spark's ``_SUCCESS``)."""
    out: list[tuple[str, dict[str, str]]] = []
    if not os.path.isdir(path):
        return out
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        rel = os.path.relpath(root, path)
        values = {k: unquote(v) for k, v in (part.split("=", 1) for part in rel.split(os.sep) if "=" in part)} \
            if rel != "." else {}
        for f in sorted(files):
            if f.endswith(".parquet") and not f.startswith(("_", ".")):
                out.append((os.path.join(root, f), values))
    return out


def fill_columns(table: pa.Table, wanted: list[pa.Field], values: dict[str, str]) -> pa.Table:
    """``table`` with the ``wanted`` fields it lacks added from the directory ``values`` (null when absent)."""
    for f in wanted:
        if f.name in table.column_names:
            continue
        raw = values.get(f.name)
        v: str | int | None = None if raw in (None, NULL_PARTITION) else raw
        if v is not None and pa.types.is_integer(f.type):
            v = int(v)
        table = table.append_column(f.name, pa.array([v] * table.num_rows, type=f.type))
    return table
