"""Regression tests for the disagreements the dump oracle found (tests/test_dump_oracle.py, issue 26), each pinned
without the JVM: the expected text is what Kafka's DumpLogSegments printed in the oracle runs (the release each test
pins is in its name or its ``--kafka-version``)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format import codecs
from kafkalog_cli.format.encoder import RecordSpec, encode_batch, encode_legacy_message
from kafkalog_cli.internal_topics import schema as sc
from kafkalog_cli.internal_topics import schemas_metadata as sm
from kafkalog_cli.internal_topics import schemas_txn_share as st
from kafkalog_cli.internal_topics.cluster_metadata import encode_frame
from kafkalog_cli.storage.companions import SNAPSHOT_HEADER


def _dump(*args: str):
    r = CliRunner().invoke(cli, ["dump", *args], catch_exceptions=False)
    return r.exit_code, r.stdout_bytes, r.stderr_bytes


def _seg(tmp_path: Path, data: bytes, topic: str = "t-0", base: int = 0) -> Path:
    d = tmp_path / topic
    d.mkdir(parents=True, exist_ok=True)
    f = d / f"{base:020d}.log"
    f.write_bytes(data)
    return f


def test_legacy_entry_with_invalid_codec_prints_kafkas_partial_line(tmp_path):
    """4.0 and 3.6: 'offset: N' without a newline (printBatchLevel's first print), then the tool dies."""
    good = encode_legacy_message(offset=0, key=b"k", value=b"v", magic=1, timestamp=5)
    bad = bytearray(encode_legacy_message(offset=1, key=b"k", value=b"v", magic=1, timestamp=6))
    bad[17] = (bad[17] & ~0x07) | 6
    f = _seg(tmp_path, good + bytes(bad))
    for version, header in (("4.0", "Log starting offset: 0"), ("3.6", "Log starting offset: 0"), ("2.8", "Starting offset: 0")):
        rc, out, err = _dump("--kafka-version", version, str(f))
        assert rc == 1 and b"Unknown compression type id: 6" in err
        assert out.decode().endswith(f"{header}\n" + out.decode().split(f"{header}\n")[1])
        assert out.decode().splitlines()[-1] == "offset: 1" and not out.endswith(b"\n")


def test_v2_batch_with_invalid_codec_before_3_2_prints_up_to_is_control(tmp_path):
    """3.0 (no deleteHorizonMs): the partial v2 line ends after isControl, without a newline."""
    b = bytearray(encode_batch([RecordSpec(b"k", b"v")], base_timestamp=1))
    b[22] = (b[22] & ~0x07) | 5
    f = _seg(tmp_path, bytes(b))
    rc, out, _err = _dump("--kafka-version", "3.0", str(f))
    assert rc == 1
    assert out.decode().splitlines()[-1].endswith("isTransactional: false isControl: false") and not out.endswith(b"\n")


def test_compressed_inner_message_prints_the_records_before_it(tmp_path):
    """Kafka reads the inner messages first and rejects a compressed one when the iterator reaches it."""
    stream = b"".join(encode_legacy_message(offset=i, key=b"k%d" % i, value=b"v", magic=1, timestamp=10 + i)
                      for i in range(2))
    stream += encode_legacy_message(offset=2, key=b"k2", value=b"v", magic=1, timestamp=12, attributes=codecs.GZIP)
    wrapper = encode_legacy_message(offset=2, key=None, value=codecs.compress(codecs.GZIP, stream, magic=1), magic=1,
                                    timestamp=12, attributes=codecs.GZIP)
    f = _seg(tmp_path, wrapper)
    rc, out, err = _dump("--kafka-version", "4.0", "--deep-iteration", str(f))
    lines = out.decode().splitlines()
    assert rc == 1 and b"Inner messages must not be compressed" in err
    assert [ln.split()[2] for ln in lines if ln.startswith("| offset:")] == ["0", "1"]


def test_snapshot_with_negative_count_at_4_0(tmp_path):
    """4.0's generated ProducerSnapshot reader: 'non-nullable field producerEntries was serialized as null'."""
    f = tmp_path / "00000000000000000009.snapshot"
    f.write_bytes(SNAPSHOT_HEADER.pack(1, 0, -1))
    rc, out, err = _dump("--kafka-version", "4.0", str(f))
    assert err == b"Snapshot failed schema validation: non-nullable field producerEntries was serialized as null\n"
    f.write_bytes(SNAPSHOT_HEADER.pack(1, 0, 3))
    _rc, _out, err = _dump("--kafka-version", "4.0", str(f))
    assert err == (b"Snapshot failed schema validation: Tried to allocate a collection of size 3, but there are only "
                   b"0 bytes remaining.\n")


def test_timeindex_without_index_fails_as_every_release_does(tmp_path):
    """Every release: 'Dumping F' and exit 1 (Kafka: 'Invalid max index size: -1'); kafkalog creates no .index and says
    why; --format json still lists the entries."""
    f = _seg(tmp_path, encode_batch([RecordSpec(b"k", b"v")], base_timestamp=7))
    ti = f.with_suffix(".timeindex")
    ti.write_bytes((7).to_bytes(8, "big") + (0).to_bytes(4, "big"))
    for version in ("4.0", "3.9", "3.6", "3.0", "2.8"):
        rc, out, err = _dump("--kafka-version", version, str(ti))
        assert (rc, out) == (1, f"Dumping {ti}\n".encode()), version
        assert b".index is missing" in err and b"--format json" in err
        assert not f.with_suffix(".index").exists()
    rc, out, _err = _dump("--format", "json", str(ti))
    assert b'"timeindex_entry"' in out


def _txn_value(state: int, partitions) -> bytes:  # noqa: ANN001
    vals = {"producerId": 5, "producerEpoch": 1, "transactionTimeoutMs": 60000, "transactionStatus": state,
            "transactionPartitions": partitions, "transactionLastUpdateTimestampMs": 1, "transactionStartTimestampMs": 1}
    return (0).to_bytes(2, "big") + sc.encode(st.TransactionLogValue, vals, 0)


def test_transaction_value_with_null_partitions_aborts_like_kafka(tmp_path):
    """3.9 (and 1eb7644's text decoder): null partitions in a state other than Empty are an NPE after the record's
    metadata was printed; in state Empty they are fine."""
    key = (0).to_bytes(2, "big") + sc.encode(st.TransactionLogKey, {"transactionalId": "tx"}, 0)
    data = encode_batch([RecordSpec(key, _txn_value(0, None)), RecordSpec(key, _txn_value(1, None))], base_timestamp=1)
    f = _seg(tmp_path, data, "__transaction_state-0")
    rc, out, err = _dump("--kafka-version", "3.9", "--transaction-log-decoder", str(f))
    last = out.decode().splitlines()[-1]
    assert rc == 1 and b"NullPointerException" in err
    assert last.startswith("| offset: 1 ") and last.endswith("headerKeys: []") and not out.endswith(b"\n")
    assert "state=Empty,partitions=[]" in out.decode()


def test_offset_commit_value_v4_unknown_before_3_5(tmp_path):
    """2.8.2 and 3.0.2 know OffsetCommitValue v0-v3: v4 aborts with 'Unknown offset message version: 4'."""
    from kafkalog_cli.internal_topics import schemas_group as sg

    key = (1).to_bytes(2, "big") + sc.encode(sg.OffsetCommitKey, {"group": "g", "topic": "t", "partition": 0}, 1)
    value = (4).to_bytes(2, "big") + sc.encode(
        sg.OffsetCommitValue, {"offset": 1, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 1}, 4)
    f = _seg(tmp_path, encode_batch([RecordSpec(key, value)], base_timestamp=1), "__consumer_offsets-0")
    rc, _out, err = _dump("--kafka-version", "3.0", "--offsets-decoder", str(f))
    assert rc == 1 and b"Unknown offset message version: 4" in err
    rc, out, _err = _dump("--kafka-version", "3.6", "--offsets-decoder", str(f))
    assert rc == 0 and b"offset=1" in out


def test_cluster_metadata_with_older_releases_schemas(tmp_path):
    """3.6.2's tool: PartitionChangeRecord v1 decodes with its v0 fields, RegisterBrokerRecord v3 fails in its BrokerEndpoint reader, NoOpRecord is known; 3.0.2's:
    NoOpRecord is 'Unknown metadata id 20' and ProducerIdsRecord's field is producerIdsEnd. (With
    --skip-record-metadata a value-only record line is ' payload: ...': Kafka's payload print has no '|'.)"""
    tid = "AAAAAAAAAAAAAAAAAAAAAQ"
    recs = [
        encode_frame(sm.PartitionChangeRecord, {"partitionId": 0, "topicId": tid, "isr": [1], "leader": 2}, 1),
        encode_frame(sm.RegisterBrokerRecord, {
            "brokerId": 1, "isMigratingZkBroker": False, "incarnationId": tid, "brokerEpoch": 2,
            "endPoints": [{"name": "P", "host": "h", "port": 1, "securityProtocol": 0}], "features": [], "rack": None,
            "fenced": True, "inControlledShutdown": False, "logDirs": []}, 3),
        encode_frame(sm.NoOpRecord, {}, 0),
        encode_frame(sm.ProducerIdsRecord, {"brokerId": 1, "brokerEpoch": 5, "nextProducerId": 1000}, 0),
    ]
    f = _seg(tmp_path, encode_batch([RecordSpec(None, v) for v in recs], base_timestamp=1), "__cluster_metadata-0")
    _rc, out36, _ = _dump("--kafka-version", "3.6", "--cluster-metadata-decoder", "--skip-record-metadata", str(f))
    lines = [ln for ln in out36.decode().splitlines() if ln.startswith(" payload:")]
    assert lines[0].startswith(' payload: {"type":"PARTITION_CHANGE_RECORD","version":1,')
    assert lines[1] == " payload: Error at 1, skipping. Failed to deserialize record with type 0"
    assert lines[2] == ' payload: {"type":"NO_OP_RECORD","version":0,"data":{}}'
    _rc, out30, _ = _dump("--kafka-version", "3.0", "--cluster-metadata-decoder", "--skip-record-metadata", str(f))
    lines = [ln for ln in out30.decode().splitlines() if ln.startswith(" payload:")]
    assert lines[2] == (" payload: Error at 2, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: "
                        "Unknown metadata id 20")
    assert '"producerIdsEnd":1000' in lines[3]
    _rc, out40, _ = _dump("--kafka-version", "4.0", "--cluster-metadata-decoder", "--skip-record-metadata", str(f))
    assert '"nextProducerId":1000' in out40.decode() and "Error at" not in out40.decode()
