"""``kafkalog schemas``: the registry rebuilt from ``_schemas`` copies, the audit of the data against it, and the
bundle that restores it into a fresh registry.

Why: when a registry loses schemas (a compacted or deleted ``_schemas``, ids reassigned after a restore, hard
deletes that resurrect) the data still names the ids it was written with, and the segments (and the cleaner's
leftovers, and other replicas) often still hold every schema. This module finds the copies in log dirs
(``internal_topics/logdir.discover``), replays them (``internal_topics/schema_registry``), decodes the data with
them (``internal_topics/schema_decode``) and returns data; ``render/schemas.py`` prints it.

* ``load_registry(paths)``: the state (``--at`` gives the state at an offset or time).
* ``audit(paths, registry)``: ids the data uses that the registry lacks or has deleted (partitions, offset
  ranges), bytes that do not match their schema, poison pills (bad magic) in schema-registry topics, Avro subjects
  whose compatibility level the data written actually broke (a sample of each version's records read with the
  versions the level says must read it), and partitions mixing header ids with the prefix.
* ``export(registry, out_dir)``: REST payloads and a ``restore.sh`` of curl calls that re-register every schema
  with its original id and version in a registry in IMPORT mode, then its soft deletes, configs and modes.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from kafkalog_cli.errors import UnreadableFileError
from kafkalog_cli.internal_topics.logdir import PartitionCopy, discover
from kafkalog_cli.internal_topics.schema_decode import Decoder, avro_schema
from kafkalog_cli.internal_topics.schema_registry import SCHEMAS_TOPIC, Registry, SchemaVersion, replay, walk_records
from kafkalog_cli.storage.layout import segment_logs


class NoRegistryError(UnreadableFileError):
    """No ``_schemas`` partition in the paths given."""


def schema_copies(paths: list[str], topic: str = SCHEMAS_TOPIC) -> tuple[list[tuple[int, str]], list[str]]:
    """(partition, directory) of every copy of ``topic`` under the paths, and discovery notes."""
    found, notes = discover(paths)
    return [(c.partition, c.path) for c in found if c.topic == topic], notes


def load_registry(paths: list[str], *, topic: str = SCHEMAS_TOPIC, at_offset: int | None = None,
                  at_time: int | None = None) -> Registry:
    copies, notes = schema_copies(paths, topic)
    if not copies:
        raise NoRegistryError(f"no {topic} partition found", file=" ".join(paths),
                              expected=f"a log dir holding {topic}-0 (or the {topic}-0 directory itself)",
                              found="none", hint=f"give the log dir of the broker that hosts {topic} "
                              "(--schemas-topic if the registry's kafkastore.topic is another name)")
    reg = replay(copies, at_offset=at_offset, at_time=at_time)
    reg.notes[:0] = notes
    return reg


def registry_beside(paths: list[str], topic: str = SCHEMAS_TOPIC) -> Registry:
    """For ``dump``: the registry found in the log dir(s) of the files or partition directories given."""
    dirs: list[str] = []
    for p in paths:
        real = os.path.realpath(p)
        part = real if os.path.isdir(real) else os.path.dirname(real)
        log_dir = os.path.dirname(part)
        if log_dir not in dirs:
            dirs.append(log_dir)
    copies: list[tuple[int, str]] = []
    for d in dirs:
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for n in names:
            if n.startswith(topic + "-") and n[len(topic) + 1:].isdigit() and os.path.isdir(os.path.join(d, n)):
                copies.append((int(n[len(topic) + 1:]), os.path.join(d, n)))
    if not copies:
        raise NoRegistryError(f"no {topic} partition beside the input", file=" ".join(dirs),
                              expected=f"{topic}-0 in the same log dir", found="none",
                              hint="give the registry's log dir with --schemas LOGDIR")
    return replay(copies)


# ------------------------------------------------------------------------------------------------ audit
class _AsDict:
    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class IdUse(_AsDict):
    schema_id: int | None
    guid: str | None
    state: str  # "absent" | "soft-deleted" | "hard-deleted"
    topic: str
    partition: int
    path: str
    first_offset: int
    last_offset: int
    records: int
    subject: str | None = None


@dataclass
class BadRecord(_AsDict):
    kind: str  # bad-magic | truncated | mismatch | invalid | schema | bad-indexes
    topic: str
    partition: int
    path: str
    offset: int
    field: str  # key | value
    schema_id: int | None
    reason: str | None


@dataclass
class CompatBreak(_AsDict):
    subject: str
    level: str
    written_version: int
    reader_version: int
    topic: str
    partition: int
    offset: int
    reason: str


@dataclass
class PartitionAudit:
    topic: str
    partition: int
    path: str
    records: int = 0
    registry_records: int = 0  # keys/values framed with an id the registry knows, or header ids
    prefix: int = 0
    header: int = 0
    decoded: int = 0
    bad_total: int = 0

    @property
    def mixed(self) -> bool:
        return self.prefix > 0 and self.header > 0

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["mixed_id_forms"] = self.mixed
        return d


@dataclass
class AuditReport:
    partitions: list[PartitionAudit] = field(default_factory=list)
    id_uses: list[IdUse] = field(default_factory=list)
    bad: list[BadRecord] = field(default_factory=list)
    compat: list[CompatBreak] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    bad_limit: int = 20

    @property
    def mixed(self) -> list[PartitionAudit]:
        return [p for p in self.partitions if p.mixed]

    @property
    def problems(self) -> int:
        return len(self.id_uses) + sum(p.bad_total for p in self.partitions) + len(self.compat) + len(self.mixed)

    def as_dict(self) -> dict[str, Any]:
        return {
            "problems": self.problems,
            "partitions": [p.as_dict() for p in self.partitions],
            "id_uses": [u.as_dict() for u in self.id_uses],
            "bad_records": [b.as_dict() for b in self.bad],
            "compatibility_breaks": [c.as_dict() for c in self.compat],
            "mixed_id_forms": [f"{p.topic}-{p.partition}" for p in self.mixed],
            "notes": self.notes,
        }


# which versions must read the data written with version v, per compatibility level (the registry's rule:
# BACKWARD = the next schema reads the previous one's data; FORWARD = the previous schema reads the next one's data)
def _readers(level: str, v: int, versions: list[int]) -> list[int]:
    later = [n for n in versions if n > v]
    earlier = [n for n in versions if n < v]
    lv = level.upper()
    out: list[int] = []
    if lv.startswith("BACKWARD") or lv.startswith("FULL"):
        out += later if lv.endswith("_TRANSITIVE") else later[:1]
    if lv.startswith("FORWARD") or lv.startswith("FULL"):
        out += earlier if lv.endswith("_TRANSITIVE") else earlier[-1:]
    return out


def _is_data_topic(c: PartitionCopy, topic: str) -> bool:
    # Kafka's own (__*) and Confluent Platform's (_confluent*: Control Center, ksqlDB command topics) internals
    # carry their own framing
    return c.topic != topic and not c.topic.startswith(("__", "_confluent"))


@dataclass
class _FieldStats:
    """What one field (key or value) of one partition showed; judged at the end (``_is_registry_field``)."""

    non_null: int = 0
    known: int = 0  # references the registry resolves
    header: int = 0
    prefix: int = 0
    framed_unknown: int = 0  # prefix with an id > 0 the registry lacks
    decoded: int = 0
    uses: dict[tuple[Any, str], IdUse] = field(default_factory=dict)
    bad: list[BadRecord] = field(default_factory=list)
    bad_total: int = 0

    def is_registry_field(self) -> bool:
        """Written by a schema-registry serializer: an id the registry knows, a header id, or (a registry that
        lost its schemas) at least 90 % of the values framed with a non-zero id; raw bytes that happen to start
        with 0x00 (a big-endian long key) are not."""
        if self.known or self.header:
            return True
        return self.non_null > 0 and self.framed_unknown * 10 >= self.non_null * 9


def audit(paths: list[str], registry: Registry, *, topic: str = SCHEMAS_TOPIC, wire: str = "confluent",
          samples: int = 3, bad_limit: int = 20) -> AuditReport:
    found, notes = discover(paths)
    rep = AuditReport(notes=list(notes), bad_limit=bad_limit)
    dec = Decoder(registry, wire=wire)
    # (subject, version) -> [(topic, partition, offset, data, start)] samples of Avro data for the compatibility check
    written: dict[tuple[str, int], list[tuple[str, int, int, bytes, int]]] = {}
    for c in found:
        if not _is_data_topic(c, topic):
            continue
        pa = PartitionAudit(c.topic, c.partition, c.path)
        stats = {"key": _FieldStats(), "value": _FieldStats()}
        samples_here: list[tuple[tuple[str, int], tuple[str, int, int, bytes, int]]] = []
        for _f, r in walk_records([p for _b, p in segment_logs(c.path)], rep.notes):
            pa.records += 1
            for fld, data in (("key", r.key), ("value", r.value)):
                if data is not None:
                    _audit_one(dec, registry, stats[fld], c, fld, r, data, samples, samples_here)
        judged = [st for st in stats.values() if st.is_registry_field()]
        if not judged:
            continue  # not schema-registry data: its bytes are not ours to judge
        for st in judged:
            pa.registry_records += st.known + st.header + st.framed_unknown
            pa.prefix += st.prefix
            pa.header += st.header
            pa.decoded += st.decoded
            pa.bad_total += st.bad_total
            rep.bad += st.bad[:bad_limit]
            rep.id_uses += st.uses.values()
        for k, sample in samples_here:
            written.setdefault(k, []).append(sample)
        rep.partitions.append(pa)
    rep.compat = _compat(registry, written)
    return rep


def _audit_one(dec: Decoder, registry: Registry, st: _FieldStats, c: PartitionCopy, fld: str, r: Any, data: bytes,
               samples: int, samples_here: list) -> None:  # noqa: ANN001
    st.non_null += 1
    d = dec.decode(data, r.headers, is_key=fld == "key")
    if d.source is not None:
        if d.source.endswith("header"):
            st.header += 1
        else:
            st.prefix += 1
    if d.subject is not None:
        st.known += 1
    elif d.kind == "unknown-id" and d.source is not None and (d.guid is not None or (d.schema_id or 0) > 0):
        st.framed_unknown += 1
    if d.ok:
        st.decoded += 1
    if d.kind == "unknown-id" or (d.source is not None and d.deleted):
        sv = registry.by_guid(d.guid) if d.guid else registry.by_id(d.schema_id or 0)
        state = "absent" if not sv else "hard-deleted" if sv[0].hard_deleted else "soft-deleted"
        k = (d.guid or d.schema_id, state)
        u = st.uses.get(k)
        if u is None:
            u = st.uses[k] = IdUse(d.schema_id, d.guid, state, c.topic, c.partition, c.path, r.offset, r.offset, 0,
                                   sv[0].subject if sv else None)
        u.last_offset = r.offset
        u.records += 1
        if d.kind == "unknown-id":
            return
    if not d.ok:
        st.bad_total += 1
        if len(st.bad) < 20:
            st.bad.append(BadRecord(d.kind, c.topic, c.partition, c.path, r.offset, fld, d.schema_id, d.reason))
    elif d.schema_type == "AVRO" and d.subject is not None and d.version is not None:
        k2 = (d.subject, d.version)
        if sum(1 for s in samples_here if s[0] == k2) < samples:
            start = 5 if d.source == "prefix" else 9 if d.source == "apicurio-prefix" else 0
            samples_here.append((k2, (c.topic, c.partition, r.offset, bytes(data), start)))


def _compat(registry: Registry, written: dict[tuple[str, int], list[tuple[str, int, int, bytes, int]]]) -> list[CompatBreak]:
    import io

    import fastavro

    out: list[CompatBreak] = []
    parsed: dict[tuple[str, int], Any] = {}

    def schema(sv: SchemaVersion) -> Any:
        k = (sv.subject, sv.version)
        if k not in parsed:
            try:
                parsed[k] = avro_schema(registry, sv)
            except Exception:  # a schema that does not compile is reported by the decode itself
                parsed[k] = None
        return parsed[k]

    for (subject, version), recs in sorted(written.items()):
        level = registry.compatibility(subject)
        avro_versions = [v.version for v in registry.subject_versions(subject) if v.schema_type == "AVRO"]
        wsv = registry.find(subject, version)
        if wsv is None or schema(wsv) is None:
            continue
        for rv in _readers(level, version, avro_versions):
            rsv = registry.find(subject, rv)
            if rsv is None or schema(rsv) is None:
                continue
            for t, p, off, data, start in recs:
                fo = io.BytesIO(data)
                fo.seek(start)
                try:
                    fastavro.schemaless_reader(fo, schema(wsv), schema(rsv))
                except Exception as exc:  # fastavro's SchemaResolutionError and friends
                    out.append(CompatBreak(subject, level, version, rv, t, p, off, f"{type(exc).__name__}: {exc}"))
                    break
    return out


# ------------------------------------------------------------------------------------------------ export
@dataclass
class ExportResult:
    out_dir: str
    files: list[str]
    registered: int
    soft_deleted: int
    hard_deleted: int
    skipped_hard_deleted: int


CT = "application/vnd.schemaregistry.v1+json"


def _order(reg: Registry, versions: list[SchemaVersion]) -> list[SchemaVersion]:
    """References before the schemas that use them, else by id then subject/version (the original order)."""
    by_key = {(v.subject, v.version): v for v in versions}
    done: set[tuple[str, int]] = set()
    out: list[SchemaVersion] = []

    def visit(v: SchemaVersion, stack: set[tuple[str, int]]) -> None:
        k = (v.subject, v.version)
        if k in done or k in stack:
            return
        stack.add(k)
        for r in v.references:
            dep = by_key.get((r.get("subject"), r.get("version")))  # type: ignore[arg-type]
            if dep is not None:
                visit(dep, stack)
        done.add(k)
        out.append(v)

    for v in sorted(versions, key=lambda v: (v.schema_id, v.subject, v.version)):
        visit(v, set())
    return out


def export(reg: Registry, out_dir: str, *, include_hard_deleted: bool = False) -> ExportResult:
    """Write the restore bundle into ``out_dir`` (created; files in it are overwritten)."""
    try:
        os.makedirs(os.path.join(out_dir, "payloads"), exist_ok=True)
    except OSError as exc:
        raise UnreadableFileError(f"cannot create the export directory: {exc.strerror}", file=out_dir) from None
    chosen = [v for v in reg.versions.values() if include_hard_deleted or not v.hard_deleted]
    skipped = sum(1 for v in reg.versions.values() if v.hard_deleted and not include_hard_deleted)
    files: list[str] = []

    def write(rel: str, obj: Any) -> str:
        path = os.path.join(out_dir, rel)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2, sort_keys=True)
            f.write("\n")
        files.append(rel)
        return rel

    lines = [
        "#!/bin/sh",
        "# Re-registers the schemas of a registry rebuilt by kafkalog from its _schemas segments, with their",
        "# original ids and versions, into a registry in IMPORT mode; then the soft deletes, configs and modes.",
        "# Usage: SCHEMA_REGISTRY_URL=http://registry:8081 sh restore.sh   (curl options: CURL_OPTS)",
        "set -eu",
        'cd "$(dirname "$0")"',
        'SR="${SCHEMA_REGISTRY_URL:-http://localhost:8081}"',
        'call() { method=$1; path=$2; shift 2; echo "$method $path" >&2; '
        f'curl -fsS ${{CURL_OPTS:-}} -X "$method" -H "Content-Type: {CT}" "$@" "$SR$path"; echo; }}',
        "",
        "# 1. the registry (empty, or force) in IMPORT mode: ids and versions are taken from the payloads",
        "call PUT '/mode?force=true' --data '{\"mode\":\"IMPORT\"}'",
    ]
    manifest: list[dict[str, Any]] = []
    soft = hard = 0
    for v in _order(reg, chosen):
        body: dict[str, Any] = {"schema": v.schema, "schemaType": v.schema_type, "id": v.schema_id,
                                "version": v.version}
        if v.references:
            body["references"] = v.references
        if v.metadata is not None:
            body["metadata"] = v.metadata
        if v.rule_set is not None:
            body["ruleSet"] = v.rule_set
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in v.subject)
        rel = write(os.path.join("payloads", f"{v.schema_id:08d}-{safe}-v{v.version}.json"), body)
        subj = quote(v.subject, safe="")
        lines.append(f"call POST {shlex.quote(f'/subjects/{subj}/versions')} --data @{shlex.quote(rel)}")
        # a hard-deleted schema asked for comes back soft-deleted: its id resolves again for the data written
        # with it, and the subject's latest version stays what it was
        if v.deleted or v.hard_deleted:
            lines.append(f"call DELETE {shlex.quote(f'/subjects/{subj}/versions/{v.version}')}")
            soft += 1
        hard += v.hard_deleted
        manifest.append({"subject": v.subject, "version": v.version, "id": v.schema_id, "schema_type": v.schema_type,
                         "deleted": v.deleted, "hard_deleted": v.hard_deleted, "payload": rel})
    lines += ["", "# 2. compatibility settings"]
    for subject, level in sorted(reg.config.items(), key=lambda kv: (kv[0] is not None, kv[0] or "")):
        path = "/config" if subject is None else f"/config/{quote(subject, safe='')}"
        lines.append(f"call PUT {shlex.quote(path)} --data {shlex.quote(json.dumps({'compatibility': level}))}")
    lines += ["", "# 3. modes: the subjects' own, then the global one (READWRITE unless the registry had another)"]
    for subject, mode in sorted((k, m) for k, m in reg.mode.items() if k is not None):
        lines.append(f"call PUT {shlex.quote('/mode/' + quote(subject, safe=''))} --data "
                     f"{shlex.quote(json.dumps({'mode': mode}))}")
    lines.append(f"call PUT '/mode?force=true' --data {shlex.quote(json.dumps({'mode': reg.mode.get(None, 'READWRITE')}))}")
    script = os.path.join(out_dir, "restore.sh")
    with open(script, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(script, 0o755)
    files.append("restore.sh")
    write("manifest.json", {"schema_version": 1, "schemas": manifest,
                            "config": {("" if k is None else k): lv for k, lv in reg.config.items()},
                            "mode": {("" if k is None else k): m for k, m in reg.mode.items()},
                            "hard_deleted_skipped": skipped})
    return ExportResult(out_dir, files, len(manifest), soft, hard, skipped)
