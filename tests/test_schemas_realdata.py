"""The real ``_schemas-0`` partitions of ../shared/realdata and the Confluent-Avro topics beside them: every record
decodes, and matches fastavro reading the bytes after the 5-byte prefix with the schema text taken straight from
the ``_schemas`` record (parsed here with json, not by kafkalog's replay)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from realdata_path import REALDATA

from kafkalog_cli.cli.main import cli
from kafkalog_cli.internal_topics.schema_decode import Decoder
from kafkalog_cli.ops.schemas import audit, load_registry
from kafkalog_cli.storage.layout import segment_logs
from kafkalog_cli.storage.segment import MappedFile, entries

pytestmark = pytest.mark.realdata
fastavro = pytest.importorskip("fastavro")

LOGDIRS = sorted({p.parent for p in REALDATA.glob("*/**/_schemas-0")}) if REALDATA.is_dir() else []


def _records(pdir: Path):  # noqa: ANN202
    for _b, f in segment_logs(str(pdir)):
        with MappedFile(f) as mf:
            for batch in entries(mf.buf, file=f):
                if not batch.is_control:
                    yield from batch.iter_records(mf.buf)


def _schema_texts(logdir: Path) -> dict[int, str]:
    out = {}
    for r in _records(logdir / "_schemas-0"):
        if r.value is None:
            continue
        key = json.loads(bytes(r.key))  # type: ignore[arg-type]
        if key.get("keytype") == "SCHEMA":
            v = json.loads(bytes(r.value))
            out[v["id"]] = v["schema"]
    return out


@pytest.mark.skipif(not LOGDIRS, reason="no _schemas-0 in ../shared/realdata")
def test_real_registries_replay() -> None:
    for d in LOGDIRS:
        reg = load_registry([str(d)])
        assert not [n for n in reg.notes if "skipped" in n], (d, reg.notes)
        assert len({v.schema_id for v in reg.versions.values()}) == len(_schema_texts(d))


@pytest.mark.skipif(not LOGDIRS, reason="no _schemas-0 in ../shared/realdata")
def test_every_real_avro_record_decodes_as_fastavro_reads_it() -> None:
    checked = 0
    for d in LOGDIRS:
        texts = _schema_texts(d)
        if not texts:
            continue
        parsed = {i: fastavro.parse_schema(json.loads(t)) for i, t in texts.items()}
        dec = Decoder(load_registry([str(d)]))
        for pdir in sorted(d.iterdir()):
            if not pdir.is_dir() or pdir.name.startswith(("_", "__")) or not segment_logs(str(pdir)):
                continue
            for r in _records(pdir):
                v = None if r.value is None else bytes(r.value)
                if v is None or v[:1] != b"\0" or int.from_bytes(v[1:5], "big") not in parsed:
                    continue
                want = fastavro.schemaless_reader(io.BytesIO(v[5:]), parsed[int.from_bytes(v[1:5], "big")], None)
                got = dec.decode(v, r.headers)
                assert got.ok, (pdir.name, r.offset, got.reason)
                assert got.value == want, (pdir.name, r.offset)
                checked += 1
        assert dec.stats()["schemas_compiled"] <= len(texts)  # one parse per id, however many records
    assert checked > 50_000  # the corpus' Avro topics (orders, customers_keyed, ...) all took part


@pytest.mark.skipif(not LOGDIRS, reason="no _schemas-0 in ../shared/realdata")
def test_dump_prints_readable_values_and_audit_is_clean() -> None:
    d = next(d for d in LOGDIRS if (d / "orders-0").is_dir())
    r = CliRunner().invoke(cli, ["dump", "--value-decoder", "schema-registry", "--max-bytes", "4000",
                                 str(d / "orders-0" / "00000000000000000000.log")])
    assert r.exit_code == 0, r.output
    first = next(ln for ln in r.output.splitlines() if ln.startswith("| offset: 0 "))
    assert 'payload: {"order_id":1000,"product_id":"7406e1f6-6ec0-4f8e-bcd9-179a771a88a6"' in first
    rep = audit([str(d)], load_registry([str(d)]))
    assert rep.problems == 0, [*rep.id_uses, *rep.bad, *rep.compat]
    assert {p.topic for p in rep.partitions} >= {"orders", "customers_keyed", "loyalty_levels", "promotions"}
