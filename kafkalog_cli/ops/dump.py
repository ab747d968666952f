"""What ``kafkalog dump`` does, as data: walk each file the way DumpLogSegments does and yield typed events.

The renderers (``render/dls.py`` for DumpLogSegments text per Kafka version, ``render/jsonl.py`` for JSON lines)
turn events into output; this module never prints. Where Kafka's tool would abort the whole run (a size field
below 14, a bad codec id, a corrupt record, an index entry past the log), we yield a ``FileError`` and go on with
the next file, and the end-of-run summaries are still produced.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kafkalog_cli.errors import (
    CheckpointError,
    CompressionError,
    CorruptIndexError,
    CorruptRecordError,
    CorruptSnapshotError,
    FileVanishedError,
    InvalidRecordError,
    KafkalogError,
    ReadFinding,
    UnreadableFileError,
)
from kafkalog_cli.format import control as ctl
from kafkalog_cli.format.batch import Record
from kafkalog_cli.format.codecs import DEFAULT_LIMIT
from kafkalog_cli.format.layouts import (
    HEADER_SIZE_UP_TO_MAGIC,
    LEGACY_ATTRIBUTES_OFFSET,
    TIME_INDEX_ENTRY,
    V2_CODEC_BYTE,
    V2_HEADER_SIZE,
)
from kafkalog_cli.format.text import int64
from kafkalog_cli.storage import companions as comp
from kafkalog_cli.storage import layout
from kafkalog_cli.storage.index import OffsetIndex, TimeIndex
from kafkalog_cli.storage.safe_read import vanished_finding
from kafkalog_cli.storage.segment import Entry, MappedFile, read_entry, walk
from kafkalog_cli.versions import Profile

INT_MAX = 2147483647


# ---------------------------------------------------------------------------------------------------- options
@dataclass
class DumpOptions:
    print_data_log: bool = False
    deep_iteration: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    max_message_size: int = 5 * 1024 * 1024
    max_bytes: int = INT_MAX
    max_bytes_given: bool = False
    skip_record_metadata: bool = False
    decompress_limit: int = DEFAULT_LIMIT
    gap_tracker: str = "scala"  # or "java" (Kafka 4.3's Java port, which also checks the first record)
    parser: Any = None  # a RecordParser, used when print_data_log
    json_decoder: Any = None  # structured internal-topic decode for --format json (kafkalog_cli.internal_topics)
    fast: Any = None  # optional compiled formatter of whole v2 batches (render/accel.py), set by the text renderer
    fast_run: Any = None  # optional compiled formatter of runs of clean v2 batches (render/accel.py make_run)
    # a .timeindex whose .index is missing fails as in Kafka's tool (text output) or is listed anyway (JSON)
    timeindex_needs_index: bool = True

    @property
    def deep(self) -> bool:
        return self.deep_iteration or self.print_data_log


# ---------------------------------------------------------------------------------------------------- events
@dataclass
class FileBegin:
    arg: str
    path: str
    kind: str


@dataclass
class LogHeader:
    kind: str  # "log" | "kraft-snapshot" | "bootstrap"
    base_offset: int | None = None
    end_offset: int | None = None
    epoch: int | None = None


@dataclass
class BatchEvent:
    entry: Entry
    valid: bool
    computed_crc: int
    path: str


@dataclass
class ControlInfo:
    type: int
    version: int
    coordinator_epoch: int | None = None
    data: dict | None = None


@dataclass
class RecordEvent:
    entry: Entry
    record: Record
    control: ControlInfo | None = None
    key_text: str | None = None
    payload_text: str | None = None


@dataclass
class PartialBatch:
    """The part of a batch line Kafka's tool prints before it aborts on an unknown codec id."""

    entry: Entry


@dataclass
class PartialRecord:
    """The part of a record line Kafka's tool prints before the record parser (a decoder) throws: the record's
    metadata (``print`` without a newline, DumpLogSegments.scala:300-333 at 1eb7644), then ``parser.parse``."""

    entry: Entry
    record: Record


@dataclass
class FormattedBatch:
    """A batch line and (deep) its record lines, already formatted by the compiled accelerator (render/accel.py)."""

    entry: Entry
    valid: bool
    text: str | bytes  # bytes (UTF-8, newline-terminated lines) when the renderer writes bytes straight to stdout


@dataclass
class FormattedRun:
    """Consecutive clean v2 batches (``size`` bytes of the segment) formatted in one compiled call
    (``_accel.dump_run``): their batch lines / objects and (deep) record lines, as UTF-8 bytes (a bytearray the
    accelerator reuses once it is dropped: a consumer may keep it, but must not change it)."""

    text: bytes | bytearray
    size: int
    batches: int


@dataclass
class IndexEntryEvent:
    offset: int
    position: int


@dataclass
class TimeIndexEntryEvent:
    timestamp: int
    offset: int


@dataclass
class IndexEmpty:
    arg: str


@dataclass
class SanityPassed:
    arg: str


@dataclass
class SnapshotEntryEvent:
    entry: comp.ProducerEntry


@dataclass
class SnapshotFailure:
    error: CorruptSnapshotError


@dataclass
class TxnEntryEvent:
    entry: comp.AbortedTxn


@dataclass
class CheckpointEvent:
    """A checkpoint-format text file, leader-epoch-checkpoint, partition.metadata or quorum-state (kafkalog only)."""

    kind: str
    version: int | None
    entries: list[dict]


@dataclass
class TrailingBytes:
    count: int
    name: str
    reported: bool  # whether DumpLogSegments prints it (not with --max-bytes from 3.3)


@dataclass
class Ignored:
    arg: str


@dataclass
class FileError:
    """The file could not be processed to its end; Kafka's tool would have aborted the whole run here."""

    error: KafkalogError
    unreadable: bool = False


@dataclass
class ReadFindingEvent:
    """What the disk did while the file was read (storage/safe_read.py): ``unreadable`` bytes (a problem: the dump
    resumes at the next valid batch after them), or a note (``vanished``, ``truncated-during-read``)."""

    finding: ReadFinding


@dataclass
class DumpSummary:
    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    ts_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    gaps: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    files: int = 0
    batches: int = 0
    records: int = 0
    invalid_batches: int = 0
    trailing_files: int = 0
    errors: int = 0
    unreadable: int = 0
    snapshot_failures: int = 0
    # index files whose entries Kafka's tool reports (not where recovery puts them) but which are valid for lookups,
    # e.g. one entry per append chunk: printed as Kafka prints them, never counted as problems
    valid_indexes: list[str] = field(default_factory=list)
    unreadable_ranges: int = 0
    notes: int = 0

    @property
    def problems(self) -> int:
        def count(found: dict[str, list[tuple[int, int]]]) -> int:
            return sum(len(v) for k, v in found.items() if k not in self.valid_indexes)

        return (
            self.invalid_batches
            + self.trailing_files
            + self.errors
            + self.snapshot_failures
            + self.unreadable_ranges
            + count(self.index_mismatches)
            + count(self.ts_mismatches)
            + count(self.out_of_order)
            + count(self.not_found)
        )

    def exit_code(self) -> int:
        if self.unreadable:
            return 2
        return 1 if self.problems else 0


def hint_for(error: KafkalogError) -> str | None:
    """A next step for the operator: the raiser's own (``error.hint``), else one by error kind (shown under the
    error line)."""
    if error.hint:
        return error.hint
    if isinstance(error, UnreadableFileError):
        return "check the path and its permissions"
    if isinstance(error, CorruptRecordError):
        return "Kafka's tool stops here too; run 'kafkalog verify-crc' for a map of every corrupt region"
    if isinstance(error, CorruptIndexError):
        return "check the index with 'kafkalog rebuild-index' (dry run) and rebuild it with --execute"
    if isinstance(error, (InvalidRecordError,)):
        return "the batch's records do not parse; 'kafkalog verify-crc --deep' lists every such batch"
    return None


# ---------------------------------------------------------------------------------------------------- paths
def java_arg(arg: str) -> str:
    """The path as java.io.File prints it: duplicate '/' collapsed, trailing '/' removed."""
    out = []
    prev = ""
    for ch in arg:
        if ch == "/" and prev == "/":
            continue
        out.append(ch)
        prev = ch
    s = "".join(out)
    if len(s) > 1 and s.endswith("/"):
        s = s[:-1]
    return s


def java_abs(arg: str) -> str:
    """java.io.File.getAbsolutePath: cwd + '/' + path for a relative path, '..' not collapsed."""
    a = java_arg(arg)
    if a.startswith("/"):
        return a
    cwd = os.getcwd()
    return a and (cwd.rstrip("/") + "/" + a) or cwd


BROKER_CHECKPOINTS = layout.BROKER_CHECKPOINTS
classify = layout.classify  # the kind of a file, by name: one rule for every command (storage.layout)


def _lost(mf: MappedFile, start: int, end: int) -> bool:
    """True when ``[start, end)`` overlaps bytes that could not be read (they read as zeros)."""
    return any(a < end and b > start for a, b in mf.unreadable_ranges())


def next_valid_entry(buf: Any, start: int, end: int) -> int | None:
    """The first position >= ``start`` where a plausible entry whose CRC verifies begins (verify-crc's resync)."""
    from kafkalog_cli.ops.verify import find_next_valid

    return find_next_valid(buf[:end] if end < len(buf) else buf, start)


MAX_JSON_DEPTH = 64


def json_depth(text: str) -> int:
    """Deepest nesting of ``[``/``{`` outside JSON strings, counted without recursion (a quick linear scan)."""
    import re

    depth = best = 0
    # strings (with escapes) are skipped whole; only brackets outside them count
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[{]|[\]}]', text):
        t = m.group()
        if t in "[{":
            depth += 1
            best = max(best, depth)
        elif t in "]}":
            depth -= 1
    return best


# ---------------------------------------------------------------------------------------------------- driver
class Dumper:
    def __init__(self, profile: Profile, options: DumpOptions) -> None:
        self.profile = profile
        self.opts = options
        self.summary = DumpSummary()
        self._maps: list[MappedFile] = []

    def run(self, args: list[str]) -> Iterator[Any]:
        for arg in args:
            if os.path.isdir(arg):
                try:
                    files = layout.expand_directory(arg)
                except OSError as exc:
                    yield from self._unlistable(arg, exc)
                    continue
                for f in files:
                    if os.path.isdir(f):  # a partition directory that could not be listed
                        try:
                            os.listdir(f)
                        except OSError as exc:
                            yield from self._unlistable(f, exc)
                            continue
                    yield from self.dump_file(f, listed=True)
            else:
                yield from self.dump_file(arg)

    def _unlistable(self, path: str, exc: OSError) -> Iterator[Any]:
        from kafkalog_cli.errors import unreadable

        self.summary.unreadable += 1
        err = unreadable(exc, path, want="directory")
        err.message = f"cannot list directory: {err.message}"
        yield FileError(err, unreadable=True)

    def _findings(self, mf: MappedFile, reported: set[tuple[str, int, int]]) -> Iterator[Any]:
        """Events for the findings of ``mf`` not yet reported (each once)."""
        for f in mf.findings():
            key = (f.kind, f.start, f.end)
            if key in reported:
                continue
            reported.add(key)
            if f.is_note:
                self.summary.notes += 1
            else:
                self.summary.unreadable_ranges += 1
            yield ReadFindingEvent(f)

    def dump_file(self, arg: str, *, listed: bool = False) -> Iterator[Any]:
        name_arg = java_arg(arg)
        name = os.path.basename(name_arg)
        kind = classify(name)
        if kind == "checkpoint" and not self.profile.dump_checkpoint:
            kind = "unknown"
        yield FileBegin(name_arg, java_abs(arg), kind)  # Kafka prints "Dumping <arg>" for every name first
        if kind == "unknown":
            yield Ignored(name_arg)
            return
        self.summary.files += 1
        handler = {
            "log": self._log,
            "checkpoint": self._log,
            "index": self._index,
            "timeindex": self._timeindex,
            "snapshot": self._snapshot,
            "txnindex": self._txnindex,
            "leader-epoch-checkpoint": self._text_checkpoint,
            "broker-checkpoint": self._text_checkpoint,
            "partition-metadata": self._text_checkpoint,
            "quorum-state": self._text_checkpoint,
            "nodot": self._text_checkpoint,
        }[kind]
        self._maps = []
        try:
            yield from handler(name_arg, kind)
            if kind in ("index", "timeindex"):
                self._judge_index(name_arg, kind)
        except FileVanishedError as exc:
            if listed and exc.file == name_arg:  # retention deleted it after we listed the directory: a note
                self.summary.notes += 1
                yield ReadFindingEvent(vanished_finding(name_arg))
                return
            self.summary.unreadable += 1
            yield FileError(exc, unreadable=True)
        except UnreadableFileError as exc:
            self.summary.unreadable += 1
            yield FileError(exc, unreadable=True)
        except KafkalogError as exc:
            if exc.file is None:
                exc.file = name_arg
            self.summary.errors += 1
            yield FileError(exc)
        finally:
            maps, self._maps = self._maps, []
        reported: set[tuple[str, int, int]] = set()
        for m in maps:  # what the disk did to the index, snapshot or checkpoint reads (the .log walk reports its own)
            yield from self._findings(m, reported)

    def _open(self, path: str) -> MappedFile:
        mf = MappedFile(path)
        self._maps.append(mf)
        return mf

    # ------------------------------------------------------------------------------------------- .log
    def _log(self, arg: str, kind: str) -> Iterator[Any]:
        name = os.path.basename(arg)
        if kind == "checkpoint":
            if name == "bootstrap.checkpoint":
                header = LogHeader("bootstrap")
            else:
                parsed = comp.kraft_snapshot_name(name)
                if parsed is None:
                    raise CorruptRecordError(
                        "KRaft snapshot file name does not parse",
                        file=arg,
                        expected="<20-digit end offset>-<10-digit epoch>.checkpoint",
                        found=name,
                    )
                header = LogHeader("kraft-snapshot", end_offset=parsed[0], epoch=parsed[1])
            base = 0
        else:
            try:
                base = comp.base_offset_of(name)
            except ValueError:
                raise KafkalogError(
                    "segment file name does not start with a base offset (Kafka's tool aborts here too; "
                    "copy the file to a name like 00000000000000000000.log to dump it)",
                    file=arg, expected="<20-digit offset>.log", found=name,
                ) from None
            header = LogHeader("log", base_offset=base)
        with MappedFile(arg) as mf:
            mf.advise_sequential()
            buf = mf.buf
            yield header
            end = min(mf.size, self.opts.max_bytes)
            valid_bytes = 0
            opts = self.opts
            deep = opts.deep
            abs_path = java_abs(arg)
            last = -1
            java_gaps = opts.gap_tracker == "java"
            fast = opts.fast
            gaps: list[tuple[int, int]] = []
            reported: set[tuple[str, int, int]] = set()
            start = 0
            run = opts.fast_run
            max_codec = 4 if self.profile.zstd_known else 3
            wait = 0  # batches the Python walk takes before the run formatter is tried again
            cooldown = 0  # grows while the run formatter takes nothing (a compressed or binary segment)
            while True:
                resume = None
                again = False
                try:
                    if run is not None and wait <= 0:
                        text, npos, nb, nrec, last, new_gaps, full = run(buf, start, end, deep, max_codec, last,
                                                                         java_gaps, opts.decompress_limit)
                        if nb:
                            if new_gaps:
                                gaps.extend(new_gaps)
                            self.summary.batches += nb
                            if deep:
                                self.summary.records += nrec
                            yield FormattedRun(text, npos - start, nb)
                            valid_bytes += npos - start
                            start = npos
                            cooldown = 0
                            if full:
                                continue
                            wait = 1  # the batch at npos is the Python path's
                        else:
                            cooldown = min(2 * cooldown + 1, 64)
                            wait = cooldown
                    for pos, size, magic in walk(buf, start, end, file=arg):
                        if run is not None:
                            if wait <= 0:  # back to the run formatter from here
                                start = pos
                                again = True
                                break
                            wait -= 1
                        entry = read_entry(buf, pos, magic, file=arg)
                        if entry.codec > 4 or (entry.codec == 4 and not self.profile.zstd_known):
                            if _lost(mf, pos, pos + size):
                                resume = pos
                                break
                            # Kafka's tool prints the batch line up to the codec, then aborts
                            yield PartialBatch(entry)
                            raise CompressionError(
                                f"Unknown compression type id: {entry.codec}",
                                file=arg,
                                position=pos + (LEGACY_ATTRIBUTES_OFFSET if entry.is_legacy else V2_CODEC_BYTE),  # the codec bits
                                expected="a codec id 0..4 (none, gzip, snappy, lz4, zstd)" if self.profile.zstd_known
                                else "a codec id 0..3 (none, gzip, snappy, lz4)",
                                found=str(entry.codec),
                            )
                        if entry.is_legacy:
                            valid = entry.is_valid(buf)
                            computed = entry.computed_crc(buf)
                        else:
                            computed = entry.computed_crc(buf) if entry.size >= V2_HEADER_SIZE else 0
                            valid = entry.size >= V2_HEADER_SIZE and computed == entry.crc
                        if not valid and _lost(mf, pos, pos + size):
                            resume = pos  # bytes of this entry could not be read: report them, resync after
                            break
                        self.summary.batches += 1
                        if not valid:
                            self.summary.invalid_batches += 1
                        if fast is not None and not entry.is_legacy:
                            res = fast(entry, buf, valid, deep, last, java_gaps, opts.decompress_limit)
                            if res is not None:
                                text, last, new_gaps = res
                                if new_gaps:
                                    gaps.extend(new_gaps)
                                if deep:
                                    self.summary.records += entry.records_count
                                yield FormattedBatch(entry, valid, text)
                                valid_bytes += size
                                continue
                        yield BatchEvent(entry, valid, computed, arg)
                        if deep:
                            for rec in entry.iter_records(buf, opts.decompress_limit, copy=opts.print_data_log):
                                self.summary.records += 1
                                if java_gaps or last != -1:
                                    if rec.offset != int64(last + 1):
                                        gaps.append((last, rec.offset))
                                last = rec.offset
                                try:
                                    ev = self._record_event(entry, rec)
                                except KafkalogError:
                                    yield PartialRecord(entry, rec)  # Kafka printed the metadata, then the parser threw
                                    raise
                                yield ev
                        valid_bytes += size
                except CorruptRecordError as exc:
                    if exc.position is None or not _lost(mf, exc.position, exc.position + HEADER_SIZE_UP_TO_MAGIC):
                        raise
                    resume = exc.position
                if again:
                    continue
                if resume is None:
                    break
                # unreadable bytes (read as zeros) under the entry at ``resume``: report them and go on at the next
                # valid entry after them, as verify-crc does; the skipped bytes are accounted for by the finding
                after = max((b for a, b in mf.unreadable_ranges() if b > resume), default=resume + 1)
                nxt = next_valid_entry(buf, after, end)
                yield from self._findings(mf, reported)  # after the resync, which touched every page up to nxt
                stop = nxt if nxt is not None else end
                valid_bytes += stop - resume
                if nxt is None:
                    break
                start = nxt
            yield from self._findings(mf, reported)
            if gaps:
                self.summary.gaps.setdefault(abs_path, []).extend(gaps)
            trailing = end - valid_bytes
            if trailing > 0:
                if end == mf.size:  # bytes cut off by --max-bytes are not a problem of the file
                    self.summary.trailing_files += 1
                shown = not (self.profile.trailing_needs_no_max_bytes and opts.max_bytes_given)
                yield TrailingBytes(trailing, name, shown)

    def _record_event(self, entry: Entry, rec: Record) -> RecordEvent:
        ev = RecordEvent(entry, rec)
        if entry.is_control:
            if not self.opts.skip_record_metadata:
                ev.control = self._control(rec)
            return ev
        if self.opts.print_data_log and self.opts.parser is not None:
            try:
                ev.key_text, ev.payload_text = self.opts.parser.parse(rec, entry)
            except KafkalogError as exc:
                exc.position = entry.position
                if exc.message and "offset" not in exc.message:
                    exc.message = f"record at offset {rec.offset}: {exc.message}"
                raise
        return ev

    def _control(self, rec: Record) -> ControlInfo:
        try:
            version, ctype = ctl.parse_control_key(rec.key)
            info = ControlInfo(ctype, version)
            if ctype in (ctl.ABORT, ctl.COMMIT):
                _v, info.coordinator_epoch = ctl.parse_end_txn_marker(rec.value)
            elif ctype in self.profile.control_json:
                info.data = ctl.decode_kraft_control(ctype, rec.value)
            return info
        except KafkalogError as exc:
            exc.message = f"control record at offset {rec.offset}: {exc.message}"
            exc.position = rec.position if rec.position >= 0 else None
            raise

    # ------------------------------------------------------------------------------------------- .index
    def _judge_index(self, arg: str, kind: str) -> None:
        """kafkalog's validity rule for an index Kafka's tool reported entries of: if every entry is valid for
        lookups (a batch start above the previous batch, a timestamp first reached in its batch), the reports stay
        in the output but do not make the exit code 1. Brokers write such indexes (one entry per append chunk,
        not per index.interval.bytes of the log), so a healthy partition must not look damaged."""
        abs_path = java_abs(arg)
        s = self.summary
        if not any(abs_path in found for found in (s.index_mismatches, s.ts_mismatches, s.out_of_order, s.not_found)):
            return
        from kafkalog_cli.ops.rebuild_index import check_lookup_validity, rebuild_segment

        base = comp.base_offset_of(os.path.basename(arg))
        with MappedFile(self._companion_log(arg)) as log, MappedFile(arg) as mf:
            valid_bytes = rebuild_segment(log.buf, base, 4096).valid_bytes
            o_ok, _n, t_ok, _m = check_lookup_validity(
                log.buf, base, valid_bytes, mf.buf if kind == "index" else None, mf.buf if kind == "timeindex" else None
            )
        if o_ok if kind == "index" else t_ok:
            s.valid_indexes.append(abs_path)

    def _companion_log(self, arg: str) -> str:
        d = os.path.dirname(arg)
        prefix = os.path.basename(arg).split(".", 1)[0]
        return os.path.join(d, prefix + ".log")

    def _index(self, arg: str, kind: str) -> Iterator[Any]:
        name = os.path.basename(arg)
        try:
            base = comp.base_offset_of(name)
        except ValueError:
            raise CorruptIndexError("index file name does not start with a base offset", file=arg, found=name) from None
        log_path = self._companion_log(arg)
        with self._open(log_path) as log, self._open(arg) as mf:
            idx = OffsetIndex(base, mf.buf, java_abs(arg))
            n = idx.entries
            if n == 0:
                yield IndexEmpty(arg)
                return
            if self.opts.index_sanity_check:
                idx.sanity_check()
                yield SanityPassed(arg)
                return
            abs_path = java_abs(arg)
            first_record = self.profile.index_compare_first_record
            for i in range(n):
                off, pos = idx.entry(i)
                if _lost(mf, i * 8, i * 8 + 8):
                    continue  # a bad sector read as zeros: not an entry (its range is reported as unreadable)
                if off == base and i > 0 and not first_record:
                    return
                try:
                    found = self._first_in_window(log.buf, pos, log_path, first_record)
                except KafkalogError:
                    if not _lost(log, pos, pos + self.opts.max_message_size):
                        raise
                    found = off  # the log is unreadable there (reported as such): not comparable, go on
                if found != off and not _lost(log, pos, pos + self.opts.max_message_size):
                    self.summary.index_mismatches.setdefault(abs_path, []).append((off, found))
                if off == base and i > 0:
                    return
                if not self.opts.verify_index_only:
                    yield IndexEntryEvent(off, pos)

    def _first_in_window(self, buf: bytes | memoryview, pos: int, log_path: str, first_record: bool) -> int:
        size = len(buf)
        if pos > size or pos < 0:
            raise CorruptIndexError(
                f"Slice from position {pos} exceeds end position of the log",
                file=log_path,
                position=pos,
                expected=f"an entry position <= {size}",
                found=str(pos),
            )
        end = min(size, pos + self.opts.max_message_size)
        for p, _size, magic in walk(buf, pos, end, file=log_path):
            entry = read_entry(buf, p, magic, file=log_path)
            if not first_record:
                return entry.last_offset
            for rec in entry.iter_records(buf, self.opts.decompress_limit):
                return rec.offset
        raise CorruptIndexError(
            "no complete batch at the indexed position (is --max-message-size smaller than the batch?)",
            file=log_path,
            position=pos,
            expected=f"a batch within {self.opts.max_message_size} bytes",
            found="none",
        )

    # ------------------------------------------------------------------------------------------- .timeindex
    def _timeindex(self, arg: str, kind: str) -> Iterator[Any]:
        name = os.path.basename(arg)
        try:
            base = comp.base_offset_of(name)
        except ValueError:
            raise CorruptIndexError("time index file name does not start with a base offset", file=arg, found=name) from None
        log_path = self._companion_log(arg)
        index_path = log_path[: -len(".log")] + ".index"
        with self._open(log_path) as log, self._open(arg) as mf:
            try:
                imf: MappedFile | None = self._open(index_path)
            except UnreadableFileError:
                if not os.path.lexists(index_path) and self.opts.timeindex_needs_index:
                    # Kafka's tool opens the segment's .index to look each entry up; a missing one is created
                    # (empty) and rejected: OffsetIndex(file, base, maxIndexSize = -1) -> AbstractIndex throws
                    # "Invalid max index size: -1" (DumpLogSegments.scala:189 at 4.0, AbstractIndex.java:101;
                    # AbstractIndex.scala:116 at 2.8), exit 1, after "Dumping F" and before any entry
                    raise CorruptIndexError(
                        "the segment's .index is missing: Kafka's tool needs it to check the time index and fails "
                        "here (IllegalArgumentException: Invalid max index size: -1, after creating an empty "
                        ".index); kafkalog prints no entries, as the tool does, and creates nothing",
                        file=index_path, expected="the .index beside the .timeindex", found="no such file",
                        hint=f"'kafkalog dump --format json {arg}' lists the time index entries without the .index "
                             "(each checked against the log from its start); 'kafkalog rebuild-index' recreates "
                             "the .index",
                    ) from None
                imf = None
            try:
                oidx = OffsetIndex(base, imf.buf if imf is not None else b"", java_abs(index_path))
                tidx = TimeIndex(base, mf.buf, java_abs(arg))
                n = tidx.entries
                if self.opts.index_sanity_check:
                    tidx.sanity_check()
                    yield SanityPassed(arg)
                    return
                abs_path = java_abs(arg)
                prev_ts = -1
                # 2.0-2.2 stop at a zero slot only when the batch found ends exactly there (after its checks);
                # other zero slots are printed and reported as not found (errata-dump C.4)
                old_rule = bool(self.profile.index_compare_first_record)
                for i in range(n):
                    ts, off = tidx.entry(i)
                    if _lost(mf, i * TIME_INDEX_ENTRY.size, (i + 1) * TIME_INDEX_ENTRY.size):
                        continue  # a bad sector read as zeros: not an entry (its range is reported as unreadable)
                    zero_slot = off == base and i > 0
                    if zero_slot and not old_rule:
                        return
                    _o, pos, _s = oidx.lookup(off)
                    if pos < 0 or pos > len(log.buf):
                        raise CorruptIndexError(
                            f"Slice from position {pos} exceeds end position of the log",
                            file=log_path,
                            position=pos,
                        )
                    batch, lost = None, False
                    try:
                        for p, _size, magic in walk(log.buf, pos, len(log.buf), file=log_path):
                            e = read_entry(log.buf, p, magic, file=log_path)
                            if e.last_offset >= off:
                                batch = e
                                break
                    except KafkalogError:
                        if not _lost(log, pos, len(log.buf)):
                            raise
                        lost = True  # walked into unreadable log bytes (reported as such): not comparable, go on
                    if lost:
                        pass
                    elif batch is None:
                        self.summary.not_found.setdefault(abs_path, []).append((off, -1))
                    elif batch.last_offset != off:
                        self.summary.not_found.setdefault(abs_path, []).append((off, batch.last_offset))
                    else:
                        max_ts = max((r.timestamp for r in batch.iter_records(log.buf, self.opts.decompress_limit)), default=-1)
                        if max_ts != ts:
                            self.summary.ts_mismatches.setdefault(abs_path, []).append((ts, max_ts))
                        if prev_ts >= ts:
                            self.summary.out_of_order.setdefault(abs_path, []).append((ts, prev_ts))
                        if zero_slot:
                            return
                    if not self.opts.verify_index_only:
                        yield TimeIndexEntryEvent(ts, off)
                    prev_ts = ts
            finally:
                if imf is not None:
                    imf.close()

    # ------------------------------------------------------------------------------------------- others
    def _snapshot(self, arg: str, kind: str) -> Iterator[Any]:
        with self._open(arg) as mf:
            try:
                snap = comp.parse_producer_snapshot(mf.buf, arg, version_first=self.profile.snapshot_error_wrap == "wrapped")
            except CorruptSnapshotError as exc:
                self.summary.snapshot_failures += 1
                yield SnapshotFailure(exc)
                return
            for e in snap.entries:
                yield SnapshotEntryEvent(e)

    def _txnindex(self, arg: str, kind: str) -> Iterator[Any]:
        with self._open(arg) as mf:
            for i, e in enumerate(comp.parse_txn_index(mf.buf)):
                v = (e.version >> 8) & 0xFF  # Kafka reads the first byte of the int16 version
                if v >= 0x80:
                    v -= 0x100
                if v > 0:
                    raise KafkalogError(
                        f"Unexpected aborted transaction version {v} in transaction index {java_abs(arg)}, current version is 0",
                        file=arg,
                        position=i * comp.TXN_ENTRY.size,
                        expected="version 0",
                        found=str(v),
                    )
                e.version = v
                yield TxnEntryEvent(e)

    def _text_checkpoint(self, arg: str, kind: str) -> Iterator[Any]:
        with self._open(arg) as mf:
            raw = bytes(mf.buf)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CheckpointError("file is not UTF-8 text", file=arg, position=exc.start) from None
        if kind == "leader-epoch-checkpoint":
            entries = comp.parse_leader_epoch_checkpoint(text, arg)
            prev = (-1, -1)
            for ep, start in entries:
                if ep <= prev[0] or start < prev[1]:
                    raise CheckpointError(
                        "leader epoch entries are not increasing (the broker silently drops such entries at load)",
                        file=arg,
                        expected=f"epoch > {prev[0]} and start offset >= {prev[1]}",
                        found=f"{ep} {start}",
                    )
                prev = (ep, start)
            yield CheckpointEvent(kind, 0, [{"epoch": e, "startOffset": s} for e, s in entries])
        elif kind == "broker-checkpoint":
            cp = comp.parse_checkpoint(text, arg, columns=3)
            rows = []
            for parts in cp.entries:
                try:
                    rows.append({"topic": parts[0], "partition": comp.java_parse_int(parts[1]),
                                 "offset": comp.java_parse_int(parts[2], 64)})
                except ValueError:
                    raise CheckpointError(f"Malformed line in checkpoint file [{arg}]: {' '.join(parts)}", file=arg) from None
            yield CheckpointEvent(kind, cp.version, rows)
        elif kind == "partition-metadata":
            version, topic_id = comp.parse_partition_metadata(text, arg)
            yield CheckpointEvent(kind, version, [{"topicId": topic_id}])
        elif kind == "quorum-state":
            import json

            depth = json_depth(text)
            if depth > MAX_JSON_DEPTH:  # Kafka's QuorumStateData nests 3 deep; json.loads would recurse to a crash
                raise CheckpointError("quorum-state JSON nests too deeply", file=arg,
                                      expected=f"at most {MAX_JSON_DEPTH} levels (Kafka writes 3)", found=str(depth))
            try:
                data = json.loads(text)
            except (ValueError, RecursionError) as exc:
                raise CheckpointError(f"quorum-state is not JSON: {exc}", file=arg) from None
            yield CheckpointEvent(kind, data.get("data_version") if isinstance(data, dict) else None, [data])
        else:
            # a name without a dot: try the generic checkpoint format, else report it as unknown
            try:
                cp = comp.parse_checkpoint(text, arg)
            except CheckpointError:
                raise CheckpointError("unknown file kind (no suffix and not in checkpoint format)", file=arg) from None
            yield CheckpointEvent("checkpoint-text", cp.version, [{"fields": p} for p in cp.entries])
