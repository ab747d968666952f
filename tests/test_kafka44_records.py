"""Issue 28: the record types Kafka added after 1eb7644 (the kafka-real build), up to 4.4, built by hand byte by byte
to their released layouts (an encoder independent of kafkalog's schema tables) and decoded field by field:
__consumer_offsets 16 (regular-expression subscriptions) and 17-24 (streams groups, KIP-1071), __share_group_state's
released ShareSnapshot/ShareUpdate values (4.0 and 4.1 layouts), __cluster_metadata's ClearElrRecord (28)."""

from __future__ import annotations

import base64
import json
import struct

import pytest

from kafkalog_cli.internal_topics import cluster_metadata as cm
from kafkalog_cli.internal_topics import consumer_offsets as cof
from kafkalog_cli.internal_topics import share_group_state as sgs

# ------------------------------------------------------------------------------------- a writer of our own


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def u16(v: int) -> bytes:
    return struct.pack(">H", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def kstr(s: str) -> bytes:  # a key's (non-flexible) string
    b = s.encode()
    return i16(len(b)) + b


def cstr(s: str | None) -> bytes:  # a compact string
    if s is None:
        return uvarint(0)
    b = s.encode()
    return uvarint(len(b) + 1) + b


def carr(items: list, enc) -> bytes:  # noqa: ANN001  # a compact array
    return uvarint(len(items) + 1) + b"".join(enc(x) for x in items)


NO_TAGS = uvarint(0)


def tagged(*fields: tuple[int, bytes]) -> bytes:
    return uvarint(len(fields)) + b"".join(uvarint(t) + uvarint(len(b)) + b for t, b in fields)


T1 = bytes(range(16))
T2 = bytes(range(16, 32))


def tid(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def task_ids(t: tuple[str, list[int]]) -> bytes:
    return cstr(t[0]) + carr(t[1], i32) + NO_TAGS


class Rec:
    def __init__(self, key: bytes | None, value: bytes | None, offset: int = 7) -> None:
        self.key, self.value, self.offset = key, value, offset


def _decoded(key: bytes, value: bytes | None) -> dict:
    d = cof.decode_json(Rec(key, value))
    assert "error" not in d, d
    return d


# ------------------------------------------------------------------------------- __consumer_offsets 16-24
def test_regular_expression_record_16() -> None:
    key = i16(16) + kstr("orders-app") + kstr("ord.*")
    value = i16(0) + carr(["orders", "orders-eu"], cstr) + i64(3) + i64(1_764_000_000_000) + NO_TAGS
    d = _decoded(key, value)
    assert d["key_schema"] == "ConsumerGroupRegularExpressionKey"
    assert d["key"] == {"groupId": "orders-app", "regularExpression": "ord.*"}
    assert d["value"] == {"topics": ["orders", "orders-eu"], "version": 3, "timestamp": 1_764_000_000_000}


def test_streams_group_metadata_17_with_a_tagged_field() -> None:
    key = i16(17) + kstr("wordcount")
    value = (i16(0) + i32(12) + i64(-99) + carr([("num.standby.replicas", "1")], lambda kv: cstr(kv[0]) + cstr(kv[1])
                                                  + NO_TAGS) + tagged((0, i32(11))))
    d = _decoded(key, value)
    assert d["key_schema"] == "StreamsGroupMetadataKey" and d["key"] == {"groupId": "wordcount"}
    assert d["value"] == {"epoch": 12, "metadataHash": -99, "validatedTopologyEpoch": 11,
                          "assignmentConfigs": [{"key": "num.standby.replicas", "value": "1"}]}
    # the tag left out: its default (-1) is not printed, as Kafka's JSON converter does
    d = _decoded(key, i16(0) + i32(12) + i64(5) + carr([], cstr) + NO_TAGS)
    assert d["value"] == {"epoch": 12, "metadataHash": 5, "assignmentConfigs": []}


def test_streams_group_partition_metadata_18_and_target_assignment_metadata_20() -> None:
    value = (i16(0) + carr([T1], lambda t: t + cstr("words") + i32(4)
                           + carr([(0, ["r1"])], lambda p: i32(p[0]) + carr(p[1], cstr) + NO_TAGS) + NO_TAGS) + NO_TAGS)
    d = _decoded(i16(18) + kstr("wordcount"), value)
    assert d["key"] == {"groupId": "wordcount"}
    assert d["value"] == {"topics": [{"topicId": tid(T1), "topicName": "words", "numPartitions": 4,
                                      "partitionMetadata": [{"partition": 0, "racks": ["r1"]}]}]}
    d = _decoded(i16(20) + kstr("wordcount"), i16(0) + i32(9) + NO_TAGS)
    assert d["key_schema"] == "StreamsGroupTargetAssignmentMetadataKey" and d["value"] == {"assignmentEpoch": 9}


def test_streams_group_member_metadata_19() -> None:
    key = i16(19) + kstr("wordcount") + kstr("member-1")
    value = (i16(0) + cstr(None) + cstr("rack-a") + cstr("client-1") + cstr("/10.1.2.3") + i32(60000) + i32(3)
             + cstr("process-7") + i8(1) + cstr("host-7") + u16(8080) + NO_TAGS
             + carr([("zone", "eu-1")], lambda kv: cstr(kv[0]) + cstr(kv[1]) + NO_TAGS) + NO_TAGS)
    d = _decoded(key, value)
    assert d["key"] == {"groupId": "wordcount", "memberId": "member-1"}
    assert d["value"] == {"instanceId": None, "rackId": "rack-a", "clientId": "client-1", "clientHost": "/10.1.2.3",
                          "rebalanceTimeoutMs": 60000, "topologyEpoch": 3, "processId": "process-7",
                          "userEndpoint": {"host": "host-7", "port": 8080},
                          "clientTags": [{"key": "zone", "value": "eu-1"}]}
    no_endpoint = (i16(0) + cstr("i") + cstr(None) + cstr("c") + cstr("h") + i32(1) + i32(2) + cstr("p") + i8(-1)
                   + carr([], cstr) + NO_TAGS)
    assert _decoded(key, no_endpoint)["value"]["userEndpoint"] is None


def test_streams_group_assignments_21_and_22() -> None:
    active, standby, warmup = [("0", [0, 1])], [("1", [2])], []
    value = (i16(0) + carr(active, task_ids) + carr(standby, task_ids) + carr(warmup, task_ids) + NO_TAGS)
    d = _decoded(i16(21) + kstr("wordcount") + kstr("m"), value)
    assert d["key_schema"] == "StreamsGroupTargetAssignmentMemberKey"
    assert d["value"] == {"activeTasks": [{"subtopologyId": "0", "partitions": [0, 1]}],
                          "standbyTasks": [{"subtopologyId": "1", "partitions": [2]}], "warmupTasks": []}
    value = (i16(0) + i32(8) + i32(7) + i8(2) + carr(active, task_ids) + carr(standby, task_ids)
             + carr(warmup, task_ids) + carr([("1", [3])], task_ids) + carr([], task_ids) + carr([], task_ids) + NO_TAGS)
    d = _decoded(i16(22) + kstr("wordcount") + kstr("m"), value)
    assert d["key_schema"] == "StreamsGroupCurrentMemberAssignmentKey"
    assert d["value"] == {"memberEpoch": 8, "previousMemberEpoch": 7, "state": 2,
                          "activeTasks": [{"subtopologyId": "0", "partitions": [0, 1]}],
                          "standbyTasks": [{"subtopologyId": "1", "partitions": [2]}], "warmupTasks": [],
                          "activeTasksPendingRevocation": [{"subtopologyId": "1", "partitions": [3]}],
                          "standbyTasksPendingRevocation": [], "warmupTasksPendingRevocation": []}


def test_streams_group_topology_23() -> None:
    def topic_info(t: tuple[str, int, int, list[tuple[str, str]]]) -> bytes:
        return (cstr(t[0]) + i32(t[1]) + i16(t[2])
                + carr(t[3], lambda kv: cstr(kv[0]) + cstr(kv[1]) + NO_TAGS) + NO_TAGS)

    sub = (cstr("0") + carr(["words"], cstr) + carr([], cstr)
           + carr([("wc-store-changelog", 0, 3, [("cleanup.policy", "compact")])], topic_info)
           + carr(["wc-repartition"], cstr) + carr([("wc-repartition", 4, -1, [])], topic_info)
           + carr([([0], [], [0])], lambda g: carr(g[0], i16) + carr(g[1], i16) + carr(g[2], i16) + NO_TAGS)
           + NO_TAGS)
    d = _decoded(i16(23) + kstr("wordcount"), i16(0) + i32(4) + carr([sub], lambda b: b) + NO_TAGS)
    assert d["key_schema"] == "StreamsGroupTopologyKey" and d["key"] == {"groupId": "wordcount"}
    assert d["value"] == {"epoch": 4, "subtopologies": [{
        "subtopologyId": "0", "sourceTopics": ["words"], "sourceTopicRegex": [],
        "stateChangelogTopics": [{"name": "wc-store-changelog", "partitions": 0, "replicationFactor": 3,
                                  "topicConfigs": [{"key": "cleanup.policy", "value": "compact"}]}],
        "repartitionSinkTopics": ["wc-repartition"],
        "repartitionSourceTopics": [{"name": "wc-repartition", "partitions": 4, "replicationFactor": -1,
                                     "topicConfigs": []}],
        "copartitionGroups": [{"sourceTopics": [0], "sourceTopicRegex": [], "repartitionSourceTopics": [0]}]}]}


def test_streams_resolved_topic_ids_24() -> None:
    value = i16(0) + i32(5) + carr([("0", [T1, T2])], lambda s: cstr(s[0]) + carr(s[1], lambda t: t) + NO_TAGS) + NO_TAGS
    d = _decoded(i16(24) + kstr("wordcount"), value)
    assert d["key_schema"] == "StreamsGroupTargetAssignmentResolvedTopicIdsKey"
    assert d["value"] == {"assignmentEpoch": 5,
                          "resolvedTopicIdsBySubtopology": [{"subtopologyId": "0", "topicIds": [tid(T1), tid(T2)]}]}


@pytest.mark.parametrize("version", [(4, 0, 0), (4, 4, 0)])
def test_dump_text_of_new_types_is_kafkas_json_never_unknown(version) -> None:  # noqa: ANN001
    """--offsets-decoder: the key as {"type":"<record type>","data":...} with the key's fields (the 4.0+ coordinator
    keys are read at version 0), the value as {"version":"0","data":...}; a tombstone as <DELETE>."""
    parser = cof.make(version)
    key = i16(19) + kstr("wc") + kstr("m1")
    k, v = parser.parse(Rec(key, None), None)
    assert (k, v) == ('{"type":"19","data":{"groupId":"wc","memberId":"m1"}}', "<DELETE>")
    k, v = parser.parse(Rec(i16(20) + kstr("wc"), i16(0) + i32(9) + NO_TAGS), None)
    assert (k, v) == ('{"type":"20","data":{"groupId":"wc"}}', '{"version":"0","data":{"assignmentEpoch":9}}')
    for rtype in range(0, 25):
        assert rtype in cof.key_tables(version)[0]
    k, _ = parser.parse(Rec(i16(25) + kstr("wc"), None), None)
    assert k == "Unknown record type 25 at offset 7, skipping."


def test_3_9_still_stops_at_type_8() -> None:
    k, _ = cof.make((3, 9, 0)).parse(Rec(i16(16) + kstr("g") + kstr("r"), None), None)
    assert k == "Unknown record type 16 at offset 7, skipping."


# ----------------------------------------------------------------------------------- __share_group_state
SNAP_KEY = i16(0) + kstr("share-g") + T1 + i32(2)
UPD_KEY = i16(1) + kstr("share-g") + T1 + i32(2)


def batch(b: tuple[int, int, int, int]) -> bytes:
    return i64(b[0]) + i64(b[1]) + i8(b[2]) + i16(b[3]) + NO_TAGS


def test_share_snapshot_released_layout_41() -> None:
    """4.1+: int32 snapshot epoch (PR #20016), createTimestamp/writeTimestamp (PR #19432), value version 0."""
    value = (i16(0) + i32(70000) + i32(3) + i32(5) + i64(100) + i64(1_744_356_362_818) + i64(1_744_356_362_900)
             + carr([(100, 109, 2, 1), (110, 119, 0, 3)], batch) + NO_TAGS)
    d = sgs.decode_json(Rec(SNAP_KEY, value))
    assert "error" not in d, d
    assert d["key"] == {"groupId": "share-g", "topicId": tid(T1), "partition": 2}
    assert d["value"] == {"snapshotEpoch": 70000, "stateEpoch": 3, "leaderEpoch": 5, "startOffset": 100,
                          "createTimestamp": 1_744_356_362_818, "writeTimestamp": 1_744_356_362_900,
                          "stateBatches": [
                              {"firstOffset": 100, "lastOffset": 109, "deliveryState": 2, "deliveryCount": 1},
                              {"firstOffset": 110, "lastOffset": 119, "deliveryState": 0, "deliveryCount": 3}]}
    k, v = sgs.make((4, 4, 0)).parse(Rec(SNAP_KEY, value), None)
    assert json.loads(k) == {"type": "0", "data": {"groupId": "share-g", "topicId": tid(T1), "partition": 2}}
    assert json.loads(v)["data"]["createTimestamp"] == 1_744_356_362_818


def test_share_update_released_layout() -> None:
    value = i16(0) + i32(70001) + i32(6) + i64(-1) + carr([(120, 120, 4, 5)], batch) + NO_TAGS
    d = sgs.decode_json(Rec(UPD_KEY, value))
    assert d["value_schema"] == "ShareUpdateValue" and d["value_version"] == 0
    assert d["value"] == {"snapshotEpoch": 70001, "leaderEpoch": 6, "startOffset": -1, "stateBatches": [
        {"firstOffset": 120, "lastOffset": 120, "deliveryState": 4, "deliveryCount": 5}]}


def test_share_snapshot_of_40_under_40_profile() -> None:
    """Kafka 4.0 wrote a uint16 snapshot epoch and no timestamps in the same value version 0."""
    value = i16(0) + u16(65535) + i32(3) + i32(5) + i64(100) + carr([(100, 101, 2, 1)], batch) + NO_TAGS
    k, v = sgs.make((4, 0, 0)).parse(Rec(SNAP_KEY, value), None)
    assert json.loads(v) == {"version": "0", "data": {"snapshotEpoch": 65535, "stateEpoch": 3, "leaderEpoch": 5,
                                                      "startOffset": 100, "stateBatches": [
                                                          {"firstOffset": 100, "lastOffset": 101, "deliveryState": 2,
                                                           "deliveryCount": 1}]}}
    # the same bytes are too short for the 4.1 layout: a located error, never a misread
    _, v41 = sgs.make((4, 1, 0)).parse(Rec(SNAP_KEY, value), None)
    assert v41 is None
    assert sgs.make((4, 1, 0)).parse(Rec(SNAP_KEY, value), None)[0].startswith("Error at offset 7, skipping.")


# ------------------------------------------------------------------------------------ __cluster_metadata
def test_clear_elr_record_28() -> None:
    value = uvarint(1) + uvarint(28) + uvarint(0) + cstr("orders") + NO_TAGS
    d = cm.decode_json(Rec(None, value))
    assert d == {"offset": 7, "type": "CLEAR_ELR_RECORD", "api_key": 28, "version": 0, "data": {"topicName": "orders"}}
    _, text = cm.make((4, 4, 0)).parse(Rec(None, value), None)
    assert text == '{"type":"CLEAR_ELR_RECORD","version":0,"data":{"topicName":"orders"}}'


def test_format_json_reads_a_40_share_snapshot_with_its_layout() -> None:
    value = i16(0) + u16(7) + i32(3) + i32(5) + i64(100) + carr([], batch) + NO_TAGS
    d = sgs.decode_json(Rec(SNAP_KEY, value))
    assert d["layout"] == "4.0" and d["value"] == {"snapshotEpoch": 7, "stateEpoch": 3, "leaderEpoch": 5,
                                                   "startOffset": 100, "stateBatches": []}
    bad = sgs.decode_json(Rec(SNAP_KEY, i16(0) + b"\x00"))  # neither layout: the newest layout's error
    assert bad["error"].startswith("Could not read record with version 0 from value's buffer") and "layout" not in bad


def test_share_group_state_partition_metadata_15_layout_41() -> None:
    """4.1 put InitializingTopics first and a CreateTimestamp in each initializing/initialized topic (25002b6), in
    the same value version 0: 4.1+ profiles read that layout, 4.0's the one before (1eb7644's)."""
    def info(t: tuple[bytes, str, list[int], int]) -> bytes:
        return t[0] + cstr(t[1]) + carr(t[2], i32) + i64(t[3]) + NO_TAGS

    key = i16(15) + kstr("share-g")
    value = (i16(0) + carr([(T1, "orders", [0, 1], 1_760_000_000_000)], info) + carr([(T2, "pay", [2], 5)], info)
             + carr([(T1, "old")], lambda t: t[0] + cstr(t[1]) + NO_TAGS) + NO_TAGS)
    d = _decoded(key, value)
    assert "layout" not in d
    assert d["value"] == {
        "initializingTopics": [{"topicId": tid(T1), "topicName": "orders", "partitions": [0, 1],
                                "createTimestamp": 1_760_000_000_000}],
        "initializedTopics": [{"topicId": tid(T2), "topicName": "pay", "partitions": [2], "createTimestamp": 5}],
        "deletingTopics": [{"topicId": tid(T1), "topicName": "old"}]}
    assert cof.make((4, 4, 0)).parse(Rec(key, value), None)[1].startswith('{"version":"0","data":{"initializingTopics"')
    old = (i16(0) + carr([(T2, "pay", [2])], lambda t: t[0] + cstr(t[1]) + carr(t[2], i32) + NO_TAGS)
           + carr([], cstr) + NO_TAGS)
    k40, v40 = cof.make((4, 0, 0)).parse(Rec(key, old), None)
    assert json.loads(v40)["data"] == {"initializedTopics": [{"topicId": tid(T2), "topicName": "pay", "partitions": [2]}],
                                       "deletingTopics": []}
    assert cof.decode_json(Rec(key, old))["layout"] == "4.0"
