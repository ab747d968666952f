"""render/parquet_parts (row groups encoded in parallel, joined into one file) writes the bytes ParquetWriter writes
for the same tables, and render/thrift_compact reads and writes a Parquet footer back byte for byte."""

from __future__ import annotations

import io

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from kafkalog_cli.render import parquet_parts, thrift_compact  # noqa: E402


def tables(n: int) -> list:
    out = []
    for g in range(n):
        rows = 500 + 37 * g
        out.append(pa.table({
            "offset": pa.array(range(g * 1000, g * 1000 + rows), pa.int64()),
            "key": pa.array([None if i % 7 == 0 else b"k%d" % i for i in range(rows)], pa.binary()),
            "topic": pa.DictionaryArray.from_arrays(pa.array([i % 2 for i in range(rows)], pa.int32()),
                                                    pa.array(["a", "b"])),
            "headers": pa.array([[b"x"] * (i % 3) for i in range(rows)], pa.list_(pa.binary())),
        }))
    return out


OPTIONS = dict(compression="snappy", use_dictionary=["topic"], write_statistics=["offset", "topic"],
               store_schema=False)


@pytest.mark.parametrize("groups", [0, 1, 2, 7])
def test_the_joined_file_is_what_parquet_writer_writes(groups, tmp_path):
    ts = tables(groups)
    schema = tables(1)[0].schema
    meta = {"kafkalog.schema": "1"}
    ref = tmp_path / "ref.parquet"
    w = pq.ParquetWriter(str(ref), schema, **OPTIONS)
    w.add_key_value_metadata(meta)
    for t in ts:
        w.write_table(t)
    w.close()
    sink = io.BytesIO()
    pw = parquet_parts.ParallelParquetWriter(sink, schema, meta, **OPTIONS)
    for t in ts:
        pw.write_table(t)
    pw.close()
    assert sink.getvalue() == ref.read_bytes()
    back = pq.read_table(pa.BufferReader(sink.getvalue()))
    assert back.num_rows == sum(t.num_rows for t in ts)


def test_a_footer_reads_and_writes_back_byte_for_byte(tmp_path):
    p = tmp_path / "f.parquet"
    pq.write_table(pa.concat_tables(tables(3)), str(p), row_group_size=600)
    data = p.read_bytes()
    n = int.from_bytes(data[-8:-4], "little")
    footer = data[-8 - n:-8]
    parsed = thrift_compact.read_struct(footer)
    assert thrift_compact.write_struct(parsed) == footer
    assert thrift_compact.get(parsed, 3) == 1500 + 37 * 3  # num_rows
