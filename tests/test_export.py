"""``kafkalog export``: every field of every record against kafka-python's record parser (an independent decoder),
the isolation levels against the partition builder's own model of each transaction, corrupt input, the window,
the output rules (new paths only, nothing left behind), the source shapes (segment, partition dir, -delete dir,
log dir, tiered layout, leftovers), Parquet = NDJSON, and the Kafka-directory format read back."""

from __future__ import annotations

import base64
import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from kafka_oracle import oracle_entries
from partition_gen import random_partition

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format.encoder import RecordSpec, encode_batch, reseal_crc

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def run(*args: str):
    return CliRunner().invoke(cli, ["export", *args], catch_exceptions=False)


def ndjson(path: Path) -> list[dict]:
    files = sorted(path.glob("*.ndjson")) if path.is_dir() else [path]
    return [json.loads(line) for f in files for line in f.read_text("utf-8").splitlines()]


def _bytes(text: str | None, encoding: str | None) -> bytes | None:
    if text is None:
        return None
    return base64.b64decode(text) if encoding == "base64" else text.encode("utf-8")


def _seq(base: int, delta: int) -> int:
    if base < 0:
        return -1
    return (base + delta) % (1 << 31)  # DefaultRecordBatch.incrementSequence wraps at Integer.MAX_VALUE


def expected_records(pdir: Path, *, control: bool) -> list[dict]:
    """kafka-python's view of every record of a partition directory's segments, with its batch's fields."""
    out = []
    for seg in sorted(pdir.glob("*.log")):
        for e in oracle_entries(seg.read_bytes()):
            if e["magic"] < 2:
                for r in e["records"]:
                    out.append({**r, "magic": e["magic"], "producer_id": -1, "producer_epoch": -1, "sequence": -1,
                                "leader_epoch": -1, "transactional": False, "control": False,
                                "batch_base_offset": None})
                continue
            if e["is_control"] and not control:
                continue
            for r in e["records"]:
                out.append({**r, "magic": 2, "producer_id": e["producer_id"], "producer_epoch": e["producer_epoch"],
                            "sequence": _seq(e["base_sequence"], r["offset"] - e["base_offset"]),
                            "leader_epoch": e["leader_epoch"], "transactional": e["is_transactional"],
                            "control": e["is_control"], "batch_base_offset": e["base_offset"],
                            "codec": CODECS[e["codec"]], "tstype": "logappend" if e["timestamp_type"] else "create"})
    return out


def assert_fields(got: list[dict], want: list[dict]) -> None:
    assert [g["offset"] for g in got] == [w["offset"] for w in want]
    for g, w in zip(got, want):
        assert g["ts"] == (-1 if w["timestamp"] is None else w["timestamp"]), g  # kafka-python: None for v0
        assert _bytes(g["key"], g.get("key_encoding")) == w["key"], g
        assert _bytes(g["payload"], g.get("payload_encoding")) == w["value"], g
        flat = g.get("headers", [])
        enc = g.get("header_encodings", ["utf8"] * len(flat))
        pairs = [(_bytes(flat[i], enc[i]).decode(), _bytes(flat[i + 1], enc[i + 1])) for i in range(0, len(flat), 2)]
        assert pairs == [(k, v) for k, v in w["headers"]], g
        for f in ("magic", "producer_id", "producer_epoch", "sequence", "leader_epoch", "transactional"):
            assert g[f] == w[f], (f, g)
        if w["batch_base_offset"] is not None:
            assert g["batch_base_offset"] == w["batch_base_offset"]
            assert g["codec"] == w["codec"] and g["tstype"] == w["tstype"]
        assert (g["control"] is not None) == w["control"]


@pytest.mark.parametrize("pdir", ["partition/orders-0", "sample-logdir/payments-0", "sample-logdir/payments-1",
                                  "codecs/c-0", "legacy/l-0", "seed231/demo-0"])
def test_every_field_matches_kafka_python(tmp_path, pdir):
    src = FIXTURES / pdir
    r = run(str(src), "--isolation", "read_uncommitted", "--out", str(tmp_path / "o.ndjson"))
    assert r.exit_code == 0, r.output
    got = ndjson(tmp_path / "o.ndjson")
    assert_fields(got, expected_records(src, control=False))
    name = src.name.rsplit("-", 1)
    assert {(g["topic"], g["partition"]) for g in got} == {(name[0], int(name[1]))}
    assert all(g["source"]["file"].startswith(str(src)) for g in got)


@pytest.mark.parametrize("seed", [1, 7, 23, 99])
def test_isolation_levels_match_the_model(tmp_path, seed):
    pdir = tmp_path / "t-0"
    pb = random_partition(str(pdir), seed, batches=50)
    committed = [m.offset for m in pb.records if not m.control and m.outcome in ("none", "commit")]
    everything = [m.offset for m in pb.records if not m.control]
    markers = [m.offset for m in pb.records if m.control]
    r = run(str(pdir), "--out", str(tmp_path / "rc.ndjson"))
    assert r.exit_code == 0, r.output
    rc = ndjson(tmp_path / "rc.ndjson")
    assert [g["offset"] for g in rc] == committed
    assert all(g["txn"] in (None, "committed") for g in rc)
    r = run(str(pdir), "--isolation", "read_uncommitted", "--out", str(tmp_path / "ru.ndjson"))
    assert r.exit_code == 0, r.output
    ru = ndjson(tmp_path / "ru.ndjson")
    assert [g["offset"] for g in ru] == everything
    model = {m.offset: m for m in pb.records}
    for g in ru:
        m = model[g["offset"]]
        assert g["txn"] == ({"commit": "committed", "abort": "aborted", "open": "open"}[m.outcome]
                            if m.txn else None)
    r = run(str(pdir), "--isolation", "read_uncommitted", "--keep-control", "--out", str(tmp_path / "kc.ndjson"))
    kc = ndjson(tmp_path / "kc.ndjson")
    assert [g["offset"] for g in kc] == sorted(everything + markers)
    assert {g["control"]["type"] for g in kc if g["control"]} <= {"COMMIT", "ABORT"}
    assert_fields(kc, expected_records(pdir, control=True))


def test_open_transaction_is_dropped_by_read_committed(tmp_path):
    from partition_gen import PartitionBuilder

    pb = PartitionBuilder(str(tmp_path / "t-0"))
    pb.batch([(b"a", b"1")])
    pb.batch([(b"b", b"2")], pid=5, txn=True)
    pb.batch([(b"c", b"3")])
    pb.write()
    r = run(str(tmp_path / "t-0"), "--out", str(tmp_path / "o.ndjson"), "--summary-format", "json")
    assert r.exit_code == 0
    assert [g["offset"] for g in ndjson(tmp_path / "o.ndjson")] == [0, 2]
    doc = json.loads(r.output)
    assert doc["partitions"][0]["open_records"] == 1 and doc["schema_version"] == 1


def test_a_lone_segment_finds_its_markers_in_the_next_segment(tmp_path):
    from partition_gen import PartitionBuilder

    pb = PartitionBuilder(str(tmp_path / "t-0"))
    pb.batch([(b"a", b"1")], pid=5, txn=True)
    pb.roll()
    pb.marker(5, abort=True)
    pb.write()
    r = run(str(tmp_path / "t-0" / "00000000000000000000.log"), "--out", str(tmp_path / "o.ndjson"))
    assert r.exit_code == 0
    assert ndjson(tmp_path / "o.ndjson") == []
    r = run(str(tmp_path / "t-0" / "00000000000000000000.log"), "--isolation", "read_uncommitted",
            "--out", str(tmp_path / "u.ndjson"))
    assert [g["txn"] for g in ndjson(tmp_path / "u.ndjson")] == ["aborted"]


def test_non_utf8_bytes_are_base64_and_marked(tmp_path):
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    data = encode_batch([RecordSpec(key=b"\xff\x00k", value=b"ok\xc3", headers=[(b"h\xfe", b"\x80"), ("n", None)],
                                    timestamp=5)], base_offset=0)
    (pdir / "00000000000000000000.log").write_bytes(data)
    r = run(str(pdir), "--out", str(tmp_path / "o.ndjson"))
    assert r.exit_code == 0, r.output
    (g,) = ndjson(tmp_path / "o.ndjson")
    assert g["key_encoding"] == "base64" and base64.b64decode(g["key"]) == b"\xff\x00k"
    assert g["payload_encoding"] == "base64" and base64.b64decode(g["payload"]) == b"ok\xc3"
    assert g["header_encodings"] == ["base64", "base64", "utf8", "utf8"]
    assert g["headers"][2:] == ["n", None]


def test_corrupt_batch_is_skipped_with_a_located_finding(tmp_path):
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    batches = [encode_batch([RecordSpec(key=b"k%d" % i, value=b"v" * 50, timestamp=i)], base_offset=i)
               for i in range(5)]
    raw = bytearray(b"".join(batches))
    bad_start = len(batches[0]) + len(batches[1])
    raw[bad_start + 70] ^= 0xFF  # a value byte of batch 2: its CRC no longer verifies
    (pdir / "00000000000000000000.log").write_bytes(bytes(raw))
    r = run(str(pdir), "--out", str(tmp_path / "o.ndjson"), "--summary-format", "json")
    assert r.exit_code == 1
    assert [g["offset"] for g in ndjson(tmp_path / "o.ndjson")] == [0, 1, 3, 4]
    doc = json.loads(r.output)
    (f,) = doc["partitions"][0]["findings"]
    assert f["file"].endswith("00000000000000000000.log") and f["kind"] == "crc-mismatch"
    assert (f["position"], f["end"]) == (bad_start, bad_start + len(batches[2]))
    assert f["expected"] and f["found"] and f["hint"]
    assert doc["corrupt_batches"] == 1 and doc["exit_code"] == 1
    text = run(str(pdir), "--out", str(tmp_path / "o2.ndjson"))
    assert text.exit_code == 1 and f"bytes [{bad_start}, {bad_start + len(batches[2])})" in text.output


def test_malformed_records_behind_a_valid_crc_are_skipped(tmp_path):
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    good = encode_batch([RecordSpec(key=b"a", value=b"1", timestamp=1)], base_offset=0)
    bad = bytearray(encode_batch([RecordSpec(key=b"b", value=b"2", timestamp=2)], base_offset=1))
    bad[61] = 0x7F  # the record's length varint: far past the batch's end
    (pdir / "00000000000000000000.log").write_bytes(good + reseal_crc(bad))
    r = run(str(pdir), "--out", str(tmp_path / "o.ndjson"), "--summary-format", "json")
    assert r.exit_code == 1
    assert [g["offset"] for g in ndjson(tmp_path / "o.ndjson")] == [0]
    (f,) = json.loads(r.output)["partitions"][0]["findings"]
    assert f["kind"] == "bad-records" and f["position"] == len(good) and f["offset"] == 1


def test_window_options(tmp_path):
    src = FIXTURES / "partition/orders-0"
    r = run(str(src), "--offset", "10", "--count", "5", "--out", str(tmp_path / "w.ndjson"))
    assert r.exit_code == 0, r.output
    assert [g["offset"] for g in ndjson(tmp_path / "w.ndjson")] == [10, 11, 12, 13, 14]
    all_recs = expected_records(src, control=False)
    t0 = all_recs[20]["timestamp"]
    t1 = all_recs[25]["timestamp"]
    r = run(str(src), "--start-time", str(t0), "--end-time", str(t1), "--out", str(tmp_path / "t.ndjson"))
    assert [g["offset"] for g in ndjson(tmp_path / "t.ndjson")] == [w["offset"] for w in all_recs
                                                                     if t0 <= w["timestamp"] <= t1]


def test_output_must_be_new_and_nothing_is_left_on_refusal(tmp_path):
    out = tmp_path / "o.ndjson"
    out.write_text("keep")
    r = run(str(FIXTURES / "partition/orders-0"), "--out", str(out))
    assert r.exit_code == 2 and "exists already" in r.output
    assert out.read_text() == "keep"
    r = run(str(tmp_path / "nope"), "--out", str(tmp_path / "x"))
    assert r.exit_code == 2 and "no such file or directory" in r.output
    assert not (tmp_path / "x").exists() and not list(tmp_path.glob("*.kafkalog-partial"))


def test_an_interrupted_export_leaves_nothing(tmp_path, monkeypatch):
    from kafkalog_cli.ops import export as ex

    def boom(self, p):
        raise KeyboardInterrupt

    monkeypatch.setattr(ex.Exporter, "run", boom)
    from kafkalog_cli.cli.main import _Interrupted

    with pytest.raises(_Interrupted):  # main() turns it into exit 130
        CliRunner().invoke(cli, ["export", str(FIXTURES / "partition/orders-0"), "--out", str(tmp_path / "d")],
                           catch_exceptions=False)
    assert sorted(os.listdir(tmp_path)) == []


def test_source_shapes_name_their_partition(tmp_path):
    src = FIXTURES / "partition/orders-0"
    deleted = tmp_path / "logs" / "orders-0.9f1c2a3b4d5e6f708192a3b4c5d6e7f8-delete"
    shutil.copytree(src, deleted)
    tiered = tmp_path / "tier" / "kafka-tiered-storage" / "orders-3-AAAAAAAAAAAAAAAAAAAAAA"
    tiered.mkdir(parents=True)
    shutil.copy(src / "00000000000000000000.log", tiered / "00000000000000000000-BBBBBBBBBBBBBBBBBBBBBB.log")
    for arg, want in ((deleted, ("orders", 0)), (tmp_path / "logs", ("orders", 0)), (tmp_path / "tier", ("orders", 3)),
                      (src / "00000000000000000000.log", ("orders", 0))):
        out = tmp_path / f"o{abs(hash(str(arg)))}.ndjson"
        r = run(str(arg), "--out", str(out))
        assert r.exit_code == 0, r.output
        recs = ndjson(out)
        assert recs and {(g["topic"], g["partition"]) for g in recs} == {want}


def test_two_directories_of_one_partition_need_merge(tmp_path):
    src = FIXTURES / "partition/orders-0"
    a, b = tmp_path / "b1" / "orders-0", tmp_path / "b2" / "orders-0"
    shutil.copytree(src, a)
    shutil.copytree(src, b)
    r = run(str(a), str(b), "--out", str(tmp_path / "o.ndjson"))
    assert r.exit_code == 2 and "--merge" in r.output
    r = run(str(a), str(b), "--merge", "--out", str(tmp_path / "m.ndjson"), "--summary-format", "json")
    assert r.exit_code == 0, r.output
    run(str(a), "--out", str(tmp_path / "one.ndjson"))
    assert ndjson(tmp_path / "m.ndjson") == ndjson(tmp_path / "one.ndjson")  # every offset once, from b1
    assert json.loads(r.output)["partitions"][0]["duplicate_records"] > 0


def test_leftovers_only_with_the_flag(tmp_path):
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    old = encode_batch([RecordSpec(key=b"old", value=b"0", timestamp=1)], base_offset=0)
    new = encode_batch([RecordSpec(key=b"new", value=b"1", timestamp=2)], base_offset=1)
    (pdir / "00000000000000000000.log.deleted").write_bytes(old)
    (pdir / "00000000000000000001.log").write_bytes(new)
    r = run(str(pdir), "--out", str(tmp_path / "a.ndjson"))
    assert r.exit_code == 0 and "--leftovers" in r.output
    assert [g["offset"] for g in ndjson(tmp_path / "a.ndjson")] == [1]
    r = run(str(pdir), "--leftovers", "--out", str(tmp_path / "b.ndjson"))
    assert [g["offset"] for g in ndjson(tmp_path / "b.ndjson")] == [0, 1]


def test_parquet_holds_the_same_records(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    pdir = tmp_path / "t-0"
    random_partition(str(pdir), 5, batches=40)
    run(str(pdir), "--isolation", "read_uncommitted", "--out", str(tmp_path / "o.ndjson"))
    r = run(str(pdir), "--isolation", "read_uncommitted", "--format", "parquet", "--out", str(tmp_path / "o.parquet"))
    assert r.exit_code == 0, r.output
    rows = pq.read_table(tmp_path / "o.parquet").to_pylist()
    lines = ndjson(tmp_path / "o.ndjson")
    assert len(rows) == len(lines)
    for row, g in zip(rows, lines):
        assert row["offset"] == g["offset"]
        assert (row["timestamp"].timestamp() * 1000 if row["timestamp"] else -1) == g["ts"]
        assert row["key"] == _bytes(g["key"], g.get("key_encoding"))
        assert row["value"] == _bytes(g["payload"], g.get("payload_encoding"))
        assert row["key_size"] == (-1 if row["key"] is None else len(row["key"]))
        for f in ("producer_id", "producer_epoch", "sequence", "leader_epoch", "transactional", "txn", "magic",
                  "codec", "batch_base_offset"):
            assert row[f] == g[f], f
        assert row["topic"] == "t" and row["partition"] == 0 and row["segment"].endswith(".log")


def test_kafka_format_reads_back_as_the_source(tmp_path):
    pdir = tmp_path / "src" / "t-0"
    random_partition(str(pdir), 11, batches=60)
    r = run(str(pdir), "--format", "kafka", "--out", str(tmp_path / "k"))
    assert r.exit_code == 0, r.output
    out = tmp_path / "k" / "t-0"
    names = sorted(os.listdir(out))
    assert "leader-epoch-checkpoint" in names and any(n.endswith(".snapshot") for n in names)
    assert (tmp_path / "k" / "recovery-point-offset-checkpoint").read_text().splitlines()[2].startswith("t 0 ")
    for seg in pdir.glob("*.log"):  # whole batches are copied byte for byte
        assert (out / seg.name).read_bytes() == seg.read_bytes()
    a = run(str(pdir), "--isolation", "read_uncommitted", "--keep-control", "--out", str(tmp_path / "a.ndjson"))
    b = run(str(out), "--isolation", "read_uncommitted", "--keep-control", "--out", str(tmp_path / "b.ndjson"))
    assert a.exit_code == b.exit_code == 0
    strip = [{k: v for k, v in g.items() if k != "source"} for g in ndjson(tmp_path / "a.ndjson")]
    assert strip == [{k: v for k, v in g.items() if k != "source"} for g in ndjson(tmp_path / "b.ndjson")]
    v = CliRunner().invoke(cli, ["verify-crc", str(out)])
    assert v.exit_code == 0, v.output


def test_kafka_format_read_committed_and_a_window_rebuild_batches(tmp_path):
    pdir = tmp_path / "src" / "t-0"
    pb = random_partition(str(pdir), 3, batches=60)
    r = run(str(pdir), "--format", "kafka", "--isolation", "read_committed", "--offset", "7",
            "--out", str(tmp_path / "k"))
    assert r.exit_code == 0, r.output
    run(str(tmp_path / "k" / "t-0"), "--out", str(tmp_path / "b.ndjson"))
    committed = [m.offset for m in pb.records if not m.control and m.outcome in ("none", "commit") and m.offset >= 7]
    assert [g["offset"] for g in ndjson(tmp_path / "b.ndjson")] == committed
    v = CliRunner().invoke(cli, ["verify-crc", "--deep", str(tmp_path / "k" / "t-0")])
    assert v.exit_code == 0, v.output


def test_legacy_source_becomes_v2_keeping_offsets_and_timestamps(tmp_path):
    src = FIXTURES / "legacy/l-0"
    r = run(str(src), "--format", "kafka", "--out", str(tmp_path / "k"), "--summary-format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["partitions"][0]["converted_entries"] > 0
    run(str(src), "--out", str(tmp_path / "a.ndjson"))
    run(str(tmp_path / "k" / "l-0"), "--out", str(tmp_path / "b.ndjson"))
    a, b = ndjson(tmp_path / "a.ndjson"), ndjson(tmp_path / "b.ndjson")
    assert {g["magic"] for g in b} == {2}
    keep = ("offset", "ts", "key", "payload", "headers", "topic", "partition")
    assert [{k: g.get(k) for k in keep} for g in a] == [{k: g.get(k) for k in keep} for g in b]
    assert [g["tstype"] for g in b] == [("create" if g["tstype"] == "none" else g["tstype"]) for g in a]


def test_kafka_format_needs_a_named_partition(tmp_path):
    d = tmp_path / "loose"
    d.mkdir()
    shutil.copy(FIXTURES / "partition/orders-0/00000000000000000000.log", d / "00000000000000000000.log")
    r = run(str(d), "--format", "kafka", "--out", str(tmp_path / "k"))
    assert r.exit_code == 2 and "--topic" in r.output
    r = run(str(d), "--format", "kafka", "--topic", "orders", "--partition", "4", "--out", str(tmp_path / "k"))
    assert r.exit_code == 0, r.output
    assert (tmp_path / "k" / "orders-4" / "00000000000000000000.log").exists()


def test_stdout_and_keep_control_rules(tmp_path):
    src = FIXTURES / "partition/orders-0"
    r = run(str(src), "--keep-control", "--out", "-")
    assert r.exit_code == 2 and "read_uncommitted" in r.output
    r = run(str(src), "--format", "parquet", "--out", "-")
    assert r.exit_code == 2


def test_kraft_control_records_are_named(tmp_path):
    src = FIXTURES / "kraft/__cluster_metadata-0"
    r = run(str(src), "--isolation", "read_uncommitted", "--keep-control", "--out", str(tmp_path / "k.ndjson"))
    assert r.exit_code == 0, r.output
    types = {g["control"]["type"] for g in ndjson(tmp_path / "k.ndjson") if g["control"]}
    assert {"LEADER_CHANGE", "KRAFT_VERSION"} <= types  # the sample also holds a control type no release defines
    assert types <= {"LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER", "KRAFT_VERSION", "KRAFT_VOTERS", "UNKNOWN_9"}
    r = run(str(src), "--out", str(tmp_path / "d.ndjson"))
    assert all(g["control"] is None for g in ndjson(tmp_path / "d.ndjson"))


def test_progress_gets_every_byte_walked(tmp_path):
    from kafkalog_cli.ops import export as ex
    from kafkalog_cli.render.export_ndjson import NdjsonSink

    pdir = tmp_path / "t-0"
    random_partition(str(pdir), 9, batches=300, roll_every=100)
    got: list[int] = []
    sink = NdjsonSink(lambda part: (open(os.devnull, "wb"), "-"), lambda f: f.close())
    opts = ex.ExportOptions()
    ex.Exporter(opts, sink, progress=got.append).run(ex.plan([str(pdir)], opts))
    assert sum(got) == sum(p.stat().st_size for p in pdir.glob("*.log"))
    assert len(got) >= len(list(pdir.glob("*.log")))


def test_pages_given_back_behind_the_walk_change_nothing(tmp_path, monkeypatch):
    from kafkalog_cli.ops import export as ex

    pdir = tmp_path / "t-0"
    random_partition(str(pdir), 13, batches=200, roll_every=1000)
    run(str(pdir), "--isolation", "read_uncommitted", "--out", str(tmp_path / "a.ndjson"))
    calls: list[tuple[int, int]] = []
    orig = ex.MappedFile.release_pages

    def spy(self, start, length):
        calls.append((start, length))
        return orig(self, start, length)

    monkeypatch.setattr(ex, "RELEASE_STEP", 4096)
    monkeypatch.setattr(ex, "_SCAN_WINDOW", 8192)
    monkeypatch.setattr(ex.MappedFile, "release_pages", spy)
    for fmt, name in (("ndjson", "b.ndjson"), ("parquet", "b.parquet"), ("kafka", "k")):
        r = run(str(pdir), "--isolation", "read_uncommitted", "--format", fmt, "--out", str(tmp_path / name))
        assert r.exit_code == 0, r.output
    assert calls and all(s % 4096 == 0 for s, _n in calls)
    assert (tmp_path / "a.ndjson").read_bytes() == (tmp_path / "b.ndjson").read_bytes()
    assert (tmp_path / "k" / "t-0" / "00000000000000000000.log").read_bytes() == (
        pdir / "00000000000000000000.log").read_bytes()
