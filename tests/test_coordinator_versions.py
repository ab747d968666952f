"""The ``--offsets-decoder`` disagreements the every-version oracle found (tests/test_dump_oracle_coordinator.py), as
fast tests without Java. Expected strings: what 1eb7644's, 3.9.0-rc3's and 3.6.2's DumpLogSegments printed."""

from __future__ import annotations

import struct

import pytest

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.format.batch import Record
from kafkalog_cli.internal_topics import make_parser
from kafkalog_cli.internal_topics import schema as sc
from kafkalog_cli.internal_topics import schemas_group as sg
from kafkalog_cli.versions import profile_for


def _pref(v: int, body: bytes) -> bytes:
    return struct.pack(">h", v) + body


def _parse(version: str, key: bytes, value: bytes | None):  # noqa: ANN202
    return make_parser("offsets", profile_for(version)).parse(Record(offset=4, timestamp=0, key=key, value=value), None)


KEY = _pref(1, sc.encode(sg.OffsetCommitKey, {"group": "g", "topic": "t", "partition": 0}, 1))


@pytest.mark.parametrize("version", ["3.9", "4.0"])
def test_value_version_past_the_newest_is_read_with_the_newest_layout(version: str) -> None:
    """The generated read checks no version: a v9 OffsetCommitValue whose bytes are a v3 value is read as flexible
    (v4+), and the v3 metadata length (int16 0) reads as a null compact string."""
    body = sc.encode(sg.OffsetCommitValue, {"offset": 7, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 1}, 3)
    key, _ = _parse(version, KEY, _pref(9, body))
    assert key == ("Error at offset 4, skipping. Could not read record with version 9 from value's buffer due to: "
                   "non-nullable field metadata was serialized as null.")
    # a v4 value relabelled v9 decodes, as Kafka's tool prints it
    body4 = sc.encode(sg.OffsetCommitValue, {"offset": 7, "leaderEpoch": -1, "metadata": "m", "commitTimestamp": 1}, 4)
    key, payload = _parse(version, KEY, _pref(9, body4))
    assert payload == '{"version":"9","data":{"offset":7,"leaderEpoch":-1,"metadata":"m","commitTimestamp":1}}'


def test_null_in_a_non_nullable_field_stops_the_read_there() -> None:
    """A null group (non-nullable) in a GroupMetadataValue cut right after it: Kafka's generated read throws at the
    null, before it would run out of bytes."""
    gkey = _pref(2, sc.encode(sg.GroupMetadataKey, {"group": "g"}, 2))
    value = _pref(4, b"\x00")  # protocolType: compact string length 0 = null, then nothing
    key, _ = _parse("4.0", gkey, value)
    assert key.endswith("due to: non-nullable field protocolType was serialized as null."), key


def _group_value(insts: list[str | None]) -> bytes:
    members = [{"memberId": f"m{i}", "groupInstanceId": inst, "clientId": "c", "clientHost": "h", "rebalanceTimeout": 1,
                "sessionTimeout": 1, "subscription": b"", "assignment": b""} for i, inst in enumerate(insts)]
    return _pref(3, sc.encode(sg.GroupMetadataValue, {"protocolType": "connect", "generation": 1, "protocol": None,
                                                      "leader": None, "currentStateTimestamp": -1, "members": members}, 3))


def test_two_static_members_with_one_instance_id_abort_the_text_decoder_from_30() -> None:
    gkey = _pref(2, sc.encode(sg.GroupMetadataKey, {"group": "g2"}, 2))
    for version in ("3.0", "3.6"):
        with pytest.raises(InvalidRecordError, match="Static member with groupInstanceId=inst cannot be added to group "
                                                     "g2 since it is already a member"):
            _parse(version, gkey, _group_value(["inst", "inst"]))
        assert _parse(version, gkey, _group_value(["inst", None, "other"]))[0] == "group_metadata::group=g2"
    # 2.8.2's GroupMetadata.add has no such check
    assert _parse("2.8", gkey, _group_value(["inst", "inst"]))[0] == "group_metadata::group=g2"


def test_transaction_log_value_v1_is_unknown_before_35() -> None:
    from kafkalog_cli.internal_topics import schemas_txn_share as st

    key = _pref(0, sc.encode(st.TransactionLogKey, {"transactionalId": "tx-0"}, 0))
    value = _pref(1, sc.encode(st.TransactionLogValue, {
        "producerId": 2750, "producerEpoch": 3, "transactionTimeoutMs": 60000, "transactionStatus": 0,
        "transactionPartitions": None, "transactionLastUpdateTimestampMs": 1, "transactionStartTimestampMs": 1}, 1))
    parser = make_parser("transaction-log", profile_for("3.6"))
    assert parser.parse(Record(offset=0, timestamp=0, key=key, value=value), None)[1].startswith("producerId:2750,")
    for version in ("2.8", "3.0"):
        with pytest.raises(InvalidRecordError, match="^Unknown version 1 from the transaction log message value$"):
            make_parser("transaction-log", profile_for(version)).parse(Record(offset=0, timestamp=0, key=key,
                                                                              value=value), None)
