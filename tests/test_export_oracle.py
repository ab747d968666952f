"""``export --format kafka`` against Kafka's own code (../shared/kafka-real): partitions written by Kafka's
``UnifiedLog`` (codecs, headers, idempotent and transactional producers, commits and aborts, several segments and
leader epochs; a v1 log), exported, then (1) Kafka's ``Load`` with and without the clean-shutdown marker, then its
clean close, changes no file of the exported directory that it does not change the same way in Kafka's own
directory, and (2) Kafka's ``DumpLogSegments`` prints the same records from the export as from the source."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kafka_real import dir_digest, write_partition
from oracle_cases import assert_load_keeps, kafkalog

pytestmark = pytest.mark.oracle
NOW = 1_700_000_200_000

MIXED = {
    "topic": "demo", "partition": 0,
    "config": {"segment.bytes": "1400"},
    "ops": [
        {"op": "append", "count": 5, "keyFormat": "k%d", "valueFormat": "v%d", "leaderEpoch": 0},
        {"op": "append", "records": [{"key": "hk", "value": "hv", "headers": {"h1": "x", "h2": None}}],
         "codec": "gzip"},
        {"op": "append", "records": [{"key": {"hex": "ff00"}, "value": {"hex": "c3"}}]},
        {"op": "append", "count": 4, "keyFormat": "p%d", "producerId": 1000, "leaderEpoch": 1, "batches": 3,
         "codec": "lz4"},
        {"op": "append", "count": 3, "keyFormat": "t%d", "producerId": 2000, "transactional": True,
         "leaderEpoch": 1, "codec": "zstd"},
        {"op": "append", "count": 2, "keyFormat": "a%d", "producerId": 3000, "transactional": True, "leaderEpoch": 1},
        {"op": "append", "count": 2, "keyFormat": "b%d", "producerId": 2000, "transactional": True, "leaderEpoch": 1},
        {"op": "marker", "type": "COMMIT", "producerId": 2000, "leaderEpoch": 1},
        {"op": "marker", "type": "ABORT", "producerId": 3000, "leaderEpoch": 1},
        {"op": "append", "count": 6, "keyFormat": "s%d", "valueFormat": "snappy-%d", "codec": "snappy",
         "leaderEpoch": 2, "batches": 4},
        {"op": "append", "count": 2, "keyFormat": "z%d", "nullValueEvery": 2, "leaderEpoch": 3},
    ],
    "shutdown": "clean",
}

LEGACY = {
    "topic": "old", "partition": 2,
    "config": {"message.format.version": "0.10.2", "segment.bytes": "900"},
    "ops": [
        {"op": "append", "count": 4, "keyFormat": "k%d", "valueFormat": "v%d", "magic": 1},
        {"op": "append", "count": 3, "keyFormat": "g%d", "magic": 1, "codec": "gzip", "batches": 3},
        {"op": "append", "count": 2, "keyFormat": "n%d", "nullValueEvery": 2, "magic": 1},
    ],
    "shutdown": "clean",
}

_RECORD = re.compile(r"^\| offset: (\d+) (CreateTime|LogAppendTime|NoTimestampType): (-?\d+) .*?"
                     r"(?:key: (.*?) payload: (.*)|endTxnMarker: (\w+).*)$")


def dump(oracle, pdir: Path) -> str:
    logs = sorted(str(p) for p in pdir.glob("*.log"))
    r = oracle.batch("Dump", "--files", ",".join(logs), "--deep-iteration", "--print-data-log")
    assert r.rc == 0, r.stderr
    return r.stdout.decode("utf-8", "replace") if isinstance(r.stdout, bytes) else r.stdout


def records(text: str) -> list[tuple]:
    return [m.groups() for line in text.splitlines() if (m := _RECORD.match(line))]


def batch_and_record_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith(("Dumping ", "Log starting offset"))]


def export_kafka(src: Path, out: Path, *args: str) -> Path:
    r = kafkalog("export", str(src), "--format", "kafka", "--out", str(out), *args)
    assert r.exit_code == 0, r.output
    return out / src.name


def test_kafka_loads_the_export_unchanged_and_dumps_the_same_records(kafka_real, tmp_path):
    src = write_partition(kafka_real, tmp_path / "data", MIXED)
    out = export_kafka(src, tmp_path / "exp")
    before = dir_digest(out)
    assert_load_keeps(kafka_real, src, out, tmp_path / "load", NOW, {})
    assert dir_digest(out) == before  # Load works on copies
    res = kafka_real.json("Load", "--in", str(out), "--work", str(tmp_path / "plain"), "--now-ms", str(NOW),
                          "--clean-shutdown", "true", "--close")
    assert not res.get("error") and not res["changesAfterClose"]["created"]
    assert {f["name"]: f["sha256"] for f in res["filesBefore"]} == {f["name"]: f["sha256"]
                                                                    for f in res["filesAfterClose"]}
    ours, theirs = dump(kafka_real, out), dump(kafka_real, src)
    assert records(ours) and records(ours) == records(theirs)
    assert batch_and_record_lines(ours) == batch_and_record_lines(theirs)  # whole batches: copied byte for byte
    ref = kafka_real.json("Load", "--in", str(src), "--work", str(tmp_path / "ref"), "--now-ms", str(NOW),
                          "--clean-shutdown", "true")
    for k in ("logEndOffset", "lastStableOffset", "leaderEpochs", "producers", "firstUnstableOffset"):
        assert res["log"][k] == ref["log"][k], k


def test_read_committed_and_a_window_load_and_dump_the_kept_records(kafka_real, tmp_path):
    src = write_partition(kafka_real, tmp_path / "data", MIXED)
    out = export_kafka(src, tmp_path / "exp", "--isolation", "read_committed", "--offset", "3")
    assert_load_keeps(kafka_real, src, out, tmp_path / "load", NOW, {})
    theirs = records(dump(kafka_real, src))
    aborted = {"a0", "a1"}
    want = [r for r in theirs if int(r[0]) >= 3 and r[3] not in aborted]
    assert records(dump(kafka_real, out)) == want


def test_a_v1_log_is_converted_to_v2_that_kafka_loads(kafka_real, tmp_path):
    src = write_partition(kafka_real, tmp_path / "data", LEGACY)
    out = export_kafka(src, tmp_path / "exp")
    res = kafka_real.json("Load", "--in", str(out), "--work", str(tmp_path / "load"), "--now-ms", str(NOW),
                          "--clean-shutdown", "true", "--close")
    assert not res.get("error"), res["error"]
    assert not res["changesAfterClose"]["created"] and not res["changesAfterClose"]["deleted"]
    assert {f["name"]: f["sha256"] for f in res["filesBefore"]} == {f["name"]: f["sha256"]
                                                                    for f in res["filesAfterClose"]}
    ours, theirs = records(dump(kafka_real, out)), records(dump(kafka_real, src))
    assert ours and [(o, ts, k, v) for o, _t, ts, k, v, _m in ours] == [(o, ts, k, v)
                                                                       for o, _t, ts, k, v, _m in theirs]
    assert "magic: 2" in dump(kafka_real, out) and "magic: 1" in dump(kafka_real, src)


def test_a_corrupt_batch_is_left_out_and_kafka_loads_the_rest(kafka_real, tmp_path):
    import shutil

    src = write_partition(kafka_real, tmp_path / "data", MIXED)
    theirs = dump(kafka_real, src)
    batches = [line for line in theirs.splitlines() if line.startswith("baseOffset:")]
    third = re.search(r"baseOffset: (\d+) lastOffset: (\d+) .*position: (\d+)", batches[2])
    assert third is not None
    first, last, pos = (int(g) for g in third.groups())
    bad = tmp_path / "bad" / src.name
    shutil.copytree(src, bad)
    seg = bad / "00000000000000000000.log"
    raw = bytearray(seg.read_bytes())
    raw[pos + 65] ^= 0xFF  # inside the third batch's records: its CRC fails
    seg.write_bytes(bytes(raw))
    r = kafkalog("export", str(bad), "--format", "kafka", "--out", str(tmp_path / "exp"))
    assert r.exit_code == 1 and "crc-mismatch" in r.output, r.output
    out = tmp_path / "exp" / src.name
    res = kafka_real.json("Load", "--in", str(out), "--work", str(tmp_path / "load"), "--now-ms", str(NOW),
                          "--clean-shutdown", "true", "--close")
    assert not res.get("error"), res["error"]
    assert {f["name"]: f["sha256"] for f in res["filesBefore"]} == {f["name"]: f["sha256"]
                                                                    for f in res["filesAfterClose"]}
    want = [rec for rec in records(theirs) if not first <= int(rec[0]) <= last]
    assert records(dump(kafka_real, out)) == want
