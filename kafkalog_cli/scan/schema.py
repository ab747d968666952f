"""The three Parquet datasets ``kafkalog scan`` writes, defined once.

Why one module: the local engine writes these schemas with pyarrow, the Spark engine derives its ``StructType``
from them (``spark_engine.spark_schema``), and the row extractors fill dicts keyed by these names, so the two engines
cannot drift apart. Timestamps are Parquet ``timestamp(ms, UTC)`` (Kafka's unit, an instant, so no engine applies a
local time zone) and null where Kafka writes -1 (NO_TIMESTAMP), so a query never reads 1969-12-31 for "none".
Every schema carries ``SCHEMA_VERSION`` in its metadata (key ``kafkalog.schema_version``); bump it whenever a
column changes. docs/scan.md ("Datasets") documents every column.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

SCHEMA_VERSION = "3"  # 1: int64 timestamps with -1 sentinels; 2: timestamp(ms, UTC) with nulls; 3: broker_id
VERSION_KEY = b"kafkalog.schema_version"
TIMESTAMP = pa.timestamp("ms", tz="UTC")

# Columns that say where a row comes from; first in every dataset.
LOCATION_FIELDS = [
    pa.field("log_dir", pa.string(), nullable=False),  # absolute path of the log directory (parent of partition_dir)
    pa.field("broker_id", pa.int32()),  # meta.properties node.id / broker.id of log_dir, or --broker-id; null if none
    pa.field("topic", pa.string(), nullable=False),
    pa.field("partition", pa.int32()),  # null when the directory name is not <topic>-<n>
    pa.field("partition_dir", pa.string(), nullable=False),  # directory name, e.g. orders-0 or orders-0.<uuid>-future
    pa.field("segment", pa.string(), nullable=False),  # segment file name, e.g. 00000000000000000000.log
]

BATCHES = pa.schema(
    LOCATION_FIELDS
    + [
        pa.field("position", pa.int64(), nullable=False),
        pa.field("size", pa.int64(), nullable=False),
        pa.field("base_offset", pa.int64(), nullable=False),
        pa.field("last_offset", pa.int64(), nullable=False),
        pa.field("count", pa.int32(), nullable=False),  # v2 recordsCount; 1 for a v0/v1 entry
        pa.field("magic", pa.int8(), nullable=False),
        pa.field("codec", pa.string(), nullable=False),  # none, gzip, snappy, lz4, zstd, or unknown-<id>
        pa.field("timestamp_type", pa.string(), nullable=False),  # CreateTime, LogAppendTime, NoTimestampType
        pa.field("first_timestamp", TIMESTAMP),  # v2 baseTimestamp; v1 the message timestamp; null for -1 (v0)
        pa.field("max_timestamp", TIMESTAMP),
        pa.field("producer_id", pa.int64(), nullable=False),
        pa.field("producer_epoch", pa.int16(), nullable=False),
        pa.field("base_sequence", pa.int32(), nullable=False),
        pa.field("last_sequence", pa.int32(), nullable=False),
        pa.field("partition_leader_epoch", pa.int32(), nullable=False),
        pa.field("transactional", pa.bool_(), nullable=False),
        pa.field("control", pa.bool_(), nullable=False),
        pa.field("crc_ok", pa.bool_(), nullable=False),
    ]
)

PROBLEMS = pa.schema(
    LOCATION_FIELDS
    + [
        pa.field("file", pa.string(), nullable=False),  # the file concerned: the segment, or its .index/.timeindex
        pa.field("position", pa.int64(), nullable=False),
        pa.field("end", pa.int64(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("severity", pa.string(), nullable=False),  # error or warning
        pa.field("message", pa.string(), nullable=False),
        pa.field("offset", pa.int64()),  # base offset of the batch concerned, when known
    ]
)

# the schema-registry decode of each record (issue 30): ids and subjects the registry's records name, the value as
# JSON, and why it did not decode
DECODED_FIELDS = [
    pa.field("key_schema_id", pa.int32()),
    pa.field("key_subject", pa.string()),
    pa.field("key_json", pa.string()),
    pa.field("value_schema_id", pa.int32()),
    pa.field("value_subject", pa.string()),
    pa.field("value_json", pa.string()),
    pa.field("value_decode_error", pa.string()),
]

RECORDS = pa.schema(
    LOCATION_FIELDS
    + [
        pa.field("batch_position", pa.int64(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("timestamp", TIMESTAMP),  # null for -1
        pa.field("key_size", pa.int32(), nullable=False),  # -1 for a null key
        pa.field("value_size", pa.int32(), nullable=False),  # -1 for a null value (tombstone)
        pa.field("key", pa.binary()),
        pa.field("header_keys", pa.list_(pa.string()), nullable=False),
    ]
    + DECODED_FIELDS  # scan --records --decode (scan/decode.py); null without --decode
)

DATASETS: dict[str, pa.Schema] = {
    name: schema.with_metadata({VERSION_KEY: SCHEMA_VERSION.encode(), b"kafkalog.dataset": name.encode()})
    for name, schema in (("batches", BATCHES), ("problems", PROBLEMS), ("records", RECORDS))
}
BATCHES, PROBLEMS, RECORDS = DATASETS["batches"], DATASETS["problems"], DATASETS["records"]
DICT_STRING = pa.dictionary(pa.int32(), pa.string())


def _wire(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_type(DICT_STRING) if pa.types.is_string(f.type) else f for f in schema],
                     metadata=schema.metadata)


# What the scan builds in memory and hands to the Parquet writer: the same columns, with the repeated strings
# (paths, names, codec) as dictionary arrays, which cost one small dictionary per chunk instead of a string per row
# and are written to Parquet without hashing every value. In the files they are ordinary strings (the writer does not
# store the Arrow schema; ``output.DatasetWriter`` writes the version metadata itself).
WIRE: dict[str, pa.Schema] = {"batches": _wire(BATCHES), "problems": PROBLEMS, "records": _wire(RECORDS)}


def to_table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    """Rows (dicts keyed by column name) -> a table of dataset ``name``'s schema (built column by column:
    about three times faster than ``Table.from_pylist``)."""
    schema = DATASETS[name]
    if any("broker_id" not in r for r in rows):  # the partition pass's rows: broker_id follows from log_dir
        from kafkalog_cli.scan.identity import broker_id

        rows = [r if "broker_id" in r else {**r, "broker_id": broker_id(r["log_dir"])} for r in rows]
    return pa.Table.from_arrays([pa.array([r[f.name] for r in rows], type=f.type) for f in schema], schema=schema)


def to_rows(table: pa.Table, columns: list[str] | None = None) -> list[dict[str, Any]]:
    """A table (or some of its columns) as row dicts, column-wise (faster than ``Table.to_pylist``)."""
    names = columns or table.column_names
    cols = [table.column(n).to_pylist() for n in names]
    return [dict(zip(names, vals)) for vals in zip(*cols)]


def as_tuples(name: str, rows: list[dict[str, Any]]) -> list[tuple]:
    """Rows as tuples in schema order (what Spark's ``createDataFrame`` takes with an explicit schema)."""
    names = DATASETS[name].names
    return [tuple(r[n] for n in names) for r in rows]
