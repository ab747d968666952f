"""The verify-crc pass of a scan: ``ops.verify.verify_segment`` per segment, its findings as problem rows and the
corrupt regions the row walk must jump over.

Why the page dropping: ``verify_segment`` walks the segment through one read-only mmap, and every page it touched
counts in the process's RSS until the map is closed (a 1 GiB segment: 1 GiB). Its progress callback runs every
``STEP`` bytes of the walk; there we tell the kernel (``madvise(MADV_DONTNEED)`` on that mapping, found in
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

from kafkalog_cli.scan.paths import display_name, file_size

MAX_BATCH_SIZE = 256 * 1024 * 1024
MAX_PROBLEMS = 100_000  # per segment; more are counted in one ``problems-dropped`` row
MADV_DONTNEED = 4  # Linux
DROP_ABOVE = 16 << 20  # smaller segments are not worth the /proc lookup
# the pass's progress step: pages behind it are dropped, and the row walk beside it (Background) learns how far it got,
# every STEP bytes; the walk's windows are 4 MiB, and mapped pages of the pass count in the RSS next to the writer's
STEP = 4 << 20
OVERLAP_ABOVE = 16 << 20  # segments from this size on are walked beside their pass (Background)
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


Result = tuple[list[dict[str, Any]], dict[int, tuple[int, str]], bool, int]


def verify(path: str, progress: Callable[[int], None] | None = None,
           started: Callable[[Any], None] | None = None) -> Result:
    """(problem rows, {region start: (end, kind)} of the segment's corrupt regions, unreadable?, checked size).

    The checked size is the file size verify walked when it kept every problem and read every byte: then every v2
    batch outside its regions has a checksum verify computed and found sound, so the row walk need not compute it
    again (when the file has that size still). Otherwise -1: the walk computes every CRC itself.

    When verify dropped problems, regions after the drop are unknown; the row walk checks every CRC itself and
    stops where it meets bytes that are not an entry, so no wrong row comes of it.

    ``progress(bytes)`` and ``started(report)``: as ``ops.verify.verify_segment``'s (``Background`` follows the pass
    with them)."""
    from kafkalog_cli.ops.verify import verify_segment

    size = file_size(path)
    dropper = _page_dropper(path) if size > DROP_ABOVE else None
    if dropper is not None and progress is not None:
        outer = progress

        def both(step: int) -> None:
            dropper(step)
            outer(step)

        progress = both
    else:
        progress = progress or dropper
    report = verify_segment(path, max_batch_size=MAX_BATCH_SIZE, max_problems=MAX_PROBLEMS, progress=progress,
                            started=started, progress_every=STEP)
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


class Background:
    """``verify(path)`` on its own thread, and what it vouches for while it runs.

    Why: the row walk (``extract.py``) needs the pass's corrupt regions (to step around them) and its checksums (not
    to compute them twice), so it used to wait for the whole pass before reading a byte: on a segment of small
    batches that was a quarter of the scan, with the Parquet writer idle. The pass is faster than the walk plus the
    writer, so they now run side by side: before walking a window the walk asks ``clean_until(end)``, which waits
    until the pass has walked past ``end`` and says whether it met nothing there that the walk must step around (no
    corrupt region starting before ``end``, no problem dropped). Then every batch of the window is one the pass
    walked and found sound, exactly what the walk would do after a finished pass. Anything else (a region, a
    dropped problem, the pass already finished) sends the walk to ``result()``, the finished pass, and its rules.
    The pass walks a mapping and the walk ``pread``s windows: two reads of the same page-cached bytes."""

    def __init__(self, path: str) -> None:
        import threading

        self.path = path
        self._cond = threading.Condition()
        self._walked = 0  # bytes the pass has walked (its progress steps)
        self._report: Any = None
        self._seen = 0, 0  # problems and notes of the report already looked at
        self._first_region: int | None = None  # smallest start of a region of this file seen so far
        self._finished = False
        self._result: Result | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="verify-pass", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result = verify(self.path, progress=self._progress, started=self._started)
        except BaseException as exc:  # re-raised by result(), in the walk's thread
            self._error = exc
        finally:
            with self._cond:
                self._finished = True
                self._cond.notify_all()

    def _started(self, report: Any) -> None:
        self._report = report

    def _progress(self, step: int) -> None:
        with self._cond:
            self._walked += step
            self._cond.notify_all()

    def clean_until(self, end: int) -> bool:
        """True when the pass, still running, has walked past ``end`` and met no corrupt region starting before it
        and dropped no problem; False when the walk must take ``result()`` instead (waits for the pass to get there)."""
        with self._cond:
            self._cond.wait_for(lambda: self._finished or self._walked >= end)
            if self._finished:
                return False
        report = self._report
        if report is None or report.dropped_problems:
            return False
        seen_p, seen_n = self._seen
        problems, notes = report.problems, report.notes
        got_p, got_n = len(problems), len(notes)  # lists only grow (the pass appends under the GIL)
        for p in [*problems[seen_p:got_p], *notes[seen_n:got_n]]:
            if p.kind in REGION_KINDS and p.file == self.path and p.end > p.position:
                self._first_region = p.position if self._first_region is None else min(self._first_region, p.position)
        self._seen = got_p, got_n
        return self._first_region is None or self._first_region >= end

    def result(self) -> Result:
        """The finished pass (waits for it), as ``verify`` returns it."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


_early: dict[str, tuple[tuple[int, int, int], Background]] = {}  # path -> (its stat when started, the pass)


def start_early(path: str) -> None:
    """Start the pass of ``path`` now, when the command knows it will walk that segment in this process next but is
    still loading pyarrow and opening its writers (about 0.1 s); ``background(path)`` then hands it to the walk.
    Segments below OVERLAP_ABOVE are left alone (their walk does not run beside a pass)."""
    if path not in _early and file_size(path) >= OVERLAP_ABOVE:
        sig = _signature(path)
        if sig is not None:
            _early[path] = (sig, Background(path))


def background(path: str) -> Background:
    """The pass of ``path`` running beside its walk: the one ``start_early`` started, if the file is still the one
    it started on (same inode, size and modification time), else a new one."""
    early = _early.pop(path, None)
    if early is not None and early[0] == _signature(path):
        return early[1]
    return Background(path)


def discard_early() -> None:
    """Forget passes started early and never taken (the command failed, or the segment went another way): a later
    scan in the same process starts its own."""
    _early.clear()


def _signature(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns



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
