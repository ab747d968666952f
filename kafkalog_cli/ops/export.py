"""``kafkalog export``'s engine: the records of anything kafkalog reads, in offset order per partition, as a
consumer would see them, handed batch by batch to a sink (NDJSON, Parquet, a Kafka partition directory).

Why: when data must come back (a topic deleted or recreated by mistake, a salvaged partition, a ``-delete``
directory, a tiered object), the tools operators have all consume through a live broker, and lose the offsets,
timestamps and producer fields. kafkalog reads those files already, batch by batch with the CRCs checked.

How, per partition (a topic-partition: one source directory, or several with ``merge``):

1. **Plan** (``plan``): the PATH arguments through the one resolver (``storage/paths.segment_files``: segments
   and tiered-storage objects below a log dir, partition dir or file), grouped by directory and named by the
   directory (``storage/partition_name``, ``storage/tiered``); ``leftovers`` adds the loader's leftovers
   (``*.log.deleted``, ``*.log.cleaned``, ``*.log.swap``), whose offsets are exported only where no earlier file
   held them. A window (``ops/dump_window.Window``) starts each standard partition directory at its indexed
   position, as ``dump`` does.
2. **Transactions** (``TxnView``, a first pass over batch headers and control records): a transactional data
   batch of producer P belongs to P's open transaction, which the next COMMIT or ABORT marker of P closes; an
   ABORT makes every batch of P from the transaction's first offset to the marker aborted. That is the consumer's
   rule for ``read_committed`` (the aborted transactions of the fetch response, which the broker takes from the
   ``.txnindex`` the markers produce, then skipped until the ABORT marker: ``CompletedFetch``'s
   ``abortedProducerIds``/``isBatchAborted``). A transaction with no marker in the source is ``open``: a
   read_committed consumer never sees it (the coordinator aborts it after ``transaction.timeout.ms``).
3. **Walk** (``Exporter.run``): every segment by the resync walk of verify-crc (``segment_check.intact_walk``):
   a batch whose header or CRC fails is skipped and reported as a located finding (file, byte range, expected,
   found, what next) and counted; the walk goes on at the next intact batch. Each intact batch is judged by the
   window, the isolation level and the offsets already written (two files holding the same offsets: the first
   wins), then handed to the sink with the selection of its records the sink must write (``Selection``). A sink
   that finds the batch's records malformed raises a ``KafkalogError`` before writing anything of it: the batch
   is then skipped and reported like a corrupt one.

Nothing is printed here; the sinks write files; memory holds one batch at a time.
"""

from __future__ import annotations

import bisect
import mmap
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from kafkalog_cli.errors import FileVanishedError, KafkalogError, UnreadableFileError
from kafkalog_cli.format import codecs, control
from kafkalog_cli.format.batch import ATTR_TRANSACTIONAL, LOG_APPEND_TIME, NO_TIMESTAMP_TYPE, Batch, Record
from kafkalog_cli.format.entry import Entry
from kafkalog_cli.format.layouts import LOG_OVERHEAD, MAGIC_OFFSET, V2_MIN_BATCH_LENGTH
from kafkalog_cli.ops.dump_window import Window, WindowState, plan_partition
from kafkalog_cli.ops.export_writer import DirectWriter
from kafkalog_cli.storage import accel, layout, paths, tiered
from kafkalog_cli.storage.meta_properties import broker_id_of
from kafkalog_cli.storage.segment import MappedFile, read_entry
from kafkalog_cli.storage.segment_check import DEFAULT_MAX_BATCH_SIZE, intact_walk
from kafkalog_cli.storage.verify_model import INFO

if TYPE_CHECKING:
    from kafkalog_cli.storage.lock import HeldLock

Isolation = Literal["read_committed", "read_uncommitted"]
ISOLATIONS: tuple[str, ...] = ("read_committed", "read_uncommitted")
LEFTOVER_LOG_SUFFIXES = (".log.deleted", ".log.cleaned", ".log.swap")
CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


# ------------------------------------------------------------------------------------------------ options
@dataclass(frozen=True)
class ExportOptions:
    window: Window | None = None
    isolation: Isolation = "read_committed"
    keep_control: bool = False  # hand control batches to the sink (read_uncommitted only; a kafka sink always)
    leftovers: bool = False
    merge: bool = False  # several source directories of one topic-partition: merged in offset order
    topic: str | None = None  # names the partition when the directory does not (a lone segment, salvage output)
    partition: int | None = None
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
    decompress_limit: int = codecs.DEFAULT_LIMIT
    below_log_start: bool = False  # also the records below the partition's log start offset (DeleteRecords)


# ------------------------------------------------------------------------------------------------ the plan
@dataclass
class SourceFile:
    path: str  # absolute
    position: int = 0  # where the walk starts (a window's indexed start)
    leftover: bool = False


@dataclass
class SourcePartition:
    """One topic-partition to export: its files in the order they are walked."""

    topic: str
    partition: int  # -1: the directory names none
    dirs: list[str]
    files: list[SourceFile] = field(default_factory=list)
    broker: int = -1  # meta.properties node.id / broker.id of the source log dir, -1 when unknown
    named: bool = True  # the name comes from the directory (or --topic/--partition), not a guess
    log_start: int | None = None  # the log dir's log-start-offset-checkpoint entry (a live directory), else None

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass
class Plan:
    partitions: list[SourcePartition] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


_LOG_DIR_MARKS = ("meta.properties", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint", ".lock")


def output_inside_source(p: Plan, out: str) -> str | None:
    """The source directory ``out`` (or its staging and lock files beside it) would be written into, None when it is
    outside them all: a partition directory the export reads (named ``<topic>-<partition>``, suffixed or not), or
    the Kafka log dir holding one (a directory with ``meta.properties`` or the broker's checkpoints; a directory the
    broker would take for a partition, or a file in a partition directory, left where a broker loads the log dir;
    and a later export of that directory would read the output as a source)."""
    target = os.path.realpath(os.path.dirname(os.path.abspath(out)))
    dirs: set[str] = set()
    for part in p.partitions:
        for d in part.dirs:
            real = os.path.realpath(d)
            if part.named and part.partition >= 0 and os.path.isdir(real):
                dirs.add(real)  # a partition directory (a folder of copied segments is not one)
            parent = os.path.dirname(real)
            if any(os.path.exists(os.path.join(parent, m)) for m in _LOG_DIR_MARKS):
                dirs.add(parent)
    for d in sorted(dirs, key=len, reverse=True):
        if target == d or target.startswith(d.rstrip(os.sep) + os.sep):
            return d
    return None


def _leftover_logs(d: str) -> list[str]:
    return sorted(os.path.join(d, n) for n in layout.list_directory(d)
                  if n.endswith(LEFTOVER_LOG_SUFFIXES) and layout.loader_offset(n) is not None)


def _file_base(path: str) -> int:
    name = os.path.basename(path)
    try:
        return layout.base_offset_of(name)
    except ValueError:
        return 0


def _name_of(d: str, files: list[str], opts: ExportOptions) -> tuple[str, int, bool]:
    """(topic, partition, named) of a source directory: the options, the directory name (live or suffixed), a
    tiered-storage layout, else the directory's base name and -1."""
    if opts.topic is not None or opts.partition is not None:
        tp = paths.partition_name(d)
        topic = opts.topic if opts.topic is not None else (tp.topic if tp else os.path.basename(d))
        part = opts.partition if opts.partition is not None else (tp.partition if tp else -1)
        return topic, part, opts.topic is not None or tp is not None
    tp = paths.partition_name(d)
    if tp is not None:
        return tp.topic, tp.partition, True
    for f in files:
        r = tiered.classify(f)
        if r is not None:
            return r.topic, r.partition, True
    return os.path.basename(d) or d, -1, False


def plan(args: list[str], opts: ExportOptions) -> Plan:
    """The partitions and files ``args`` name (see the module docstring). Raises the resolver's typed errors for a
    missing or unreadable PATH, a directory holding no segment, and (without ``merge``) two source directories of
    one topic-partition."""
    p = Plan()
    by_dir: dict[str, list[str]] = {}
    explicit: set[str] = set()
    for arg in args:
        if not os.path.lexists(arg):
            raise paths.missing(arg)
        if os.path.isdir(arg):
            layout.list_directory(arg)  # the one error for a directory that cannot be listed
            found = paths.segment_files(arg)
            dirs = sorted({os.path.dirname(f) for f in found})
            if opts.leftovers:
                for root, _subdirs, _files in os.walk(arg):
                    left = _leftover_logs(root)
                    if left:
                        found += left
                        dirs.append(os.path.abspath(root))
            if not found:
                if paths.empty_partition(arg):
                    p.notes.append(f"{arg}: an empty partition (no segment): nothing to export")
                    continue
                raise layout.no_segment(arg)
            for f in found:
                by_dir.setdefault(os.path.dirname(os.path.abspath(f)), []).append(os.path.abspath(f))
            if not opts.leftovers:
                for d in sorted(set(dirs)):
                    left = _leftover_logs(d)
                    if left:
                        p.notes.append(f"{d}: {len(left)} leftover segment file(s) not exported "
                                       f"({', '.join(os.path.basename(x) for x in left[:3])}"
                                       f"{', ...' if len(left) > 3 else ''}): --leftovers adds the offsets only "
                                       "they hold")
        else:
            f = os.path.abspath(arg)
            if not os.path.isfile(f):
                raise UnreadableFileError("not a regular file", file=arg, expected="a segment file or a directory")
            by_dir.setdefault(os.path.dirname(f), []).append(f)
            explicit.add(f)
    parts: dict[tuple[str, int], SourcePartition] = {}
    for d, files in by_dir.items():
        files = sorted(set(files), key=lambda f: (_file_base(f), f.endswith(LEFTOVER_LOG_SUFFIXES), f))
        topic, part, named = _name_of(d, files, opts)
        key = (topic, part)
        sp = parts.get(key)
        if sp is not None and not opts.merge:
            raise UnreadableFileError(
                f"two source directories hold partition {topic}-{part}: {sp.dirs[0]} and {d}",
                file=d, expected="one source directory per topic-partition", found="two",
                hint="export them one at a time into different --out, or add --merge to merge them in offset order "
                     "(offsets the first file holds win)")
        if sp is None:
            sp = parts[key] = SourcePartition(topic, part, [], broker=_broker(d), named=named)
        lso = _log_start(d, topic, part)
        sp.log_start = lso if not sp.dirs else (min(sp.log_start, lso) if sp.log_start is not None
                                                  and lso is not None else None)
        sp.dirs.append(d)
        sp.files += _targets(d, files, explicit, opts, p.notes)
    for sp in parts.values():
        if len(sp.dirs) > 1:
            sp.files.sort(key=lambda s: (_file_base(s.path), s.leftover))
    p.partitions = sorted(parts.values(), key=lambda s: (s.topic, s.partition, s.dirs[0]))
    return p


def _log_start(d: str, topic: str, partition: int) -> int | None:
    """The partition's log start offset from its log dir's ``log-start-offset-checkpoint`` (DeleteRecords, or
    retention that advanced it before deleting a segment: the records below are on disk but no consumer reads
    them), for a live partition directory only (a ``-delete`` or ``-stray`` copy's name is another log's entry);
    None when unknown."""
    from kafkalog_cli.broker.checkpoints import LOG_START_FILE, read_offset_checkpoint

    if partition < 0 or os.path.basename(d) != f"{topic}-{partition}":
        return None
    off, _why = read_offset_checkpoint(os.path.dirname(d), LOG_START_FILE, (topic, partition))
    return off if off is not None and off > 0 else None


def _broker(d: str) -> int:
    try:
        b = broker_id_of(os.path.dirname(d))
    except (OSError, KafkalogError):
        return -1
    return -1 if b is None else b


def _targets(d: str, files: list[str], explicit: set[str], opts: ExportOptions, notes: list[str]) -> list[SourceFile]:
    """The files of one directory with their start positions: a window's indexed start for a standard partition
    directory whose every segment is exported (``dump_window.plan_partition``), else 0."""
    w = opts.window
    standard = [f for f in files if layout.is_segment_name(os.path.basename(f))]
    out = [SourceFile(f, 0, f.endswith(LEFTOVER_LOG_SUFFIXES)) for f in files]
    if w is None or (w.offset is None and w.start_ms is None) or not standard or explicit & set(files):
        return out
    try:
        if len(standard) != len(layout.segment_bases(d)):
            return out
        starts = {t.path: t.position for t in plan_partition(d, w, notes)}
    except KafkalogError:
        return out
    kept = []
    for s in out:
        if s.leftover or s.path in starts:
            s.position = starts.get(s.path, 0)
            kept.append(s)
    return kept


# ------------------------------------------------------------------------------------------------ transactions
class TxnView:
    """Which transactional batches of a partition are committed, aborted or open (module docstring, step 2).

    Kept per producer: the aborted transactions' (first offset, marker offset) and the open transaction's first
    offset, so memory grows with aborted transactions, not with batches."""

    def __init__(self) -> None:
        self._open: dict[int, int] = {}
        self._aborted: dict[int, list[tuple[int, int]]] = {}
        self._indexed: dict[tuple[int, int], int] = {}  # .txnindex: (producer id, ABORT marker offset) -> first offset
        self.markers = 0

    def add_index(self, producer_id: int, first_offset: int, last_offset: int) -> None:
        """An aborted transaction a ``.txnindex`` lists (first offset, its ABORT marker's offset): what the broker's
        fetch path hands a read_committed consumer (UnifiedLog.scala:1248 collectAbortedTransactions ->
        LogSegment.java:530 collectAbortedTxns -> TransactionIndex.java:169, entries with lastOffset >= the fetch
        offset; at Kafka 1eb7644), whether or not the marker itself is in the exported files. Used where the walk does not see that marker (``finish``)."""
        self._indexed[(producer_id, last_offset)] = first_offset

    def finish(self) -> int:
        """After the walk: the indexed aborted transactions whose marker the walk did not see (a marker batch
        skipped as corrupt, a marker in a segment not among the sources) become aborted ranges; returns how many."""
        n = 0
        for (pid, last), first in self._indexed.items():
            self._aborted.setdefault(pid, []).append((first, last))
            n += 1
        self._indexed.clear()
        for ranges in self._aborted.values():
            ranges.sort()
        return n

    def observe(self, entry: Entry, buf: Any) -> None:
        if entry.is_legacy or not entry.is_transactional or entry.producer_id < 0:
            return
        pid = entry.producer_id
        if not entry.is_control:
            self._open.setdefault(pid, entry.base_offset)
            return
        try:
            ctype = marker_type(entry, buf)
        except KafkalogError:
            return
        if ctype not in (control.ABORT, control.COMMIT):
            return
        self.markers += 1
        self._indexed.pop((pid, entry.base_offset), None)  # the log's own marker decides (as the consumer's walk)
        first = self._open.pop(pid, None)
        if first is not None and ctype == control.ABORT:
            self._aborted.setdefault(pid, []).append((first, entry.base_offset))

    def state(self, pid: int, offset: int) -> str:
        """committed | aborted | open, for a transactional data batch of ``pid`` starting at ``offset``."""
        ranges = self._aborted.get(pid)
        if ranges:
            k = bisect.bisect_right(ranges, (offset, 1 << 63)) - 1
            if k >= 0 and ranges[k][0] <= offset <= ranges[k][1]:
                return "aborted"
        first = self._open.get(pid)
        if first is not None and offset >= first:
            return "open"
        return "committed"


def _txn_index_entries(d: str) -> list[Any]:
    """The aborted transactions of a directory's ``.txnindex`` files (in offset order), those Kafka would read:
    complete entries of version 0 (TransactionIndex.java throws for a later version; such a file is skipped here,
    and an unreadable one too: the markers in the log still count)."""
    from kafkalog_cli.storage.companions import parse_txn_index

    if not os.path.isdir(d):
        return []
    out: list[Any] = []
    try:
        names = sorted(n for n in layout.list_directory(d) if n.endswith(".txnindex") and layout.is_segment_name(
            n[: -len(".txnindex")] + ".log"))
    except KafkalogError:
        return []
    for n in names:
        try:
            with open(os.path.join(d, n), "rb") as f:
                entries = parse_txn_index(f.read())
        except OSError:
            continue
        if any(e.kafka_version != 0 for e in entries):
            continue
        out += [e for e in entries if e.producer_id >= 0 and e.first_offset <= e.last_offset]
    return out


def marker_type(entry: Entry, buf: Any) -> int | None:
    """The control type of a control batch's first record (ABORT 0, COMMIT 1, KRaft types), None when empty."""
    for rec in entry.iter_records(buf):
        return control.parse_control_key(rec.key)[1]
    return None


CONTROL_NAMES = {control.ABORT: "ABORT", control.COMMIT: "COMMIT", control.LEADER_CHANGE: "LEADER_CHANGE",
                 control.SNAPSHOT_HEADER: "SNAPSHOT_HEADER", control.SNAPSHOT_FOOTER: "SNAPSHOT_FOOTER",
                 control.KRAFT_VERSION: "KRAFT_VERSION", control.KRAFT_VOTERS: "KRAFT_VOTERS"}


def record_control(rec: Record) -> tuple[str, int]:
    """(type, coordinator epoch) of one control record: "COMMIT"/"ABORT" with the marker's coordinator epoch, or a
    KRaft control record's type name (``__cluster_metadata``) with -1. Raises ``KafkalogError`` for a malformed key
    or marker value."""
    _v, ctype = control.parse_control_key(rec.key)
    if ctype in (control.ABORT, control.COMMIT):
        return CONTROL_NAMES[ctype], control.parse_end_txn_marker(rec.value)[1]
    return CONTROL_NAMES.get(ctype, f"UNKNOWN_{ctype}"), -1


def control_of(entry: Entry, buf: Any) -> tuple[str, int] | None:
    """``record_control`` of a control batch's first record (a transaction marker batch holds one record); None for a
    data batch or an empty one. Every record of the batch is checked: a malformed one raises ``KafkalogError``. A
    sink labels each record by its own type (``record_control``): a KRaft control batch may hold several (a
    snapshot's SnapshotHeader, KRaftVersion and KRaftVoters records: RecordsSnapshotWriter.java:234-250), each printed under
    its own type by DumpLogSegments."""
    if entry.is_legacy or not entry.is_control:
        return None
    first = None
    for rec in entry.iter_records(buf):
        got = record_control(rec)
        if first is None:
            first = got
    return first


# ------------------------------------------------------------------------------------------------ what a sink gets
@dataclass
class Selection:
    """Which records of a batch to write: offset >= ``lo_offset``, ``start_ms <= timestamp <= end_ms`` (when
    given), at most ``limit`` of them (None: no limit)."""

    lo_offset: int | None = None
    start_ms: int | None = None
    end_ms: int | None = None
    limit: int | None = None

    @property
    def everything(self) -> bool:
        return self.lo_offset is None and self.start_ms is None and self.end_ms is None and self.limit is None

    def holds(self, rec: Record) -> bool:
        """The window's record rule (``dump_window.Window.holds``) over these bounds."""
        return Window(offset=self.lo_offset, start_ms=self.start_ms, end_ms=self.end_ms).holds(rec)


@dataclass
class BatchItem:
    """One intact batch for a sink: the entry over its segment's buffer, its transaction state, its selection."""

    entry: Entry
    buf: Any
    file: str
    txn: str | None  # committed | aborted | open | None (not transactional)
    control: tuple[str, int] | None  # a control batch: its first record's (type, coordinator epoch); per record:
    # ``record_control`` (a KRaft control batch may mix types)
    selection: Selection
    partition: SourcePartition
    decompress_limit: int = codecs.DEFAULT_LIMIT

    def all_records(self) -> list[Record]:
        """Every record of the batch, decoded with Kafka's checks (a malformed one raises ``KafkalogError``)."""
        try:
            return list(self.entry.iter_records(self.buf, self.decompress_limit))
        except KafkalogError as exc:
            raise exc.located(self.file) from None

    def records(self) -> list[Record]:
        """The selected records (all records decoded first: a batch is written whole or not at all)."""
        recs = self.all_records()
        sel = self.selection
        if sel.everything:
            return recs
        out = [r for r in recs if sel.holds(r)]
        return out if sel.limit is None else out[: sel.limit]

    @property
    def timestamp_type(self) -> str:
        e = self.entry
        if e.is_legacy and e.magic == 0:
            return "none"
        return "logappend" if e.timestamp_type == LOG_APPEND_TIME else "create"

    @property
    def timestamp_type_name(self) -> str:
        return {"none": "NoTimestampType", "logappend": "LogAppendTime", "create": "CreateTime"}[self.timestamp_type]

    @property
    def codec_name(self) -> str:
        return CODEC_NAMES.get(self.entry.codec, f"unknown-{self.entry.codec}")


class Sink(Protocol):
    """Where the records go (``render/export_ndjson.py``, ``render/export_parquet.py``, ``ops/export_kafka.py``)."""

    keeps_markers: bool  # transaction markers are written whatever --keep-control says (a Kafka directory)

    def begin(self, part: SourcePartition) -> None: ...

    def batch(self, item: BatchItem) -> int:
        """Write the selected records of one batch; return how many records were written. Raise
        ``KafkalogError`` (having written nothing of the batch) when its records are malformed."""
        ...

    def end(self, part: SourcePartition, stats: PartitionStats) -> None: ...


# ------------------------------------------------------------------------------------------------ results
@dataclass
class Finding:
    """A batch or byte range not exported: where, what was expected and found, what to do next."""

    file: str
    position: int
    end: int
    kind: str
    message: str
    offset: int | None = None
    last_good_offset: int | None = None
    first_good_offset: int | None = None
    expected: str | None = None
    found: str | None = None
    hint: str = ("the bytes are skipped; kafkalog verify-crc FILE maps every corrupt range, and kafkalog salvage cuts "
                 "them out of the partition")

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


@dataclass
class PartitionStats:
    topic: str
    partition: int
    dirs: list[str]
    output: str = ""
    records: int = 0
    batches: int = 0
    control_records: int = 0  # markers written (--keep-control, or a Kafka directory)
    first_offset: int | None = None
    last_offset: int | None = None
    corrupt_batches: int = 0  # batches (or regions) skipped as corrupt
    corrupt_bytes: int = 0
    aborted_records: int = 0  # dropped: aborted transactions (read_committed)
    open_records: int = 0  # dropped: transactions without a marker (read_committed)
    control_dropped: int = 0  # control records not written
    duplicate_records: int = 0  # offsets an earlier file held already
    below_log_start: int = 0  # records below the log start offset (log_start), left out
    log_start: int | None = None
    converted_entries: int = 0  # v0/v1 entries written as v2 batches (a Kafka directory)
    notes: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "findings"}
        d["findings"] = [f.as_dict() for f in self.findings]
        return d


@dataclass
class ExportSummary:
    partitions: list[PartitionStats] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    isolation: str = "read_committed"

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions)

    @property
    def corrupt_batches(self) -> int:
        return sum(p.corrupt_batches for p in self.partitions)

    def exit_code(self) -> int:
        return 1 if self.corrupt_batches else 0


# ------------------------------------------------------------------------------------------------ the walk
PROGRESS_STEP = 4 << 20  # the progress callback gets the bytes walked in steps of this size
RELEASE_STEP = 32 << 20  # the segment's mapped pages behind the walk are given back every this many bytes


class _Release:
    """Gives the mapped pages of a segment behind the walk back to the kernel (``MappedFile.release_pages``), so the
    process's memory does not grow with the segment (the bytes stay in the page cache)."""

    def __init__(self, mf: MappedFile, start: int) -> None:
        self.mf = mf
        self.done = start - start % mmap.PAGESIZE

    def upto(self, pos: int) -> None:
        if pos - self.done >= RELEASE_STEP:
            end = pos - pos % mmap.PAGESIZE
            self.mf.release_pages(self.done, end - self.done)
            self.done = end
_SCAN_WINDOW = 4 << 20  # bytes of batch headers the compiled walk hands back per call
_RUN_SCAN_WINDOW = 256 << 10  # the same between two runs of the sink's compiled run (the walk may stop soon)
RUN_BUDGET = 64  # at most this many entries the walk takes before the sink's run is tried again (2, 4, 8, ... after
# runs in a row that took nothing)
RUN_MISSES = 8  # runs in a row that take nothing: the rest of the file goes through the walk


def _entries(path: str, buf: Any, start: int, opts: ExportOptions,
             on_problem: Callable[[Finding], None] | None, *, transactional_only: bool = False,
             release: _Release | None = None, last: int | None = None, window: int = 0) -> Iterator[Entry]:
    """The intact entries of one segment from ``start`` (the resync walk); skipped regions to ``on_problem``.

    Runs of intact v2 batches come from the compiled header walk (``_accel.scan_v2``: size fields and CRCs checked
    in C, a window at a time); every entry it does not vouch for (a failed check, a legacy entry, the end of the
    file) is one step of the Python walk (``segment_check.intact_walk``), which reports and resyncs.
    ``transactional_only``: the compiled walk's non-transactional batches are passed over unparsed (the
    transaction pass reads nothing else). ``release`` gives the pages behind the walk back as it goes."""
    mod = accel.module()
    n = len(buf)
    pos = start
    max_size = opts.max_batch_size
    unpack = accel.SCAN_FORMAT.iter_unpack
    # ``last``: the last offset of the previous intact entry (a region's "last good offset"); ``window``: bytes of
    # headers per compiled call (0: _SCAN_WINDOW)
    scan_window = window or _SCAN_WINDOW
    while pos < n:
        if release is not None:
            release.upto(pos)
        if mod is not None:
            data, stop, _why = mod.scan_v2(buf, pos, min(n, pos + scan_window))
            bad = None
            for (p, size, _magic, crc_ok, attrs, base, lod, count, *_rest) in unpack(data):
                if not crc_ok or base < 0 or attrs & 7 > 4 or lod < 0 or count < 0 or size - LOG_OVERHEAD > max_size \
                        or size - LOG_OVERHEAD < V2_MIN_BATCH_LENGTH:
                    bad = p
                    break
                last = base + lod
                if transactional_only and not attrs & ATTR_TRANSACTIONAL:
                    continue
                yield Batch(buf, p)
            nxt = stop if bad is None else bad
            if nxt > pos:
                pos = nxt
                continue
        step = next(intact_walk(buf, pos, file=path, max_batch_size=max_size, last_offset=last), None)
        if step is None:
            return
        p, end, problem = step
        if problem is None:
            try:
                entry = read_entry(buf, p, buf[p + MAGIC_OFFSET], file=path)
                last = entry.last_offset
                yield entry
            except KafkalogError as exc:
                if on_problem is not None:
                    on_problem(Finding(path, p, p + end, "unreadable-entry", exc.message))
            pos = p + end
            continue
        if on_problem is not None and problem.severity != INFO:
            on_problem(Finding(path, problem.position, problem.end, problem.kind, problem.message, problem.offset,
                               problem.last_good_offset, problem.first_good_offset,
                               expected="an intact batch (plausible header, CRC that verifies)", found=problem.kind))
        pos = max(end, pos + 1)


class Exporter:
    """Runs a plan into a sink; ``summary`` holds what was written and skipped. ``progress`` gets bytes walked."""

    def __init__(self, opts: ExportOptions, sink: Sink, progress: Callable[[int], None] | None = None) -> None:
        self.opts = opts
        self.sink = sink
        self.progress = progress
        self.summary = ExportSummary(isolation=opts.isolation)
        self._stopped = False
        self._reported = 0  # bytes of the current file the progress callback has had
        self._floor: int | None = None  # the current partition's log start offset, when its records below are left out

    def run(self, p: Plan) -> ExportSummary:
        self.summary.notes += p.notes
        for part in p.partitions:
            self.summary.partitions.append(self._partition(part))
        return self.summary

    # ------------------------------------------------------------------------------------------ one partition
    def _txn_view(self, part: SourcePartition, stats: PartitionStats) -> TxnView:
        view = TxnView()
        files = [s.path for s in part.files]
        for d in part.dirs:  # a lone segment named on the command line: its markers may be in a later segment
            mine = [f for f in files if os.path.dirname(f) == d and layout.is_segment_name(os.path.basename(f))]
            if mine and os.path.isdir(d):
                top = max(_file_base(f) for f in mine)
                try:
                    files += [f for b, f in layout.segment_logs(d) if b > top and f not in files]
                except KafkalogError:
                    pass
        for d in part.dirs:
            for entry in _txn_index_entries(d):
                view.add_index(entry.producer_id, entry.first_offset, entry.last_offset)
        starts = {s.path: s.position for s in part.files}
        for f in files:
            try:
                with MappedFile(f) as mf:
                    release = _Release(mf, starts.get(f, 0))
                    for entry in _entries(f, mf.buf, starts.get(f, 0), self.opts, None, transactional_only=True,
                                          release=release):
                        if not entry.is_legacy and entry.is_transactional:
                            view.observe(entry, mf.buf)
            except KafkalogError:
                continue  # reported by the export walk
        used = view.finish()
        if used:
            stats.notes.append(f"{used} aborted transaction(s) known only from the .txnindex (their ABORT marker is "
                               "not among the intact batches exported): their records are aborted, as a read_committed "
                               "consumer fetching from the broker would skip them")
        return view

    def _partition(self, part: SourcePartition) -> PartitionStats:
        opts = self.opts
        stats = PartitionStats(part.topic, part.partition, list(part.dirs), log_start=part.log_start)
        view = self._txn_view(part, stats)
        state = WindowState(opts.window) if opts.window is not None else None
        self.sink.begin(part)
        # offsets below were written already (an earlier file held them), or lie below the log start offset
        self._floor = None if opts.below_log_start else part.log_start
        next_offset: int | None = self._floor
        findings = stats.findings

        def problem(f: Finding) -> None:
            findings.append(f)
            stats.corrupt_batches += 1
            stats.corrupt_bytes += max(0, f.end - f.position)

        self._stopped = False
        for src in part.files:
            if self._stopped or (state is not None and state.done):
                break
            try:
                mf = MappedFile(src.path)
            except FileVanishedError:
                stats.notes.append(f"{src.path}: deleted while the export ran (retention?): not exported")
                continue
            except UnreadableFileError as exc:
                problem(Finding(src.path, 0, 0, "unreadable", exc.message, hint="check the file's permissions and "
                                "the disk; the rest of the partition is exported"))
                continue
            with mf:
                encoded = tiered.encoding_problem(src.path)
                if encoded is not None:
                    problem(Finding(src.path, 0, mf.size, "remote-encoded", encoded, hint="not a segment's bytes"))
                    continue
                mf.advise_sequential()
                done = self._file(src, mf, part, view, state, stats, problem, next_offset)
                if done is not None:
                    next_offset = done
                for rf in mf.findings():
                    problem(Finding(src.path, rf.start, rf.end, rf.kind, rf.message,
                                    hint="the disk could not deliver these bytes; copy what it can (ddrescue) and "
                                         "export the copy"))
                if self.progress is not None:
                    self.progress(mf.size - src.position - self._reported)
                self._reported = 0
        if self._stopped or (state is not None and state.done):
            self._closing_markers(part, stats, next_offset)
        if stats.below_log_start:
            stats.notes.append(f"{stats.below_log_start} record(s) below the log start offset {part.log_start} (the log "
                               "dir's log-start-offset-checkpoint: deleted by DeleteRecords or retention, still on "
                               "disk) left out, as a consumer never reads them; --below-log-start exports them")
        self.sink.end(part, stats)
        return stats

    def _closing_markers(self, part: SourcePartition, stats: PartitionStats, next_offset: int | None) -> None:
        """A window that ends inside a transaction (``--count``, ``--end-time``): a Kafka directory gets the
        transaction's marker from after the window's end (its first COMMIT/ABORT of that producer in the source), so
        that the restored log holds no transaction the source had closed open (a read_committed consumer would wait
        at its first offset forever). Only the markers are taken; the walk reads batch headers."""
        pending = getattr(self.sink, "open_producers", None)
        wanted = pending() if pending is not None and next_offset is not None else set()
        for src in part.files:
            if not wanted:
                return
            try:
                mf = MappedFile(src.path)
            except KafkalogError:
                continue
            with mf:
                for entry in _entries(src.path, mf.buf, src.position, self.opts, None, transactional_only=True):
                    assert next_offset is not None
                    if not entry.is_control or entry.producer_id not in wanted or entry.base_offset < next_offset:
                        continue
                    try:
                        marker = control_of(entry, mf.buf)
                        n = self.sink.batch(BatchItem(entry, mf.buf, src.path, None, marker, Selection(), part,
                                                      self.opts.decompress_limit))
                    except KafkalogError:
                        continue  # reported where the export walk took it, or never reached: the next marker
                    stats.control_records += n
                    if n:
                        stats.batches += 1
                        stats.last_offset = entry.last_offset
                    next_offset = entry.last_offset + 1
                    wanted = pending() if pending is not None else set()
                    if not wanted:
                        return

    def _file(self, src: SourceFile, mf: MappedFile, part: SourcePartition, view: TxnView,
              state: WindowState | None, stats: PartitionStats, problem: Callable[[Finding], None],
              next_offset: int | None) -> int | None:
        """Export one file's batches; returns the next offset to write (None when nothing was written)."""
        opts = self.opts
        window = opts.window
        buf = mf.buf
        sink = self.sink
        committed_only = opts.isolation == "read_committed"
        keep_control = sink.keeps_markers or (opts.keep_control and not committed_only)
        progress = self.progress
        pending = 0
        release = _Release(mf, src.position)
        # the sink's compiled run (NDJSON: _accel.export_ndjson_run): whole runs of plain batches in one call, where
        # no window applies; what it does not take goes through the walk below, RUN_BUDGET entries at a time
        run = getattr(sink, "run", None) if state is None and window is None else None
        pos = src.position
        last: int | None = None
        misses = 0
        while True:
            if run is not None:
                got = run(buf, pos, next_offset, opts.max_batch_size, src.path)
                if got is None:
                    run = None
                elif got[0] > pos:
                    npos, batches, records, first, last_taken, last_walked = got
                    stats.records += records
                    stats.batches += batches
                    if batches:
                        if stats.first_offset is None:
                            stats.first_offset = first
                        stats.last_offset = last_taken
                    if progress is not None:
                        pending += npos - pos
                        if pending >= PROGRESS_STEP:
                            progress(pending)
                            self._reported += pending
                            pending = 0
                    release.upto(npos)
                    pos, last, next_offset, misses = npos, last_walked, last_walked + 1, 0
                    continue  # full (or at a batch it does not take: then the next call takes nothing)
                misses += 1
                if misses >= RUN_MISSES:
                    run = None
            budget = min(1 << misses, RUN_BUDGET) if run is not None else None
            taken = 0
            more = False  # the walk stopped at the budget: the run gets the rest
            for entry in _entries(src.path, buf, pos, opts, problem, release=release, last=last,
                                  window=_RUN_SCAN_WINDOW if budget is not None else 0):
                if budget is not None and taken >= budget:
                    pos = entry.position
                    more = True
                    break
                taken += 1
                pos, last = entry.position + entry.size, entry.last_offset
                if progress is not None:
                    pending += entry.size
                    if pending >= PROGRESS_STEP:
                        progress(pending)
                        self._reported += pending
                        pending = 0
                if state is not None:
                    if state.done:
                        break
                    verdict = window.judge(entry) if window is not None else "take"
                    if verdict == "stop":
                        self._stopped = True
                        break
                    if verdict == "skip":
                        continue
                if next_offset is not None and entry.last_offset < next_offset:
                    if self._floor is not None and entry.last_offset < self._floor:
                        stats.below_log_start += _count(entry)
                    else:
                        stats.duplicate_records += _count(entry)
                    continue
                if self._floor is not None and entry.base_offset < self._floor <= entry.last_offset \
                        and not entry.is_control:
                    stats.below_log_start += _below(entry, buf, self._floor, opts.decompress_limit)
                txn: str | None = None
                marker = None
                if entry.is_control:
                    try:
                        marker = control_of(entry, buf)
                    except KafkalogError as exc:
                        problem(Finding(src.path, entry.position, entry.position + entry.size, "bad-control-record",
                                        exc.message, entry.base_offset, expected="a control record key and value",
                                        found=exc.found or "malformed"))
                        continue
                    if not keep_control:
                        stats.control_dropped += _count(entry)
                        next_offset = entry.last_offset + 1
                        continue
                elif not entry.is_legacy and entry.is_transactional and entry.producer_id >= 0:
                    txn = view.state(entry.producer_id, entry.base_offset)
                    if committed_only and txn != "committed":
                        if txn == "aborted":
                            stats.aborted_records += _count(entry)
                        else:
                            stats.open_records += _count(entry)
                        next_offset = entry.last_offset + 1
                        continue
                sel = Selection()
                # a legacy compressed wrapper's offset is its last inner message's (its first one's is inside it):
                # an offset bound always applies to its records
                legacy = entry.is_legacy
                if next_offset is not None and (legacy or entry.base_offset < next_offset):
                    sel.lo_offset = next_offset
                if window is not None:
                    if window.offset is not None and (legacy or entry.base_offset < window.offset):
                        sel.lo_offset = max(sel.lo_offset or window.offset, window.offset)
                    if window.start_ms is not None:
                        sel.start_ms = window.start_ms
                    if window.end_ms is not None:
                        sel.end_ms = window.end_ms
                    if state is not None and window.count is not None and not entry.is_control:
                        sel.limit = window.count - state.taken
                if entry.is_control and window is not None:
                    sel = Selection(lo_offset=sel.lo_offset)  # markers are not in the window's count or times
                if entry.is_legacy and entry.magic == 0 and (sel.start_ms is not None or sel.end_ms is not None):
                    pass  # v0 has no timestamps (-1): a time window holds none of them, as dump's
                item = BatchItem(entry, buf, src.path, txn, marker, sel, part, opts.decompress_limit)
                try:
                    n = sink.batch(item)
                except KafkalogError as exc:
                    problem(Finding(src.path, entry.position, entry.position + entry.size, "bad-records",
                                    exc.message, entry.base_offset, expected=exc.expected or "records Kafka can decode",
                                    found=exc.found or "malformed records"))
                    continue
                if entry.is_control:
                    stats.control_records += n
                else:
                    stats.records += n
                    if state is not None:
                        state.taken += n
                if n:
                    stats.batches += 1
                    # a batch written in part (a window's edge, --count): its first and last written records' offsets
                    # (a legacy wrapper's first offset is inside it)
                    partial = not sel.everything and (legacy or n < _count(entry))
                    span = _written_span(item) if partial or (stats.first_offset is None and legacy and entry.codec) \
                        else None
                    if stats.first_offset is None:
                        stats.first_offset = span[0] if span is not None else entry.base_offset
                    stats.last_offset = span[1] if span is not None and partial else entry.last_offset
                if entry.is_legacy and sink.keeps_markers and n:
                    stats.converted_entries += 1
                next_offset = entry.last_offset + 1
            if not more or self._stopped:
                break
        return next_offset


def _below(entry: Entry, buf: Any, floor: int, limit: int) -> int:
    """How many records of the batch straddling the log start offset lie below it (a legacy wrapper: decoded)."""
    try:
        return sum(1 for r in entry.iter_records(buf, limit) if r.offset < floor)
    except KafkalogError:
        return 0


def _written_span(item: BatchItem) -> tuple[int, int] | None:
    """(first, last) offset of the records a sink wrote of a batch taken in part: its selection's records (decoded
    again: only a window's edge batches and legacy wrappers come here)."""
    try:
        recs = item.records()
    except KafkalogError:
        return None
    return (recs[0].offset, recs[-1].offset) if recs else None


def _count(entry: Entry) -> int:
    return 1 if entry.is_legacy else max(entry.records_count, 0)


def timestamp_type_code(item: BatchItem) -> int:
    e = item.entry
    if e.is_legacy and e.magic == 0:
        return NO_TIMESTAMP_TYPE
    return e.timestamp_type


# ------------------------------------------------------------------------------------------------ output files
STAGING_SUFFIX = ".kafkalog-partial"
LOCK_SUFFIX = ".kafkalog-lock"
_MARKER = ".kafkalog-export"


class Destination:
    """``--out``: a new file or directory, written under ``<out>.kafkalog-partial`` and renamed into place at the
    end, so that a killed export never leaves a half-written file or partition directory under the final name
    (the partial one is ours: the next run replaces it). An existing file, or a directory that is not empty, is
    refused (nothing is overwritten); missing parent directories are created. ``<out>.kafkalog-lock`` is locked
    (flock) from before the existence check until the commit's rename or the abort's clean-up: a second export to
    the same --out is refused (``RepairRefused``, exit 2) instead of taking the first one's staging path for a
    killed run's."""

    def __init__(self, out: str, *, directory: bool) -> None:
        self.out = os.path.abspath(out)
        self.directory = directory
        self.staging = self.out + STAGING_SUFFIX
        self._writers: list[DirectWriter] = []
        self.warnings: list[str] = []  # for the caller to print (stderr)
        parent = os.path.dirname(self.out)
        try:
            os.makedirs(parent, exist_ok=True)
        except OSError as exc:
            raise UnreadableFileError(f"cannot create the output's directory: {exc.strerror or exc}", file=parent,
                                      expected="a directory export can create", found="an error") from None
        self._lock = _lock_output(out, self.out + LOCK_SUFFIX, self.warnings)
        try:
            if os.path.lexists(self.out) and not (os.path.isdir(self.out) and directory
                                                  and not os.listdir(self.out)):
                raise UnreadableFileError(
                    "the output exists already: export writes a new file or directory", file=out,
                    expected="a path that does not exist (or an empty directory)",
                    found="a non-empty directory" if os.path.isdir(self.out) else "a file",
                    hint="choose another --out, or move the old output away")
            self._clear_staging()
            if directory:
                os.mkdir(self.staging)
                with open(os.path.join(self.staging, _MARKER), "w") as f:
                    f.write(f"{os.getpid()}\n")
        except BaseException:
            self._lock.release()
            raise

    def _clear_staging(self) -> None:
        if not os.path.lexists(self.staging):
            return
        if os.path.isdir(self.staging) and not os.path.islink(self.staging):
            if not os.listdir(self.staging):  # a run killed between its mkdir and the marker: nothing in it
                os.rmdir(self.staging)
                return
            if not os.path.exists(os.path.join(self.staging, _MARKER)):
                raise UnreadableFileError("a directory with the export's staging name exists and is not ours",
                                          file=self.staging, expected="absent, or a partial export", found="a directory")
            import shutil

            shutil.rmtree(self.staging)
        else:
            os.unlink(self.staging)

    def open_file(self, path: str) -> DirectWriter:
        """A new output file under the staging path (``ops/export_writer.DirectWriter``: large direct writes from a
        thread); ``abort`` stops the ones still open."""
        w = DirectWriter(path)
        # only the open ones: a log dir of 20,000 partitions must not keep 20,000 closed writers (memory flat)
        self._writers = [x for x in self._writers if not x.closed]
        self._writers.append(w)
        return w

    def path(self, name: str | None = None) -> str:
        """Where to write: the staging file (a file output) or ``name`` inside the staging directory."""
        if not self.directory:
            return self.staging
        assert name is not None
        return os.path.join(self.staging, name)

    def final(self, name: str | None = None) -> str:
        return self.out if not self.directory or name is None else os.path.join(self.out, name)

    def commit(self) -> None:
        """fsync what was written, then rename the staging path to ``--out`` (and fsync the parent)."""
        fsync_dir = _fsync_dir
        if self.directory:
            files, dirs = [], []
            for root, _dirs, names in os.walk(self.staging):
                files += [os.path.join(root, n) for n in names]
                dirs.append(root)
            _fsync_all(files)
            _fsync_all(dirs, fsync_dir)
            if os.path.isdir(self.out):
                os.rmdir(self.out)  # the empty directory the operator made for it
        else:
            _fsync(self.staging)
        os.rename(self.staging, self.out)
        fsync_dir(os.path.dirname(self.out))
        if self.directory:
            # the marker goes last: a staging directory killed before the rename keeps it (the next run knows the
            # partial export is its own and replaces it; unlinked before the rename, a kill there left a complete
            # staging directory the next run refused as "not ours"); a kill in the instant after the rename
            # leaves it in the complete output (docs/export.md)
            os.unlink(os.path.join(self.out, _MARKER))
            fsync_dir(self.out)
        self._lock.release()  # only once the output is in place: until then a second run is refused, then "exists"

    def abort(self) -> None:
        """Remove the staging path (an export that failed or was interrupted leaves nothing behind)."""
        import shutil

        for w in self._writers:
            w.abort()

        try:
            if os.path.isdir(self.staging) and not os.path.islink(self.staging):
                shutil.rmtree(self.staging, ignore_errors=True)
            elif os.path.lexists(self.staging):
                os.unlink(self.staging)
        finally:
            self._lock.release()


def _lock_output(out: str, path: str, warnings: list[str]) -> HeldLock:
    """kafkalog's lock of one ``--out`` (``<out>.kafkalog-lock``, held from before the existence check to after the
    rename or the clean-up): a second export to the same --out while the first runs is refused, never mixed into
    the first's staging files (it would otherwise remove them as a killed run's partial export and write its own)."""
    from kafkalog_cli.errors import RepairRefused
    from kafkalog_cli.storage.lock import lock_file

    try:
        held, state = lock_file(path)
    except OSError as exc:
        raise UnreadableFileError(f"cannot create the output's lock file: {exc.strerror or exc}", file=path,
                                  expected="a file export can create beside --out", found="an error") from None
    if held is None:
        who = f" (pid {state.pid})" if state.pid else ""
        raise RepairRefused(f"another kafkalog export{who} is writing this output: it holds {path}", file=out,
                            expected="no other export to this --out", found=f"a running export{who}",
                            hint="wait for it to finish (its output appears under this name when it is complete; "
                                 "interrupted, it leaves nothing), or give another --out")
    if state.kind == "unsupported":
        warnings.append(f"{path}: the file system of --out supports no file lock (flock and fcntl both refused): "
                        "the export goes on unlocked, so a second export to the same --out at the same time is not "
                        "detected; run only one")
    return held


FSYNC_THREADS = 16
FSYNC_SLICE = 1024


def _fsync_all(paths: list[str], fsync: Callable[[str], None] | None = None) -> None:
    """fsync every path, from up to ``FSYNC_THREADS`` threads when there are many (each fsync releases the GIL and
    the file system commits concurrent ones together): one after the other, the 120,000 fsyncs of a Kafka-format
    export of 20,000 partitions were most of its time (bench/export_scale_bench.py). All are done when it returns;
    the first error is raised."""
    fn = fsync or _fsync
    if len(paths) < 2 * FSYNC_THREADS:
        for p in paths:
            fn(p)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=FSYNC_THREADS, thread_name_prefix="kafkalog-fsync") as pool:
        for i in range(0, len(paths), FSYNC_SLICE):  # a future per path at once: 100 MiB for 100,000 files
            for _ in pool.map(fn, paths[i:i + FSYNC_SLICE]):
                pass


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: str) -> None:
    """``ops/safety/files.fsync_dir``'s four lines: importing that package (the repair framework: journal,
    transaction, recovery) cost an export 40-80 ms of start-up, a tenth of a 128 MiB dump's whole run."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
