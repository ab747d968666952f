"""``kafkalog replay`` (issue 31 items 2 and 3): records from partition directories, NDJSON and Parquet exports
produced into librdkafka's mock cluster (confluent-kafka ``test.mock.num.brokers``, a real protocol implementation)
and consumed back by an independent read_committed consumer, record by record; resume after SIGKILL and SIGINT
without duplicates; the offset map and the groups' reset CSVs; the refusals.

The mock cluster auto-creates topics with 4 partitions (it has no CreateTopics), so the sources use partitions 0..3.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from replay_world import MOCK_PARTITIONS, MockCluster, Part, consumer_offsets, export_ndjson

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format.partitioners import murmur2
from kafkalog_cli.ops import replay as rp
from kafkalog_cli.ops import replay_offsets as ro
from kafkalog_cli.ops.replay_source import record_from_json, resolve

HDR = "kafkalog.source.offset"


@pytest.fixture(scope="module")
def mock() -> MockCluster:
    pytest.importorskip("confluent_kafka")
    return MockCluster(3)


def _topic(mock: MockCluster, name: str) -> str:
    assert mock.create_topic(name) == MOCK_PARTITIONS
    return name


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, ["replay", *args])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r.exit_code, r.stdout, r.stderr


def source_of(headers: list) -> tuple[str, int, int]:
    got = [v for n, v in headers if n == HDR]
    assert len(got) == 1, headers
    parsed = rp.parse_offset_header(got[0])
    assert parsed is not None
    return parsed


def rich_partition(path: str) -> Part:
    """Keys, values, tombstones, null keys, headers (null, non-UTF-8), LogAppendTime, gzip, committed, aborted
    and interleaved transactions, two segments."""
    p = Part(path)
    p.batch([(b"k1", b"v1"), (None, b"no key"), (b"k3", None)], headers=[("trace", b"abc"), ("empty", None)])
    p.batch([(b"bin\xff\x00", b"\x00\xff\xfe")], headers=[("raw", b"\xff\xfe")])
    p.batch([(b"t1", b"committed-1")], pid=10, txn=True)
    p.batch([(b"t2", b"aborted-1"), (b"t2", b"aborted-2")], pid=11, txn=True)
    p.batch([(b"k4", b"plain between")])
    p.batch([(b"t1", b"committed-2")], pid=10, txn=True)
    p.marker(11, abort=True)
    p.marker(10, abort=False)
    p.roll()
    p.batch([(b"la", b"log append time")], log_append=True)
    p.batch([(b"gz%d" % i, b"gzip %d" % i) for i in range(5)], codec=1)
    p.write()
    return p


def one_record(path: Path) -> Part:
    """A partition directory holding one record (offset 0)."""
    p = Part(str(path))
    p.batch([(b"a", b"1")])
    p.write()
    return p


def check_consumed(consumed: list, expected: dict[int, list], topic: str, dest: dict[int, int]) -> None:
    """The destination holds exactly the expected source records, once each, in source order, with key, value,
    headers and timestamp kept: ``expected``: source partition -> model records; ``dest``: source -> destination."""
    by_dest: dict[int, list] = {}
    for c in consumed:
        by_dest.setdefault(c[0], []).append(c)
    for sp, recs in expected.items():
        got = [c for c in by_dest.get(dest[sp], []) if source_of(c[4])[1] == sp]
        assert [source_of(c[4])[2] for c in got] == [r.offset for r in recs], f"source partition {sp}"
        for c, r in zip(got, recs):
            assert (c[2], c[3]) == (r.key, r.value)
            assert [h for h in c[4] if h[0] != HDR] == r.headers
            assert c[5] == (1, r.ts)  # CreateTime, the source timestamp (LogAppendTime sources too)
    assert len(consumed) == sum(len(v) for v in expected.values())


# ------------------------------------------------------------------------------------------ no cluster
def test_murmur2_matches_kafka_utils_test() -> None:
    # the vectors of Kafka's UtilsTest.testMurmur2 (clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java)
    cases = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
             b"a-little-bit-longer-string": -1486304829,
             b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, b"abc": 479470107}
    for data, want in cases.items():
        assert murmur2(data) == want, data
    assert rp.murmur2_partition(b"21", 7) == (-973932308 & 0x7FFFFFFF) % 7


def test_plan_counts_outcomes_and_reports_the_corrupt_batch(tmp_path: Path) -> None:
    p = Part(str(tmp_path / "orders-2"))
    p.batch([(b"a", b"1"), (b"b", b"2")])
    p.batch([(b"t", b"c")], pid=5, txn=True)
    p.marker(5, abort=False)
    p.batch([(b"t", b"x")], pid=6, txn=True)
    p.marker(6, abort=True)
    p.corrupt_next()
    p.batch([(b"bad", b"crc")])
    p.batch([(b"o", b"open")], pid=7, txn=True)  # no marker: open
    p.batch([(b"z", b"last")])
    p.write()
    code, out, _err = run(p.path, "--bootstrap-server", "nowhere:9092", "--topic", "t", "--partitions", "4",
                          "--format", "json", "--state-dir", str(tmp_path / "st"))
    assert code == 1
    doc = json.loads(out)
    (pp,) = doc["partitions"]
    want = [r.offset for r in p.committed_view() if r.outcome != "corrupt"]
    assert pp["records"] == len(want) and (pp["first_offset"], pp["last_offset"]) == (want[0], want[-1])
    assert (pp["aborted"], pp["open"], pp["control"]) == (1, 1, 2)
    (f,) = doc["findings"]
    assert f["kind"] == "crc-mismatch" and f["file"].endswith("00000000000000000000.log") and f["end"] > f["position"]
    assert f["next"]
    assert not (tmp_path / "st").exists()  # a dry run writes nothing
    # read_uncommitted keeps the aborted and open records (never the markers)
    code, out, _err = run(p.path, "--bootstrap-server", "x:1", "--topic", "t", "--partitions", "4", "--format", "json",
                          "--isolation", "read_uncommitted", "--state-dir", str(tmp_path / "st"))
    assert json.loads(out)["partitions"][0]["records"] == len(want) + 2


def test_ndjson_fields_per_the_export_schema() -> None:
    r = record_from_json({"topic": "t", "partition": 3, "offset": 9, "tstype": "logappend", "ts": 5, "broker": -1,
                          "headers": ["a", "x", "b", None, "c", "//4="], "header_encodings": ["utf8", "utf8", "base64"],
                          "key": "/w==", "key_encoding": "base64", "payload": "héllo", "txn": "committed",
                          "control": None, "unknown_field": 1})
    assert (r.topic, r.partition, r.offset, r.tstype, r.timestamp) == ("t", 3, 9, "logappend", 5)
    assert r.headers == [("a", b"x"), ("b", None), ("c", b"\xff\xfe")]
    assert (r.key, r.value, r.txn, r.control) == (b"\xff", "héllo".encode(), "committed", False)
    assert record_from_json({"topic": "t", "partition": 0, "offset": 1, "key": None, "payload": None}).value is None
    for bad in ({"topic": "t", "offset": "x"}, {"partition": 0, "offset": 1}, {"topic": "t", "offset": 1, "headers": ["a"]},
                {"topic": "t", "offset": 1, "key": "!!", "key_encoding": "base64"}, [1]):
        with pytest.raises(ValueError):
            record_from_json(bad)


def test_a_bad_ndjson_line_is_a_located_finding(tmp_path: Path) -> None:
    f = tmp_path / "orders.ndjson"
    good = {"topic": "orders", "partition": 0, "offset": 0, "tstype": "create", "ts": 1, "key": "k", "payload": "v"}
    lines = [json.dumps(good), "{not json", json.dumps({**good, "offset": 1})]
    f.write_text("\n".join(lines) + "\n")
    code, out, _err = run(str(f), "--bootstrap-server", "x:1", "--topic", "t", "--partitions", "1", "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["records"] == 2
    (finding,) = doc["findings"]
    start = len(lines[0]) + 1
    assert (finding["kind"], finding["position"], finding["end"]) == ("bad-line", start, start + len(lines[1]) + 1)
    assert "line 2" in finding["message"]


def test_parquet_input_reads_the_same_records(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    p = rich_partition(str(tmp_path / "orders-1"))
    (src,), _ = resolve([p.path])
    recs = list(src.records())
    table = pa.table({
        "topic": [r.topic for r in recs], "partition": pa.array([r.partition for r in recs], pa.int32()),
        "offset": [r.offset for r in recs],
        "timestamp": pa.array([r.timestamp for r in recs], pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
        "timestamp_type": [{"create": "CreateTime", "logappend": "LogAppendTime"}[r.tstype] for r in recs],
        "key": pa.array([r.key for r in recs], pa.binary()), "value": pa.array([r.value for r in recs], pa.binary()),
        "header_keys": [[h[0] for h in r.headers] for r in recs],
        "header_values": pa.array([[h[1] for h in r.headers] for r in recs], pa.list_(pa.binary())),
        "txn": [r.txn for r in recs], "control_type": [("COMMIT" if r.control else None) for r in recs]})
    pq.write_table(table, tmp_path / "export.parquet")
    (psrc,), _ = resolve([str(tmp_path / "export.parquet")])
    assert psrc.kind == "parquet"
    assert list(psrc.records()) == recs


def test_refusals_exit_2(tmp_path: Path) -> None:
    p, q = one_record(tmp_path / "orders-3"), one_record(tmp_path / "payments-0")
    base = ["--bootstrap-server", "x:1", "--topic", "t", "--state-dir", str(tmp_path / "st")]
    code, _o, err = run(p.path, *base, "--partitions", "2")
    assert code == 2 and "no partition 3" in err and "hint:" in err
    code, _o, err = run(p.path, q.path, *base, "--partitions", "4")
    assert code == 2 and "--source-topic" in err
    assert run(p.path, q.path, *base, "--partitions", "4", "--source-topic", "payments")[0] == 1
    code, _o, err = run(p.path, *base, "--partitions", "4", "-X", "enable.idempotence=false")
    assert code == 2 and "enable.idempotence=true" in err
    code, _o, err = run(str(tmp_path / "missing"), *base, "--partitions", "4")
    assert code == 2 and "Traceback" not in err
    (tmp_path / "st").mkdir()
    (tmp_path / "st" / "checkpoint.json").write_text(json.dumps(
        {"kind": rp.STATE_KIND, "schema_version": rp.STATE_VERSION, "identity": {"inputs": ["/elsewhere"]},
         "dest_start": {}, "last_dest": {}, "delivered": [], "counts": [], "offset_map_bytes": 0, "done": False}))
    code, _o, err = run(p.path, *base, "--partitions", "4")
    assert code == 2 and "checkpoint of another replay" in err and "inputs" in err


def test_group_offsets_keep_a_tombstoned_commit(tmp_path: Path) -> None:
    """A deleted topic's offsets are tombstoned by the group coordinator: replay keeps the last commit before the
    tombstone (the position to restore) and says so; other readers still see it deleted."""
    log = tmp_path / "logs"
    consumer_offsets(str(log), [("g", "orders", 0, 5), ("g", "orders", 0, 7), ("g", "orders", 0, None),
                                ("h", "orders", 1, 3), ("h", "orders", 1, None), ("h", "orders", 1, 1)])
    groups, deleted, _notes = rp.load_groups([str(log)])
    assert groups == {"g": {("orders", 0): 7}, "h": {("orders", 1): 1}}
    assert deleted == {("g", "orders", 0): (7, False), ("h", "orders", 1): (3, True)}
    # the plan: g's tombstoned commit is kept and listed; h's commit after a tombstone is used, and noted
    p, q = one_record(log / "orders-0"), one_record(log / "orders-1")
    sources, _ = rp.open_sources([p.path, q.path])
    plan = rp.plan(sources, rp.ReplayOptions(bootstrap="x:1", topic="t"), 4)
    assert plan.deleted_commits == {"g": [("orders", 0)]}
    assert any("'h' committed orders-1@1 after a tombstone of its commit orders-1@3" in n for n in plan.notes)
    from kafkalog_cli.internal_topics.logdir import discover
    from kafkalog_cli.internal_topics.transactions import committed_offsets

    copies, _ = discover([str(log)])
    assert committed_offsets(copies)[0] == {("orders", 1): {"h": 1}}


def test_reset_rule(tmp_path: Path) -> None:
    m = tmp_path / "map.csv"
    rows = [("s", 0, 0, 0, 10), ("s", 0, 1, 0, 11), ("s", 0, 4, 0, 12),  # source offsets 2, 3 were aborted
            ("s", 1, 0, 1, 0), ("s", 1, 1, 1, 1)]
    m.write_text(ro.MAP_HEADER + "".join(ro.map_line(st, sp, so, "d", dp, do) for st, sp, so, dp, do in rows))
    res = ro.compute_resets(str(m), {"at": {("s", 0): 1}, "gap": {("s", 0): 2}, "end": {("s", 0): 9, ("s", 1): 2},
                                     "start": {("s", 1): 0}})
    assert res["at"].offsets == {0: 11}  # the record at C itself
    assert res["gap"].offsets == {0: 12}  # C on an aborted record: the next replayed one
    assert res["end"].offsets == {0: 13, 1: 2} and res["end"].past_end == [("s", 0), ("s", 1)]
    assert res["start"].offsets == {1: 0}
    # murmur2: two source partitions in one destination partition; the lowest unconsumed offset, re-reads counted
    rows = [("s", 0, 0, 0, 0), ("s", 1, 0, 0, 1), ("s", 0, 1, 0, 2), ("s", 1, 1, 0, 3)]
    m.write_text(ro.MAP_HEADER + "".join(ro.map_line(st, sp, so, "d", dp, do) for st, sp, so, dp, do in rows))
    mixed = ro.compute_resets(str(m), {"g": {("s", 0): 2, ("s", 1): 0}})["g"]
    assert mixed.offsets == {0: 1} and mixed.reread == 1  # s-1@0 at 1 is unconsumed; s-0@1 at 2 is read again
    path = ro.write_resets({"g": mixed}, "d", str(tmp_path / "out"))
    assert path is not None and Path(path).read_text() == "g,d,0,1\n"
    assert Path(mixed.file or "").read_text() == "d,0,1\n"


# ------------------------------------------------------------------------------------------ the mock cluster
def test_replay_partition_dirs_record_by_record(mock: MockCluster, tmp_path: Path) -> None:
    topic = _topic(mock, "rt-dirs")
    parts = {sp: rich_partition(str(tmp_path / "logs" / f"orders-{sp}")) for sp in (0, 2)}
    args = [str(p.path) for p in parts.values()]
    st = str(tmp_path / "state")
    code, out, _err = run(*args, "--bootstrap-server", mock.bootstrap, "--topic", topic, "--state-dir", st)
    assert code == 1 and "dry run" in out
    assert mock.consume(topic) == []
    code, out, err = run(*args, "--bootstrap-server", mock.bootstrap, "--topic", topic, "--state-dir", st,
                         "--execute", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    expected = {sp: p.committed_view() for sp, p in parts.items()}
    assert doc["complete"] and doc["produced"] == sum(len(v) for v in expected.values())
    consumed = mock.consume(topic)
    check_consumed(consumed, expected, topic, {0: 0, 2: 2})
    # the offset map: one line per consumed record, its destination offset the consumed one
    with open(doc["offset_map"], newline="") as f:
        rows = list(csv.reader(f))[1:]
    assert sorted((r[1], r[2], r[4], r[5]) for r in rows) == sorted(
        (str(source_of(c[4])[1]), str(source_of(c[4])[2]), str(c[0]), str(c[1])) for c in consumed)
    # a rerun of a complete replay produces nothing
    code, out, _err = run(*args, "--bootstrap-server", mock.bootstrap, "--topic", topic, "--state-dir", st, "--execute",
                          "--format", "json")
    assert code == 0 and json.loads(out)["produced"] == 0
    assert len(mock.consume(topic)) == len(consumed)


def test_murmur2_partitioner_agrees_with_librdkafka(mock: MockCluster, tmp_path: Path) -> None:
    """librdkafka's own ``murmur2`` partitioner (Java-compatible) places the same keys where replay does."""
    from confluent_kafka import Producer

    p = Part(str(tmp_path / "orders-0"))
    p.batch([(b"key-%d" % i, b"v%d" % i) for i in range(60)])
    p.write()
    topic = _topic(mock, "rt-murmur")
    code, _out, err = run(p.path, "--bootstrap-server", mock.bootstrap, "--topic", topic, "--partitioner", "murmur2",
                          "--state-dir", str(tmp_path / "st"), "--execute")
    assert code == 0, err
    placed = {c[2]: c[0] for c in mock.consume(topic)}
    ref_topic = _topic(mock, "rt-murmur-ref")
    prod = Producer({"bootstrap.servers": mock.bootstrap, "partitioner": "murmur2", "log_level": 0})
    for r in p.records:
        prod.produce(ref_topic, key=r.key, value=r.value)
    assert prod.flush(30) == 0
    ref = {c[2]: c[0] for c in mock.consume(ref_topic)}
    assert placed == ref and len(set(placed.values())) > 1


def _subprocess(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kafkalog_cli", "replay", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for_map_lines(path: Path, n: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count("\n") > n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the replay made no progress")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_interrupted_replay_resumes_exactly_once(mock: MockCluster, tmp_path: Path, sig: int) -> None:
    """A replay killed mid-way (a real process, SIGKILL: no chance to save anything; SIGINT: a clean stop, exit 130),
    then run again: the destination holds every source record exactly once, in order."""
    topic = _topic(mock, f"rt-kill-{sig}")
    parts = {}
    for sp in (0, 1):
        p = Part(str(tmp_path / "logs" / f"orders-{sp}"))
        for b in range(40):
            p.batch([(b"k%d-%d" % (b, i), b"value %d %d" % (b, i)) for i in range(10)])
            if b % 10 == 3:
                p.batch([(b"tx", b"aborted")], pid=50 + sp, txn=True)
                p.marker(50 + sp, abort=True)
        p.write()
        parts[sp] = p
    st = tmp_path / "state"
    args = [*(p.path for p in parts.values()), "--bootstrap-server", mock.bootstrap, "--topic", topic,
            "--state-dir", str(st), "--execute", "--rate", "300"]
    proc = _subprocess(args)
    _wait_for_map_lines(st / "offset-map.csv", 100, proc)
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == (-signal.SIGKILL if sig == signal.SIGKILL else 130), err
    partial = mock.consume(topic)
    total = sum(len(p.committed_view()) for p in parts.values())
    assert 0 < len(partial) < total
    r = subprocess.run([sys.executable, "-m", "kafkalog_cli", "replay", *args[:-2], "--format", "json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["produced"] + doc["skipped_resume"] + doc["recovered_from_tail"] >= total
    check_consumed(mock.consume(topic), {sp: p.committed_view() for sp, p in parts.items()}, topic, {0: 0, 1: 1})
    with open(doc["offset_map"], newline="") as f:
        rows = list(csv.reader(f))[1:]
    assert len(rows) == total and len({(r[1], r[2]) for r in rows}) == total  # the map too: each record once


def test_done_when_deleted_and_recreated_topic(mock: MockCluster, tmp_path: Path) -> None:
    """Issue 31's scenario: the old partition directories (one a ``-delete`` dir) with committed and aborted
    transactions and a corrupt batch; export (NDJSON from kafkalog's engine) and replay into the recreated topic;
    a read_committed consumer sees exactly the old committed records minus the corrupt batch, which is reported;
    the reset CSV puts each group on the same logical record."""
    old = tmp_path / "old-broker"
    p0 = Part(str(old / "orders-0"))
    p0.batch([(b"a%d" % i, b"A%d" % i) for i in range(5)], headers=[("h", b"1")])
    p0.batch([(b"tx", b"committed")], pid=20, txn=True)
    p0.batch([(b"tx", b"aborted")], pid=21, txn=True)
    p0.marker(21, abort=True)
    p0.marker(20, abort=False)
    p0.batch([(b"b%d" % i, b"B%d" % i) for i in range(5)])
    p1 = Part(str(old / "orders-1"))
    p1.batch([(b"c%d" % i, b"C%d" % i) for i in range(4)])
    p1.corrupt_next()
    p1.batch([(b"lost", b"corrupt")])
    p1.batch([(b"d%d" % i, b"D%d" % i) for i in range(4)])
    p2 = Part(str(old / "orders-2.0f1e2d3c4b5a69788796a5b4c3d2e1f0-delete"))
    p2.batch([(b"tx", b"aborted")], pid=30, txn=True)
    p2.marker(30, abort=True)
    p2.batch([(b"e%d" % i, b"E%d" % i) for i in range(6)], pid=31, txn=True)
    p2.marker(31, abort=False)
    for p in (p0, p1, p2):
        p.write()
    # the groups' last commits; the topic's deletion tombstoned orders-0's (the coordinator's cleanup)
    consumer_offsets(str(old), [("billing", "orders", 0, 6), ("billing", "orders", 0, None),
                                ("billing", "orders", 1, 4),  # the corrupt batch's offset: lands on the next record
                                ("billing", "orders", 2, 1),  # the ABORT marker's offset: the next replayed record
                                ("audit", "orders", 1, 1000)])  # past the end
    topic = _topic(mock, "orders")  # the recreated topic
    export = tmp_path / "export"
    export.mkdir()
    for p in (p0, p1, p2):
        export_ndjson(p.path, str(export / (os.path.basename(p.path).split(".")[0] + ".ndjson")))
    expected = {0: p0.committed_view(), 1: [r for r in p1.committed_view() if r.outcome != "corrupt"],
                2: p2.committed_view()}
    st = tmp_path / "state"
    # the partition directories themselves: the corrupt batch is a located finding (exit 1)
    code, out, _err = run(p0.path, p1.path, p2.path, "--bootstrap-server", mock.bootstrap, "--topic", topic,
                          "--format", "json", "--state-dir", str(st))
    doc = json.loads(out)
    assert code == 1 and [f["kind"] for f in doc["findings"]] == ["crc-mismatch"]
    assert doc["findings"][0]["file"].startswith(p1.path)
    assert doc["records"] == sum(len(v) for v in expected.values())
    # the export: replayed for real
    code, out, err = run(str(export), "--bootstrap-server", mock.bootstrap, "--topic", topic, "--groups-from", str(old),
                         "--format", "json", "--state-dir", str(st), "--execute")
    assert code == 0, err
    doc = json.loads(out)
    consumed = mock.consume(topic)
    check_consumed(consumed, expected, topic, {0: 0, 1: 1, 2: 2})
    resets = {g["group"]: g for g in doc["resets"]}
    assert resets["billing"]["deleted"] == [{"topic": "orders", "partition": 0}]
    assert resets["audit"]["past_end"] == [{"topic": "orders", "partition": 1}]
    commits = {"billing": {0: 6, 1: 4, 2: 1}, "audit": {1: 1000}}
    for group, per in commits.items():
        lines = Path(resets[group]["file"]).read_text().splitlines()
        assert len(lines) == len(per)
        for line in lines:
            t, dp, off = line.split(",")
            assert t == topic
            dp_, off_ = int(dp), int(off)
            rest = mock.consume(topic, start={dp_: off_})
            rest = [c for c in rest if c[0] == dp_]
            want = [r.offset for r in expected[dp_] if r.offset >= per[dp_]]
            assert [source_of(c[4])[2] for c in rest] == want, (group, line)
    all_groups = Path(doc["reset_all_groups"]).read_text().splitlines()
    assert sorted(all_groups) == sorted(f"{g},{line}" for g in commits for line in
                                        Path(resets[g]["file"]).read_text().splitlines())


def test_records_the_broker_took_after_the_last_checkpoint_are_not_produced_again(mock: MockCluster,
                                                                                     tmp_path: Path) -> None:
    """The window a kill can leave: the broker appended records whose acknowledgement never reached the
    checkpoint. Rewinding a finished replay's checkpoint to its first state (nothing acknowledged) and running again
    must find them all in the destination by their offset header and produce none of them again."""
    topic = _topic(mock, "rt-tail")
    p = rich_partition(str(tmp_path / "orders-3"))
    st = tmp_path / "state"
    args = [p.path, "--bootstrap-server", mock.bootstrap, "--topic", topic, "--state-dir", str(st), "--execute",
            "--format", "json"]
    code, out, err = run(*args)
    assert code == 0, err
    first = json.loads(out)
    ck = json.loads((st / "checkpoint.json").read_text())
    header_len = len(ro.MAP_HEADER.encode())
    ck.update({"done": False, "last_dest": {}, "delivered": [], "counts": [], "offset_map_bytes": header_len})
    (st / "checkpoint.json").write_text(json.dumps(ck))
    with open(st / "offset-map.csv", "a") as f:
        f.write("orders,3,999,rt-tail,3,9")  # a torn line of the killed run: cut away
    code, out, err = run(*args)
    assert code == 0, err
    again = json.loads(out)
    assert again["produced"] == 0 and again["recovered_from_tail"] == first["produced"]
    check_consumed(mock.consume(topic), {3: p.committed_view()}, topic, {3: 3})
    with open(st / "offset-map.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ro.MAP_HEADER.strip().split(",") and len(rows) == 1 + first["produced"]


@pytest.mark.oracle
def test_a_partition_kafka_wrote_replays_as_its_committed_records(mock: MockCluster, kafka_real, tmp_path: Path) -> None:
    """A partition directory written by Kafka's own ``UnifiedLog`` (every codec, headers, an idempotent producer,
    committed, aborted and open transactions, two segments) replays as exactly its committed records."""
    from kafka_real import write_partition

    ops = [
        {"op": "append", "count": 5, "keyFormat": "k%d", "valueFormat": "v%d"},
        {"op": "append", "records": [{"key": "hk", "value": "hv", "headers": {"h1": "x", "h2": None}}], "codec": "gzip"},
        {"op": "append", "count": 4, "keyFormat": "p%d", "producerId": 1000, "batches": 2, "codec": "lz4"},
        {"op": "append", "count": 3, "keyFormat": "t%d", "producerId": 2000, "transactional": True, "codec": "snappy"},
        {"op": "append", "count": 3, "keyFormat": "a%d", "producerId": 3000, "transactional": True, "codec": "zstd"},
        {"op": "marker", "type": "COMMIT", "producerId": 2000},
        {"op": "marker", "type": "ABORT", "producerId": 3000},
        {"op": "roll"},
        {"op": "append", "count": 3, "keyFormat": "n%d", "nullValueEvery": 2},
        {"op": "append", "count": 2, "keyFormat": "o%d", "producerId": 4000, "transactional": True},
        {"op": "append", "count": 2, "keyFormat": "z%d"},
    ]
    pdir = write_partition(kafka_real, tmp_path / "data", {"topic": "legacy", "partition": 1, "ops": ops,
                                                           "shutdown": "clean"})
    want: list[tuple] = []
    pending: dict[int, list[tuple]] = {}
    for op in ops:
        if op["op"] == "marker":
            recs = pending.pop(op["producerId"], [])
            if op["type"] == "COMMIT":
                want += recs
            continue
        if op["op"] != "append":
            continue
        out = []
        for b in range(op.get("batches", 1)):
            for r in op.get("records", []):
                out.append((r["key"].encode(), r["value"].encode(),
                            [(n, None if v is None else v.encode()) for n, v in r.get("headers", {}).items()]))
            for j in range(op.get("count", 0 if op.get("records") else 1)):
                i = b * op.get("count", 0) + j
                null = op.get("nullValueEvery", 0) and (i + 1) % op["nullValueEvery"] == 0
                out.append(((op["keyFormat"] % i).encode(), None if null else (op.get("valueFormat", "value-%d") % i).encode(),
                            []))
        if op.get("transactional"):
            pending.setdefault(op["producerId"], []).extend(out)
        else:
            want += out
    topic = _topic(mock, "rt-kafka-written")
    code, out, err = run(str(pdir), "--bootstrap-server", mock.bootstrap, "--topic", topic, "--execute",
                         "--state-dir", str(tmp_path / "st"), "--format", "json")
    assert code == 0, err
    got = [(c[2], c[3], [h for h in c[4] if h[0] != HDR]) for c in mock.consume(topic) if c[0] == 1]
    assert got == want
    assert json.loads(out)["partitions"][0]["open"] == 2


def test_one_replay_per_state_dir(mock: MockCluster, tmp_path: Path) -> None:
    """Two replays sharing a state dir would interleave their checkpoints: the second is refused while the first
    holds the state dir's lock (a kernel lock: a killed replay never leaves it behind)."""
    from kafkalog_cli.storage.lock import lock_directory

    p = one_record(tmp_path / "orders-0")
    st = tmp_path / "st"
    st.mkdir()
    held, _state = lock_directory(str(st))
    assert held is not None
    try:
        code, _out, err = run(p.path, "--bootstrap-server", mock.bootstrap, "--topic", _topic(mock, "rt-lock"),
                              "--state-dir", str(st), "--execute")
    finally:
        held.release()
    assert code == 2 and "another kafkalog replay is running" in err
    assert not (st / "checkpoint.json").exists() and mock.consume("rt-lock") == []


@pytest.mark.skipif("export" not in __import__("kafkalog_cli.cli.main", fromlist=["COMMANDS"]).COMMANDS,
                    reason="kafkalog export is built on the export branch; this runs once the branches are merged")
@pytest.mark.parametrize("fmt, extra", [("ndjson", []), ("parquet", []),
                                        ("ndjson", ["--isolation", "read_uncommitted", "--keep-control"])],
                         ids=["ndjson", "parquet", "ndjson-read_uncommitted"])
def test_kafkalog_export_output_replays_as_the_directories(tmp_path: Path, fmt: str, extra: list[str]) -> None:
    """The interface between export and replay: what ``kafkalog export`` writes, replay reads as the very records
    it reads from the partition directories themselves (checked by hand against the export branch at b184369)."""
    p = rich_partition(str(tmp_path / "logs" / "orders-1"))
    q = Part(str(tmp_path / "logs" / "orders-2"))
    q.batch([(b"a", b"1")])
    q.corrupt_next()
    q.batch([(b"bad", b"x")])
    q.batch([(b"o", b"open")], pid=7, txn=True)
    q.batch([(b"z", b"2")])
    q.write()
    r = CliRunner().invoke(cli, ["export", p.path, q.path, "--out", str(tmp_path / "out"), "--format", fmt, *extra])
    assert r.exit_code == 1, r.output  # the corrupt batch

    def produced(args: list[str]) -> list:
        opts = rp.ReplayOptions(bootstrap="x:1", topic="t")
        sources, _ = rp.open_sources(args)
        return [(r.topic, r.partition, r.offset, r.timestamp, r.tstype, r.key, r.value, r.headers)
                for r, _dp in rp.stream(sources, opts, MOCK_PARTITIONS)]

    direct = produced([p.path, q.path])
    assert len(direct) == len(p.committed_view()) + 2
    assert produced([str(tmp_path / "out")]) == direct


def test_no_offset_header_and_an_ndjson_file_of_several_partitions(mock: MockCluster, tmp_path: Path) -> None:
    """One NDJSON file holding two partitions, interleaved (kafkalog export --out NAME.ndjson): each source
    partition goes to its own partition, in its offset order; --no-offset-header adds nothing to the headers."""
    lines = []
    for i in range(6):
        for sp in (0, 2):
            lines.append(json.dumps({"topic": "orders", "partition": sp, "offset": 10 + i, "tstype": "create",
                                     "ts": 1_700_000_000_000 + i, "key": f"k{sp}-{i}", "payload": f"v{i}",
                                     "headers": ["h", "x"]}))
    (tmp_path / "all.ndjson").write_text("\n".join(lines) + "\n")
    topic = _topic(mock, "rt-nohdr")
    code, out, err = run(str(tmp_path / "all.ndjson"), "--bootstrap-server", mock.bootstrap, "--topic", topic,
                         "--no-offset-header", "--state-dir", str(tmp_path / "st"), "--execute", "--format", "json")
    assert code == 0, err
    got = mock.consume(topic)
    assert sorted((c[0], c[1], c[2]) for c in got) == sorted(
        (sp, i, f"k{sp}-{i}".encode()) for sp in (0, 2) for i in range(6))
    assert all(c[4] == [("h", b"x")] and c[5] == (1, 1_700_000_000_000 + c[1]) for c in got)
    rows = list(csv.reader(Path(json.loads(out)["offset_map"]).read_text().splitlines()))[1:]
    assert sorted((r[1], r[2], r[4], r[5]) for r in rows) == sorted(
        (str(sp), str(10 + i), str(sp), str(i)) for sp in (0, 2) for i in range(6))
