"""Regressions found by the black-box review of issue 31 (export on sources the other tests did not use):

- a legacy compressed wrapper (its offset field is its *last* inner message's) under ``--offset``: the window's
  bound applies to its inner messages (it used to write the wrapper's first messages), and the summary's offsets
  are those of the records written (it said ``41..41`` for offsets 0..41);
- a batch written in part (``--count`` inside a batch): the summary's last offset is the last record written;
- ``--format kafka`` with a window that ends inside a transaction: the transaction's marker from after the window's
  end is written, so that Kafka's loader finds no transaction open that the source had closed (a read_committed
  consumer of the restored log would wait at its first offset forever);
- flock unsupported on --out's file system: a POSIX lock instead, else a warning (no longer exit 2);
- --out inside a source partition directory or its log dir: refused;
- records below the log start offset (DeleteRecords inside the first segment) were exported, and the Kafka
  directory lost the log start offset: left out now (counted), kept with --below-log-start, and the Kafka directory
  keeps the source's log start offset and leader-epoch start."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format.control import ABORT, COMMIT, encode_control_key, encode_end_txn_marker
from kafkalog_cli.format.encoder import RecordSpec, encode_batch, encode_legacy_wrapper


def run(*args: str):
    return CliRunner().invoke(cli, ["export", *args], catch_exceptions=False)


def summary(tmp_path: Path, args: list[str]) -> dict:
    out = tmp_path / f"o{len(list(tmp_path.glob('o*.ndjson')))}.ndjson"
    r = run(*args, "--out", str(out), "--summary-format", "json")
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def ndjson_lines(args: list[str]) -> list[dict]:
    r = run(*args, "--out", "-")
    assert r.exit_code == 0, r.output
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith('{"topic"')]


@pytest.mark.parametrize("magic", [0, 1])
def test_a_legacy_wrapper_under_an_offset_window(tmp_path: Path, magic: int) -> None:
    pdir = tmp_path / "old-0"
    pdir.mkdir()
    inner = [(f"k{i}".encode(), f"v{i}".encode(), 1_600_000_000_000 + i) for i in range(12)]
    seg = encode_legacy_wrapper(inner, offset=11, codec=1, magic=magic)
    (pdir / "00000000000000000000.log").write_bytes(seg)
    recs = ndjson_lines([str(pdir), "--offset", "5", "--count", "3"])
    assert [r["offset"] for r in recs] == [5, 6, 7]
    assert [r["key"] for r in recs] == ["k5", "k6", "k7"]
    s = summary(tmp_path, [str(pdir), "--offset", "5", "--count", "3"])["partitions"][0]
    assert (s["records"], s["first_offset"], s["last_offset"]) == (3, 5, 7)
    s = summary(tmp_path, [str(pdir)])["partitions"][0]
    assert (s["records"], s["first_offset"], s["last_offset"]) == (12, 0, 11)


def test_a_count_inside_a_batch_reports_the_last_record_written(tmp_path: Path) -> None:
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    specs = [RecordSpec(key=b"k%d" % i, value=b"v", timestamp=1_700_000_000_000 + i, offset_delta=i)
             for i in range(6)]
    (pdir / "00000000000000000000.log").write_bytes(encode_batch(specs, base_offset=0))
    s = summary(tmp_path, [str(pdir), "--offset", "2", "--count", "2"])["partitions"][0]
    assert (s["records"], s["first_offset"], s["last_offset"]) == (2, 2, 3)


def _txn_partition(pdir: Path) -> None:
    """Producer 7: a transaction 0..3 (two batches), COMMIT at 4; producer 8: 5..6, ABORT at 7; a plain batch."""
    pdir.mkdir(parents=True)
    ts = 1_700_000_000_000

    def data(base: int, n: int, pid: int, seq: int) -> bytes:
        specs = [RecordSpec(key=b"k%d" % (base + i), value=b"v", timestamp=ts + base + i, offset_delta=i)
                 for i in range(n)]
        return encode_batch(specs, base_offset=base, transactional=True, producer_id=pid, producer_epoch=0,
                            base_sequence=seq, partition_leader_epoch=0)

    def marker(off: int, pid: int, kind: int) -> bytes:
        spec = RecordSpec(key=encode_control_key(kind), value=encode_end_txn_marker(0), timestamp=ts + off,
                          offset_delta=0)
        return encode_batch([spec], base_offset=off, transactional=True, control=True, producer_id=pid,
                            producer_epoch=0, partition_leader_epoch=0)

    plain = encode_batch([RecordSpec(key=b"p", value=b"v", timestamp=ts + 8, offset_delta=0)], base_offset=8,
                         partition_leader_epoch=0)
    (pdir / "00000000000000000000.log").write_bytes(
        data(0, 2, 7, 0) + data(2, 2, 7, 2) + marker(4, 7, COMMIT) + data(5, 2, 8, 0) + marker(7, 8, ABORT) + plain)


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_a_kafka_export_window_ending_in_a_transaction_gets_its_marker(tmp_path: Path, isolation: str) -> None:
    from kafkalog_cli.format.batch import Batch
    from kafkalog_cli.storage import layout

    src = tmp_path / "src" / "t-0"
    _txn_partition(src)
    out = tmp_path / "out"
    r = run(str(src), "--format", "kafka", "--out", str(out), "--count", "1", "--isolation", isolation)
    assert r.exit_code == 0, r.output
    seen = []
    for _base, path in layout.segment_logs(str(out / "t-0")):
        data = Path(path).read_bytes()
        pos = 0
        while pos < len(data):
            b = Batch(data, pos)
            seen.append((b.base_offset, b.producer_id, b.is_control))
            pos += b.size
    assert seen == [(0, 7, False), (4, 7, True)]  # the window's record, then its transaction's COMMIT


def test_kafka_loads_a_windowed_export_with_no_open_transaction(kafka_real, tmp_path: Path) -> None:
    src = tmp_path / "src" / "t-0"
    _txn_partition(src)
    out = tmp_path / "out"
    r = run(str(src), "--format", "kafka", "--out", str(out), "--offset", "1", "--count", "4")
    assert r.exit_code == 0, r.output
    res = kafka_real.json("Load", "--in", str(out / "t-0"), "--work", str(tmp_path / "load"), "--now-ms",
                          "1700000100000", "--clean-shutdown", "true", "--close")
    assert not res.get("error"), res["error"]
    assert res["log"]["firstUnstableOffset"] is None, res["log"]
    assert res["log"]["logEndOffset"] == 8
    assert {f["name"]: f["sha256"] for f in res["filesBefore"]} == {f["name"]: f["sha256"]
                                                                    for f in res["filesAfterClose"]}


# ------------------------------------------------------------------------------ --out on a file system without flock
def _no_flock(monkeypatch: pytest.MonkeyPatch, *, lockf_too: bool) -> None:
    import errno
    import fcntl

    real_lockf = fcntl.lockf

    def flock(fd: int, op: int) -> None:
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    def lockf(fd: int, op: int, *args: int) -> None:
        if lockf_too:
            raise OSError(errno.ENOLCK, "No locks available")
        real_lockf(fd, op, *args)

    monkeypatch.setattr(fcntl, "flock", flock)
    monkeypatch.setattr(fcntl, "lockf", lockf)


def test_no_flock_falls_back_to_a_posix_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalog_cli.storage.lock import lock_file

    _no_flock(monkeypatch, lockf_too=False)
    p = str(tmp_path / "o.kafkalog-lock")
    held, state = lock_file(p)
    assert held is not None and state.kind == "fcntl"
    held.release()
    assert not (tmp_path / "o.kafkalog-lock").exists()


def test_no_lock_at_all_exports_with_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "src" / "t-0"
    _txn_partition(src)
    _no_flock(monkeypatch, lockf_too=True)
    out = tmp_path / "o.ndjson"
    r = run(str(src), "--out", str(out))
    assert r.exit_code == 0, r.output
    assert "kafkalog: warning:" in r.stderr and "supports no file lock" in r.stderr, r.stderr
    assert out.exists() and sorted(os.listdir(tmp_path)) == ["o.ndjson", "src"]


def test_no_flock_still_refuses_a_held_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """flock unsupported, another process holds the POSIX lock of the lock file: refused (exit 2), its pid named."""
    import subprocess
    import sys

    src = tmp_path / "src" / "t-0"
    _txn_partition(src)
    out = tmp_path / "o.ndjson"
    lock = str(out) + ".kafkalog-lock"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({lock!r}, os.O_RDWR | os.O_CREAT, 0o644)\n"
        "fcntl.lockf(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(60)\n")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        _no_flock(monkeypatch, lockf_too=False)
        r = run(str(src), "--out", str(out))
        assert r.exit_code == 2, r.output
        assert "another kafkalog export" in r.stderr and f"pid {holder.pid}" in r.stderr, r.stderr
        assert not out.exists()
    finally:
        holder.kill()
        holder.wait()


# ------------------------------------------------------------------------------ --out inside a source
def test_an_output_inside_a_source_partition_or_log_dir_is_refused(tmp_path: Path) -> None:
    """``--out`` in the partition directory being read, or in its Kafka log dir: refused (exit 2) before anything
    is written (a broker would load the log dir with the output in it: a directory it takes for a partition; a
    later export of the directory would read it). Beside the log dir, or beside a folder of copied segments: fine."""
    logdir = tmp_path / "kafka-logs"
    src = logdir / "t-0"
    _txn_partition(src)
    (logdir / "meta.properties").write_text("version=1\nnode.id=3\n")
    before = sorted(p.name for p in logdir.rglob("*"))
    for out, fmt in ((src / "x.ndjson", "ndjson"), (src / "sub" / "x.ndjson", "ndjson"),
                     (logdir / "restored", "kafka"), (logdir / "x.parquet", "parquet")):
        r = run(str(src), "--format", fmt, "--out", str(out))
        assert r.exit_code == 2, (out, r.output)
        assert "--out is inside the source directory" in r.stderr and "hint:" in r.stderr, r.stderr
    assert sorted(p.name for p in logdir.rglob("*")) == before  # nothing written, not even a lock file
    r = run(str(src), "--out", str(tmp_path / "beside.ndjson"))
    assert r.exit_code == 0, r.output
    loose = tmp_path / "copied"
    loose.mkdir()
    (loose / "00000000000000000000.log").write_bytes((src / "00000000000000000000.log").read_bytes())
    r = run(str(loose / "00000000000000000000.log"), "--out", str(loose / "out.ndjson"))
    assert r.exit_code == 0, r.output


# ------------------------------------------------------------------------------ the log start offset
DELETED = {"topic": "del", "partition": 0,
           "ops": [{"op": "append", "count": 5, "keyFormat": "k%d", "leaderEpoch": 0},
                   {"op": "append", "count": 5, "keyFormat": "m%d", "leaderEpoch": 1},
                   {"op": "highWatermark"}, {"op": "deleteRecords", "offset": 3}],
           "shutdown": "clean"}


def test_records_below_the_log_start_offset_are_left_out(kafka_real, tmp_path: Path) -> None:
    """DeleteRecords at 3 inside the first segment: offsets 0..2 stay on disk, below the log start offset the log
    dir's checkpoint holds; no consumer reads them. Export leaves them out (counted, a note), --below-log-start keeps
    them; the Kafka directory keeps the log start offset (Kafka's Load: unchanged, log start 3, as the source)."""
    import shutil

    from kafka_real import write_partition

    src = write_partition(kafka_real, tmp_path / "data", DELETED)
    doc = summary(tmp_path, [str(src)])
    (p,) = doc["partitions"]
    assert (p["records"], p["first_offset"], p["below_log_start"], p["log_start"]) == (7, 3, 3, 3), p
    assert any("below the log start offset 3" in n for n in p["notes"])
    assert summary(tmp_path, [str(src), "--below-log-start"])["partitions"][0]["records"] == 10
    # a -delete copy of the partition is not the checkpoint entry's log: everything
    gone = tmp_path / "data" / "del-0.0123456789abcdef0123456789abcdef-delete"
    shutil.copytree(src, gone)
    assert summary(tmp_path, [str(gone)])["partitions"][0]["records"] == 10
    for extra in ([], ["--below-log-start"]):
        out = tmp_path / f"k{len(extra)}"
        r = run(str(src), "--format", "kafka", "--out", str(out), *extra)
        assert r.exit_code == 0, r.output
        res = kafka_real.json("Load", "--in", str(out / "del-0"), "--work", str(tmp_path / f"load{len(extra)}"),
                              "--now-ms", "1700000100000", "--clean-shutdown", "true", "--close")
        assert not res.get("error"), res["error"]
        assert {f["name"]: f["sha256"] for f in res["filesBefore"]} == {f["name"]: f["sha256"]
                                                                        for f in res["filesAfterClose"]}
        ref = kafka_real.json("Load", "--in", str(src), "--work", str(tmp_path / f"ref{len(extra)}"),
                              "--now-ms", "1700000100000", "--clean-shutdown", "true")
        for k in ("logStartOffset", "logEndOffset", "leaderEpochs"):
            assert res["log"][k] == ref["log"][k], k
