"""verify-crc checks of a partition's companion files: producer snapshots, transaction indexes,
``leader-epoch-checkpoint`` and ``partition.metadata``. Each returns a FileReport; none raises on bad content.

Why these: a corrupt snapshot is deleted by the broker (losing idempotence state), a malformed
leader-epoch-checkpoint takes the log dir offline or stops the broker (errata-repair E7), and a txn index entry
below the segment base makes the broker recover the segment (spec §7.1).
"""

from __future__ import annotations

import os

from kafkalog_cli.errors import CheckpointError, CorruptSnapshotError, FileVanishedError, UnreadableFileError
from kafkalog_cli.format.layouts import PRODUCER_SNAPSHOT_ENTRY, PRODUCER_SNAPSHOT_HEADER, TXN_INDEX_ENTRY
from kafkalog_cli.storage import companions as comp
from kafkalog_cli.storage.safe_read import vanished_finding
from kafkalog_cli.storage.segment import MappedFile
from kafkalog_cli.storage.verify_model import ERROR, INFO, WARNING, FileReport, Problem


def verify_companion(path: str, kind: str) -> FileReport:
    report = FileReport(path=path, kind=kind)
    if kind == "orphan-index":
        report.add(Problem(path, 0, 0, "orphan-index", "no matching .log file: index not checked", INFO))
        return report
    if kind in ("leftover", "stray-log", "no-segment"):
        _layout_finding(report, kind)
        return report
    try:
        with MappedFile(path) as mf:
            report.size = mf.size
            report.bytes_checked = mf.size
            {
                "snapshot": _snapshot,
                "txnindex": _txnindex,
                "leader-epoch-checkpoint": _leader_epoch,
                "partition-metadata": _partition_metadata,
            }[kind](report, mf.buf)
            for f in mf.findings():  # pages that could not be read (read as zeros), or the file shrank meanwhile
                report.add(Problem(f.file, f.start, f.end, f.kind, f.message, INFO if f.is_note else ERROR))
    except FileVanishedError:
        report.add(Problem(path, 0, 0, "vanished", vanished_finding(path).message, INFO))
    except UnreadableFileError as exc:
        report.unreadable = True
        report.add(Problem(path, 0, 0, "unreadable", exc.describe()))
    return report


def _layout_finding(report: FileReport, kind: str) -> None:
    """A leftover of an unfinished clean/split/swap/delete, a ``.log`` file that is not a segment, or a partition
    directory without segments: what the broker does with it, by the rule of ``storage.layout``."""
    from kafkalog_cli.storage import layout

    path = report.path
    if kind == "no-segment":
        report.add(Problem(path, 0, 0, "no-segment", layout.no_segment(path).message, INFO))
        return
    name = os.path.basename(path)
    if kind == "stray-log":
        (stray,) = layout.stray_logs([name])
        report.add(Problem(path, 0, 0, "stray-log", f"not a segment name: {stray.fate}", WARNING))
        return
    try:
        names = os.listdir(os.path.dirname(path) or ".")
    except OSError:
        names = [name]
    fate = layout.leftover_fate(name, names)
    # a .swap replaces segments at start-up (the data verified here is not what the broker will serve), and a name
    # the loader cannot parse stops it: warnings; a file the broker only deletes is harmless: info
    severity = WARNING if name.endswith(layout.SWAP_SUFFIX) or "fails to load" in fate else INFO
    report.add(Problem(path, 0, 0, "leftover", f"leftover of an unfinished clean, split or delete: {fate}", severity))


def _snapshot(report: FileReport, buf: bytes | memoryview) -> None:
    path = report.path
    try:
        snap = comp.parse_producer_snapshot(buf, path)
    except CorruptSnapshotError as exc:
        kind = getattr(exc, "kind", "schema")
        start = 2 if kind == "crc" else 0
        report.add(Problem(path, start, len(buf), "snapshot", f"{exc.message} (the broker deletes this snapshot)"))
        return
    try:
        name_offset = comp.base_offset_of(os.path.basename(path))
    except ValueError:
        return
    for i, e in enumerate(snap.entries):
        if e.last_offset >= name_offset:
            pos = PRODUCER_SNAPSHOT_HEADER.size + PRODUCER_SNAPSHOT_ENTRY.size * i
            report.add(Problem(path, pos, pos + PRODUCER_SNAPSHOT_ENTRY.size, "snapshot",
                               f"producer {e.producer_id}: last offset {e.last_offset} is not below the snapshot's "
                               f"offset {name_offset} (file name)", WARNING))


def _txnindex(report: FileReport, buf: bytes | memoryview) -> None:
    path = report.path
    n = len(buf)
    size = TXN_INDEX_ENTRY.size
    if n % size:
        report.add(Problem(path, n - n % size, n, "txnindex",
                           f"{n % size} trailing bytes are not a whole {size}-byte entry (readers ignore them)", WARNING))
    try:
        base = comp.base_offset_of(os.path.basename(path))
    except ValueError:
        base = None
    prev_last = None
    for i, e in enumerate(comp.parse_txn_index(buf)):
        pos = i * size
        where = (pos, pos + size)
        version = e.kafka_version  # Kafka reads the first byte of the int16
        if version != 0:
            report.add(Problem(path, *where, "txnindex", f"entry {i}: version byte {version & 0xFF}, expected 0"))
        if base is not None and e.last_offset < base:
            report.add(Problem(path, *where, "txnindex",
                               f"entry {i}: last offset {e.last_offset} is below the segment base {base} "
                               "(the broker recovers this segment)"))
        if e.first_offset > e.last_offset:
            report.add(Problem(path, *where, "txnindex",
                               f"entry {i}: first offset {e.first_offset} > last offset {e.last_offset}"))
        if prev_last is not None and e.last_offset <= prev_last:
            report.add(Problem(path, *where, "txnindex",
                               f"entry {i}: last offset {e.last_offset} does not follow {prev_last}"))
        prev_last = e.last_offset


def _text(report: FileReport, buf: bytes | memoryview, kind: str) -> str | None:
    if len(buf) > 16 << 20:
        report.add(Problem(report.path, 0, len(buf), kind, f"{len(buf)} bytes is far too large for this text file"))
        return None
    raw = bytes(buf)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        report.add(Problem(report.path, exc.start, exc.end, kind, "file is not UTF-8 text"))
        return None


def _line_start(text: str, line_no: int) -> int:
    lines = text.split("\n")
    return len("\n".join(lines[:line_no]).encode()) + (1 if line_no else 0)


def _leader_epoch(report: FileReport, buf: bytes | memoryview) -> None:
    kind = "leader-epoch-checkpoint"
    text = _text(report, buf, kind)
    if text is None:
        return
    try:
        entries = comp.parse_leader_epoch_checkpoint(text, report.path)
    except CheckpointError as exc:
        pos = exc.position or 0
        report.add(Problem(report.path, pos, len(buf), kind,
                           f"{exc.message} (the broker takes the log directory offline or fails to start)"))
        return
    prev: tuple[int, int] | None = None
    for i, (epoch, start) in enumerate(entries):
        pos = _line_start(text, i + 2)
        end = pos + len(f"{epoch} {start}")
        if prev is not None:
            if epoch <= prev[0] or start < prev[1]:
                report.add(Problem(report.path, pos, end, kind,
                                   f"entry {i} ({epoch} {start}) does not follow ({prev[0]} {prev[1]}): epochs must "
                                   "increase and start offsets must not decrease (the broker drops entries)"))
            elif start == prev[1]:
                report.add(Problem(report.path, pos, end, kind,
                                   f"entry {i} ({epoch} {start}) has the same start offset as epoch {prev[0]}; the "
                                   "broker drops the earlier entry at load", WARNING))
        prev = (epoch, start)


def _partition_metadata(report: FileReport, buf: bytes | memoryview) -> None:
    kind = "partition-metadata"
    text = _text(report, buf, kind)
    if text is None:
        return
    try:
        comp.parse_partition_metadata(text, report.path)
    except CheckpointError as exc:
        report.add(Problem(report.path, exc.position or 0, len(buf), kind, exc.message, ERROR))

