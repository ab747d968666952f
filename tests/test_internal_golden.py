"""Golden text of the offsets and transaction-log decoders per Kafka version (expected strings written from the
spec §3.10 and errata E4/E5/E18/C.5, not from our output)."""

from __future__ import annotations

import struct

import pytest

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.format.batch import Record
from kafkalog_cli.internal_topics import decode_json, make_parser
from kafkalog_cli.internal_topics import schema as sc
from kafkalog_cli.internal_topics import schemas_group as sg
from kafkalog_cli.internal_topics import schemas_txn_share as st
from kafkalog_cli.internal_topics.cluster_metadata import encode_frame
from kafkalog_cli.internal_topics.schemas_metadata import TopicRecord
from kafkalog_cli.versions import profile_for


def pref(version: int, body: bytes) -> bytes:
    return struct.pack(">h", version) + body


def offset_key(group="g1", topic="t", partition=0, v=1) -> bytes:
    return pref(v, sc.encode(sg.OffsetCommitKey, {"group": group, "topic": topic, "partition": partition}, v))


def offset_value(offset=42, metadata="", v=3) -> bytes:
    return pref(v, sc.encode(sg.OffsetCommitValue, {"offset": offset, "leaderEpoch": 5, "metadata": metadata,
                                                    "commitTimestamp": 1000, "expireTimestamp": -1}, v))


def rec(key, value, offset=5) -> Record:  # noqa: ANN001
    return Record(offset=offset, timestamp=0, key=key, value=value)


def parse(kind: str, version: str, r: Record):
    return make_parser(kind, profile_for(version)).parse(r, None)


# ------------------------------------------------------------------------------------------------ offsets
@pytest.mark.parametrize(
    "version,expected",
    [
        ("2.3", ("offset::g1:t:0", "42")),
        ("2.4.1", ("offset_commit::group=g1,partition=t-0", "offset=42")),
        ("3.6", ("offset_commit::group=g1,partition=t-0", "offset=42")),
        ("3.8", ('{"type":"1","data":{"group":"g1","topic":"t","partition":0}}',
                 '{"version":"3","data":{"offset":42,"leaderEpoch":5,"metadata":"","commitTimestamp":1000}}')),
        ("4.0", ('{"type":"1","data":{"group":"g1","topic":"t","partition":0}}',
                 '{"version":"3","data":{"offset":42,"leaderEpoch":5,"metadata":"","commitTimestamp":1000}}')),
    ],
)
def test_offset_commit(version: str, expected) -> None:  # noqa: ANN001
    assert parse("offsets", version, rec(offset_key(), offset_value())) == expected


def test_offset_commit_metadata_and_tombstone() -> None:
    r = rec(offset_key(), offset_value(metadata="m"))
    assert parse("offsets", "2.3", r) == ("offset::g1:t:0", "42:m")
    assert parse("offsets", "3.7", r) == ("offset_commit::group=g1,partition=t-0", "offset=42,metadata=m")
    tomb = rec(offset_key(), None)
    assert parse("offsets", "2.3", tomb) == (None, None)
    assert parse("offsets", "3.7", tomb) == ("offset_commit::group=g1,partition=t-0", "<DELETE>")
    assert parse("offsets", "3.9", tomb)[1] == "<DELETE>"


def test_unknown_key_version_per_version() -> None:
    r = rec(pref(7, b"junk"), b"\x00\x00")
    assert parse("offsets", "3.5", r) == ("unknown::version=7", None)
    with pytest.raises(InvalidRecordError, match="^Unknown group metadata message version: 7$"):
        parse("offsets", "3.4", r)
    with pytest.raises(InvalidRecordError, match="^Unknown message key schema version 7$"):
        parse("offsets", "2.5", r)
    with pytest.raises(InvalidRecordError, match="^Unknown offset schema version 7$"):
        parse("offsets", "2.3", r)
    r99 = rec(pref(99, b""), b"\x00\x00", offset=8)
    assert parse("offsets", "3.9", r99) == ("Unknown record type 99 at offset 8, skipping.", None)
    # share-group types exist only from 4.0
    r9 = rec(pref(9, b""), None, offset=8)
    assert parse("offsets", "3.9", r9) == ("Unknown record type 9 at offset 8, skipping.", None)


def test_missing_key() -> None:
    r = rec(None, offset_value(), offset=5)
    with pytest.raises(InvalidRecordError, match=r"^Failed to decode message using offset topic decoder \(message had a missing key\)$"):
        parse("offsets", "3.7", r)
    with pytest.raises(InvalidRecordError, match=r"^Failed to decode message at offset 5 using offset topic decoder"):
        parse("offsets", "3.9", r)
    with pytest.raises(InvalidRecordError, match=r"^Failed to decode message at offset 5 using the specified decoder"):
        parse("offsets", "4.0", r)
    assert parse("offsets", "2.3", rec(None, None)) == (None, None)


def test_json_decode_error_is_inline() -> None:
    r = rec(offset_key(), pref(9, b""), offset=3)
    key, payload = parse("offsets", "3.9", r)
    # the generated OffsetCommitValue.read checks no version: it reads v9 with its newest layout and the empty body
    # underflows (a BufferUnderflowException has no message); 3.9.0-rc3's and 1eb7644's tools print exactly this
    assert key == ("Error at offset 3, skipping. Could not read record with version 9 from value's buffer due to: "
                   "null.")
    assert payload is None


def _group_value(protocol_type: str, members: list[dict]) -> bytes:
    v = 3
    return pref(v, sc.encode(sg.GroupMetadataValue, {"protocolType": protocol_type, "generation": 3, "protocol": "range",
                                                     "leader": "m1", "currentStateTimestamp": 77, "members": members}, v))


def _assignment(parts: dict[str, list[int]], user: bytes | None) -> bytes:
    return pref(1, sc.encode(sg.ConsumerProtocolAssignment, {"assignedPartitions": [{"topic": t, "partitions": p} for t, p in parts.items()],
                                                             "userData": user}, 1))


def _member(mid: str, assignment: bytes, subscription: bytes = b"\x00\x01") -> dict:
    return {"memberId": mid, "groupInstanceId": None, "clientId": "c", "clientHost": "/h", "rebalanceTimeout": 1,
            "sessionTimeout": 2, "subscription": subscription, "assignment": assignment}


def test_group_metadata_text() -> None:
    key = pref(2, sc.encode(sg.GroupMetadataKey, {"group": "g1"}, 2))
    value = _group_value("consumer", [_member("m1", _assignment({"t": [0, 1]}, b"\x00\x0a"))])
    assert parse("offsets", "3.6", rec(key, value)) == (
        "group_metadata::group=g1",
        '{"protocolType":"consumer","protocol":"range","generationId":3,"assignment":"{m1=[t-0, t-1]:A}"}',
    )
    assert parse("offsets", "2.3", rec(key, value))[0] == '{"metadata":"g1"}'
    # empty user data: no suffix; all-zero user data: ":0"
    v2 = _group_value("consumer", [_member("m1", _assignment({"t": [0]}, b""))])
    assert parse("offsets", "3.6", rec(key, v2))[1].endswith('"assignment":"{m1=[t-0]}"}')
    v3 = _group_value("consumer", [_member("m1", _assignment({"t": [0]}, b"\x00\x00"))])
    assert parse("offsets", "3.6", rec(key, v3))[1].endswith('"assignment":"{m1=[t-0]:0}"}')
    # a non-consumer protocol prints the raw assignment as hex
    v4 = _group_value("connect", [_member("w1", b"\x01\xff")])
    assert parse("offsets", "3.6", rec(key, v4))[1] == (
        '{"protocolType":"connect","protocol":"range","generationId":3,"assignment":"{w1=1FF}"}')


def test_group_metadata_json_embeds_consumer_protocol() -> None:
    key = pref(2, sc.encode(sg.GroupMetadataKey, {"group": "g1"}, 2))
    value = _group_value("consumer", [_member("m1", _assignment({"t": [0]}, None), subscription=b"\x00")])
    _, payload = parse("offsets", "3.8", rec(key, value))
    assert '"assignment":{"assignedPartitions":[{"topic":"t","partitions":[0]}],"userData":null}' in payload
    assert '"subscription":"AA=="' in payload  # undecodable subscription stays as base64 bytes
    assert payload.startswith('{"version":"3","data":{"protocolType":"consumer","generation":3,"protocol":"range","leader":"m1"')


# --------------------------------------------------------------------------------------------- transactions
def txn_key(tid: str = "tx") -> bytes:
    return pref(0, sc.encode(st.TransactionLogKey, {"transactionalId": tid}, 0))


def txn_value(status: int = 1, parts=None, v: int = 0) -> bytes:  # noqa: ANN001
    return pref(v, sc.encode(st.TransactionLogValue, {
        "producerId": 7, "producerEpoch": 1, "transactionTimeoutMs": 60000, "transactionStatus": status,
        "transactionPartitions": parts if parts is not None else [{"topic": "t", "partitionIds": [0]}],
        "transactionLastUpdateTimestampMs": 100, "transactionStartTimestampMs": 90}, v))


TXN_TEXT = "producerId:7,producerEpoch:1,state=Ongoing,partitions=[t-0],txnLastUpdateTimestamp=100,txnTimeoutMs=60000"


@pytest.mark.parametrize(
    "version,expected",
    [
        ("2.3", ("transactionalId=tx", TXN_TEXT.replace("[t-0]", "Set(t-0)"))),
        ("2.5", ("transaction_metadata::transactionalId=tx", TXN_TEXT)),
        ("3.6", ("transaction_metadata::transactionalId=tx", TXN_TEXT)),
        ("3.9", ("transaction_metadata::transactionalId=tx", TXN_TEXT)),
        ("4.0", ('{"type":"0","data":{"transactionalId":"tx"}}',
                 '{"version":"0","data":{"producerId":7,"producerEpoch":1,"transactionTimeoutMs":60000,"transactionStatus":1,'
                 '"transactionPartitions":[{"topic":"t","partitionIds":[0]}],"transactionLastUpdateTimestampMs":100,'
                 '"transactionStartTimestampMs":90}}')),
    ],
)
def test_transaction_golden(version: str, expected) -> None:  # noqa: ANN001
    assert parse("transaction-log", version, rec(txn_key(), txn_value())) == expected


def test_transaction_edge_cases() -> None:
    empty = txn_value(status=0, parts=[])
    assert parse("transaction-log", "3.6", rec(txn_key(), empty))[1].startswith("producerId:7,producerEpoch:1,state=Empty,partitions=[],")
    assert parse("transaction-log", "3.6", rec(txn_key(), None)) == ("transaction_metadata::transactionalId=tx", "<DELETE>")
    with pytest.raises(InvalidRecordError, match="NullPointerException"):
        parse("transaction-log", "2.3", rec(txn_key(), None))
    with pytest.raises(InvalidRecordError, match="NullPointerException"):
        parse("transaction-log", "3.9", rec(None, txn_value()))
    unknown = rec(pref(3, b""), None)
    assert parse("transaction-log", "3.5", unknown) == ("unknown::version=3", None)
    with pytest.raises(InvalidRecordError, match="^Unknown version 3 from the transaction log message$"):
        parse("transaction-log", "3.4", unknown)
    with pytest.raises(InvalidRecordError, match="^Unknown transaction log message key schema version 3$"):
        parse("transaction-log", "2.7", unknown)
    # flexible v1 value with tagged fields: tagged defaults are omitted from the JSON, others printed
    v1 = pref(1, sc.encode(st.TransactionLogValue, {
        "producerId": 7, "previousProducerId": 6, "producerEpoch": 1, "transactionTimeoutMs": 5, "transactionStatus": 4,
        "transactionPartitions": None, "transactionLastUpdateTimestampMs": 1, "transactionStartTimestampMs": 1,
        "clientTransactionVersion": 0}, 1))
    payload = parse("transaction-log", "4.0", rec(txn_key(), v1))[1]
    assert '"previousProducerId":6' in payload and "nextProducerId" not in payload and "clientTransactionVersion" not in payload


def test_transaction_partitions_hash_order() -> None:
    """Scala 2.13 mutable.HashSet order: bucket = improved hash & 15, where TopicPartition.hashCode =
    31 * (31 + p) + topic.hashCode. For topic "t" (116): p=0 -> 1077, p=1 -> 1108, p=2 -> 1139; improved hashes
    equal the hashes (< 65536); buckets 1077 & 15 = 5, 1108 & 15 = 4, 1139 & 15 = 3: printed order t-2, t-1, t-0."""
    parts = [{"topic": "t", "partitionIds": [0, 1, 2]}]
    assert "partitions=[t-2,t-1,t-0]," in parse("transaction-log", "3.6", rec(txn_key(), txn_value(parts=parts)))[1]


# ------------------------------------------------------------------------------------ other decoders
def test_cluster_metadata_and_json_view() -> None:
    value = encode_frame(TopicRecord, {"name": "orders", "topicId": "tpx8pd1IQDqJwMfGzXj6GA"}, 0)
    r = rec(None, value, offset=11)
    assert parse("cluster-metadata", "3.6", r) == (
        None, '{"type":"TOPIC_RECORD","version":0,"data":{"name":"orders","topicId":"tpx8pd1IQDqJwMfGzXj6GA"}}')
    assert parse("cluster-metadata", "3.6", rec(None, b"\x00\x02\x00", 4)) == (
        None, "Error at 4, skipping. Could not deserialize metadata record with frame version 0. Note that upgrades "
              "from the preview release of KRaft in 2.8 to newer versions are not supported.")
    assert parse("cluster-metadata", "3.6", rec(None, value + b"\x00", 4))[1] == "Error at 4, skipping. Found 1 byte(s) of garbage after 2"
    assert decode_json("cluster-metadata", r)["data"] == {"name": "orders", "topicId": "tpx8pd1IQDqJwMfGzXj6GA"}
    j = decode_json("offsets", rec(offset_key(), offset_value()))
    assert j["key_type"] == 1 and j["key"]["group"] == "g1" and j["value_version"] == 3 and j["value"]["offset"] == 42
    assert decode_json("transaction-log", rec(txn_key(), None))["value"] is None


def test_remote_log_metadata_text() -> None:
    from kafkalog_cli.internal_topics.schemas_remote import RemotePartitionDeleteMetadataRecord
    value = encode_frame(RemotePartitionDeleteMetadataRecord, {
        "topicIdPartition": {"name": "t", "id": "tpx8pd1IQDqJwMfGzXj6GA", "partition": 3},
        "brokerId": 1, "eventTimestampMs": 9, "remotePartitionDeleteState": 0}, 0)
    assert parse("remote-log-metadata", "3.9", rec(None, value)) == (
        None, "RemotePartitionDeleteMetadata{topicPartition=tpx8pd1IQDqJwMfGzXj6GA:t-3, state=DELETE_PARTITION_MARKED, "
              "eventTimestampMs=9, brokerId=1}")
