"""The verify-crc pass of a scan: ``ops.verify.verify_segment`` per segment, its findings as problem rows and the
corrupt regions the row walk must jump over.

Why the page dropping: ``verify_segment`` walks the segment through one read-only mmap, and every page it touched
counts in the process's RSS until the map is closed (a 1 GiB segment: 1 GiB). Its progress callback runs every
32 MiB of the walk; there we tell the kernel (``madvise(MADV_DONTNEED)`` on that mapping, found in
``/proc/self/maps``) that the pages behind the walk are no longer needed. For a read-only file mapping this only
unmaps them from this process (they stay in the page cache; touching them again reads them back), so results do not
change, and the RSS of the pass stays at about one progress step. Where that is not possible (not Linux, or once
verify reads through ``pread`` windows itself), nothing is dropped and nothing else changes.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from typing import Any

from kafkalog_cli.scan.paths import display_name

MAX_BATCH_SIZE = 256 * 1024 * 1024
MAX_PROBLEMS = 100_000  # per segment; more are counted in one ``problems-dropped`` row
MADV_DONTNEED = 4  # Linux
DROP_ABOVE = 16 << 20  # smaller segments are not worth the /proc lookup
INFO = "info"
# the disk's notes (storage/safe_read.py: the file was deleted or shortened while read, normal on a live broker) are
# kept as info rows; verify's other info notes are not problems of the scan
READ_NOTES = frozenset({"vanished", "truncated-during-read"})
# kinds verify reports for a region whose bytes are not a valid entry (``_Walker.on_bad``); every other kind is a
# finding about a valid entry, which still gets its batch row
REGION_KINDS = frozenset({"truncated", "bad-magic", "bad-size", "size-too-large", "crc-mismatch", "bad-codec",
                          "zero-tail", "zero-filled", "unreadable", "partial-entry"})


def problem(file: str, position: int, end: int, kind: str, message: str, severity: str = "error",
            offset: int | None = None) -> dict[str, Any]:
    """A problem row without its location columns."""
    return {"file": display_name(os.path.basename(file)), "position": position, "end": end, "kind": kind, "severity": severity,
            "message": message, "offset": offset}


def verify(path: str) -> tuple[list[dict[str, Any]], dict[int, tuple[int, str]], bool, int]:
    """(problem rows, {region start: (end, kind)} of the segment's corrupt regions, unreadable?, checked size).

    The checked size is the file size verify walked when it kept every problem and read every byte: then every v2
    batch outside its regions has a checksum verify computed and found sound, so the row walk need not compute it
    again (when the file has that size still). Otherwise -1: the walk computes every CRC itself.

    When verify dropped problems, regions after the drop are unknown; the row walk checks every CRC itself and
    stops where it meets bytes that are not an entry, so no wrong row comes of it."""
    from kafkalog_cli.ops.verify import verify_segment

    size = _size(path)
    progress = _page_dropper(path) if size > DROP_ABOVE else None
    report = verify_segment(path, max_batch_size=MAX_BATCH_SIZE, max_problems=MAX_PROBLEMS, progress=progress)
    problems = []
    regions: dict[int, tuple[int, str]] = {}
    for p in list(report.problems) + list(report.notes):
        d = p.to_dict()
        if d["file"] == path and d["end"] > d["position"] and d["kind"] in REGION_KINDS:
            regions.setdefault(d["position"], (d["end"], d["kind"]))
        if d.get("severity", "error") == INFO and d["kind"] not in READ_NOTES:
            continue
        problems.append(problem(d["file"], d["position"], d["end"], d["kind"], d["message"],
                                d.get("severity", "error"), d.get("offset")))
    if report.dropped_problems:
        problems.append(problem(path, 0, 0, "problems-dropped",
                                f"{report.dropped_problems} more problems in this segment were not kept", "warning"))
    unreadable = bool(getattr(report, "unreadable", False))
    checked = report.bytes_checked if not report.dropped_problems and not unreadable and not any(
        p["kind"] in READ_NOTES or p["kind"] == "unreadable" for p in problems) else -1
    return problems, regions, unreadable, checked


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _page_dropper(path: str) -> Callable[[int], None] | None:
    """A verify progress callback that unmaps the pages behind the walk (see the module docstring)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
    except (OSError, AttributeError):
        return None
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    real = os.path.realpath(path)
    done = 0
    addr: int | None = None

    def progress(step: int) -> None:
        nonlocal done, addr
        done += step
        if addr is None:
            addr = _mapping_of(real) or 0
        length = done - done % 4096
        if addr and length > 0:
            madvise(addr, length, MADV_DONTNEED)

    return progress


def _mapping_of(real: str) -> int | None:
    """Start address of this process's mapping of ``real`` at file offset 0 (the newest, if several)."""
    found = None
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.rstrip("\n").split(None, 5)
                if len(parts) == 6 and parts[5] == real and int(parts[2], 16) == 0:
                    found = int(parts[0].split("-")[0], 16)
    except OSError:
        return None
    return found
