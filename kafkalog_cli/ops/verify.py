"""What ``kafkalog verify-crc`` does, as data: map every corrupt byte range of a log directory.

Kafka's own scanner (and DumpLogSegments) stops at the first bad length field and hides every good batch after
it. Here each segment is walked header by header on a read-only mmap; where an entry fails a check, we resync:
search forward for the next position whose header is plausible *and* whose CRC verifies, report the bytes in
between as one region ``[start, end)`` with the last good offset before it and the first good offset after it,
and go on. Record bytes are decoded only with ``deep=True``.

``verify_segment`` is the reusable per-segment check (``kafkalog scan`` calls it per segment); ``verify_paths``
expands directories, runs segments (optionally in parallel processes) and adds the cross-file checks (offsets
across segment boundaries, leader epochs). Nothing here prints; problems are ``Problem`` values.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterable

from kafkalog_cli.errors import cannot_list
from kafkalog_cli.ops import verify_companions as companion_checks
from kafkalog_cli.storage.segment_check import DEFAULT_MAX_BATCH_SIZE, verify_segment
from kafkalog_cli.storage.verify_model import (
    DEFAULT_MAX_PROBLEMS,
    WARNING,
    FileReport,
    Problem,
    SegmentReport,
    VerifyResult,
)

# ---------------------------------------------------------------------------------------------------- paths
LOG_KINDS = ("log", "index", "timeindex")
COMPANION_KINDS = ("snapshot", "txnindex", "leader-epoch-checkpoint", "partition-metadata")


def plan_paths(paths: Iterable[str]) -> tuple[list[str], list[tuple[str, str]], list[FileReport]]:
    """Expand arguments into (segment .log paths, [(companion path, kind)], reports for unreadable arguments).

    Which files are segments, leftovers or stray ``.log`` files is decided by ``storage.layout`` (the broker's rule):
    a directory's ``0.log`` or ``x.log`` is reported (the broker never reads it), not verified as a segment; a file
    named on the command line is verified whatever its name."""
    from kafkalog_cli.storage import layout
    from kafkalog_cli.storage.paths import directory_files

    logs: list[str] = []
    seen: set[str] = set()
    companions: list[tuple[str, str]] = []
    bad: list[FileReport] = []
    for arg in paths:
        explicit = not os.path.isdir(arg)
        before = (len(logs), len(companions), len(bad))
        if not explicit:
            try:
                files = directory_files(arg)
            except OSError as exc:
                bad.append(_unreadable(arg, cannot_list(exc, arg).message))
                continue
            if not any(layout.is_scannable_segment(f) for f in files) \
                    and layout.looks_like_partition_dir(arg):
                companions.append((arg, "no-segment"))
        elif os.path.exists(arg):
            files = [arg]
        else:
            bad.append(_unreadable(arg, "no such file or directory"))
            continue
        for f in files:
            if os.path.isdir(f):  # a partition directory that cannot be listed: report it, verify the rest
                try:
                    os.listdir(f)
                except OSError as exc:
                    bad.append(_unreadable(f, cannot_list(exc, f).message))
                continue
            name = os.path.basename(f)
            kind = layout.classify(name)
            if layout.is_leftover(name):
                if f not in seen:
                    seen.add(f)
                    companions.append((f, "leftover"))
                continue
            if kind == "log" and not layout.is_scannable_segment(f) and f not in seen:
                companions.append((f, "stray-log"))
                if not explicit:
                    seen.add(f)
                    continue
            if kind in LOG_KINDS:
                log = f if kind == "log" else f[: f.rindex(".")] + ".log"
                if kind != "log" and not os.path.exists(log):
                    if f not in seen:
                        seen.add(f)
                        companions.append((f, "orphan-index"))
                    continue
                if log not in seen:
                    seen.add(log)
                    logs.append(log)
            elif kind in COMPANION_KINDS and f not in seen:
                seen.add(f)
                companions.append((f, kind))
        if (len(logs), len(companions), len(bad)) == before and not (set(files) & seen):
            # nothing of this argument was checked: never let "OK: 0 files" answer a wrong path
            bad.append(_unreadable(arg, NOTHING_TO_CHECK_FILE if explicit else NOTHING_TO_CHECK_DIR))
    return logs, companions, bad


NOTHING_TO_CHECK_FILE = ("not a file verify-crc checks (a segment .log, an .index/.timeindex/.txnindex, a producer "
                         ".snapshot, leader-epoch-checkpoint or partition.metadata); `kafkalog dump` prints any file")
NOTHING_TO_CHECK_DIR = ("no file verify-crc checks in this directory (segments, indexes, snapshots, checkpoints): "
                        "is it a Kafka log directory or partition directory?")


def _unreadable(path: str, message: str) -> FileReport:
    rep = FileReport(path=path, kind="unknown", unreadable=True)
    rep.add(Problem(path, 0, 0, "unreadable", f"{path}: {message}"))
    return rep


def _verify_segment_task(args: tuple[str, bool, int, int, bool, bool]) -> SegmentReport:
    path, deep, max_batch_size, max_problems, indexes, group_index = args
    return verify_segment(path, deep=deep, max_batch_size=max_batch_size, max_problems=max_problems, indexes=indexes,
                          group_index=group_index)


def verify_paths(paths: Iterable[str], *, deep: bool = False, max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
                 jobs: int = 1, max_problems: int = DEFAULT_MAX_PROBLEMS, indexes: bool = True,
                 progress: Callable[[int], None] | None = None,
                 on_total: Callable[[int], None] | None = None, group_index: bool = True) -> VerifyResult:
    """Verify segment files, partition directories or whole log directories.
    ``group_index``: per-slot index findings of one kind are one finding with slot ranges (False: one per slot).

    ``jobs`` > 1 verifies segments in that many processes. ``on_total`` receives the byte total before work
    starts and ``progress`` byte increments (per 32 MiB in-process, per file with ``jobs`` > 1).
    """
    logs, companions, bad = plan_paths(paths)
    result = VerifyResult(files=list(bad))
    if on_total is not None:
        total = 0
        for p in logs:
            try:
                total += os.path.getsize(p)
            except OSError:
                pass
        on_total(total)
    reports: list[SegmentReport] = []
    if jobs > 1 and len(logs) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        # "fork" pinned: with it CPython starts every worker at the first submit (below, inside the blocked
        # window); other start methods start workers on demand later, outside it, and exec'd children would not
        # keep the blocked mask (Python 3.14 makes forkserver the default on Linux)
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=jobs, initializer=_ignore_sigint, mp_context=ctx) as pool:
            futures = {}
            for i, p in enumerate(logs):
                args = (p, deep, max_batch_size, max_problems, indexes, group_index)
                if i == 0:  # the first submit forks every worker, with SIGINT blocked until _ignore_sigint
                    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
                    try:
                        futures[pool.submit(_verify_segment_task, args)] = p
                    finally:  # a Ctrl-C meanwhile is pending here, raised now
                        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                else:
                    futures[pool.submit(_verify_segment_task, args)] = p
            done: dict[str, SegmentReport] = {}
            for fut in as_completed(futures):
                rep = fut.result()
                done[futures[fut]] = rep
                if progress is not None:
                    progress(rep.size)
        reports = [done[p] for p in logs]
    else:
        for p in logs:
            reports.append(verify_segment(p, deep=deep, max_batch_size=max_batch_size, max_problems=max_problems,
                                          indexes=indexes, progress=progress, group_index=group_index))
    result.files.extend(reports)
    result.problems.extend(cross_segment_problems(reports))
    for path, kind in companions:
        result.files.append(companion_checks.verify_companion(path, kind))
    return result


def _ignore_sigint() -> None:
    """A worker of ``verify --jobs``: Ctrl-C reaches the whole process group, and a worker that died of its own
    KeyboardInterrupt broke the pool (``BrokenProcessPool``: exit 2, "terminated abruptly") before the parent's
    interrupt gave exit 130. The parent stops the run; the pool's shutdown ends the workers. The fork left SIGINT
    blocked (the parent blocks it around the fork): ignored first, so one pending is dropped, then unblocked."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def cross_segment_problems(reports: list[SegmentReport]) -> list[Problem]:
    """Offsets and leader epochs across consecutive segments of the same partition directory."""
    by_dir: dict[str, list[SegmentReport]] = {}
    for r in reports:
        if r.base_offset is not None and not r.unreadable:
            by_dir.setdefault(os.path.dirname(os.path.abspath(r.path)), []).append(r)
    out: list[Problem] = []
    for segs in by_dir.values():
        segs.sort(key=lambda r: r.base_offset or 0)
        prev: SegmentReport | None = None
        for seg in segs:
            if prev is not None and prev.last_offset is not None:
                if seg.base_offset is not None and seg.base_offset <= prev.last_offset:
                    out.append(Problem(seg.path, 0, 0, "segment-order",
                                       f"segment base offset {seg.base_offset} is not above the previous segment's "
                                       f"last offset {prev.last_offset} ({os.path.basename(prev.path)})",
                                       offset=seg.base_offset))
                if (seg.first_epoch is not None and prev.last_epoch is not None
                        and seg.first_epoch < prev.last_epoch):
                    out.append(Problem(seg.path, 0, 0, "leader-epoch",
                                       f"first batch's partitionLeaderEpoch {seg.first_epoch} is below the previous "
                                       f"segment's {prev.last_epoch}", WARNING, offset=seg.first_offset))
            if seg.last_offset is not None:
                prev = seg
    return out
