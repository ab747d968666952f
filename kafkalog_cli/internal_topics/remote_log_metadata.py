"""``--remote-log-metadata-decoder`` (3.9+): ``__remote_log_metadata`` records as the Java ``toString()`` of the
objects ``RemoteLogMetadataSerde`` builds, or ``Error at offset <o>, skipping. <message>`` inline.

Framing is the KRaft metadata one (frame version 1, apiKey, version); apiKeys 0-3 are the storage module's own
record types. The objects' constructors validate (negative start offset, empty leader epochs, unknown state) and
their messages are what the tool prints.
"""

from __future__ import annotations

from typing import Any

from kafkalog_cli.internal_topics import schema as sc
from kafkalog_cli.internal_topics.cluster_metadata import MetadataParseError, _unchecked, read_frame
from kafkalog_cli.internal_topics.schemas_remote import MESSAGES

# the generated records' own ``read`` checks no version (a version-2 RemoteLogSegmentMetadataSnapshotRecord is read
# with its version-0 fields); each nested struct's reader does ("Can't read version 2 of SegmentLeaderEpochEntry",
# generated RemoteLogSegmentMetadataSnapshotRecord.java:439-441 at 1eb7644 and 3.9.0-rc3), which ``read_frame``
# applies after the read: an unknown version fails with "Failed to deserialize record with type K" only where the
# record holds a nested struct (checked against both tools: tests/test_dump_oracle_remote.py)
BY_KEY = _unchecked(MESSAGES)
STRICT = {m.api_key: m for m in MESSAGES if m.api_key is not None}  # --format json: a version Kafka never wrote is an error
STRUCT_VALID = {k: m.valid for k, m in STRICT.items()}
# a null value: the parser's ``record.value.remaining`` (DumpLogSegments.scala:592 at 3.9.0-rc3, :621 at 1eb7644)
# throws a NullPointerException whose message is the JDK's helpful-NPE text (JDK 14+, on by default from 15; the
# tools of 3.9/4.0 checked on JDK 17)
NULL_VALUE = ('Cannot invoke "java.nio.ByteBuffer.remaining()" because the return value of '
              '"org.apache.kafka.common.record.Record.value()" is null')
SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED", 3: "DELETE_SEGMENT_FINISHED"}
DELETE_STATES = {0: "DELETE_PARTITION_MARKED", 1: "DELETE_PARTITION_STARTED", 2: "DELETE_PARTITION_FINISHED"}


class RemoteError(Exception):
    pass


def _tip(t: dict[str, Any]) -> str:
    return f"{t['id']}:{t['name']}-{t['partition']}"


def _custom(b: bytes | None) -> str:
    return "Optional.empty" if b is None else f"Optional[CustomMetadata{{{len(b)} bytes}}]"


def _epochs(entries: list[dict[str, Any]]) -> str:
    m: dict[int, int] = {}
    for e in entries or []:
        m[e["leaderEpoch"]] = e["offset"]
    if not m:
        raise RemoteError("segmentLeaderEpochs can not be null or empty")
    return "{" + ", ".join(f"{k}={m[k]}" for k in sorted(m)) + "}"


def _check_offsets(v: dict[str, Any]) -> None:
    if v["startOffset"] < 0:
        raise RemoteError(f"Unexpected start offset = {v['startOffset']}. StartOffset for a remote segment cannot be negative")
    if v["endOffset"] < v["startOffset"]:
        raise RemoteError(
            f"Unexpected end offset = {v['endOffset']}. EndOffset for a remote segment cannot be less than startOffset = {v['startOffset']}"
        )


def _state(table: dict[int, str], sid: int) -> str:
    if sid not in table:
        raise RemoteError("state can not be null")
    return table[sid]


def render(msg: sc.Message, v: dict[str, Any]) -> str:
    """The ``toString()`` of the object built from one record."""
    if msg.api_key == 0:
        _check_offsets(v)
        epochs = _epochs(v["segmentLeaderEpochs"])
        state = _state(SEGMENT_STATES, v["remoteLogSegmentState"])
        sid = v["remoteLogSegmentId"]
        return (
            f"RemoteLogSegmentMetadata{{remoteLogSegmentId=RemoteLogSegmentId{{topicIdPartition={_tip(sid['topicIdPartition'])}, id={sid['id']}}}"
            f", startOffset={v['startOffset']}, endOffset={v['endOffset']}, brokerId={v['brokerId']}"
            f", maxTimestampMs={v['maxTimestampMs']}, eventTimestampMs={v['eventTimestampMs']}, segmentLeaderEpochs={epochs}"
            f", segmentSizeInBytes={v['segmentSizeInBytes']}, customMetadata={_custom(v['customMetadata'])}, state={state}}}"
        )
    if msg.api_key == 1:
        state = _state(SEGMENT_STATES, v["remoteLogSegmentState"])
        sid = v["remoteLogSegmentId"]
        return (
            f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId=RemoteLogSegmentId{{topicIdPartition={_tip(sid['topicIdPartition'])}, id={sid['id']}}}"
            f", customMetadata={_custom(v['customMetadata'])}, state={state}, eventTimestampMs={v['eventTimestampMs']}, brokerId={v['brokerId']}}}"
        )
    if msg.api_key == 2:
        if v["remotePartitionDeleteState"] not in DELETE_STATES:
            raise RemoteError("null")
        return (
            f"RemotePartitionDeleteMetadata{{topicPartition={_tip(v['topicIdPartition'])}, state={DELETE_STATES[v['remotePartitionDeleteState']]}"
            f", eventTimestampMs={v['eventTimestampMs']}, brokerId={v['brokerId']}}}"
        )
    state = _state(SEGMENT_STATES, v["remoteLogSegmentState"])
    epochs = _epochs(v["segmentLeaderEpochs"])
    return (
        f"RemoteLogSegmentMetadataSnapshot{{segmentId={v['segmentId']}, startOffset={v['startOffset']}, endOffset={v['endOffset']}"
        f", maxTimestampMs={v['maxTimestampMs']}, segmentLeaderEpochs={epochs}, segmentSizeInBytes={v['segmentSizeInBytes']}"
        f", customMetadata={_custom(v['customMetadata'])}, state={state}}}"
    )


class RemoteLogMetadataParser:
    def parse(self, record, batch) -> tuple[str | None, str | None]:  # noqa: ANN001
        try:
            if record.value is None:
                raise RemoteError(NULL_VALUE)
            msg, _ver, values = read_frame(bytes(record.value), 1, BY_KEY, struct_valid=STRUCT_VALID)
            return None, render(msg, values)
        except (MetadataParseError, RemoteError) as exc:
            return None, f"Error at offset {record.offset}, skipping. {exc}"


def make(version: tuple[int, int, int]) -> RemoteLogMetadataParser:
    return RemoteLogMetadataParser()


def decode_json(record) -> dict[str, Any]:  # noqa: ANN001
    try:
        msg, ver, values = read_frame(None if record.value is None else bytes(record.value), 1, STRICT)
    except MetadataParseError as exc:
        return {"offset": record.offset, "error": str(exc)}
    return {"offset": record.offset, "type": msg.name, "api_key": msg.api_key, "version": ver,
            "data": sc.plain_json(sc.to_json(msg.fields, values, ver))}
