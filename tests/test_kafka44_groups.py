"""Issue 28 (d): ``transactions`` names the groups an open transaction blocks whatever their protocol: classic,
KIP-848 consumer groups, KIP-1071 streams groups (all commit offsets) and KIP-932 share groups (their progress is the
share-partition start offset in ``__share_group_state``). The scenario is built from the records as the
coordinators write them; the oracle is the scenario, never the engine's reading."""

from __future__ import annotations

import base64
import json
import os
import struct
from pathlib import Path

from click.testing import CliRunner
from partition_gen import PartitionBuilder
from txn_scenarios import checkpoint, offset_commit, txn_record, txn_state_partition, write_records

from kafkalog_cli.cli.main import cli
from kafkalog_cli.internal_topics import schema as sc
from kafkalog_cli.internal_topics import schemas_group as sg
from kafkalog_cli.internal_topics import schemas_txn_share as st

NOW = 1_700_000_100_000
TOPIC_ID = bytes(range(1, 17))
TOPIC_ID_TEXT = base64.urlsafe_b64encode(TOPIC_ID).decode().rstrip("=")


def _pref(v: int, body: bytes) -> bytes:
    return struct.pack(">h", v) + body


def _group_meta(rtype: int, key_msg: sc.Message, value_msg: sc.Message, group: str, value: dict) -> tuple[bytes, bytes]:
    kver = rtype if key_msg.supports(rtype) else 0
    return (_pref(rtype, sc.encode(key_msg, {"groupId": group}, kver)), _pref(0, sc.encode(value_msg, value, 0)))


def _share_snapshot(group: str, partition: int, start: int) -> tuple[bytes, bytes]:
    key = _pref(0, sc.encode(st.ShareSnapshotKey, {"groupId": group, "topicId": TOPIC_ID_TEXT, "partition": partition}, 0))
    value = _pref(0, sc.encode(st.ShareSnapshotValue, {
        "snapshotEpoch": 0, "stateEpoch": 1, "leaderEpoch": 0, "startOffset": start, "createTimestamp": 1,
        "writeTimestamp": 1, "stateBatches": []}, 0))
    return key, value


def _share_update(group: str, partition: int, start: int) -> tuple[bytes, bytes]:
    key = _pref(1, sc.encode(st.ShareUpdateKey, {"groupId": group, "topicId": TOPIC_ID_TEXT, "partition": partition}, 1))
    value = _pref(0, sc.encode(st.ShareUpdateValue, {"snapshotEpoch": 0, "leaderEpoch": 0, "startOffset": start,
                                                     "stateBatches": []}, 0))
    return key, value


def test_blocked_groups_of_every_protocol(tmp_path: Path) -> None:
    ld = str(tmp_path / "data")
    pdir = os.path.join(ld, "orders-0")
    pb = PartitionBuilder(pdir)
    for i in range(3):
        pb.batch([(f"k{i}".encode(), b"v")])
    first = pb.next_offset
    pb.batch([(b"t1", b"x")], pid=1001, epoch=0, txn=True)
    pb.batch([(b"plain", b"z")])
    pb.write()
    with open(os.path.join(pdir, "partition.metadata"), "w") as fh:
        fh.write(f"version: 0\ntopic_id: {TOPIC_ID_TEXT}\n")
    txn_state_partition(ld, [txn_record("tx-done", 1001, 0, "CompleteAbort", {})], partition=0)
    checkpoint(ld, "replication-offset-checkpoint", {"orders-0": first + 2})
    write_records(os.path.join(ld, "__consumer_offsets-0"), [
        _group_meta(3, sg.ConsumerGroupMetadataKey, sg.ConsumerGroupMetadataValue, "cg-new", {"epoch": 4}),
        offset_commit("cg-new", "orders", 0, first),
        _group_meta(17, sg.StreamsGroupMetadataKey, sg.StreamsGroupMetadataValue, "wordcount",
                    {"epoch": 2, "metadataHash": 7, "assignmentConfigs": []}),
        offset_commit("wordcount", "orders", 0, first),
        _group_meta(11, sg.ShareGroupMetadataKey, sg.ShareGroupMetadataValue, "share-a", {"epoch": 1}),
        offset_commit("legacy", "orders", 0, 1),
    ])
    write_records(os.path.join(ld, "__share_group_state-0"), [
        _share_snapshot("share-a", 0, 0), _share_update("share-a", 0, first),   # the update moves the start offset
        _share_snapshot("share-b", 0, 1), _share_update("share-b", 0, -1),      # -1: start offset not moved
    ])
    r = CliRunner().invoke(cli, ["transactions", ld, "--partitions", "1", "--format", "json", "--now-ms", str(NOW)])
    assert r.exit_code == 1, r.output
    out = json.loads(r.stdout)
    (t,) = out["open"]
    assert t["classification"] == "hanging"
    part = next(p for p in out["partitions"] if p["topic"] == "orders")
    got = {(g["group"], g["kind"], g["committed_offset"], g["blocked"]) for g in part["groups"]}
    assert got == {("cg-new", "consumer", first, True), ("wordcount", "streams", first, True),
                   ("legacy", "unknown", 1, False), ("share-a", "share", first, True), ("share-b", "share", 1, False)}
    assert sorted(g["group"] for g in t["blocked_consumers"]) == ["cg-new", "share-a", "wordcount"]


def _txn_v2(txn_id: str, pid: int, epoch: int, state: str, *, previous: int = -1, nxt: int = -1) -> tuple[bytes, bytes]:
    """A TransactionLogValue v1 of a transactions v2 client (tag 2 clientTransactionVersion = 2, KIP-890)."""
    from kafkalog_cli.internal_topics.transaction_log import STATES

    key = _pref(0, sc.encode(st.TransactionLogKey, {"transactionalId": txn_id}, 0))
    value = _pref(1, sc.encode(st.TransactionLogValue, {
        "producerId": pid, "previousProducerId": previous, "nextProducerId": nxt, "producerEpoch": epoch,
        "transactionTimeoutMs": 60000, "transactionStatus": STATES.index(state), "transactionPartitions": [],
        "transactionLastUpdateTimestampMs": NOW, "transactionStartTimestampMs": -1, "clientTransactionVersion": 2}, 1))
    return key, value


def test_transactions_v2_rotated_producer_id_keeps_the_outcome(tmp_path: Path) -> None:
    """Transactions v2: the transaction that exhausts the epoch ends with the producer id rotated (the markers carry
    the old id at epoch 32767, the coordinator's CompleteCommit names the new id and the old one as previous). A
    copy that lost the COMMIT marker is hanging, and the coordinator's outcome is COMMIT, not "another producer"."""
    ld = str(tmp_path / "data")
    pdir = os.path.join(ld, "orders-0")
    pb = PartitionBuilder(pdir)
    pb.batch([(b"k", b"v")])
    pb.batch([(b"t1", b"x")], pid=5000, epoch=32766, txn=True)
    pb.write()
    txn_state_partition(ld, [_txn_v2("tx-v2", 7000, 0, "CompleteCommit", previous=5000)], partition=0)
    r = CliRunner().invoke(cli, ["transactions", ld, "--partitions", "1", "--format", "json", "--now-ms", str(NOW)])
    assert r.exit_code == 1, r.output
    (t,) = json.loads(r.stdout)["open"]
    assert t["classification"] == "hanging" and t["transactional_id"] == "tx-v2"
    assert "COMMITTED this transaction" in t["reason"] and "rotated to 7000" in t["reason"], t["reason"]
    assert t["committed_by_coordinator"] is True
