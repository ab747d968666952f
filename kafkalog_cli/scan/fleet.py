"""One shared dataset written by many broker hosts: Hive-style ``broker_id=<id>`` directories, unique part files,
and a publish step that never touches another scan's files.

Why: every host of a fleet runs ``kafkalog scan /var/lib/kafka --out <shared>``. The first layout had one
``part-00000.parquet`` per dataset and removed the datasets before writing, so concurrent scans crashed each other
(ArrowInvalid, FileNotFoundError) and the last writer won. Now:

- both engines write into a private staging directory ``<out>/.incoming-<scan id>/`` (hidden: readers skip it);
- ``publish`` renames each staged file to ``<out>/<dataset>/broker_id=<id>/part-<source>-<scan id>-<n>.parquet``
  (a rename within one file system is atomic: a reader sees a whole file or none) and only then removes the files an
  EARLIER scan of the same source wrote (``part-<source>-*`` with another scan id). ``<source>`` is a digest of the
  host name and the scanned log dirs, so a re-run of a host replaces its own output, and nothing else;
- a null broker id (no meta.properties, no ``--broker-id``) goes to ``broker_id=__HIVE_DEFAULT_PARTITION__``, the
  Hive/Spark/pyarrow spelling of null.

Readers (``summary.iter_dataset``, ``output.read_dataset``) walk the directories and take a column missing from a
file (Spark's ``partitionBy`` keeps ``broker_id`` in the path only) from the directory name.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
PARTITION_COLUMN = "broker_id"


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


def partition_dir_name(value: Any) -> str:
    return f"{PARTITION_COLUMN}={NULL_PARTITION if value is None else value}"


class PartitionedWriter:
    """A dataset writer that splits each table by ``broker_id`` into one ``DatasetWriter`` per value (a scan of one
    host has one; a fleet mount ``/mnt/brokers/*/kafka-logs`` has one per broker). Same interface as DatasetWriter."""

    def __init__(self, out_dir: str, name: str) -> None:
        self.out_dir = out_dir
        self.name = name
        self.dir = os.path.join(out_dir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.writers: dict[Any, Any] = {}

    def _writer(self, value: Any) -> Any:
        w = self.writers.get(value)
        if w is None:
            from kafkalog_cli.scan.output import DatasetWriter

            w = self.writers[value] = DatasetWriter(self.out_dir, self.name, subdir=partition_dir_name(value))
        return w

    def write(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        col = table.column(PARTITION_COLUMN)
        values = pc.unique(col).to_pylist()
        if len(values) == 1:
            self._writer(values[0]).write(table)
            return
        for v in values:
            mask = pc.is_null(col) if v is None else pc.fill_null(pc.equal(col, pa.scalar(v, col.type)), False)
            self._writer(v).write(table.filter(mask))

    def close(self) -> None:
        for w in self.writers.values():
            w.close()

    @property
    def rows(self) -> int:
        return sum(w.rows for w in self.writers.values())

    @property
    def groups(self) -> int:
        return sum(w.groups for w in self.writers.values())


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
        values = dict(part.split("=", 1) for part in rel.split(os.sep) if "=" in part) if rel != "." else {}
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
        v = None if raw in (None, NULL_PARTITION) else raw
        if v is not None and pa.types.is_integer(f.type):
            v = int(v)
        table = table.append_column(f.name, pa.array([v] * table.num_rows, type=f.type))
    return table
