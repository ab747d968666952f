"""What ``kafkalog dump`` does, as data: walk each file the way DumpLogSegments does and yield typed events.

The renderers (``render/dls.py`` for DumpLogSegments text per Kafka version, ``render/jsonl.py`` for JSON lines)
turn events into output; this module never prints. Where Kafka's tool would abort the whole run (a size field
below 14, a bad codec id, a corrupt record, an index entry past the log), we yield a ``FileError`` and go on with
the next file, and the end-of-run summaries are still produced.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
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
from kafkalog_cli.format.batch import Batch, Record
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
from kafkalog_cli.storage.paths import directory_files
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
    window: Any = None  # an ops/dump_window.Window: print only the batches and records in it (no fast tiers then)

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
    from kafkalog_cli.storage.segment_check import find_next_valid

    return find_next_valid(buf[:end] if end < len(buf) else buf, start)


def _crc_check(entry: Entry, buf: Any) -> tuple[bool, int]:
    """(valid, computed CRC) of an entry as Kafka's tool judges it: a legacy entry by its own rule, a v2 batch
    shorter than its header as invalid with CRC 0 (there is nothing to compute it over)."""
    if entry.is_legacy:
        return entry.is_valid(buf), entry.computed_crc(buf)
    computed = entry.computed_crc(buf) if entry.size >= V2_HEADER_SIZE else 0
    return entry.size >= V2_HEADER_SIZE and computed == entry.crc, computed


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


_BACK_TO_RUNS = -1  # what ``Dumper._log_walk`` returns when the run formatter is due again (positions are >= 0)


class _LogWalk:
    """The state of one .log walk that the tiers share: where the next entry is, the bytes accounted for (the
    rest are trailing bytes), the last offset and the gaps (Kafka's offset-gap tracker), the run formatter's
    back-off (``wait``, ``cooldown``) and the read findings already reported."""

    __slots__ = ("mf", "buf", "arg", "end", "start", "valid_bytes", "last", "gaps", "wait", "cooldown", "reported")

    def __init__(self, mf: MappedFile, arg: str, end: int) -> None:
        self.mf = mf
        self.buf = mf.buf
        self.arg = arg
        self.end = end
        self.start = 0
        self.valid_bytes = 0
        self.last = -1
        self.gaps: list[tuple[int, int]] = []
        self.wait = 0  # batches the Python walk takes before the run formatter is tried again
        self.cooldown = 0  # grows while the run formatter takes nothing (a compressed or binary segment)
        self.reported: set[tuple[str, int, int]] = set()


# ---------------------------------------------------------------------------------------------------- driver
class Dumper:
    def __init__(self, profile: Profile, options: DumpOptions) -> None:
        self.profile = profile
        self.opts = options
        self.summary = DumpSummary()
        self._maps: list[MappedFile] = []
        self.window_notes: list[str] = []  # what the window's index lookups noticed (a missing index, ...)
        self._starts: dict[str, int] = {}  # window: the byte position each segment's walk starts at
        self._wstate: Any = None  # window: the WindowState of the partition being dumped

    def run(self, args: list[str]) -> Iterator[Any]:
        if self.opts.window is not None:
            yield from self._run_window(args)
            return
        for arg in args:
            if os.path.isdir(arg):
                try:
                    files = directory_files(arg)
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

    def _run_window(self, args: list[str]) -> Iterator[Any]:
        """A window (``ops/dump_window.py``): only the segments it needs, each from its indexed start position, and
        only the batches and records in it; the fast tiers are off (they print whole segments)."""
        from kafkalog_cli.ops.dump_window import WindowState, plan

        self.opts.fast = self.opts.fast_run = None
        try:
            p = plan(args, self.opts.window)
        except KafkalogError as exc:
            self.summary.unreadable += 1
            yield FileError(exc, unreadable=True)
            return
        except OSError as exc:
            yield from self._unlistable(args[0] if args else ".", exc)
            return
        self.window_notes = p.notes
        states: dict[str, Any] = {}
        for t in p.targets:
            self._wstate = states.setdefault(t.partition, WindowState(self.opts.window))
            if self._wstate.done:
                continue  # the window is complete: later segments are not even opened
            self._starts[java_arg(t.path)] = t.position
            yield from self.dump_file(t.path)

    def _unlistable(self, path: str, exc: OSError) -> Iterator[Any]:
        from kafkalog_cli.errors import cannot_list

        self.summary.unreadable += 1
        yield FileError(cannot_list(exc, path), unreadable=True)

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
    # A .log (or KRaft .checkpoint) is dumped by three speed tiers over one walk state (``_LogWalk``):
    #   1. ``_log_runs``: the compiled run formatter (``opts.fast_run``) takes a whole run of clean v2 batches in
    #      one C call; it stops at the first batch it declines, which the Python walk then takes.
    #   2. ``_log_batch_fast``: the compiled batch formatter (``opts.fast``) formats one v2 batch the Python walk
    #      has read and CRC-checked.
    #   3. ``_log_entry_python``: ``BatchEvent`` and one ``RecordEvent`` per record, for everything else (legacy
    #      entries, options or versions the C code does not print exactly, a batch it declined).
    # Damage: ``_log_unknown_codec`` (Kafka's partial line, then the abort), ``_log_damage`` (unreadable bytes:
    # report and resync), ``_log_end`` (findings, gaps, ``TrailingBytes``). A change to what is printed for a
    # batch goes to the tier that prints it, and usually to all three (accel/*.c, render/accel.py, render/dls.py).
    def _log(self, arg: str, kind: str) -> Iterator[Any]:
        """Dump one .log/.checkpoint: the header, then stretches of tiers 1-3 separated by resyncs over damage."""
        header = self._log_header(arg, kind)
        with MappedFile(arg) as mf:
            mf.advise_sequential()
            yield header
            w = _LogWalk(mf, arg, min(mf.size, self.opts.max_bytes))
            w.start = w.valid_bytes = min(self._starts.pop(arg, 0), w.end)  # a window's indexed start (else 0)
            while True:
                try:
                    if self.opts.fast_run is not None and w.wait <= 0:
                        if (yield from self._log_runs(w)):
                            continue  # the run formatter reached the end of the range
                    resume = yield from self._log_walk(w)
                except CorruptRecordError as exc:
                    if exc.position is None or not _lost(mf, exc.position, exc.position + HEADER_SIZE_UP_TO_MAGIC):
                        raise
                    resume = exc.position  # the corrupt bytes are unreadable ones: a finding, not an error
                if resume == _BACK_TO_RUNS:
                    continue
                if resume is None or not (yield from self._log_damage(w, resume)):
                    break
            yield from self._log_end(w, os.path.basename(arg))

    def _log_header(self, arg: str, kind: str) -> LogHeader:
        """The ``LogHeader`` from the file name (segment base offset, KRaft snapshot end offset and epoch, or
        bootstrap); a name Kafka's tool cannot parse fails here, before the file is opened, as in Kafka."""
        name = os.path.basename(arg)
        if kind == "checkpoint":
            if name == "bootstrap.checkpoint":
                return LogHeader("bootstrap")
            parsed = comp.kraft_snapshot_name(name)
            if parsed is None:
                raise CorruptRecordError(
                    "KRaft snapshot file name does not parse",
                    file=arg,
                    expected="<20-digit end offset>-<10-digit epoch>.checkpoint",
                    found=name,
                )
            return LogHeader("kraft-snapshot", end_offset=parsed[0], epoch=parsed[1])
        try:
            base = comp.base_offset_of(name)
        except ValueError:
            raise KafkalogError(
                "segment file name does not start with a base offset (Kafka's tool aborts here too; "
                "copy the file to a name like 00000000000000000000.log to dump it)",
                file=arg, expected="<20-digit offset>.log", found=name,
            ) from None
        return LogHeader("log", base_offset=base)

    def _log_runs(self, w: _LogWalk) -> Generator[Any, None, bool]:
        """Tier 1: one ``opts.fast_run`` call formats the clean v2 batches from ``w.start`` as one ``FormattedRun``.
        Returns True when it reached the end of the range. When it takes nothing (a compressed or legacy segment)
        it backs off: the Python walk takes ``w.wait`` entries (1, 3, 7, ... up to 64) before the next try, so a
        segment the C code never takes costs few wasted calls."""
        opts = self.opts
        deep = opts.deep
        max_codec = 4 if self.profile.zstd_known else 3
        text, npos, nb, nrec, w.last, new_gaps, full = opts.fast_run(
            w.buf, w.start, w.end, deep, max_codec, w.last, opts.gap_tracker == "java", opts.decompress_limit)
        if nb:
            if new_gaps:
                w.gaps.extend(new_gaps)
            self.summary.batches += nb
            if deep:
                self.summary.records += nrec
            yield FormattedRun(text, npos - w.start, nb)
            w.valid_bytes += npos - w.start
            w.start = npos
            w.cooldown = 0
            if full:
                return True
            w.wait = 1  # the batch at npos is the Python path's
        else:
            w.cooldown = min(2 * w.cooldown + 1, 64)
            w.wait = w.cooldown
        return False

    def _log_walk(self, w: _LogWalk) -> Generator[Any, None, int | None]:
        """The Python walk from ``w.start`` (Kafka's ``FileLogInputStream``: ``walk``, ``read_entry``, the CRC
        check), each entry then formatted by tier 2 or tier 3. Returns None at the end of the range,
        ``_BACK_TO_RUNS`` when tier 1 is due again (``w.start`` set), or the position of an entry whose bytes
        could not be read (``_log_damage`` resyncs after it)."""
        buf = w.buf
        arg = w.arg
        mf = w.mf
        run = self.opts.fast_run
        fast = self.opts.fast
        summary = self.summary
        zstd_known = self.profile.zstd_known
        window = self._wstate if self.opts.window is not None else None
        for pos, size, magic in walk(buf, w.start, w.end, file=arg):
            if run is not None:
                if w.wait <= 0:  # back to the run formatter from here
                    w.start = pos
                    return _BACK_TO_RUNS
                w.wait -= 1
            entry = read_entry(buf, pos, magic, file=arg)
            if window is not None:
                verdict = "stop" if window.done else window.window.judge(entry)
                if verdict == "stop":
                    w.valid_bytes = w.end  # the rest is outside the window, not trailing bytes
                    return None
                if verdict == "skip":
                    w.valid_bytes += size
                    continue
            if entry.codec > 4 or (entry.codec == 4 and not zstd_known):
                if _lost(mf, pos, pos + size):
                    return pos
                # Kafka's tool prints the batch line up to the codec, then aborts
                yield PartialBatch(entry)
                raise self._log_unknown_codec(arg, entry, pos)
            valid, computed = _crc_check(entry, buf)
            if not valid and _lost(mf, pos, pos + size):
                return pos  # bytes of this entry could not be read: report them, resync after
            summary.batches += 1
            if not valid:
                summary.invalid_batches += 1
            if window is not None:
                yield from self._log_entry_window(w, entry, valid, computed)
                w.valid_bytes += size
                continue
            if fast is not None and not entry.is_legacy:
                ev = self._log_batch_fast(w, entry, valid)
                if ev is not None:
                    yield ev
                    w.valid_bytes += size
                    continue
            yield from self._log_entry_python(w, entry, valid, computed)
            w.valid_bytes += size
        return None

    def _log_entry_window(self, w: _LogWalk, entry: Entry, valid: bool, computed: int) -> Iterator[Any]:
        """A window's batch: its records decoded, those in the window chosen (``WindowState.choose``); the batch
        line and (deep) the chosen records' lines when any is, nothing otherwise. Offset gaps are not tracked: a
        window sees only part of the log."""
        opts = self.opts
        records = list(entry.iter_records(w.buf, opts.decompress_limit, copy=opts.print_data_log))
        chosen = self._wstate.choose(entry, records)
        if not chosen:
            return
        yield BatchEvent(entry, valid, computed, w.arg)
        if not opts.deep:
            return
        for rec in chosen:
            self.summary.records += 1
            try:
                ev = self._record_event(entry, rec)
            except KafkalogError:
                yield PartialRecord(entry, rec)
                raise
            yield ev

    def _log_unknown_codec(self, arg: str, entry: Entry, pos: int) -> CompressionError:
        """The error Kafka's tool throws at a codec id it does not know (after the ``PartialBatch`` line it
        printed up to the codec); located at the codec bits of the v2 or legacy attributes."""
        return CompressionError(
            f"Unknown compression type id: {entry.codec}",
            file=arg,
            position=pos + (LEGACY_ATTRIBUTES_OFFSET if entry.is_legacy else V2_CODEC_BYTE),  # the codec bits
            expected="a codec id 0..4 (none, gzip, snappy, lz4, zstd)" if self.profile.zstd_known
            else "a codec id 0..3 (none, gzip, snappy, lz4)",
            found=str(entry.codec),
        )

    def _log_batch_fast(self, w: _LogWalk, entry: Batch, valid: bool) -> FormattedBatch | None:
        """Tier 2: ``opts.fast`` formats one read, CRC-checked v2 batch (records and gaps included) in C; None
        when it declines the batch (tier 3 then prints it). A plain call, not a generator: it runs per batch."""
        opts = self.opts
        deep = opts.deep
        res = opts.fast(entry, w.buf, valid, deep, w.last, opts.gap_tracker == "java", opts.decompress_limit)
        if res is None:
            return None
        text, w.last, new_gaps = res
        if new_gaps:
            w.gaps.extend(new_gaps)
        if deep:
            self.summary.records += entry.records_count
        return FormattedBatch(entry, valid, text)

    def _log_entry_python(self, w: _LogWalk, entry: Entry, valid: bool, computed: int) -> Iterator[Any]:
        """Tier 3: ``BatchEvent`` and, when deep, one ``RecordEvent`` per record with Kafka's offset-gap rule
        (``last + 1``; the Java tracker also checks the first record). A record Kafka's tool would throw on gets
        the ``PartialRecord`` line Kafka printed before the throw, then the error goes on up."""
        opts = self.opts
        yield BatchEvent(entry, valid, computed, w.arg)
        if not opts.deep:
            return
        java_gaps = opts.gap_tracker == "java"
        gaps = w.gaps
        last = w.last
        try:
            for rec in entry.iter_records(w.buf, opts.decompress_limit, copy=opts.print_data_log):
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
        finally:
            w.last = last  # also when a record's unreadable bytes make _log resync and go on

    def _log_damage(self, w: _LogWalk, resume: int) -> Generator[Any, None, bool]:
        """Unreadable bytes (read as zeros) under the entry at ``resume``: report them and go on at the next valid
        entry after them, as verify-crc does; the skipped bytes are accounted for by the finding, not as trailing
        bytes. Returns False when no valid entry follows (the walk ends)."""
        after = max((b for a, b in w.mf.unreadable_ranges() if b > resume), default=resume + 1)
        nxt = next_valid_entry(w.buf, after, w.end)
        yield from self._findings(w.mf, w.reported)  # after the resync, which touched every page up to nxt
        stop = nxt if nxt is not None else w.end
        w.valid_bytes += stop - resume
        if nxt is None:
            return False
        w.start = nxt
        return True

    def _log_end(self, w: _LogWalk, name: str) -> Iterator[Any]:
        """After the walk: the read findings not yet reported, the offset gaps into the summary, and
        ``TrailingBytes`` for what no entry covered (Kafka's "Found N invalid bytes at the end of <file>")."""
        yield from self._findings(w.mf, w.reported)
        if w.gaps:
            self.summary.gaps.setdefault(java_abs(w.arg), []).extend(w.gaps)
        trailing = w.end - w.valid_bytes
        if trailing > 0:
            if w.end == w.mf.size:  # bytes cut off by --max-bytes are not a problem of the file
                self.summary.trailing_files += 1
            shown = not (self.profile.trailing_needs_no_max_bytes and self.opts.max_bytes_given)
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
                v = e.kafka_version
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
