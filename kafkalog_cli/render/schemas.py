"""Text and JSON of ``kafkalog schemas``: the registry table, the audit findings, the export summary."""

from __future__ import annotations

from typing import Any

from kafkalog_cli.internal_topics.schema_registry import Registry
from kafkalog_cli.ops.schemas import AuditReport, ExportResult

SCHEMA_VERSION = 1


def _state(v: Any) -> str:
    return "hard-deleted" if v.hard_deleted else "soft-deleted" if v.deleted else "live"


def registry_lines(reg: Registry, *, at: str | None = None) -> list[str]:
    out = [f"registry rebuilt from {len(reg.sources)} copy(ies) of _schemas: {reg.records} records, last offset "
           f"{reg.last_offset}" + (f" (state at {at})" if at else "")]
    g_compat = reg.config.get(None)
    g_mode = reg.mode.get(None)
    out.append(f"global compatibility: {g_compat or 'BACKWARD (default, no CONFIG record)'}; "
               f"global mode: {g_mode or 'READWRITE (default, no MODE record)'}")
    rows = [("SUBJECT", "VERSION", "ID", "TYPE", "STATE", "COMPATIBILITY", "MODE", "REFERENCES")]
    for (subject, _n), v in sorted(reg.versions.items()):
        refs = ",".join(f"{r.get('name')}={r.get('subject')}:{r.get('version')}" for r in v.references) or "-"
        rows.append((subject, str(v.version), str(v.schema_id), v.schema_type, _state(v),
                     reg.config.get(subject, "-"), reg.mode.get(subject, "-"), refs))
    if len(rows) == 1:
        out.append("no schema registered (only NOOP/CONFIG/MODE records, or the topic was emptied)")
    else:
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
        for r in rows:
            out.append("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1])
    subjects_only = sorted(k for k in set(reg.config) | set(reg.mode) if k is not None and not reg.subject_versions(k))
    for s in subjects_only:
        out.append(f"subject {s}: compatibility {reg.config.get(s, '-')}, mode {reg.mode.get(s, '-')} (no versions)")
    hard = [v for v in reg.versions.values() if v.hard_deleted]
    if hard:
        out.append(f"{len(hard)} hard-deleted version(s) still readable in the segments: "
                   "'kafkalog schemas --export DIR --include-hard-deleted' restores them")
    for n in reg.notes:
        out.append(f"note: {n}")
    return out


def registry_json(reg: Registry, *, at: str | None = None) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "at": at,
        "records": reg.records,
        "last_offset": reg.last_offset,
        "sources": reg.sources,
        "config": {("" if k is None else k): v for k, v in reg.config.items()},
        "mode": {("" if k is None else k): v for k, v in reg.mode.items()},
        "global_compatibility": reg.config.get(None),
        "global_mode": reg.mode.get(None),
        "versions": [v.as_dict() for _k, v in sorted(reg.versions.items())],
        "notes": reg.notes,
    }


def audit_lines(rep: AuditReport) -> list[str]:
    out = []
    for p in rep.partitions:
        out.append(f"{p.topic}-{p.partition}: {p.records} records, {p.registry_records} keys/values with schema ids "
                   f"({p.prefix} prefix, {p.header} header), {p.decoded} decoded, {p.bad_total} bad")
    if not rep.partitions:
        out.append("no partition holds schema-registry framed data")
    for u in rep.id_uses:
        what = f"GUID {u.guid}" if u.guid else f"schema id {u.schema_id}"
        state = "absent from the registry" if u.state == "absent" else f"{u.state} in the registry ({u.subject})"
        out.append(f"MISSING {what} {state}: used by {u.records} key/value(s) of {u.topic}-{u.partition} "
                   f"offsets {u.first_offset}..{u.last_offset} ({u.path})")
    for b in rep.bad:
        out.append(f"BAD {b.topic}-{b.partition} offset {b.offset} {b.field}: {b.kind}: {b.reason}")
    shown = len(rep.bad)
    total = sum(p.bad_total for p in rep.partitions)
    if total > shown:
        out.append(f"... {total - shown} more bad record(s) not listed (first {rep.bad_limit} per partition shown)")
    for c in rep.compat:
        out.append(f"COMPATIBILITY {c.subject} ({c.level}): data written with version {c.written_version} "
                   f"({c.topic}-{c.partition} offset {c.offset}) does not read with version {c.reader_version}: "
                   f"{c.reason}")
    for p in rep.mixed:
        out.append(f"MIXED {p.topic}-{p.partition}: {p.header} key/value(s) carry header ids, {p.prefix} the prefix "
                   "(consumers need a deserializer that reads both, e.g. Confluent's dual schema-id deserializer)")
    for n in rep.notes:
        out.append(f"note: {n}")
    out.append(f"{rep.problems} problem(s) found" if rep.problems else "no problem found")
    return out


def audit_json(rep: AuditReport) -> dict[str, Any]:
    d = rep.as_dict()
    d["schema_version"] = SCHEMA_VERSION
    return d


def export_lines(res: ExportResult) -> list[str]:
    out = [f"wrote {res.registered} schema payload(s) to {res.out_dir} ({res.soft_deleted} to soft-delete again "
           f"after registration)",
           f"restore: SCHEMA_REGISTRY_URL=http://REGISTRY:8081 sh {res.out_dir}/restore.sh"]
    if res.skipped_hard_deleted:
        out.append(f"{res.skipped_hard_deleted} hard-deleted version(s) left out: --include-hard-deleted restores "
                   "them (soft-deleted, so that their ids resolve again)")
    return out


def export_json(res: ExportResult) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "out_dir": res.out_dir, "files": res.files,
            "registered": res.registered, "soft_deleted": res.soft_deleted, "hard_deleted": res.hard_deleted,
            "skipped_hard_deleted": res.skipped_hard_deleted}
