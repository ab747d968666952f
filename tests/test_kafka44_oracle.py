"""Issue 28: every __consumer_offsets record type of the new group protocols (KIP-848 consumer groups 3-8, KIP-932
share groups 9-15) built by Kafka's own generated classes and GroupCoordinatorRecordSerde (kafka-real's Records at
1eb7644), written by UnifiedLog, then decoded by kafkalog: field by field against the JSON Kafka serialised, and the
``--offsets-decoder`` text against Kafka's own DumpLogSegments of the same partition."""

from __future__ import annotations

import base64

import dump_oracle as do
import oracle_internal as oi
import pytest
from kafka_real import launcher, write_partition

from kafkalog_cli.internal_topics import consumer_offsets as cof
from kafkalog_cli.internal_topics import share_group_state as sgs

pytestmark = pytest.mark.oracle

T1 = base64.urlsafe_b64encode(bytes(range(16))).decode().rstrip("=")
T2 = base64.urlsafe_b64encode(bytes(range(16, 32))).decode().rstrip("=")
PARTS = [{"topicId": T1, "partitions": [0, 3]}, {"topicId": T2, "partitions": [7]}]
G = {"groupId": "orders-app"}
GM = {"groupId": "orders-app", "memberId": "m-1"}


def _m(cls: str, data: dict, version: int = 0) -> dict:
    return {"class": cls, "version": version, "json": data}


# (record type, key class, key version at 1eb7644 = the record type, key json, value class, value json)
CASES = [
    (3, "ConsumerGroupMetadataKey", G, "ConsumerGroupMetadataValue", {"epoch": 42}),
    (4, "ConsumerGroupPartitionMetadataKey", G, "ConsumerGroupPartitionMetadataValue",
     {"topics": [{"topicId": T1, "topicName": "orders", "numPartitions": 8,
                  "partitionMetadata": [{"partition": 0, "racks": ["r1", "r2"]}]}]}),
    (5, "ConsumerGroupMemberMetadataKey", GM, "ConsumerGroupMemberMetadataValue",
     {"instanceId": "inst-1", "rackId": None, "clientId": "c1", "clientHost": "/10.0.0.9",
      "subscribedTopicNames": ["orders", "payments"], "subscribedTopicRegex": "ord.*", "rebalanceTimeoutMs": 30000,
      "serverAssignor": "uniform",
      "classicMemberMetadata": {"sessionTimeoutMs": 45000,
                                "supportedProtocols": [{"name": "range", "metadata": "AAE="}]}}),
    (6, "ConsumerGroupTargetAssignmentMetadataKey", G, "ConsumerGroupTargetAssignmentMetadataValue",
     {"assignmentEpoch": 41}),
    (7, "ConsumerGroupTargetAssignmentMemberKey", GM, "ConsumerGroupTargetAssignmentMemberValue",
     {"topicPartitions": PARTS}),
    (8, "ConsumerGroupCurrentMemberAssignmentKey", GM, "ConsumerGroupCurrentMemberAssignmentValue",
     {"memberEpoch": 42, "previousMemberEpoch": 41, "state": 1, "assignedPartitions": PARTS,
      "partitionsPendingRevocation": [{"topicId": T2, "partitions": [1]}]}),
    (9, "ShareGroupPartitionMetadataKey", G, "ShareGroupPartitionMetadataValue",
     {"topics": [{"topicId": T1, "topicName": "orders", "numPartitions": 3, "partitionMetadata": []}]}),
    (10, "ShareGroupMemberMetadataKey", GM, "ShareGroupMemberMetadataValue",
     {"rackId": "r1", "clientId": "c1", "clientHost": "/10.0.0.9", "subscribedTopicNames": ["orders"]}),
    (11, "ShareGroupMetadataKey", G, "ShareGroupMetadataValue", {"epoch": 6}),
    (12, "ShareGroupTargetAssignmentMetadataKey", G, "ShareGroupTargetAssignmentMetadataValue",
     {"assignmentEpoch": 6}),
    (13, "ShareGroupTargetAssignmentMemberKey", GM, "ShareGroupTargetAssignmentMemberValue",
     {"topicPartitions": PARTS}),
    (14, "ShareGroupCurrentMemberAssignmentKey", GM, "ShareGroupCurrentMemberAssignmentValue",
     {"memberEpoch": 6, "previousMemberEpoch": 5, "state": 0, "assignedPartitions": PARTS}),
    (15, "ShareGroupStatePartitionMetadataKey", G, "ShareGroupStatePartitionMetadataValue",
     {"initializedTopics": [{"topicId": T1, "topicName": "orders", "partitions": [0, 1]}],
      "deletingTopics": [{"topicId": T2, "topicName": "old"}]}),
]


def _schema_fields(cls: str) -> set[str]:
    return {f.name for f in getattr(__import__("kafkalog_cli.internal_topics.schemas_group",
                                               fromlist=[cls]), cls).fields}


@pytest.fixture(scope="module")
def serialised() -> list[tuple[str, str | None]]:
    reqs = []
    for rtype, kcls, kjson, vcls, vjson in CASES:
        assert set(vjson) <= _schema_fields(vcls), vcls  # the JSON names only fields the schema has
        reqs.append({"op": "coordinator", "serde": "group", "key": _m(kcls, kjson, rtype), "value": _m(vcls, vjson)})
        reqs.append({"op": "coordinator", "serde": "group", "key": _m(kcls, kjson, rtype), "value": None})
    answers = oi._records(launcher(), reqs)
    return [(a["key"], a.get("value")) for a in answers]


class _Rec:
    def __init__(self, offset: int, key: str, value: str | None) -> None:
        self.offset = offset
        self.key = bytes.fromhex(key)
        self.value = None if value is None else bytes.fromhex(value)


def test_every_group_record_type_decodes_field_by_field(serialised) -> None:  # noqa: ANN001
    for i, (rtype, kcls, kjson, vcls, vjson) in enumerate(CASES):
        key, value = serialised[2 * i]
        d = cof.decode_json(_Rec(2 * i, key, value))
        assert "error" not in d, (rtype, d)
        assert (d["key_type"], d["key_schema"], d["value_schema"], d["value_version"]) == (rtype, kcls, vcls, 0)
        assert d["key"] == kjson, rtype
        assert d["value"] == vjson, rtype  # every field Kafka wrote, with its value
        tomb = cof.decode_json(_Rec(2 * i + 1, *serialised[2 * i + 1]))
        assert tomb["key"] == kjson and tomb["value"] is None


def test_new_protocol_records_dump_as_kafka_does(kafka_real, tmp_path, serialised) -> None:  # noqa: ANN001
    plan = {"topic": "__consumer_offsets", "partition": 0, "config": {},
            "ops": [{"op": "append", "records": [{"key": {"hex": k}, "value": None if v is None else {"hex": v}}
                                                 for k, v in serialised[j:j + 4]]}
                    for j in range(0, len(serialised), 4)], "shutdown": "clean"}
    part = write_partition(kafka_real, tmp_path / "co", plan)
    problems = []
    for f in sorted(part.glob("*.log")):
        for extra in ([], ["--skip-record-metadata"]):
            args = ["--files", str(f), "--offsets-decoder", *extra]
            k = do.kafka(kafka_real, args)
            assert "Unknown record type" not in k.stdout.decode()  # 1eb7644's serde knows 0-15
            d = do.judge(k, do.kafkalog(args, "4.0"), [str(f)])
            if d:
                problems.append(d)
            # 4.4 reads type 15 with 4.1's layout (InitializingTopics first, 25002b6): 1eb7644's value is an error
            # there, every other line is Kafka's
            ours = do.kafkalog(args, "4.4").stdout.decode().splitlines()
            theirs = k.stdout.decode().splitlines()
            assert len(ours) == len(theirs) and "Unknown record type" not in "\n".join(ours)
            differ = [(a, b) for a, b in zip(ours, theirs) if a != b]
            assert differ and all("Error at offset" in a and '{"type":"15"' in b and '"version":"0"' in b
                                  for a, b in differ), differ[:2]
    assert not problems, "\n".join(problems)


def test_share_update_of_the_pre_release_writer_is_not_misread(kafka_real) -> None:  # noqa: ANN001
    """1eb7644's ShareCoordinator wrote ShareUpdateValue at version 1 (SHARE_UPDATE_RECORD_VALUE_VERSION, fixed by
    KAFKA-18437): no release reads that version, so kafkalog reports it instead of decoding a layout it is not."""
    req = {"op": "coordinator", "serde": "share",
           "key": _m("ShareUpdateKey", {"groupId": "g", "topicId": T1, "partition": 0}, 1),
           "value": _m("ShareUpdateValue", {"snapshotEpoch": 1, "leaderEpoch": 3, "startOffset": 5, "stateBatches": []}, 1)}
    (a,) = oi._records(launcher(), [req])
    d = sgs.decode_json(_Rec(0, a["key"], a.get("value")))
    assert d["error"].startswith("Could not read record with version 1 from value's buffer"), d
