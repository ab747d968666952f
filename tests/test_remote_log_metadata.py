"""``--remote-log-metadata-decoder``: the three disagreement classes the oracle found (tests/test_dump_oracle_remote.py),
as fast tests that need no Java. The expected strings are what 3.9.0-rc3's and 1eb7644's DumpLogSegments printed for
the same bytes."""

from __future__ import annotations

from click.testing import CliRunner

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format.batch import Record
from kafkalog_cli.internal_topics import decode_json, make_parser
from kafkalog_cli.internal_topics.cluster_metadata import encode_frame
from kafkalog_cli.internal_topics.schemas_remote import (
    RemoteLogSegmentMetadataSnapshotRecord,
    RemoteLogSegmentMetadataUpdateRecord,
)
from kafkalog_cli.versions import profile_for

TIP = {"name": "t", "id": "tpx8pd1IQDqJwMfGzXj6GA", "partition": 3}


def _parse(value: bytes | None, version: str = "4.0") -> str | None:
    return make_parser("remote-log-metadata", profile_for(version)).parse(Record(offset=7, timestamp=0, key=None,
                                                                                 value=value), None)[1]


def _snapshot(epochs: list[dict], version: int) -> bytes:
    values = {"segmentId": "tpx8pd1IQDqJwMfGzXj6GA", "startOffset": 0, "endOffset": 5, "brokerId": 1,
              "maxTimestampMs": 3, "eventTimestampMs": 4, "segmentLeaderEpochs": epochs, "segmentSizeInBytes": 10,
              "customMetadata": None, "remoteLogSegmentState": 1}
    frame = bytearray(encode_frame(RemoteLogSegmentMetadataSnapshotRecord, values, 0))
    frame[2] = version  # the record version byte of the frame (1, apiKey 3, version)
    return bytes(frame)


def test_unknown_record_version_is_read_with_version_0_fields_until_a_nested_struct() -> None:
    """The generated record's ``read`` checks no version, its nested structs' readers do: a version-2 snapshot record
    without leader epochs reaches the constructor's check, one with epochs fails in SegmentLeaderEpochEntry's read."""
    for v in (3, 9):
        assert _parse(_snapshot([], 2), f"{v}.{9 if v == 3 else 0}") == \
            "Error at offset 7, skipping. segmentLeaderEpochs can not be null or empty"
    assert _parse(_snapshot([{"leaderEpoch": 0, "offset": 0}], 2)) == \
        "Error at offset 7, skipping. Failed to deserialize record with type 3"
    assert _parse(_snapshot([{"leaderEpoch": 0, "offset": 0}], 0)).startswith("RemoteLogSegmentMetadataSnapshot{")
    update = bytearray(encode_frame(RemoteLogSegmentMetadataUpdateRecord, {
        "remoteLogSegmentId": {"topicIdPartition": TIP, "id": "tpx8pd1IQDqJwMfGzXj6GA"}, "brokerId": 1,
        "eventTimestampMs": 9, "customMetadata": None, "remoteLogSegmentState": 0}, 0))
    update[2] = 1
    assert _parse(bytes(update)) == "Error at offset 7, skipping. Failed to deserialize record with type 1"
    # --format json stays strict: a version Kafka never wrote is an error there
    assert "error" in decode_json("remote-log-metadata", Record(offset=7, timestamp=0, key=None, value=_snapshot([], 2)))


def test_null_value_prints_the_jdk_helpful_npe_message() -> None:
    assert _parse(None) == (
        'Error at offset 7, skipping. Cannot invoke "java.nio.ByteBuffer.remaining()" because the return value of '
        '"org.apache.kafka.common.record.Record.value()" is null')


def test_option_refused_where_the_release_lacks_it(tmp_path) -> None:
    """Before 3.9 (KIP-1057) DumpLogSegments has no --remote-log-metadata-decoder, before 4.0 no
    --share-group-state-decoder: kafkalog prints nothing on stdout and exits 2, as a usage error."""
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(b"")
    for version, flag, ok in (("3.6", "--remote-log-metadata-decoder", False), ("3.8", "--remote-log-metadata-decoder", False),
                              ("3.9", "--remote-log-metadata-decoder", True), ("3.9", "--share-group-state-decoder", False),
                              ("4.0", "--share-group-state-decoder", True), ("2.8", "--remote-log-metadata-decoder", False)):
        r = CliRunner().invoke(cli, ["dump", "--kafka-version", version, flag, str(seg)])
        if ok:
            assert r.exit_code == 0 and r.stdout_bytes.startswith(b"Dumping "), (version, flag, r.output)
        else:
            assert r.exit_code == 2 and r.stdout_bytes == b"", (version, flag, r.output)
            assert b"kafkalog: error: " + flag.encode() + b" is not an option of Kafka" in r.stderr_bytes
