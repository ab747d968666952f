"""``kafkalog preflight``: scenarios built as real partitions by Kafka's own code (kafka-real ``Write``: data partitions
appended, truncated, diverged, with DeleteRecords and hanging transactions; ``__consumer_offsets`` commits serialised by
Kafka's GroupCoordinatorRecordSerde through ``Records``), and the expected consumer outcome derived by hand from Kafka's
consumer and broker rules (apache/kafka 1eb7644), cited in each docstring:

* V  = SubscriptionState.maybeCompleteValidation (SubscriptionState.java:490-531): a committed leader epoch is checked
  with OffsetsForLeaderEpoch; the leader's endOffsetFor (LeaderEpochFileCache) below the commit -> seek there
  (truncation detected); no reset policy -> LogTruncationException. No epoch -> no validation
  (SubscriptionState.java:1012-1025).
* R  = OFFSET_OUT_OF_RANGE below the log start (Partition.scala:1545-1548) or above the log end (LocalLog.scala:359-362)
  -> auto.offset.reset (FetchCollector.java:347-366): EARLIEST = log start, LATEST = the high watermark, or the last
  stable offset for read_committed (Partition.scala:1591-1594); none -> OffsetOutOfRangeException.
* W  = a fetch above the high watermark returns nothing until it rises (LocalLog.scala:364-367).
* H  = the high watermark at the restart: replication-offset-checkpoint, 0 when absent, clamped to [log start, log end]
  (Partition.scala:486-494, UnifiedLog.scala:277-290), rising to the log end as followers catch up.

A mock-cluster test runs a real consumer (librdkafka, confluent-kafka) through the same two resets.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from kafka_real import write_partition

from kafkalog_cli.cli.main import cli
from kafkalog_cli.ops import preflight as pf

pytestmark = pytest.mark.oracle

TS = 1_700_000_000_000


# ------------------------------------------------------------------------------------------ building log dirs
def _merge_checkpoint(src: Path, dst: Path) -> None:
    """Append ``src``'s entries to ``dst`` (both Kafka checkpoint files: version, count, entries)."""
    if not src.exists():
        return
    new = src.read_text().splitlines()[2:]
    old = dst.read_text().splitlines()[2:] if dst.exists() else []
    lines = old + new
    dst.write_text(f"0\n{len(lines)}\n" + "".join(x + "\n" for x in lines))


def into_logdir(oracle, logdir: Path, plan: dict, tmp: Path) -> Path:
    """Kafka's UnifiedLog writes ``plan`` (kafka-real Write); its partition directory and data-dir checkpoints are moved
    into ``logdir`` (a broker log dir with several partitions, as Write makes one partition per data dir)."""
    n = len(list(tmp.glob("w*")))
    data = tmp / f"w{n}"
    pdir = write_partition(oracle, data, plan)
    logdir.mkdir(parents=True, exist_ok=True)
    target = logdir / pdir.name
    shutil.move(str(pdir), str(target))
    for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint"):
        _merge_checkpoint(data / name, logdir / name)
    if (data / ".kafka_cleanshutdown").exists():
        shutil.copy(data / ".kafka_cleanshutdown", logdir / ".kafka_cleanshutdown")
    return target


def meta(logdir: Path, broker: int) -> None:
    logdir.mkdir(parents=True, exist_ok=True)
    (logdir / "meta.properties").write_text(f"version=1\nnode.id={broker}\ncluster.id=abc\n")


def high_watermarks(logdir: Path, entries: dict[str, int]) -> None:
    """replication-offset-checkpoint (ReplicaManager writes it; kafka-real has no ReplicaManager)."""
    lines = [f"{tp.rpartition('-')[0]} {tp.rpartition('-')[2]} {off}" for tp, off in entries.items()]
    (logdir / "replication-offset-checkpoint").write_text(f"0\n{len(lines)}\n" + "".join(x + "\n" for x in lines))


def serialise_commits(oracle, commits: list[tuple]) -> list[dict]:
    """(group, topic, partition, offset, leader epoch or None) -> Write records whose key and value are Kafka's
    GroupCoordinatorRecordSerde bytes (OffsetCommitKey v1; OffsetCommitValue v3 with the epoch, v1 without; offset None:
    a tombstone)."""
    reqs = []
    for group, topic, part, off, epoch in commits:
        key = {"class": "OffsetCommitKey", "version": 1, "json": {"group": group, "topic": topic, "partition": part}}
        if off is None:
            value = None
        elif epoch is None:
            value = {"class": "OffsetCommitValue", "version": 1,
                     "json": {"offset": off, "metadata": "", "commitTimestamp": TS, "expireTimestamp": -1}}
        else:
            value = {"class": "OffsetCommitValue", "version": 3,
                     "json": {"offset": off, "leaderEpoch": epoch, "metadata": "", "commitTimestamp": TS}}
        reqs.append({"op": "coordinator", "serde": "group", "key": key, "value": value})
    env = dict(os.environ, LC_ALL="C.UTF-8")
    p = subprocess.run([str(oracle.path), "Records"], input="".join(json.dumps(r) + "\n" for r in reqs),
                       capture_output=True, text=True, timeout=300, env=env, check=True)
    answers = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
    assert len(answers) == len(reqs) and not any("error" in a for a in answers), answers
    return [{"key": {"hex": a["key"]}, "value": None if a.get("value") is None else {"hex": a["value"]}}
            for a in answers]


def offsets_partition(oracle, logdir: Path, tmp: Path, commits: list[tuple]) -> Path:
    """``__consumer_offsets-0`` holding ``commits``, one batch per commit as the coordinator appends them."""
    recs = serialise_commits(oracle, commits)
    ops = [{"op": "append", "records": [r]} for r in recs]
    return into_logdir(oracle, logdir, {"topic": "__consumer_offsets", "partition": 0, "ops": ops}, tmp)


def appends(n: int, *, epoch: int = 0, tag: str = "v", **kw) -> dict:
    return {"op": "append", "count": 1, "batches": n, "keyFormat": "k%d", "valueFormat": tag + "%d", "leaderEpoch": epoch,
            **kw}


def preflight(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, ["preflight", *args])
    return res.exit_code, res.output


def preflight_json(*args: str) -> tuple[int, dict]:
    code, out = preflight("--format", "json", *args)
    assert code in (0, 1), out
    return code, json.loads(out)


def outcome(doc: dict, group: str, tp: str = "orders-0") -> dict:
    [c] = [c for c in doc["consumers"] if c["group"] == group and f"{c['topic']}-{c['partition']}" == tp]
    return c


def span(c: dict, key: str) -> tuple[int, int] | None:
    v = c[key]
    return None if v is None else (v["min"], v["max"])


# ------------------------------------------------------------------------------------------ scenarios
@pytest.fixture()
def clean_set(kafka_real, tmp_path):
    """One broker, orders-0 with offsets 0..9 (epoch 0), high watermark 10; g1 committed 10 (epoch 0)."""
    ld = tmp_path / "b1"
    meta(ld, 1)
    into_logdir(kafka_real, ld, {"topic": "orders", "ops": [appends(10)]}, tmp_path)
    offsets_partition(kafka_real, ld, tmp_path, [("g1", "orders", 0, 4, 0), ("g1", "orders", 0, 10, 0)])
    high_watermarks(ld, {"orders-0": 10, "__consumer_offsets-0": 2})
    return ld


def test_clean_set_comes_back_right(clean_set):
    """g1's last commit (10, epoch 0) is the log end: V passes (endOffsetFor(0) = the new leader epoch's start 10,
    not below 10), the fetch at 10 = the log end is in range and waits for new records: resume, exit 0."""
    code, out = preflight(str(clean_set))
    assert code == 0, out
    assert out.startswith("preflight: the set comes back right")
    assert max(len(x) for x in out.splitlines()) <= 80
    code, doc = preflight_json(str(clean_set))
    assert code == 0 and doc["schema_version"] == 1 and doc["verdict"] == "comes back right"
    c = outcome(doc, "g1")
    assert (c["committed_offset"], c["leader_epoch"], c["case"], c["action"], c["position"]) == (10, 0, "resume",
                                                                                                  "resume", 10)
    assert doc["summary"]["consumers"]["resume"] == 1


@pytest.fixture()
def restored_behind(kafka_real, tmp_path):
    """The volume snapshot of orders-0 was taken before the one of __consumer_offsets: the log holds offsets 0..5
    (high watermark checkpoint 4), the groups committed past it: 'noep' at 10 without a leader epoch (an old
    client's v1 commit), 'ep' at 10 with epoch 0."""
    ld = tmp_path / "b1"
    meta(ld, 1)
    into_logdir(kafka_real, ld, {"topic": "orders", "ops": [appends(6)]}, tmp_path)
    offsets_partition(kafka_real, ld, tmp_path, [("noep", "orders", 0, 10, None), ("ep", "orders", 0, 10, 0)])
    high_watermarks(ld, {"orders-0": 4})
    return ld


def test_commit_above_the_log_end_latest(restored_behind):
    """'noep' (10, no epoch): no V; the fetch at 10 > log end 6 is out of range (R) -> latest = the high watermark,
    4 at the restart (H) .. 6 once caught up: re-reads records 4,5 (2) or none. 'ep' (10, epoch 0): V asks
    endOffsetFor(0) = 6 (the elected leader's new epoch starts at its log end) < 10: truncation detected, seek to 6:
    nothing re-read or skipped."""
    code, doc = preflight_json(str(restored_behind))
    assert code == 1 and doc["verdict"] == "problems found"
    c = outcome(doc, "noep")
    assert (c["case"], c["action"], span(c, "records_reread"), span(c, "records_skipped")) == \
        ("above-end", "re-read", (0, 2), (0, 0))
    assert "offsets 6..9 it had processed are not in the restored log" in c["detail"]
    e = outcome(doc, "ep")
    assert (e["case"], e["action"], e["position"], span(e, "records_reread"), span(e, "records_skipped")) == \
        ("truncation-detected", "resume", 6, (0, 0), (0, 0))


def test_commit_above_the_log_end_earliest_and_none(restored_behind):
    """earliest: 'noep' resets to the log start 0 (R) and re-reads all 6 records; 'ep' still seeks to 6 (V moves the
    position to the divergence, in range, no reset). none: 'noep' raises OffsetOutOfRangeException (R), 'ep'
    LogTruncationException (V): both fail."""
    _code, doc = preflight_json("--auto-offset-reset", "earliest", str(restored_behind))
    c = outcome(doc, "noep")
    assert (c["action"], c["position"], span(c, "records_reread")) == ("re-read", 0, (6, 6))
    assert outcome(doc, "ep")["position"] == 6
    _code, doc = preflight_json("--auto-offset-reset", "none", str(restored_behind))
    assert outcome(doc, "noep")["action"] == "fail" and "OffsetOutOfRangeException" in outcome(doc, "noep")["detail"]
    assert outcome(doc, "ep")["action"] == "fail" and "LogTruncationException" in outcome(doc, "ep")["detail"]


@pytest.fixture()
def unclean_election(kafka_real, tmp_path):
    """KAFKA-10751's shape: both brokers hold 0..9 (epoch 0); broker 1 then led epoch 1 and wrote 10..14, broker 2
    was elected uncleanly at epoch 2 and wrote 10..12 of its own. Groups committed on broker 1's history."""
    b1, b2 = tmp_path / "b1", tmp_path / "b2"
    meta(b1, 1)
    meta(b2, 2)
    into_logdir(kafka_real, b1, {"topic": "orders", "ops": [appends(10), appends(5, epoch=1, tag="a")]}, tmp_path)
    into_logdir(kafka_real, b2, {"topic": "orders", "ops": [appends(10), appends(3, epoch=2, tag="b")]}, tmp_path)
    high_watermarks(b1, {"orders-0": 15})
    high_watermarks(b2, {"orders-0": 13})
    offsets_partition(kafka_real, b1, tmp_path, [("ep14", "orders", 0, 14, 1), ("noep14", "orders", 0, 14, None),
                                                 ("noep12", "orders", 0, 12, None), ("ep12", "orders", 0, 12, 1),
                                                 ("ok9", "orders", 0, 9, 0)])
    return b1, b2


def test_unclean_election_consumers(unclean_election):
    """Broker 2 leads (latest epoch 2 > 1, compare-replicas); broker 1 truncates to 10 and loses 5 records. The
    elected leader's cache: (0,0), (2,10), then the restart's epoch 3 at its log end 13.
    ep14/ep12 (epoch 1): V asks endOffsetFor(1) = (0, 10) < the commit: truncation detected, seek to 10, read the
    leader's 10..12: nothing skipped or re-read. ok9 (epoch 0): endOffsetFor(0) = 10 >= 9: validated, resume.
    noep14 (no epoch): 14 > log end 13: R, latest = HW 13 (H): if it had read broker 1's history the leader's 10..12
    (3 records) are never seen, if broker 2's nothing is: skip 0..3. noep12 (no epoch, 12 in range): no V, no R: it
    resumes at 12 and silently skips the leader's 10, 11 if it had read broker 1's history: skip 0..2."""
    b1, b2 = unclean_election
    code, doc = preflight_json(str(b1), str(b2))
    assert code == 1
    [p] = [p for p in doc["partitions"] if p["name"] == "orders-0"]
    assert p["leader_broker"] == "2" and p["log_end_offset"] == 13 and p["high_watermark"] == 13
    assert p["leader_epochs"] == [[0, 0], [2, 10], [3, 13]]
    [f] = [c for c in p["copies"] if c["role"] == "follower"]
    assert (f["broker"], f["truncate_to"], f["truncation_loses"]) == ("1", 10, 5)
    got = {g: (outcome(doc, g)["case"], outcome(doc, g)["action"], outcome(doc, g)["position"],
               span(outcome(doc, g), "records_skipped")) for g in ("ep14", "ep12", "ok9", "noep14", "noep12")}
    assert got == {"ep14": ("truncation-detected", "resume", 10, (0, 0)),
                   "ep12": ("truncation-detected", "resume", 10, (0, 0)),
                   "ok9": ("resume", "resume", 9, (0, 0)),
                   "noep14": ("above-end", "skip", 13, (0, 3)),
                   "noep12": ("no-epoch-across-truncation", "skip", 12, (0, 2))}
    # earliest: noep14 resets to 0 and re-reads 10 (broker 2's history is the same below 10) .. 13 records
    _code, doc = preflight_json("--auto-offset-reset", "earliest", str(b1), str(b2))
    c = outcome(doc, "noep14")
    assert (c["action"], c["position"], span(c, "records_reread")) == ("re-read", 0, (10, 13))
    code, out = preflight(str(b1), str(b2))
    assert "truncates to 10 as a follower and loses 5 records" in out.replace("\n    ", " ").replace("\n  ", " ")
    assert max(len(x) for x in out.splitlines()) <= 80


@pytest.fixture()
def deleted_below(kafka_real, tmp_path):
    """orders-0 holds 0..9, DeleteRecords moved the log start to 5; 'old' committed 2 (epoch 0)."""
    ld = tmp_path / "b1"
    meta(ld, 1)
    into_logdir(kafka_real, ld, {"topic": "orders", "config": {"segment.bytes": "300"},
                                 "ops": [appends(10), {"op": "deleteRecords", "offset": 5}]}, tmp_path)
    offsets_partition(kafka_real, ld, tmp_path, [("old", "orders", 0, 2, 0)])
    high_watermarks(ld, {"orders-0": 10})
    return ld


def test_commit_below_the_log_start(deleted_below):
    """'old' (2, epoch 0): V passes (endOffsetFor(0) = 10 >= 2); the fetch at 2 < log start 5 is out of range (R).
    latest -> HW 10: the 5 records 5..9 are never seen (skip 5); earliest -> 5: nothing skipped of the log (offsets
    2..4 were deleted before it read them); none -> OffsetOutOfRangeException."""
    _code, doc = preflight_json(str(deleted_below))
    [p] = [p for p in doc["partitions"] if p["name"] == "orders-0"]
    assert p["log_start_offset"] == 5
    c = outcome(doc, "old")
    assert (c["case"], c["action"], c["position"], span(c, "records_skipped")) == ("below-start", "skip", 10, (5, 5))
    assert "offsets 2..4 are no longer in the log" in c["detail"]
    _code, doc = preflight_json("--auto-offset-reset", "earliest", str(deleted_below))
    c = outcome(doc, "old")
    assert (c["case"], c["action"], c["position"], span(c, "records_skipped")) == ("below-start", "resume", 5, (0, 0))
    _code, doc = preflight_json("--auto-offset-reset", "none", str(deleted_below))
    assert outcome(doc, "old")["action"] == "fail"


@pytest.fixture()
def hanging(kafka_real, tmp_path):
    """orders-0: 0..2 plain, 3..4 a transaction of producer 1000 that never got a marker, 5..7 plain; every
    __transaction_state partition is present (one, empty of this producer), so the transaction is hanging; 'rc'
    committed 1."""
    ld = tmp_path / "b1"
    meta(ld, 1)
    into_logdir(kafka_real, ld, {"topic": "orders", "ops": [
        appends(3), appends(2, producerId=1000, transactional=True), appends(3)]}, tmp_path)
    offsets_partition(kafka_real, ld, tmp_path, [("rc", "orders", 0, 1, 0)])
    into_logdir(kafka_real, ld, {"topic": "__transaction_state", "ops": []}, tmp_path)
    high_watermarks(ld, {"orders-0": 8})
    return ld


def test_read_committed_hangs_at_a_stuck_lso(hanging):
    """The hanging transaction keeps the last stable offset at 3 (UnifiedLog's first unstable offset). read_committed:
    fetches stop at the LSO, so 'rc' reads records 1, 2 and hangs. read_uncommitted: not bounded by the LSO, resume
    (the partition's hanging transaction is still a problem of the set)."""
    code, doc = preflight_json("--isolation", "read_committed", "--transaction-partitions", "1", str(hanging))
    assert code == 1
    [p] = [p for p in doc["partitions"] if p["name"] == "orders-0"]
    assert p["last_stable_offset"] == 3 and p["hanging"][0]["first_offset"] == 3
    c = outcome(doc, "rc")
    assert (c["case"], c["action"]) == ("stuck-lso", "hang")
    assert "reads 2 records, then hangs" in c["detail"]
    _code, doc = preflight_json("--transaction-partitions", "1", str(hanging))
    assert outcome(doc, "rc")["action"] == "resume"
    assert doc["summary"]["partitions"]["hanging_transactions"] == 1
    # with 50 __transaction_state partitions and only one here, the producer's coordinator partition may be among
    # the missing ones ("coordinator-missing"): whether it completes is unknown, never a guessed hang
    code, doc = preflight_json("--isolation", "read_committed", str(hanging))
    c = outcome(doc, "rc")
    assert code == 1 and (c["case"], c["action"]) == ("unknown", "unknown")
    assert doc["summary"]["partitions"]["hanging_transactions"] == 0


def test_recovery_cut_below_a_commit(kafka_real, tmp_path):
    """The broker crashed (no .kafka_cleanshutdown) and the last batch (offset 9) has a bad CRC: LogLoader's recovery
    (recover's model) truncates the segment there, the log ends at 9. 'c' (10, no epoch): 10 > 9 is out of range
    (R) -> latest = HW 9 (the checkpoint's 10 clamped to the log end, H): nothing re-read; offset 9 it had processed
    is gone, and the partition reports what recovery removes (the batch's bytes, the log end 10 -> 9)."""
    from kafkalog_cli.storage.segment import MappedFile, walk

    ld = tmp_path / "b1"
    meta(ld, 1)
    pdir = into_logdir(kafka_real, ld, {"topic": "orders", "ops": [appends(10)], "shutdown": "crash"}, tmp_path)
    offsets_partition(kafka_real, ld, tmp_path, [("c", "orders", 0, 10, None)])
    (ld / ".kafka_cleanshutdown").unlink(missing_ok=True)
    (ld / "recovery-point-offset-checkpoint").write_text("0\n1\norders 0 0\n")
    high_watermarks(ld, {"orders-0": 10})
    seg = pdir / "00000000000000000000.log"
    with MappedFile(str(seg)) as mf:
        last = list(walk(mf.buf, file=str(seg)))[-1]
    data = bytearray(seg.read_bytes())
    data[last[0] + last[1] - 1] ^= 0xFF  # the last byte of the last batch: its CRC no longer matches
    seg.write_bytes(bytes(data))
    code, doc = preflight_json(str(ld))
    assert code == 1
    [p] = [p for p in doc["partitions"] if p["name"] == "orders-0"]
    [copy] = p["copies"]
    # the corrupt batch's record count cannot be trusted (recover: "0 records, 72 bytes unreadable"): bytes and offsets
    assert (copy["loads"], copy["recovery_cut_offsets"], p["log_end_offset"], p["high_watermark"]) == \
        (True, [10, 9], 9, 9)
    assert copy["recovery_cut_bytes"] == last[1]
    assert doc["summary"]["partitions"]["recovery_cuts"] == 1
    c = outcome(doc, "c")
    assert (c["case"], c["action"], c["position"], span(c, "records_reread")) == ("above-end", "resume", 9, (0, 0))


# ------------------------------------------------------------------------------------------ a real consumer
def _mock_consume(bootstrap: str, group: str, reset: str, expect: int) -> list[int]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": reset, "log_level": 0})
    c.assign([TopicPartition("orders", 0)])
    got: list[int] = []
    import time

    end = time.monotonic() + (3 if expect == 0 else 20)
    while time.monotonic() < end and len(got) < max(expect, 1) + 1:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append(m.offset())
        if expect and len(got) >= expect:
            time.sleep(0.5)  # anything beyond what was expected would show up now
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append(m.offset())
            break
    c.close()
    return got


def test_mock_cluster_consumer_agrees(kafka_real, tmp_path):
    """A real consumer (librdkafka's mock cluster through confluent-kafka): 10 records produced to orders-0, group
    'high' committed 15 (above the log end), 'mid' committed 4. The consumer then reads from the position preflight
    predicts on the equivalent offline partition (Kafka-written, 10 records, HW 10, the same commits without a leader
    epoch: the mock cluster answers a fetch past the log end with OFFSET_OUT_OF_RANGE and librdkafka resets, R):
    'high' earliest -> 0 (10 records), latest -> 10 (none), 'mid' -> 4 either way (6 records). The mock does not
    implement DeleteRecords (UNSUPPORTED_FEATURE), so the below-start case is checked offline only."""
    ck = pytest.importorskip("confluent_kafka")
    ld = tmp_path / "b1"
    meta(ld, 1)
    into_logdir(kafka_real, ld, {"topic": "orders", "ops": [appends(10)]}, tmp_path)
    offsets_partition(kafka_real, ld, tmp_path, [("high", "orders", 0, 15, None), ("mid", "orders", 0, 4, None)])
    high_watermarks(ld, {"orders-0": 10})
    producer = ck.Producer({"test.mock.num.brokers": 1, "log_level": 0})
    try:
        md = producer.list_topics(timeout=10)
        bootstrap = ",".join(f"{b.host}:{b.port}" for b in md.brokers.values())
        for i in range(10):
            producer.produce("orders", value=f"v{i}".encode(), partition=0)
        assert producer.flush(10) == 0
        for group, off in (("high", 15), ("mid", 4)):
            c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                             "log_level": 0})
            c.commit(offsets=[ck.TopicPartition("orders", 0, off)], asynchronous=False)
            c.close()
        for reset in ("earliest", "latest"):
            _code, doc = preflight_json("--auto-offset-reset", reset, str(ld))
            for group in ("high", "mid"):
                pos = outcome(doc, group)["position"]
                assert pos is not None
                expected = list(range(pos, 10))
                assert _mock_consume(bootstrap, f"{group}", reset, len(expected)) == expected, (group, reset)
    finally:
        producer.flush(1)


# ------------------------------------------------------------------------------------------ rules without a log
def _partition(L: int, N: int, H: int, epochs: list[tuple[int, int]], records: set[int]) -> pf.PartitionCheck:
    p = pf.PartitionCheck("orders", 0, [], log_start_offset=L, log_end_offset=N, high_watermark=H,
                          leader_epochs=epochs)
    p.count = lambda a, b: sum(1 for o in records if a <= o < min(b, N))
    return p


def _commit(offset: int, epoch: int | None) -> pf.Commit:
    return pf.Commit("g", "orders", 0, offset, epoch, "", None, "test")


def test_epoch_unknown_to_the_leader_resets_by_policy():
    """A commit whose epoch (9) is above every epoch of the leader's cache (0 at 0, the restart's 1 at 10):
    endOffsetFor answers UNDEFINED, V calls requestOffsetReset (SubscriptionState.java:504-513): latest -> HW 10;
    where the leader's history left the consumer's is unknown: it never sees records 8, 9 at least, all 10 if the
    histories differ from offset 0 (skip 2..10); none -> LogTruncationException."""
    p = _partition(0, 10, 10, [(0, 0), (1, 10)], set(range(10)))
    o = pf.consumer_outcome(_commit(8, 9), p, pf.LATEST, pf.READ_UNCOMMITTED)
    assert (o.case, o.position, o.records_reread, o.records_skipped) == ("truncation-detected", 10, (0, 0), (2, 10))
    o = pf.consumer_outcome(_commit(8, 9), p, pf.NONE, pf.READ_UNCOMMITTED)
    assert (o.action, "LogTruncationException" in o.detail) == ("fail", True)


def test_high_watermark_below_the_log_end_gives_a_range():
    """Commit 12 (no epoch) above the log end 10, HW checkpoint 7 (H): latest seeks to the HW, 7 at the restart or
    10 after the followers caught up: it re-reads records 7..9 (3) or none."""
    p = _partition(0, 10, 7, [(0, 0), (1, 10)], set(range(10)))
    o = pf.consumer_outcome(_commit(12, None), p, pf.LATEST, pf.READ_UNCOMMITTED)
    assert (o.case, o.action, o.position, o.records_reread) == ("above-end", "re-read", None, (0, 3))


def test_compacted_log_counts_records_not_offsets():
    """earliest after a commit above the end re-reads the records the log holds, not the offsets (a compacted log
    holding 0, 4, 9 of 0..9: 3 records)."""
    p = _partition(0, 10, 10, [(0, 0), (1, 10)], {0, 4, 9})
    o = pf.consumer_outcome(_commit(12, None), p, pf.EARLIEST, pf.READ_UNCOMMITTED)
    assert (o.position, o.records_reread) == (0, (3, 3))


def test_commit_on_a_partition_not_in_the_dirs_is_unknown(clean_set, kafka_real, tmp_path):
    """A group committed on a partition no dir holds: 'unknown', never a guess; the verdict is not clean. One on a
    partition directory without a segment (an empty log: the loader creates its first segment) has an answer."""
    shutil.rmtree(clean_set / "__consumer_offsets-0")
    (clean_set / "empty-0").mkdir()  # a partition directory without a segment: an empty log the broker opens
    offsets_partition(kafka_real, clean_set, tmp_path, [("g1", "orders", 0, 10, 0), ("g2", "gone", 3, 5, 0),
                                                        ("g3", "empty", 0, 0, None)])
    code, doc = preflight_json(str(clean_set))
    assert code == 1
    c = outcome(doc, "g2", "gone-3")
    assert (c["case"], c["action"], c["position"]) == ("unknown", "unknown", None)
    assert "no copy of the partition" in c["detail"]
    c = outcome(doc, "g3", "empty-0")
    assert (c["case"], c["action"], c["position"]) == ("resume", "resume", 0)
    code, doc = preflight_json("--group", "g1", str(clean_set))
    assert code == 0 and [c["group"] for c in doc["consumers"]] == ["g1"]


def test_usage_and_unreadable(tmp_path):
    """Exit 2 with one located line for a missing path, a dir without partitions, a bad --kafka-version."""
    code, out = preflight(str(tmp_path / "nope"))
    assert code == 2 and "no such file or directory" in out and "Traceback" not in out
    (tmp_path / "empty").mkdir()
    code, out = preflight(str(tmp_path / "empty"))
    assert code == 2 and "Traceback" not in out
    code, out = preflight("--auto-offset-reset", "smallest", str(tmp_path))
    assert code == 2


# ------------------------------------------------------------------------------------------ the composed engines
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_schema_ids_missing_from_the_registry(tmp_path):
    """fixtures/registry: orders-0's records 0..2 use schema id 1, soft-deleted in _schemas (schemas --audit finds
    it): the set does not come back right; without _schemas the schemas line says 'not checked'."""
    shutil.copytree(FIXTURES / "registry", tmp_path / "reg")
    code, doc = preflight_json(str(tmp_path / "reg"))
    assert code == 1 and doc["summary"]["schemas"] == {"missing_ids": 1}
    [use] = doc["schemas"]["id_uses"]
    assert (use["schema_id"], use["state"], use["first_offset"], use["last_offset"]) == (1, "soft-deleted", 0, 2)
    shutil.rmtree(tmp_path / "reg" / "_schemas-0")
    code, out = preflight(str(tmp_path / "reg"))
    assert code == 0 and "schemas: not checked (no _schemas partition in the dirs)" in out


def test_inventory_against_the_metadata(tmp_path):
    """--metadata: fixtures/sample-logdir against fixtures/kraft (inventory's findings: no meta.properties, and both
    payments partitions' topic id is not in the image: stray); without --metadata the inventory is not checked."""
    shutil.copytree(FIXTURES / "sample-logdir", tmp_path / "ld")
    code, out = preflight(str(tmp_path / "ld"))
    assert code == 0 and "inventory: not checked" in out
    code, doc = preflight_json("--metadata", str(FIXTURES / "kraft" / "__cluster_metadata-0"), str(tmp_path / "ld"))
    assert code == 1 and doc["summary"]["inventory"] == {"problems": 3}
    assert sorted(f["class"] for f in doc["inventory"]["findings"]) == ["meta-properties", "stray-deleted",
                                                                         "stray-deleted"]


def test_an_engine_that_refuses_its_input_is_not_checked_never_clean(tmp_path, monkeypatch):
    """When one engine refuses the input (here the transactions analysis, made to raise its typed error), the report
    says what was not checked and the verdict is not 'comes back right'."""
    from kafkalog_cli.errors import UnreadableFileError
    from kafkalog_cli.internal_topics import transactions as tx

    shutil.copytree(FIXTURES / "sample-logdir", tmp_path / "ld")

    def refuse(*_a, **_k):
        raise UnreadableFileError("cannot read the producer state", file=str(tmp_path / "ld"))

    monkeypatch.setattr(tx, "analyse", refuse)
    code, out = preflight(str(tmp_path / "ld"))
    flat = " ".join(out.split())
    assert code == 1 and "NOT CHECKED: transactions:" in flat and "cannot read the producer state" in flat


def test_leader_epochs_are_the_loaders_not_the_batches(kafka_real, tmp_path):
    """orders-0: 0..4 at epoch 0, 5..9 at epoch 2; 'e1' committed 8 at epoch 1 (a history this log does not have).
    With leader-epoch-checkpoint, the cache is (0,0), (2,5), then the restart's (3,10): V asks endOffsetFor(1) =
    (0, 5) < 8: truncation detected, seek to 5. Without the file, a clean load leaves the cache EMPTY (LogLoader
    rebuilds epochs only in the segments it recovers; Kafka's own Load shows it): the cache is just (3,10),
    endOffsetFor(1) = (1, 10) >= 8, so the consumer resumes at 8 and notices nothing."""
    ld = tmp_path / "b1"
    meta(ld, 1)
    pdir = into_logdir(kafka_real, ld, {"topic": "orders", "ops": [appends(5), appends(5, epoch=2)]}, tmp_path)
    offsets_partition(kafka_real, ld, tmp_path, [("e1", "orders", 0, 8, 1)])
    high_watermarks(ld, {"orders-0": 10})
    _code, doc = preflight_json(str(ld))
    [p] = [p for p in doc["partitions"] if p["name"] == "orders-0"]
    assert p["leader_epochs"] == [[0, 0], [2, 5], [3, 10]]
    c = outcome(doc, "e1")
    assert (c["case"], c["position"]) == ("truncation-detected", 5)
    (pdir / "leader-epoch-checkpoint").unlink()
    loaded = kafka_real.json("Load", "--in", str(pdir), "--work", str(tmp_path / "load"), "--now-ms", str(TS + 10**5))
    assert loaded["log"]["leaderEpochs"] == []
    _code, doc = preflight_json(str(ld))
    [p] = [p for p in doc["partitions"] if p["name"] == "orders-0"]
    assert p["leader_epochs"] == [[3, 10]]
    c = outcome(doc, "e1")
    assert (c["case"], c["action"], c["position"]) == ("resume", "resume", 8)


def test_commits_are_read_from_the_copy_that_leads(kafka_real, tmp_path):
    """__consumer_offsets-0 diverged too: broker 1 (epoch 1) holds g=5, then g=9 and h=3; broker 2, elected at epoch
    2, holds g=5, then g=7. The coordinator loads the leader's copy (compare-replicas: broker 2), broker 1's is
    truncated away: g resumes at 7, h has no commit. Reading the largest copy (broker 1's) would answer g=9, h=3."""
    b1, b2 = tmp_path / "b1", tmp_path / "b2"
    for b, ld in ((1, b1), (2, b2)):
        meta(ld, b)
        into_logdir(kafka_real, ld, {"topic": "orders", "ops": [appends(10)]}, tmp_path)
        high_watermarks(ld, {"orders-0": 10})
    shared = serialise_commits(kafka_real, [("g", "orders", 0, 5, 0)])
    for ld, epoch, commits in ((b1, 1, [("g", "orders", 0, 9, 0), ("h", "orders", 0, 3, 0)]),
                               (b2, 2, [("g", "orders", 0, 7, 0)])):
        ops = [{"op": "append", "records": [r]} for r in shared]
        ops += [{"op": "append", "records": [r], "leaderEpoch": epoch} for r in serialise_commits(kafka_real, commits)]
        into_logdir(kafka_real, ld, {"topic": "__consumer_offsets", "partition": 0, "ops": ops}, tmp_path)
    _code, doc = preflight_json(str(b1), str(b2))
    [p] = [p for p in doc["partitions"] if p["name"] == "__consumer_offsets-0"]
    assert p["leader_broker"] == "2"
    assert [(c["group"], c["committed_offset"]) for c in doc["consumers"]] == [("g", 7)]
    assert outcome(doc, "g")["position"] == 7
