"""``--cluster-metadata-decoder --kafka-version 2.8``: records written by the KRaft preview (frame version 0, 2.8's
schemas, mostly not flexible: int16 string lengths, int32 array lengths, no tagged fields), hand-encoded here from
the 2.8.0 JSON schemas so that the test does not share the decoder's tables."""

from __future__ import annotations

import struct
from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format.batch import Record
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.format.flexible import kafka_uuid
from kafkalog_cli.internal_topics import decode_json, make_parser
from kafkalog_cli.versions import profile_for

UUID = bytes(range(1, 17))
TOPIC_ID = kafka_uuid(UUID)


def s16(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def frame0(api_key: int, body: bytes) -> bytes:
    return bytes([0, api_key, 0]) + body  # uvarints < 128: one byte each


TOPIC = frame0(2, s16("orders") + UUID)
PARTITION = frame0(3, struct.pack(">i", 0) + UUID + struct.pack(">iii", 2, 1, 2) + struct.pack(">ii", 1, 1)
                   + struct.pack(">i", -1) + struct.pack(">i", -1) + struct.pack(">iii", 1, 4, 7))
REGISTER = frame0(0, struct.pack(">i", 1) + UUID + struct.pack(">q", 12) + struct.pack(">i", 1) + s16("PLAINTEXT")
                  + s16("localhost") + struct.pack(">Hh", 9092, 0) + struct.pack(">i", 0) + struct.pack(">h", -1))
# PartitionChangeRecord is flexible in 2.8: compact array... and tagged fields (here leader=3 as tag 1)
CHANGE = frame0(5, struct.pack(">i", 0) + UUID + bytes([1, 1, 4]) + struct.pack(">i", 3))


def parse_28(value: bytes, offset: int = 7) -> str | None:
    return make_parser("cluster-metadata", profile_for("2.8")).parse(Record(offset=offset, timestamp=0, key=None,
                                                                            value=value), None)[1]


def test_2_8_records_decode() -> None:
    assert parse_28(TOPIC) == '{"type":"TOPIC_RECORD","version":0,"data":{"name":"orders","topicId":"TID"}}'.replace("TID", TOPIC_ID)
    assert parse_28(PARTITION) == (
        '{"type":"PARTITION_RECORD","version":0,"data":{"partitionId":0,"topicId":"TID","replicas":[1,2],"isr":[1],'
        '"removingReplicas":null,"addingReplicas":null,"leader":1,"leaderEpoch":4,"partitionEpoch":7}}'.replace("TID", TOPIC_ID))
    assert parse_28(REGISTER) == (
        '{"type":"REGISTER_BROKER_RECORD","version":0,"data":{"brokerId":1,"incarnationId":"TID","brokerEpoch":12,'
        '"endPoints":[{"name":"PLAINTEXT","host":"localhost","port":9092,"securityProtocol":0}],"features":[],'
        '"rack":null}}'.replace("TID", TOPIC_ID))
    assert parse_28(CHANGE) == (
        '{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":0,"topicId":"TID","leader":3}}'.replace("TID", TOPIC_ID))
    assert decode_json("cluster-metadata", Record(offset=1, timestamp=0, key=None, value=TOPIC))["data"] == {
        "name": "orders", "topicId": TOPIC_ID}


def test_2_8_errors_are_2_8s() -> None:
    assert parse_28(bytes([1, 2, 0]) + s16("x") + UUID) == (
        "Error at 7, skipping. Could not deserialize metadata record due to unknown frame version 1(only frame "
        "version 0 is supported)")
    assert parse_28(frame0(13, b"")) == "Error at 7, skipping. Unknown metadata id 13"
    assert parse_28(TOPIC[:8]) == "Error at 7, skipping. null"  # BufferUnderflowException has no message
    # 3.0+ reads the same bytes as the preview release it refuses
    later = make_parser("cluster-metadata", profile_for("3.0")).parse(Record(offset=7, timestamp=0, key=None,
                                                                             value=TOPIC), None)[1]
    assert later is not None and "preview release of KRaft in 2.8" in later


def test_dump_decodes_a_2_8_metadata_log(tmp_path: Path) -> None:
    part = tmp_path / "__cluster_metadata-0"
    part.mkdir()
    values = [TOPIC, PARTITION, REGISTER, CHANGE]
    specs = [RecordSpec(key=None, value=v, timestamp=1_600_000_000_000, offset_delta=i) for i, v in enumerate(values)]
    log = part / ("0" * 20 + ".log")
    log.write_bytes(encode_batch(specs, base_offset=0, partition_leader_epoch=1))
    r = CliRunner().invoke(cli, ["dump", "--cluster-metadata-decoder", "--kafka-version", "2.8", str(log)])
    assert r.exit_code == 0, r.output
    assert "Failed to deserialize" not in r.stdout and "Error at" not in r.stdout
    for name in ("TOPIC_RECORD", "PARTITION_RECORD", "REGISTER_BROKER_RECORD", "PARTITION_CHANGE_RECORD"):
        assert f'"type":"{name}"' in r.stdout
