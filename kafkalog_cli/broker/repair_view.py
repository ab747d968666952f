"""Read-side helpers shared by the repairs that rewrite a partition (``compact``, ``truncate-to-epoch``).

Why a module of its own: both repairs need the same strict view of a partition before they may write anything —
the segment list in offset order, every batch header validated (a repair must never build on a bad CRC), the
producer state the broker would hold (spec §7.2), the aborted transactions the log itself proves (spec §7.1,
errata E1). Nothing here writes or prints.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from kafkalog_cli.broker.producer_state_manager import ProducerStateEntry, replay_for_repair
from kafkalog_cli.errors import CorruptRecordError, KafkalogError, RepairRefused
from kafkalog_cli.format.batch import Batch
from kafkalog_cli.format.control import ABORT, COMMIT, parse_control_key
from kafkalog_cli.format.entry import Entry
from kafkalog_cli.storage import layout
from kafkalog_cli.storage.companions import (
    SEGMENT_NAME,
    AbortedTxn,
    ProducerEntry,
    parse_producer_snapshot,
    parse_txn_index,
)
from kafkalog_cli.storage.layout import LEFTOVER_SUFFIXES, segment_logs
from kafkalog_cli.storage.segment import MappedFile, read_entry, walk

__all__ = ["LEFTOVER_SUFFIXES"]  # re-exported for existing importers


def seg_name(base: int, ext: str) -> str:
    """Kafka's file name for a segment file: 20-digit zero-padded base offset + extension."""
    return layout.segment_name(base, ext)


@dataclass
class Segment:
    """One ``<base>.log`` and the sizes of its companions (sizes drive the cleaner's grouping, spec §9.5)."""

    base: int
    dir: str
    size: int
    index_size: int
    timeindex_size: int
    has_txnindex: bool
    mtime_ns: int

    def path(self, ext: str) -> str:
        return os.path.join(self.dir, seg_name(self.base, ext))


def list_segments(partition_dir: str) -> list[Segment]:
    """Segments in base-offset order. Symlinked segment files are refused: a repair never follows them."""
    out = []
    for base, path in segment_logs(partition_dir):
        if os.path.islink(path):
            raise RepairRefused("segment file is a symlink; refusing to follow it", file=path)
        st = os.stat(path)

        def size_of(ext: str, base: int = base) -> int:
            p = os.path.join(partition_dir, seg_name(base, ext))
            return os.path.getsize(p) if os.path.isfile(p) else 0

        out.append(
            Segment(
                base=base,
                dir=partition_dir,
                size=st.st_size,
                index_size=size_of("index"),
                timeindex_size=size_of("timeindex"),
                has_txnindex=os.path.isfile(os.path.join(partition_dir, seg_name(base, "txnindex"))),
                mtime_ns=st.st_mtime_ns,
            )
        )
    out.sort(key=lambda s: s.base)
    return out


def leftovers(partition_dir: str) -> list[str]:
    """Files of an unfinished clean/split/delete (``.cleaned``/``.swap``/``.deleted``), which the broker resolves
    at start-up (spec §8 steps 1-2); a repair must not start on top of them."""
    return layout.leftovers(partition_dir)


DAMAGE_HINT = ("nothing was changed; at its next unclean start the broker truncates the segment at the bad batch and "
               "deletes every later segment ('kafkalog recover PARTITION_DIR' previews that); 'kafkalog salvage "
               "PARTITION_DIR' cuts out only the damaged bytes and keeps every intact batch (add --execute to do it), "
               "then run again")
LEGACY_HINT = ("nothing was changed; the broker keeps legacy messages as they are ('kafkalog dump' shows them); let "
               "the broker's own log cleaner compact this partition")
TORN_TAIL_HINT = ("nothing was changed; a torn write (an append cut short by a crash): at its next unclean start the "
                  "broker's recovery cuts the segment there and deletes every later segment ('kafkalog recover "
                  "PARTITION_DIR' previews that); 'kafkalog salvage PARTITION_DIR' cuts only the partial batch (add "
                  "--execute to do it), then run again")


def read_batches(seg_path: str, buf: bytes | memoryview, *, check_crc: bool = True, allow_tail: bool = False) -> list[Batch]:
    """Every v2 batch header of a segment, validated as the broker's recovery validates them (size, CRC).

    Raises RepairRefused for legacy (v0/v1) entries and for bytes after the last complete batch (unless
    ``allow_tail``), CorruptRecordError for a bad batch: the repairs rewrite batches and must never copy or
    interpret a damaged one.
    """
    out: list[Batch] = []
    end = 0
    for pos, size, magic in walk(buf, file=seg_path):
        if magic < 2:
            raise RepairRefused(
                "legacy (v0/v1) message found; this repair handles magic v2 segments only",
                file=seg_path, position=pos, expected="magic 2", found=f"magic {magic}",
                hint=LEGACY_HINT,
            )
        b = read_entry(buf, pos, magic, file=seg_path)
        assert isinstance(b, Batch)
        if check_crc and not b.is_valid(buf):
            raise CorruptRecordError(
                "batch fails its CRC or size check",
                file=seg_path, position=pos, expected=f"crc {b.crc}", found=f"crc {b.computed_crc(buf)}",
                hint=DAMAGE_HINT,
            )
        out.append(b)
        end = pos + size
    if not allow_tail and end != len(buf):
        raise RepairRefused(
            f"{len(buf) - end} bytes after the last complete batch (a torn write?)",
            file=seg_path, position=end, expected="end of file", found=f"{len(buf) - end} trailing bytes",
            hint=TORN_TAIL_HINT,
        )
    return out


def control_type(batch: Batch, buf: bytes | memoryview) -> int | None:
    """Type of the first control record (ABORT=0, COMMIT=1, ...), None for an empty control batch."""
    for rec in batch.iter_records(buf):
        return parse_control_key(rec.key)[1]
    return None


def txn_item(entry: Entry, buf: bytes | memoryview) -> tuple[Batch, int | None] | None:
    """The (batch, control type) pair the producer-state replay takes (``replay_log``, ``replay_for_repair``) for a
    transactional v2 batch with a producer id; None for any other entry. Raises KafkalogError when a marker's
    control record cannot be read (callers skip it and say so)."""
    if entry.is_legacy or not entry.is_transactional or entry.producer_id < 0:
        return None
    return entry, (control_type(entry, buf) if entry.is_control else None)


# ------------------------------------------------------------------------------------------ producer state
def newest_snapshot(partition_dir: str, at_most: int | None = None,
                    above: int | None = None) -> tuple[int, list[ProducerEntry]] | None:
    """(offset, entries) of the newest readable ``.snapshot`` with ``above < offset <= at_most`` (either bound
    optional), None if there is none: the one the broker's ProducerStateManager loads (compact, transactions)."""
    found = []
    for name in os.listdir(partition_dir):
        m = SEGMENT_NAME.match(name)
        if m and m.group(2) == "snapshot":
            off = int(m.group(1))
            if (at_most is None or off <= at_most) and (above is None or off > above):
                found.append(off)
    for off in sorted(found, reverse=True):
        path = os.path.join(partition_dir, seg_name(off, "snapshot"))
        try:
            with open(path, "rb") as f:
                return off, parse_producer_snapshot(f.read(), path).entries
        except (KafkalogError, OSError):
            continue  # the broker deletes a corrupt snapshot and tries the next older one
    return None


# ------------------------------------------------------------------------------------------ transactions
@dataclass
class LogTxn:
    """A transaction proven by the log: data batches from ``first_offset`` closed by a marker at ``marker_offset``."""

    producer_id: int
    first_offset: int
    marker_offset: int
    aborted: bool
    records: int = -1  # records in the transaction's data batches (0: only empty batches kept by a cleaner)


@dataclass
class LogFacts:
    """What one full replay of the log establishes (producer map, finished and open transactions)."""

    producers: dict[int, ProducerStateEntry] = field(default_factory=dict)
    txns: list[LogTxn] = field(default_factory=list)
    markers: dict[int, tuple[int, int | None]] = field(default_factory=dict)  # marker offset -> (pid, type)
    open_txns: dict[int, int] = field(default_factory=dict)  # pid -> first offset
    log_end_offset: int = 0


def replay_log(items: Iterable[tuple[Batch, int | None]], log_end_offset: int) -> LogFacts:
    """Replay (batch, control type) pairs from the log start: producer map, finished and open transactions."""
    facts = LogFacts(log_end_offset=log_end_offset)
    txn_records: dict[int, int] = {}  # pid -> records seen in its open transaction
    for b, ctype in items:
        if b.is_control and b.producer_id >= 0:
            facts.markers[b.base_offset] = (b.producer_id, ctype)
            e = facts.producers.get(b.producer_id)
            if e is not None and e.current_txn_first_offset >= 0 and ctype in (ABORT, COMMIT):
                facts.txns.append(LogTxn(b.producer_id, e.current_txn_first_offset, b.base_offset, ctype == ABORT,
                                         txn_records.pop(b.producer_id, 0)))
        elif b.is_transactional and b.producer_id >= 0:
            txn_records[b.producer_id] = txn_records.get(b.producer_id, 0) + max(b.records_count, 0)
        replay_for_repair(facts.producers, b, ctype)
    facts.open_txns = {p.producer_id: p.current_txn_first_offset for p in facts.producers.values()
                       if p.current_txn_first_offset >= 0}
    return facts


def read_txn_index(path: str) -> list[AbortedTxn]:
    """Entries of a ``.txnindex``; refuses what the broker would choke on (errata E8)."""
    if not os.path.isfile(path):
        return []
    with open(path, "rb") as f:
        data = f.read()
    if len(data) % 34:
        raise RepairRefused(
            ".txnindex has a trailing partial entry", file=path, position=len(data) - len(data) % 34,
            expected="a multiple of 34 bytes", found=f"{len(data)} bytes",
        )
    entries = parse_txn_index(data)
    for i, e in enumerate(entries):
        if e.kafka_version > 0:  # the first byte, as Kafka's TransactionIndex iterator checks it
            raise RepairRefused(".txnindex entry has an unsupported version", file=path, position=i * 34,
                                expected="version 0 (the entry's first byte)", found=str(e.kafka_version))
    return entries


def collect_aborted(segments: list[Segment], start: int, upper: int, fetch: int | None = None) -> list[AbortedTxn]:
    """LocalLog.collectAbortedTransactions(start, upper): scan ``.txnindex`` files from the segment containing
    ``start`` onwards; keep entries with lastOffset >= ``fetch`` (default ``start``) and firstOffset < upper; stop at
    the first entry whose lastStableOffset >= upper (errata E1: an overstated LSO hides later entries, exactly as in
    the broker). The cleaner's searches go through UnifiedLog.collectAbortedTransactions, whose ``fetch`` is the log
    start offset whatever the segment searched (UnifiedLog.scala:1248-1250, LocalLog.scala:445-451)."""
    if fetch is None:
        fetch = start
    out: list[AbortedTxn] = []
    first = 0
    for i, s in enumerate(segments):
        if s.base <= start:
            first = i
    for s in segments[first:]:
        for e in read_txn_index(s.path("txnindex")):
            if e.last_offset >= fetch and e.first_offset < upper:
                out.append(e)
            if e.last_stable_offset >= upper:
                return out
    return out


def iter_segment_batches(segments: list[Segment]) -> Iterator[tuple[Segment, MappedFile, list[Batch]]]:
    """Map each segment in turn (closing the previous one) and hand out its validated batches."""
    for s in segments:
        with MappedFile(s.path("log")) as mf:
            yield s, mf, read_batches(s.path("log"), mf.buf)
