"""``scan --records --decode``: the schema-registry decode of every record as columns of DIR/records, on the local
engine (small segments gathered as rows and large ones as chunks) and on Spark (the same rows)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from schema_world import AVRO_V1, schema_record, write_segment

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format.schema_wire import confluent_prefix

pytest.importorskip("pyarrow")
fastavro = pytest.importorskip("fastavro")


def _avro(value: dict) -> bytes:
    bio = io.BytesIO()
    fastavro.schemaless_writer(bio, fastavro.parse_schema(json.loads(AVRO_V1)), value)
    return confluent_prefix(1) + bio.getvalue()


def _logdir(root: Path, big: int = 6000) -> Path:
    logs = root / "logs"
    write_segment(logs / "_schemas-0", [schema_record("orders-value", 1, 1, AVRO_V1)])
    small = [(b"k0", _avro({"id": 0, "item": "a"})), (b"k1", b"poison"), (b"k2", None), (b"k3", confluent_prefix(9))]
    write_segment(logs / "orders-0", small)
    # one segment above scan/work.py's SMALL_SEGMENT: its records come out of the chunked path
    write_segment(logs / "orders-1", [(f"k{i}".encode(), _avro({"id": i, "item": "x" * 40})) for i in range(big)])
    (logs / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=c\n")
    return logs


def _rows(out: Path) -> list[dict]:
    from scan_data import load_sorted

    return load_sorted(out, "records")


def test_local_engine_writes_decoded_columns(tmp_path: Path) -> None:
    logs = _logdir(tmp_path)
    assert (logs / "orders-1" / "00000000000000000000.log").stat().st_size > 256 << 10
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["scan", "--records", "--decode", "--jobs", "2", "--out", str(out),
                                 str(logs / "orders-0"), str(logs / "orders-1")])
    assert r.exit_code in (0, 1), r.output
    rows = {(x["partition"], x["offset"]): x for x in _rows(out)}
    assert rows[(0, 0)]["value_json"] == '{"id":0,"item":"a"}'
    assert rows[(0, 0)]["value_schema_id"] == 1 and rows[(0, 0)]["value_subject"] == "orders-value"
    assert rows[(0, 0)]["key_json"] is None  # a plain string key
    assert rows[(0, 1)]["value_json"] is None and rows[(0, 1)]["value_decode_error"].startswith("bad-magic:")
    assert rows[(0, 2)]["value_json"] is None and rows[(0, 2)]["value_decode_error"] is None  # a tombstone
    assert rows[(0, 3)]["value_schema_id"] == 9 and rows[(0, 3)]["value_decode_error"].startswith("unknown-id:")
    big = [x for (p, _o), x in rows.items() if p == 1]
    assert len(big) == 6000 and all(json.loads(x["value_json"])["item"] == "x" * 40 for x in big)
    assert sorted(json.loads(x["value_json"])["id"] for x in big) == list(range(6000))
    # without --decode the columns are there, null
    plain = tmp_path / "plain"
    r = CliRunner().invoke(cli, ["scan", "--records", "--out", str(plain), str(logs / "orders-0")])
    assert all(x["value_json"] is None and x["value_subject"] is None for x in _rows(plain))


def test_decode_needs_records_and_a_registry(tmp_path: Path) -> None:
    logs = _logdir(tmp_path, big=10)
    r = CliRunner().invoke(cli, ["scan", "--decode", "--out", str(tmp_path / "o1"), str(logs / "orders-0")])
    assert r.exit_code == 2 and "need --records" in r.output
    bare = tmp_path / "bare"
    shutil.copytree(logs / "orders-0", bare / "orders-0")
    r = CliRunner().invoke(cli, ["scan", "--records", "--decode", "--out", str(tmp_path / "o2"), str(bare / "orders-0")])
    assert r.exit_code == 2 and "no _schemas partition" in r.output and "--schemas" in r.output
    r = CliRunner().invoke(cli, ["scan", "--records", "--decode", "--schemas", str(logs), "--out",
                                 str(tmp_path / "o3"), str(bare / "orders-0")])
    assert r.exit_code in (0, 1), r.output
    assert any(x["value_json"] == '{"id":0,"item":"a"}' for x in _rows(tmp_path / "o3"))


@pytest.mark.slow
def test_spark_writes_the_same_decoded_rows(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("Java is not on PATH (the Spark engine needs a JVM)")
    from kafkalog_cli.ops.schemas import schema_copies
    from kafkalog_cli.scan import output
    from kafkalog_cli.scan.local_engine import run_local
    from kafkalog_cli.scan.paths import expand
    from kafkalog_cli.scan.settings import ScanSettings
    from kafkalog_cli.scan.spark_engine import get_session, run_spark

    logs = _logdir(tmp_path, big=3000)
    segments, _ = expand([str(logs / "orders-0"), str(logs / "orders-1")])
    copies, _ = schema_copies([str(logs)])
    chosen = ScanSettings(decode_schemas=tuple(copies))
    local, remote = tmp_path / "local", tmp_path / "spark"
    for d in (local, remote):
        output.prepare(str(d), True)
    run_local(segments, str(local), records=True, jobs=2, settings=chosen)
    session = get_session("local[2]")
    try:
        run_spark(segments, str(remote), records=True, spark=session, settings=chosen)
    finally:
        session.stop()
    a, b = _rows(local), _rows(remote)
    assert a == b
    assert sum(1 for x in a if x["value_json"] is not None) == 3001
