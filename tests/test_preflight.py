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
    if (data / ".kafka_cleanshutdown").exists() and not (logdir / "crashed").exists():
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
