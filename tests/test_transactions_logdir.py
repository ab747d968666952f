"""``transactions LOGDIR...``: open transactions classified against the coordinator's ``__transaction_state``.

Scenarios follow the coordinator's state machine (TransactionMetadata.scala) and the hanging cases of KIP-664;
the oracle is the scenario as built, never the engine's own reading of the files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner
from partition_gen import PartitionBuilder
from txn_scenarios import (
    checkpoint,
    meta,
    offset_commit,
    snapshot,
    txn_record,
    txn_state_partition,
    write_records,
)

from kafkalog_cli.cli.main import cli

NOW = 1_700_000_100_000


def _run(*args: str) -> tuple[int, dict]:
    r = CliRunner().invoke(cli, ["transactions", *args, "--format", "json", "--now-ms", str(NOW)])
    assert r.exit_code in (0, 1), r.output
    return r.exit_code, json.loads(r.stdout)


def _open_in(pdir: str, pid: int, *, epoch: int = 0, committed_before: int = 3) -> int:
    """Some plain records, then an open transaction of ``pid``; returns its first offset."""
    pb = PartitionBuilder(pdir)
    for i in range(committed_before):
        pb.batch([(f"k{i}".encode(), b"v")])
    first = pb.next_offset
    pb.batch([(b"t1", b"x"), (b"t2", b"y")], pid=pid, epoch=epoch, txn=True)
    pb.batch([(b"plain", b"z")])
    pb.write()
    return first


def _by_topic(out: dict) -> dict[str, dict]:
    return {f"{t['topic']}-{t['partition']}": t for t in out["open"]}


def test_ongoing_vs_hanging_by_coordinator_state(tmp_path: Path) -> None:
    ld = str(tmp_path / "data")
    meta(ld, 1)
    f0 = _open_in(os.path.join(ld, "orders-0"), 1000)
    f1 = _open_in(os.path.join(ld, "orders-1"), 1001)
    f2 = _open_in(os.path.join(ld, "orders-2"), 1002)
    f3 = _open_in(os.path.join(ld, "orders-3"), 1003, epoch=4)
    # one __transaction_state partition holding every id (partition count 1: full coverage)
    txn_state_partition(ld, [
        txn_record("tx-ongoing", 1000, 0, "Empty", {}),
        txn_record("tx-ongoing", 1000, 0, "Ongoing", {"orders": [0]}),
        txn_record("tx-done", 1001, 0, "Ongoing", {"orders": [1]}),
        txn_record("tx-done", 1001, 0, "PrepareCommit", {"orders": [1]}),
        txn_record("tx-done", 1001, 0, "CompleteCommit", {}),  # the coordinator thinks the marker was written
        txn_record("tx-other", 1002, 0, "Ongoing", {"orders": [0]}),  # lists another partition only
        txn_record("tx-fenced", 1003, 5, "Ongoing", {"orders": [3]}),  # epoch bumped past the open one
    ], partition=0)
    code, out = _run(ld, "--partitions", "1", "--bootstrap-server", "b1:9092")
    found = _by_topic(out)
    assert code == 1
    assert found["orders-0"]["classification"] == "ongoing"
    assert found["orders-0"]["transactional_id"] == "tx-ongoing"
    assert found["orders-0"]["abort_command"] is None
    assert found["orders-1"]["classification"] == "hanging"
    assert found["orders-1"]["transactional_id"] == "tx-done"
    assert "CompleteCommit" in found["orders-1"]["reason"]
    assert found["orders-1"]["abort_command"] == (
        f"kafka-transactions.sh --bootstrap-server b1:9092 abort --topic orders --partition 1 --start-offset {f1}")
    assert found["orders-2"]["classification"] == "hanging"
    assert "does not list orders-2" in found["orders-2"]["reason"]
    assert found["orders-3"]["classification"] == "hanging" and "epoch 5" in found["orders-3"]["reason"]
    assert [found[f"orders-{i}"]["first_offset"] for i in range(4)] == [f0, f1, f2, f3]
    lso = {f"{p['topic']}-{p['partition']}": (p["last_stable_offset"], p["lso_lag"]) for p in out["partitions"]}
    assert lso["orders-0"] == (f0, 6 - f0)  # no replication-offset-checkpoint: the log end (6) stands in for the HW


def test_only_ongoing_exits_zero_and_closed_transactions_are_not_reported(tmp_path: Path) -> None:
    ld = str(tmp_path / "data")
    pb = PartitionBuilder(os.path.join(ld, "t-0"))
    pb.batch([(b"a", b"1")], pid=7, txn=True)
    pb.marker(7, abort=False)
    pb.batch([(b"b", b"2")], pid=8, txn=True)
    pb.marker(8, abort=True)
    pb.batch([(b"c", b"3")], pid=9, txn=True)
    pb.write()
    txn_state_partition(ld, [txn_record("x", 9, 0, "Ongoing", {"t": [0]})], partition=0)
    code, out = _run(ld, "--partitions", "1")
    assert code == 0
    assert [(t["producer_id"], t["first_offset"], t["classification"]) for t in out["open"]] == [(9, 4, "ongoing")]
    assert "past its transaction.timeout.ms" in out["open"][0]["reason"]  # started at TS, 100 s > 60 s ago
    assert out["partitions"][0]["last_stable_offset"] == 4


def test_coordinator_missing_names_the_partitions_to_look_at(tmp_path: Path) -> None:
    ld = str(tmp_path / "data")
    _open_in(os.path.join(ld, "orders-0"), 4242)
    p = txn_state_partition(ld, [txn_record("someone-else", 1, 0, "Empty", {})], txn_id="someone-else")
    code, out = _run(ld)  # 50 partitions by default, one present
    t = out["open"][0]
    assert code == 1
    assert t["classification"] == "coordinator-missing" and t["transactional_id"] is None
    assert t["abort_command"] is None
    assert "locate-txn" in t["reason"] and f"__transaction_state-{p}" not in t["reason"]
    assert ("__transaction_state-0," if p != 0 else "__transaction_state-1,") in t["reason"]


def test_unknown_producer_with_full_coverage_and_expired_id_are_hanging(tmp_path: Path) -> None:
    ld = str(tmp_path / "data")
    _open_in(os.path.join(ld, "a-0"), 500)
    _open_in(os.path.join(ld, "b-0"), 501)
    txn_state_partition(ld, [
        txn_record("gone", 501, 0, "Ongoing", {"b": [0]}),
        (txn_record("gone", 501, 0, "Empty", {})[0], None),  # tombstone: transactional.id.expiration.ms passed
    ], partition=0)
    code, out = _run(ld, "--partitions", "1")
    found = _by_topic(out)
    assert code == 1
    assert found["a-0"]["classification"] == "hanging" and "none of the 1" in found["a-0"]["reason"]
    assert found["b-0"]["classification"] == "hanging" and found["b-0"]["transactional_id"] == "gone"
    assert "expired" in found["b-0"]["reason"]


def test_retention_removed_the_data_start_snapshot_keeps_it_open(tmp_path: Path) -> None:
    """The broker keeps an ongoing transaction whose first batches retention deleted (ProducerStateManager keeps
    ongoing transactions on log start increments); the LSO is then the log start (UnifiedLog.scala:962-967) and the
    KIP-664 start offset is the producer state's first offset, below the log start."""
    ld = str(tmp_path / "data")
    pdir = os.path.join(ld, "events-0")
    pb = PartitionBuilder(pdir)
    pb.next_offset = 10
    pb.bases = [10]
    pb.batch([(b"a", b"1")])
    pb.batch([(b"b", b"2")])
    pb.write()
    os.remove(os.path.join(pdir, "leader-epoch-checkpoint"))
    snapshot(pdir, 11, [(77, 2, 9, 4)])  # producer 77 opened a transaction at offset 4 (now deleted)
    snapshot(pdir, 10, [(77, 2, 9, -1)])  # at the log start: the broker deletes it (<= log start), so ignored
    checkpoint(ld, "replication-offset-checkpoint", {"events-0": 12})
    txn_state_partition(ld, [txn_record("etl", 77, 2, "CompleteAbort", {})], partition=0)
    code, out = _run(ld, "--partitions", "1")
    t = out["open"][0]
    assert code == 1
    assert (t["producer_id"], t["first_offset"], t["data_start_removed"], t["classification"]) == (77, 4, True, "hanging")
    assert t["abort_command"].endswith("--topic events --partition 0 --start-offset 4")
    part = out["partitions"][0]
    assert (part["log_start_offset"], part["last_stable_offset"], part["high_watermark"]) == (10, 10, 12)
    assert part["snapshot_offset"] == 11


def test_marker_retained_elsewhere_across_broker_copies(tmp_path: Path) -> None:
    """Broker 1's copy stopped before the COMMIT; broker 2's copy has the marker and retention removed the data's
    start there."""
    b1, b2 = str(tmp_path / "b1"), str(tmp_path / "b2")
    meta(b1, 1)
    meta(b2, 2)
    first = _open_in(os.path.join(b1, "orders-0"), 1000, committed_before=2)
    pb = PartitionBuilder(os.path.join(b2, "orders-0"))
    pb.next_offset = 4
    pb.bases = [4]
    pb.batch([(b"plain", b"z")])
    pb.marker(1000, abort=False)
    pb.write()
    code, out = _run(b1, b2)
    found = [t for t in out["open"] if t["producer_id"] == 1000]
    assert len(found) == 1 and found[0]["broker"] == "1" and found[0]["first_offset"] == first
    assert found[0]["classification"] == "marker-retained-elsewhere"
    assert "COMMIT marker at offset 5" in found[0]["reason"] and "retention removed" in found[0]["reason"]
    assert code == 0


def test_blocked_consumer_groups_and_text_output(tmp_path: Path) -> None:
    ld = str(tmp_path / "data")
    first = _open_in(os.path.join(ld, "orders-0"), 1001)
    txn_state_partition(ld, [txn_record("tx-done", 1001, 0, "CompleteAbort", {})], partition=0)
    checkpoint(ld, "replication-offset-checkpoint", {"orders-0": 6})
    write_records(os.path.join(ld, "__consumer_offsets-0"), [
        offset_commit("stuck", "orders", 0, first), offset_commit("behind", "orders", 0, 1),
        offset_commit("other", "orders", 1, 99)])
    code, out = _run(ld, "--partitions", "1")
    t = out["open"][0]
    assert code == 1 and t["classification"] == "hanging"
    assert [g["group"] for g in t["blocked_consumers"]] == ["stuck"]
    part = next(p for p in out["partitions"] if p["topic"] == "orders")
    assert [(g["group"], g["blocked"]) for g in part["groups"]] == [("behind", False), ("stuck", True)]
    r = CliRunner().invoke(cli, ["transactions", ld, "--partitions", "1"])
    assert r.exit_code == 1
    assert "last stable offset 3 (lags the log end by 3)" in r.output
    assert "hanging: the coordinator's transaction is CompleteAbort" in r.output
    assert "--start-offset 3" in r.output and "stuck (at 3)" in r.output


def test_bad_paths_exit_2(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["transactions", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "Traceback" not in r.output
    r = CliRunner().invoke(cli, ["transactions"])
    assert r.exit_code == 2


def test_no_snapshot_replay_starts_at_the_log_start(tmp_path: Path) -> None:
    """Without a snapshot the broker rebuilds producer state from the log start offset, not from the first file:
    a transaction opened below a log-start-offset-checkpoint entry (DeleteRecords) is not seen; one opened after
    it is, with its first batch's timestamp."""
    ld = str(tmp_path / "data")
    pb = PartitionBuilder(os.path.join(ld, "t-0"))
    pb.batch([(b"a", b"1")], pid=5, txn=True)  # offset 0, below the log start 2
    pb.batch([(b"b", b"2")])
    pb.batch([(b"c", b"3")], pid=6, txn=True)  # offset 2
    pb.write()
    checkpoint(ld, "log-start-offset-checkpoint", {"t-0": 2})
    txn_state_partition(ld, [txn_record("x", 6, 0, "Ongoing", {"t": [0]})], partition=0)
    code, out = _run(ld, "--partitions", "1")
    assert code == 0
    assert [(t["producer_id"], t["first_offset"]) for t in out["open"]] == [(6, 2)]
    assert out["open"][0]["first_timestamp"] == 1_700_000_000_003
    assert out["partitions"][0]["last_stable_offset"] == 2
