"""The Schema Registry's state rebuilt from the ``_schemas`` topic's segments (Confluent Schema Registry; Karapace
writes the same topic with the same records).

Why: the registry keeps nothing but this topic; when it is compacted, deleted, restored with other ids or hard
deletes resurrect, the only remedy operators have is "manual intervention in the `_schemas` topic". Reading the
segments offline (every copy given: uncleaned segments, the cleaner's leftovers, other replicas) recovers the
state *and* what compaction has not yet dropped, the content of hard-deleted schemas included.

The records (key and value are JSON, Confluent's ``SchemaRegistryKey`` / ``*Value`` classes, KafkaStoreMessageHandler):

* ``{"keytype":"SCHEMA","subject":S,"version":V,"magic":1}`` -> ``{"subject","version","id","schema",
  "schemaType" (absent = AVRO),"references":[{"name","subject","version"}],"deleted":bool, "metadata", "ruleSet",
  "guid"?}``; ``deleted: true`` is a soft delete; a tombstone (null value) is the hard delete (``permanent=true``).
* ``{"keytype":"CONFIG","subject":S|null,"magic":0}`` -> ``{"compatibilityLevel":L}`` (or ``"compatibility"``);
  a tombstone removes the setting. ``subject: null`` is the global setting.
* ``{"keytype":"MODE","subject":S|null,"magic":0}`` -> ``{"mode":"IMPORT"|"READONLY"|"READWRITE"}``.
* ``{"keytype":"DELETE_SUBJECT","subject":S,"magic":0}`` -> ``{"subject":S,"version":V}``: every version up to V
  is soft-deleted. ``CLEAR_SUBJECT`` (same value): every version up to V is removed (a hard delete of the subject).
* ``{"keytype":"NOOP","magic":0}``: the reader's offset probe; ignored. Any other key type is kept as a note.

Replay: every record of every copy of each ``_schemas`` partition, joined by offset (a compacted copy keeps the
offsets of what survived, so the union of the copies is the most complete history), in offset order. Nothing
here prints; ``ops/schemas.py`` drives it over log dirs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.format.batch import Record
from kafkalog_cli.storage.layout import LEFTOVER_SUFFIXES, LOG_SUFFIX, segment_logs
from kafkalog_cli.storage.segment import data_records

SCHEMAS_TOPIC = "_schemas"
SCHEMA_TYPES = ("AVRO", "PROTOBUF", "JSON")


@dataclass
class RawRecord:
    """One ``_schemas`` record as read from a file (the first copy read wins for an offset)."""

    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    file: str


@dataclass
class SchemaVersion:
    """One version of one subject: the SCHEMA record's value, and what happened to it."""

    subject: str
    version: int
    schema_id: int
    schema: str
    schema_type: str = "AVRO"
    references: list[dict[str, Any]] = field(default_factory=list)
    deleted: bool = False  # soft delete
    hard_deleted: bool = False  # tombstoned or CLEAR_SUBJECT: gone from the registry, content still readable here
    guid: str | None = None
    metadata: Any = None
    rule_set: Any = None
    offset: int = -1  # offset of the record that last set it
    timestamp: int = -1
    first_offset: int = -1

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "subject": self.subject, "version": self.version, "id": self.schema_id, "schema_type": self.schema_type,
            "references": self.references, "deleted": self.deleted, "hard_deleted": self.hard_deleted,
            "guid": self.guid, "offset": self.offset, "timestamp": self.timestamp, "schema": self.schema,
        }
        if self.metadata is not None:
            d["metadata"] = self.metadata
        if self.rule_set is not None:
            d["rule_set"] = self.rule_set
        return d


@dataclass
class Registry:
    """The registry's state after the replay (at ``--at``, when given)."""

    versions: dict[tuple[str, int], SchemaVersion] = field(default_factory=dict)
    config: dict[str | None, str] = field(default_factory=dict)  # subject (None: global) -> compatibility level
    mode: dict[str | None, str] = field(default_factory=dict)  # subject (None: global) -> mode
    notes: list[str] = field(default_factory=list)
    records: int = 0
    last_offset: int = -1
    sources: list[str] = field(default_factory=list)  # the partition copies read

    # --------------------------------------------------------------------------------------------- look-ups
    def by_id(self, schema_id: int) -> list[SchemaVersion]:
        """Every version registered under ``schema_id`` (one schema may serve several subjects), live ones first."""
        found = [v for v in self.versions.values() if v.schema_id == schema_id]
        found.sort(key=lambda v: (v.hard_deleted, v.deleted, v.subject, v.version))
        return found

    def by_guid(self, guid: str) -> list[SchemaVersion]:
        found = [v for v in self.versions.values() if v.guid is not None and v.guid.lower() == guid.lower()]
        found.sort(key=lambda v: (v.hard_deleted, v.deleted, v.subject, v.version))
        return found

    def subjects(self) -> list[str]:
        return sorted({s for s, _v in self.versions})

    def subject_versions(self, subject: str, *, include_deleted: bool = True) -> list[SchemaVersion]:
        out = [v for (s, _n), v in self.versions.items() if s == subject
               and (include_deleted or not (v.deleted or v.hard_deleted))]
        return sorted(out, key=lambda v: v.version)

    def compatibility(self, subject: str) -> str:
        """The subject's effective compatibility level (its own, else the global one, else BACKWARD, the
        registry's default ``schema.compatibility.level``)."""
        return self.config.get(subject) or self.config.get(None) or "BACKWARD"

    def find(self, subject: str, version: int) -> SchemaVersion | None:
        return self.versions.get((subject, version))


class RecordError(KafkalogError):
    """A ``_schemas`` record whose key or value is not the registry's JSON."""


def _json(data: bytes | None, what: str, rec: RawRecord) -> Any:
    if data is None:
        return None
    try:
        return json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise RecordError(f"{what} is not JSON: {exc}", file=rec.file, expected="the registry's JSON record",
                          found=bytes(data[:40]).hex()) from None


def apply(reg: Registry, rec: RawRecord) -> None:
    """Apply one record to the state, as the registry's store reader does (KafkaStoreMessageHandler.handleUpdate)."""
    reg.records += 1
    reg.last_offset = max(reg.last_offset, rec.offset)
    where = f"{SCHEMAS_TOPIC}-{rec.partition} offset {rec.offset}"
    try:
        key = _json(rec.key, "key", rec)
        value = _json(rec.value, "value", rec)
    except RecordError as exc:
        reg.notes.append(f"{where}: skipped: {exc.message}")
        return
    if not isinstance(key, dict):
        reg.notes.append(f"{where}: skipped: the key is not a JSON object")
        return
    kt = key.get("keytype")
    subject = key.get("subject")
    if kt == "NOOP":
        return
    if kt == "SCHEMA":
        _apply_schema(reg, rec, key, value, where)
    elif kt == "CONFIG":
        if value is None:
            reg.config.pop(subject, None)
        elif isinstance(value, dict):
            level = value.get("compatibilityLevel") or value.get("compatibility")
            if level is not None:
                reg.config[subject] = str(level)
    elif kt == "MODE":
        if value is None:
            reg.mode.pop(subject, None)
        elif isinstance(value, dict) and value.get("mode") is not None:
            reg.mode[subject] = str(value["mode"])
    elif kt in ("DELETE_SUBJECT", "CLEAR_SUBJECT"):
        if not isinstance(value, dict):
            return
        upto = value.get("version")
        subj = value.get("subject", subject)
        for (s, n), v in reg.versions.items():
            if s == subj and (upto is None or n <= int(upto)):
                if kt == "DELETE_SUBJECT":
                    v.deleted = True
                else:
                    v.hard_deleted = True
                v.offset, v.timestamp = rec.offset, rec.timestamp
    else:
        reg.notes.append(f"{where}: record of key type {kt!r} not interpreted")


def _apply_schema(reg: Registry, rec: RawRecord, key: dict, value: Any, where: str) -> None:
    subject, version = key.get("subject"), key.get("version")
    if not isinstance(subject, str) or not isinstance(version, int):
        reg.notes.append(f"{where}: skipped: SCHEMA key without subject and version")
        return
    old = reg.versions.get((subject, version))
    if value is None:  # tombstone: the hard delete; keep what the earlier records said
        if old is None:
            reg.notes.append(f"{where}: hard delete of {subject} version {version}, whose content is not in the "
                             "segments read (compacted away)")
            return
        old.hard_deleted = True
        old.offset, old.timestamp = rec.offset, rec.timestamp
        return
    if not isinstance(value, dict) or not isinstance(value.get("id"), int) or not isinstance(value.get("schema"), str):
        reg.notes.append(f"{where}: skipped: SCHEMA value without id and schema")
        return
    v = SchemaVersion(
        subject=subject, version=version, schema_id=value["id"], schema=value["schema"],
        schema_type=str(value.get("schemaType") or "AVRO").upper(), references=list(value.get("references") or []),
        deleted=bool(value.get("deleted", False)), guid=value.get("guid"), metadata=value.get("metadata"),
        rule_set=value.get("ruleSet"), offset=rec.offset, timestamp=rec.timestamp,
        first_offset=old.first_offset if old is not None else rec.offset,
    )
    reg.versions[(subject, version)] = v


# ------------------------------------------------------------------------------------------------ reading
def partition_files(path: str) -> list[str]:
    """The ``.log`` segments of one partition directory in offset order, then the cleaner's leftovers
    (``.log.cleaned``, ``.log.swap``, ``.log.deleted``): they hold records compaction may have dropped since."""
    files = [p for _b, p in segment_logs(path)]
    try:
        names = sorted(os.listdir(path))
    except OSError:
        names = []
    files += [os.path.join(path, n) for n in names
              if n.endswith(LEFTOVER_SUFFIXES) and n[: n.rindex(".")].endswith(LOG_SUFFIX)]
    return files


def walk_records(files: list[str], notes: list[str]) -> Iterator[tuple[str, Record]]:
    """(file, record) for every readable data record of the files in order; damage becomes a note in ``notes``
    (the records before it are kept) and the walk goes on with the next file."""
    for f, _entry, r in data_records(files, notes):
        yield f, r


def read_records(path: str, partition: int, notes: list[str]) -> list[RawRecord]:
    """Every readable record of the partition directory's segments and leftovers."""
    return [RawRecord(partition, r.offset, r.timestamp, None if r.key is None else bytes(r.key),
                      None if r.value is None else bytes(r.value), f) for f, r in walk_records(partition_files(path), notes)]


def replay(copies: list[tuple[int, str]], *, at_offset: int | None = None, at_time: int | None = None) -> Registry:
    """The state after replaying every copy ``(partition, directory)`` of ``_schemas``; with ``at_offset`` only
    records at offsets <= it, with ``at_time`` (ms) only records with timestamps <= it."""
    reg = Registry()
    merged: dict[tuple[int, int], RawRecord] = {}
    for partition, path in copies:
        reg.sources.append(path)
        for r in read_records(path, partition, reg.notes):
            merged.setdefault((r.partition, r.offset), r)
    for _k, r in sorted(merged.items()):
        if at_offset is not None and r.offset > at_offset:
            continue
        if at_time is not None and r.timestamp > at_time:
            continue
        apply(reg, r)
    return reg
