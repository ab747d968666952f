"""The output directory: ``DIR/batches``, ``DIR/problems`` and (with ``--records``) ``DIR/records``, each a Parquet
dataset directory (``part-*.parquet``), the layout Spark writes too, so either engine's output reads the same way
(``pyarrow.parquet.read_table(DIR/batches)``, ``spark.read.parquet``, DuckDB ``read_parquet('DIR/batches/*.parquet')``).
"""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq

from kafkalog_cli.scan.schema import DATASETS

NAMES = ("batches", "problems", "records")


def _ours(name: str) -> bool:
    return name.startswith(("part-", "_", ".")) or name.endswith(".crc")


def prepare(out_dir: str, records: bool) -> None:
    """Create ``out_dir`` and remove the datasets an earlier scan left there (only if they hold nothing but
    dataset files, so a mistyped ``--out`` never deletes someone's data). Raises ValueError otherwise."""
    os.makedirs(out_dir, exist_ok=True)
    for name in NAMES:
        d = os.path.join(out_dir, name)
        if not os.path.exists(d):
            continue
        if not os.path.isdir(d) or not all(_ours(f) for f in os.listdir(d)):
            raise ValueError(f"{d} exists and does not look like a kafkalog scan dataset; choose another --out")
        shutil.rmtree(d)


class DatasetWriter:
    """Streams tables of one dataset into ``DIR/<name>/part-00000.parquet`` (an empty file when no rows came)."""

    def __init__(self, out_dir: str, name: str) -> None:
        self.schema = DATASETS[name]
        self.dir = os.path.join(out_dir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.writer = pq.ParquetWriter(os.path.join(self.dir, "part-00000.parquet"), self.schema)
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        if table.num_rows:
            self.writer.write_table(table.cast(self.schema))
            self.rows += table.num_rows

    def close(self) -> None:
        self.writer.close()


def read_dataset(out_dir: str, name: str, columns: list[str] | None = None) -> pa.Table:
    """One dataset as a table cast to our schema (Spark's list and nullability metadata differ; values don't)."""
    path = os.path.join(out_dir, name)
    schema = DATASETS[name]
    if columns is not None:
        schema = pa.schema([schema.field(c) for c in columns])
    files = sorted(f for f in os.listdir(path) if f.endswith(".parquet") and not f.startswith(("_", ".")))
    tables = [pq.read_table(os.path.join(path, f), columns=columns) for f in files]
    tables = [t.select(schema.names).cast(schema) for t in tables]
    return pa.concat_tables(tables) if tables else schema.empty_table()
