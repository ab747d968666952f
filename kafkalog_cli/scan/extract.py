"""The one per-segment function both scan engines run: a segment path in, plain row dicts out.

Why it is shaped like this: the local process pool and Spark executors must produce identical rows, and both ship
work and results between processes. So the input is a path string (executors open the file themselves, streaming
it through a read-only mmap, never loading it whole) and the output is lists of dicts of plain Python values that
pickle anywhere. The checks that need neighbouring segments live in ``partition.py``.

Problems come from ``ops.verify.verify_segment`` (the verify-crc engine: CRC, sizes, resync past corrupt regions,
index checks); its corrupt regions tell the batch walk where to jump, so batches after a bad region still appear.
If that module cannot be imported (an older build), a minimal CRC walk stands in.
"""

from __future__ import annotations

import os
from typing import Any

from kafkalog_cli.errors import KafkalogError, UnreadableFileError
from kafkalog_cli.format.batch import TIMESTAMP_TYPE_NAMES
from kafkalog_cli.format.codecs import CODEC_NAMES
from kafkalog_cli.scan.paths import locate
from kafkalog_cli.storage.segment import MappedFile, read_entry

MAX_BATCH_SIZE = 256 * 1024 * 1024
ENTRY_HEADER = 17  # offset, size, crc/epoch, magic: what the scanner needs to read a size field
INFO = "info"


def scan_segment(path: str, *, records: bool = False) -> dict[str, list[dict[str, Any]]]:
    """Rows for one segment: ``{"batches": [...], "problems": [...], "records": [...]}`` (schemas in schema.py).

    Never raises for corrupt or unreadable input: those become problem rows.
    """
    loc = locate(path).as_dict()
    out: dict[str, list[dict[str, Any]]] = {"batches": [], "problems": [], "records": []}
    verified, problems, regions = _verify(path)
    for p in problems:
        out["problems"].append({**loc, **p})
    if any(p["kind"] == "unreadable" for p in problems):
        return out
    try:
        mf = MappedFile(path)
    except UnreadableFileError as exc:
        if not problems:
            out["problems"].append({**loc, **_problem(path, 0, 0, "unreadable", exc.describe())})
        return out
    with mf:
        _walk_rows(mf.buf, mf.size, path, loc, verified, regions, records, out)
    return out


def _problem(file: str, position: int, end: int, kind: str, message: str, severity: str = "error",
             offset: int | None = None) -> dict[str, Any]:
    return {"file": os.path.basename(file), "position": position, "end": end, "kind": kind, "severity": severity,
            "message": message, "offset": offset}


def _verify(path: str) -> tuple[bool, list[dict[str, Any]], dict[int, tuple[int, str]]]:
    """(verified by ops.verify?, problem dicts, {region start: (end, kind)} of the segment's corrupt regions)."""
    try:
        from kafkalog_cli.ops.verify import verify_segment
    except ImportError:
        return False, [], {}
    report = verify_segment(path, max_batch_size=MAX_BATCH_SIZE)
    problems = []
    regions: dict[int, tuple[int, str]] = {}
    for p in list(report.problems) + list(report.notes):
        d = p.to_dict()
        if d["file"] == path and d["end"] > d["position"]:
            regions.setdefault(d["position"], (d["end"], d["kind"]))
        if d.get("severity", "error") == INFO:
            continue
        problems.append(_problem(d["file"], d["position"], d["end"], d["kind"], d["message"],
                                 d.get("severity", "error"), d.get("offset")))
    if report.dropped_problems:
        problems.append(_problem(path, 0, 0, "problems-dropped",
                                 f"{report.dropped_problems} more problems in this segment were not kept", "warning"))
    return True, problems, regions


def _walk_rows(buf: Any, n: int, path: str, loc: dict[str, Any], verified: bool,
               regions: dict[int, tuple[int, str]], records: bool, out: dict[str, list[dict[str, Any]]]) -> None:
    """Header walk (spec §3.2) that jumps over the regions verify reported, emitting a row per entry."""
    starts = sorted(regions)
    pos = 0
    while pos < n:
        region = regions.get(pos)
        if region is not None:
            end, kind = region
            if kind == "crc-mismatch":  # the header is sound, only the checksum fails: keep the row, crc_ok=False
                entry = _try_entry(buf, pos, n, path)
                if entry is not None and pos + entry.size == end:
                    out["batches"].append(_batch_row(loc, entry, False))
            pos = end
            continue
        entry = _try_entry(buf, pos, n, path) if n - pos > ENTRY_HEADER else None
        if entry is None or entry.size < 14 or pos + entry.size > n:
            if verified:  # cannot happen when verify and this walk agree; skip to the next region to be safe
                pos = next((s for s in starts if s > pos), n)
                continue
            out["problems"].append({**loc, **_problem(path, pos, n, "truncated" if entry else "bad-size",
                                                      "entry header unreadable or runs past the end of the file")})
            return
        ok = True if verified else entry.is_valid(buf)
        if not ok:
            out["problems"].append({**loc, **_problem(path, pos, pos + entry.size, "crc-mismatch",
                                                      f"entry at offset {entry.base_offset}: CRC does not verify",
                                                      offset=entry.base_offset)})
        out["batches"].append(_batch_row(loc, entry, ok))
        if records and ok:
            _record_rows(buf, entry, path, loc, out)
        pos += entry.size


def _try_entry(buf: Any, pos: int, n: int, path: str) -> Any:
    if n - pos <= ENTRY_HEADER:
        return None
    try:
        return read_entry(buf, pos, buf[pos + 16] if buf[pos + 16] < 128 else buf[pos + 16] - 256, file=path)
    except (KafkalogError, IndexError, ValueError):
        return None


_CODECS = [CODEC_NAMES.get(c, f"unknown-{c}") for c in range(8)]
_TS_TYPES = (TIMESTAMP_TYPE_NAMES[0], TIMESTAMP_TYPE_NAMES[1])
INT32_MAX = 2147483647


def _batch_row(loc: dict[str, Any], e: Any, crc_ok: bool) -> dict[str, Any]:
    """One batches row. v2 fields are read straight off the header (no property calls: this runs per batch)."""
    if e.magic < 2:
        return {
            **loc, "position": e.position, "size": e.size, "base_offset": e.base_offset, "last_offset": e.last_offset,
            "count": 1, "magic": e.magic, "codec": _CODECS[e.codec],
            "timestamp_type": TIMESTAMP_TYPE_NAMES[e.timestamp_type], "first_timestamp": e.timestamp,
            "max_timestamp": e.max_timestamp, "producer_id": -1, "producer_epoch": -1, "base_sequence": -1,
            "last_sequence": -1, "partition_leader_epoch": -1, "transactional": False, "control": False,
            "crc_ok": crc_ok,
        }
    attrs = e.attributes
    seq = e.base_sequence
    delta = e.last_offset_delta
    if seq == -1:
        last_seq = -1
    elif seq > INT32_MAX - delta:  # DefaultRecordBatch.incrementSequence: wraps past Integer.MAX_VALUE to 0
        last_seq = delta - (INT32_MAX - seq) - 1
    else:
        last_seq = seq + delta
    return {
        **loc, "position": e.position, "size": e.batch_length + 12, "base_offset": e.base_offset,
        "last_offset": e.base_offset + delta, "count": e.records_count, "magic": e.magic, "codec": _CODECS[attrs & 7],
        "timestamp_type": _TS_TYPES[(attrs >> 3) & 1], "first_timestamp": e.base_timestamp,
        "max_timestamp": e.max_timestamp, "producer_id": e.producer_id, "producer_epoch": e.producer_epoch,
        "base_sequence": seq, "last_sequence": last_seq, "partition_leader_epoch": e.partition_leader_epoch,
        "transactional": bool(attrs & 0x10), "control": bool(attrs & 0x20), "crc_ok": crc_ok,
    }


def _record_rows(buf: Any, entry: Any, path: str, loc: dict[str, Any], out: dict[str, list[dict[str, Any]]]) -> None:
    rows = out["records"]
    try:
        for rec in entry.iter_records(buf, MAX_BATCH_SIZE):
            rows.append({
                **loc,
                "batch_position": entry.position,
                "offset": rec.offset,
                "timestamp": rec.timestamp,
                "key_size": rec.key_size,
                "value_size": rec.value_size,
                "key": None if rec.key is None else bytes(rec.key),
                "header_keys": [bytes(k).decode("utf-8", "replace") for k, _v in rec.headers],
            })
    except KafkalogError as exc:
        out["problems"].append({**loc, **_problem(path, entry.position, entry.position + entry.size, "bad-records",
                                                  f"batch baseOffset {entry.base_offset}: {exc.message}",
                                                  offset=entry.base_offset)})
