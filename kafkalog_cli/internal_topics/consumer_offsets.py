"""``--offsets-decoder``: ``__consumer_offsets`` records as each Kafka version prints them.

Three output families (spec §3.10, errata E4/E5/E18/C.5):

* 2.0 – 2.4.0: ``offset::<g>:<t>:<p>`` / ``<offset>[:<metadata>]`` and ``{"metadata":"<g>"}`` / group JSON;
* 2.4.1 – 3.7: ``offset_commit::group=..,partition=..`` / ``offset=..[,metadata=..]``, ``group_metadata::group=..``,
  ``<DELETE>``, and ``unknown::version=<v>`` from 3.5 (earlier: abort);
* 3.8+: Jackson JSON of the generated converters, the consumer protocol decoded inside GroupMetadataValue.
"""

from __future__ import annotations

from typing import Any

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.format.javahash import java_string_hash, scala213_order
from kafkalog_cli.format.layouts import SCHEMA_VERSION
from kafkalog_cli.internal_topics import coordinator as co
from kafkalog_cli.internal_topics import schema as sc
from kafkalog_cli.internal_topics import schemas_group as sg
from kafkalog_cli.internal_topics import schemas_group_40 as sg40
from kafkalog_cli.internal_topics.releases import release_for

Version = tuple[int, int, int]

# record type -> key / value schema, every type Kafka writes to __consumer_offsets up to 4.4 (0-2 classic groups,
# 3-8 consumer groups of KIP-848, 9-15 share groups, 16 regular-expression subscriptions, 17-24 streams groups)
KEYS, VALUES = co.record_types(sg.MESSAGES)
# 4.0's layouts of the types whose value version 0 changed in 4.1 (releases.py share_layout)
VALUES_40 = {15: sg40.ShareGroupStatePartitionMetadataValue}
CONSUMER = "consumer"


def key_tables(version: Version) -> tuple[dict, dict]:
    """Record types the version's serde knows: 0-8 in 3.8/3.9, every later one from 4.0 (``releases.py``)."""
    release = release_for(version)
    last = release.offsets_last_record_type
    values = {**VALUES, **VALUES_40} if release.share_layout == "4.0" else VALUES
    return ({k: v for k, v in KEYS.items() if k <= last}, {k: v for k, v in values.items() if k <= last})


# ----------------------------------------------------------------------------------------------- 3.8+ JSON
class OffsetsJsonParser(co.JsonCoordinatorParser):
    decoder_name = "offset topic"

    def __init__(self, version: Version) -> None:
        keys, values = key_tables(version)
        super().__init__(keys, values, version)

    def value_data(self, d: co.Decoded) -> dict[str, Any] | None:
        if d.record_type != 2 or d.value is None or d.value_version is None:
            return None
        data = sc.to_json(sg.GroupMetadataValue.fields, d.value, d.value_layout)
        assert data is not None
        if data.get("protocolType") == CONSUMER and isinstance(data.get("members"), list):
            for member in data["members"]:
                _replace_embedded(member, "subscription", sg.ConsumerProtocolSubscription)
                _replace_embedded(member, "assignment", sg.ConsumerProtocolAssignment)
        return data


def _replace_embedded(member: dict[str, Any], name: str, msg: sc.Message) -> None:
    """Replace a bytes field by its decoded consumer-protocol JSON; keep the bytes when it does not decode."""
    raw = member.get(name)
    if not isinstance(raw, (bytes, bytearray)):
        return
    try:
        if len(raw) < 2:
            return
        (ver,) = SCHEMA_VERSION.unpack_from(raw, 0)
        values, _ = sc.read(bytes(raw), msg, ver, pos=2)
        co.check_non_nullable(msg.fields, values, ver)
    except (InvalidRecordError, ValueError):
        return
    member[name] = sc.to_json(msg.fields, values, ver)


# ------------------------------------------------------------------------------------------ text forms
def _hex(b: bytes) -> str:
    """Scala ``"%X".format(BigInt(1, bytes))``; empty input gives an empty string."""
    if not b:
        return ""
    return format(int.from_bytes(b, "big"), "X")


def _java_list(items: list[str]) -> str:
    return "[" + ", ".join(items) + "]"


def _assignment_text(member: dict[str, Any]) -> str:
    """ConsumerProtocol.deserializeAssignment (version clamped to the highest known) rendered as in E18."""
    raw = member.get("assignment") or b""
    if len(raw) < 2:
        raise InvalidRecordError("Buffer underflow while parsing consumer protocol's header")
    (ver,) = SCHEMA_VERSION.unpack_from(raw, 0)
    if ver < 0:
        raise InvalidRecordError(f"Unsupported assignment version: {ver}")
    ver = min(ver, sg.ConsumerProtocolAssignment.valid[1])
    try:
        values, _ = sc.read(raw, sg.ConsumerProtocolAssignment, ver, pos=2)
    except InvalidRecordError:
        raise InvalidRecordError("Buffer underflow while parsing consumer protocol's assignment") from None
    parts = [f"{tp['topic']}-{p}" for tp in values.get("assignedPartitions") or [] for p in tp.get("partitions") or []]
    user = values.get("userData")
    user_hex = "" if user is None else _hex(user)
    text = f"{member['memberId']}={_java_list(parts)}"
    return f"{text}:{user_hex}" if user_hex else text


def _group_json(value: dict[str, Any], old_style: bool) -> str:
    protocol_type = value.get("protocolType") or ""
    members = value.get("members") or []
    # GroupMetadata keeps members in a Scala mutable.HashMap keyed by memberId: print in its iteration order.
    latest: dict[str, dict[str, Any]] = {}
    for m in members:
        latest[m["memberId"]] = m
    ordered = scala213_order([m["memberId"] for m in members], java_string_hash)
    texts = []
    for mid in ordered:
        m = latest[mid]
        if protocol_type == CONSUMER:
            texts.append(_assignment_text(m))
        else:
            texts.append(f"{mid}={_hex(m.get('assignment') or b'')}")
    return sc.java_json(
        {
            "protocolType": protocol_type,
            "protocol": value.get("protocol"),
            "generationId": value.get("generation"),
            "assignment": "{" + ",".join(texts) + "}",
        }
    )


def _unknown_key_error(v: int, version: Version) -> str:
    return release_for(version).offsets_unknown_key_error.format(v=v)


def _read_value(msg: sc.Message, value: bytes, what: str, max_version: int = 32767) -> tuple[int, dict[str, Any]]:
    if len(value) < 2:
        raise InvalidRecordError("java.nio.BufferUnderflowException")
    (ver,) = SCHEMA_VERSION.unpack_from(value, 0)
    if not msg.supports(ver) or ver > max_version:
        raise InvalidRecordError(f"Unknown {what} message version: {ver}")
    try:
        vals, _ = sc.read(value, msg, ver, pos=2)
        co.check_non_nullable(msg.fields, vals, ver)
    except InvalidRecordError as exc:
        raise InvalidRecordError(co.java_message(exc)) from None
    return ver, vals


class OffsetsTextParser:
    """2.0 – 3.7 ``GroupMetadataManager.formatRecordKeyAndValue`` and its predecessors."""

    def __init__(self, version: Version) -> None:
        self.version = version
        self.release = release_for(version)
        self.old = self.release.offsets_old_text

    def parse(self, record, batch) -> tuple[str | None, str | None]:  # noqa: ANN001
        key = None if record.key is None else bytes(record.key)
        value = None if record.value is None else bytes(record.value)
        if self.old and value is None:
            return None, None
        if key is None:
            raise InvalidRecordError("Failed to decode message using offset topic decoder (message had a missing key)")
        if len(key) < 2:
            raise InvalidRecordError("java.nio.BufferUnderflowException")
        (kver,) = SCHEMA_VERSION.unpack_from(key, 0)
        if kver not in (0, 1, 2):
            if self.release.unknown_key_text:
                return f"unknown::version={kver}", None
            raise InvalidRecordError(_unknown_key_error(kver, self.version))
        kmsg = sg.OffsetCommitKey if kver < 2 else sg.GroupMetadataKey
        try:
            kvals, _ = sc.read(key, kmsg, kver, pos=2)
            co.check_non_nullable(kmsg.fields, kvals, kver)
        except InvalidRecordError as exc:
            raise InvalidRecordError(co.java_message(exc)) from None
        if kver < 2:
            return self._offset(kvals, value)
        return self._group(kvals, value)

    def _offset(self, k: dict[str, Any], value: bytes | None) -> tuple[str, str]:
        if self.old:
            key_text = f"offset::{k['group']}:{k['topic']}:{k['partition']}"
        else:
            key_text = f"offset_commit::group={k['group']},partition={k['topic']}-{k['partition']}"
        if value is None:
            return key_text, "<DELETE>"
        _, v = _read_value(sg.OffsetCommitValue, value, "offset", self.release.offsets_value_max_version)
        meta = v.get("metadata") or ""
        if self.old:
            return key_text, f"{v['offset']}:{meta}" if meta else str(v["offset"])
        return key_text, f"offset={v['offset']},metadata={meta}" if meta else f"offset={v['offset']}"

    def _group(self, k: dict[str, Any], value: bytes | None) -> tuple[str, str]:
        key_text = sc.java_json({"metadata": k["group"]}) if self.old else f"group_metadata::group={k['group']}"
        if value is None:
            return key_text, "<DELETE>"
        _, v = _read_value(sg.GroupMetadataValue, value, "group metadata", self.release.offsets_value_max_version)
        if self.release.offsets_static_member_check:
            seen: set[str] = set()
            for m in v.get("members") or []:
                inst = m.get("groupInstanceId")
                if inst is not None:
                    if inst in seen:
                        raise InvalidRecordError(f"Static member with groupInstanceId={inst} cannot be added to group "
                                                 f"{k['group']} since it is already a member")
                    seen.add(inst)
        return key_text, _group_json(v, self.old)


def make(version: Version):
    return OffsetsJsonParser(version) if release_for(version).offsets_json else OffsetsTextParser(version)


def decode_json(record) -> dict[str, Any]:  # noqa: ANN001
    return co.structured_any_layout(record, KEYS, VALUES, VALUES_40, "4.0")
