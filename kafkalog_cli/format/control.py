"""Control records: transaction markers (ABORT/COMMIT) and KRaft control records.

Key: int16 version (>= 0) + int16 type. Values: EndTxnMarker (int16 version, int32 coordinatorEpoch) for 0/1, and
flexible-encoded KRaft messages for 2..6 (read with version 0, as the tool does). See spec §5.5.
"""

from __future__ import annotations

from typing import Any

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.format import flexible as fx
from kafkalog_cli.format.flexible import Field
from kafkalog_cli.format.layouts import CONTROL_KEY, END_TXN_MARKER

ABORT, COMMIT, LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS = range(7)

_VOTER = [Field("voterId", "int32"), Field("voterDirectoryId", "uuid", versions=(1, 0x7FFF))]

SCHEMAS: dict[int, tuple[str, list[Field]]] = {
    LEADER_CHANGE: (
        "LeaderChange",
        [
            Field("version", "int16"),
            Field("leaderId", "int32"),
            Field("voters", ("array", ("struct", _VOTER))),
            Field("grantingVoters", ("array", ("struct", _VOTER))),
        ],
    ),
    SNAPSHOT_HEADER: ("SnapshotHeader", [Field("version", "int16"), Field("lastContainedLogTimestamp", "int64")]),
    SNAPSHOT_FOOTER: ("SnapshotFooter", [Field("version", "int16")]),
    KRAFT_VERSION: ("KRaftVersion", [Field("version", "int16"), Field("kRaftVersion", "int16")]),
    KRAFT_VOTERS: (
        "KRaftVoters",
        [
            Field("version", "int16"),
            Field(
                "voters",
                (
                    "array",
                    (
                        "struct",
                        [
                            Field("voterId", "int32"),
                            Field("voterDirectoryId", "uuid"),
                            Field(
                                "endpoints",
                                ("array", ("struct", [Field("name", "string"), Field("host", "string"), Field("port", "uint16")])),
                            ),
                            Field(
                                "kRaftVersionFeature",
                                ("struct", [Field("minSupportedVersion", "int16"), Field("maxSupportedVersion", "int16")]),
                            ),
                        ],
                    ),
                ),
            ),
        ],
    ),
}


def parse_control_key(key: bytes | None) -> tuple[int, int]:
    """Return (version, type) of a control record key, with Kafka's checks."""
    if key is None or len(key) < CONTROL_KEY.size:
        raise InvalidRecordError(
            f"Invalid value size found for end control record key. Must have at least {CONTROL_KEY.size} bytes, but found {0 if key is None else len(key)}",
            expected=f">= {CONTROL_KEY.size} key bytes",
            found=str(0 if key is None else len(key)),
        )
    version, ctype = CONTROL_KEY.unpack_from(key, 0)
    if version < 0:
        raise InvalidRecordError(f"Invalid version found for control record: {version}. May indicate data corruption")
    return version, ctype


def parse_end_txn_marker(value: bytes | None) -> tuple[int, int]:
    """Return (version, coordinatorEpoch) of an ABORT/COMMIT marker value."""
    if value is None or len(value) < END_TXN_MARKER.size:
        raise InvalidRecordError(
            "Invalid value size found for end transaction marker",
            expected=f">= {END_TXN_MARKER.size} bytes",
            found=str(0 if value is None else len(value)),
        )
    version, epoch = END_TXN_MARKER.unpack_from(value, 0)
    if version < 0:
        raise InvalidRecordError(f"Invalid version found for end transaction marker: {version}. May indicate data corruption")
    return version, epoch


def decode_kraft_control(ctype: int, value: bytes | None) -> dict[str, Any]:
    """Decode a KRaft control value (type 2..6) as an ordered dict, read with schema version 0."""
    name, fields = SCHEMAS[ctype]
    if value is None:
        raise InvalidRecordError(f"{name} control record has a null value")
    return fx.decode(value, fields, 0, True)


def encode_control_key(ctype: int, version: int = 0) -> bytes:
    return CONTROL_KEY.pack(version, ctype)


def encode_end_txn_marker(coordinator_epoch: int, version: int = 0) -> bytes:
    return END_TXN_MARKER.pack(version, coordinator_epoch)


def encode_kraft_control(ctype: int, values: dict[str, Any]) -> bytes:
    _, fields = SCHEMAS[ctype]
    return fx.encode(fields, values, 0, True)
