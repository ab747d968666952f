"""Every internal-topic schema, every valid version: encode with flexible.encode, decode, compare."""

from __future__ import annotations

import pytest

from kafkalog_cli.format.flexible import Field
from kafkalog_cli.internal_topics import schema as sc
from kafkalog_cli.internal_topics import schemas_group, schemas_metadata, schemas_remote, schemas_txn_share
from kafkalog_cli.internal_topics.cluster_metadata import encode_frame, read_frame

ALL = schemas_metadata.MESSAGES + schemas_group.MESSAGES + schemas_txn_share.MESSAGES + schemas_remote.MESSAGES


def _sample(t, depth: int, salt: int):  # noqa: ANN001
    if isinstance(t, tuple):
        kind, sub = t
        if kind == "array":
            return [_sample(sub, depth + 1, salt + i) for i in range(2)]
        return _values(sub, depth + 1, salt)
    return {
        "int8": -5 + salt % 3, "int16": -300 - salt, "uint16": 65000 - salt, "int32": -70000 - salt,
        "uint32": 4_000_000_000 - salt, "int64": -(2**40) - salt, "float64": 1.5e7 + salt, "bool": bool(salt % 2),
        "string": f"s-{salt}-é", "bytes": bytes([salt % 256, 0, 255]), "uuid": "tpx8pd1IQDqJwMfGzXj6GA",
        "records": b"\x00\x01",
    }[t]


def _values(fields: list[Field], depth: int = 0, salt: int = 0) -> dict:
    return {f.name: _sample(f.type, depth, salt + i) for i, f in enumerate(fields)}


def _present(fields: list[Field], values: dict, version: int) -> dict:
    out = {}
    for f in fields:
        if f.versions[0] <= version <= f.versions[1]:
            v = values[f.name]
            if isinstance(f.type, tuple) and f.type[0] == "struct":
                v = _present(f.type[1], v, version)
            elif isinstance(f.type, tuple) and isinstance(f.type[1], tuple) and f.type[1][0] == "struct":
                v = [_present(f.type[1][1], x, version) for x in v]
            out[f.name] = v
    return out


CASES = [(m, v) for m in ALL for v in range(m.valid[0], m.valid[1] + 1)]


@pytest.mark.parametrize("msg,version", CASES, ids=[f"{m.name}-v{v}" for m, v in CASES])
def test_round_trip(msg: sc.Message, version: int) -> None:
    values = _values(msg.fields)
    raw = sc.encode(msg, values, version)
    decoded, end = sc.read(raw, msg, version)
    assert end == len(raw)
    assert decoded == _present(msg.fields, values, version) or sorted(decoded) == sorted(_present(msg.fields, values, version))
    assert {k: decoded[k] for k in sorted(decoded)} == {k: v for k, v in sorted(_present(msg.fields, values, version).items())}


@pytest.mark.parametrize("msg", schemas_metadata.MESSAGES, ids=lambda m: m.name)
def test_metadata_frame_round_trip(msg: sc.Message) -> None:
    version = msg.valid[1]
    values = _values(msg.fields)
    got_msg, got_version, got = read_frame(encode_frame(msg, values, version))
    assert got_msg is msg and got_version == version
    assert got == {k: got[k] for k in got} and set(got) == set(_present(msg.fields, values, version))


def test_unsupported_version_is_kafkas_text() -> None:
    with pytest.raises(sc.UnsupportedVersion, match="Can't read version 9 of OffsetCommitValue"):
        sc.read(b"", schemas_group.OffsetCommitValue, 9)


def test_java_double_and_strings() -> None:
    assert sc.java_double(1.5e7) == "1.5E7"
    assert sc.java_double(1000000.0) == "1000000.0"
    assert sc.java_double(0.001) == "0.001"
    assert sc.java_double(0.0001) == "1.0E-4"
    assert sc.java_double(123.25) == "123.25"
    assert sc.java_double(-2.0) == "-2.0"
    assert sc.java_json("a\"b\\\n\x01é") == '"a\\"b\\\\\\n\\u0001é"'
    assert sc.java_json({"b": b"\x00\x01", "n": None, "t": True}) == '{"b":"AAE=","n":null,"t":true}'
