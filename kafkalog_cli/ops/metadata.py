"""``kafkalog metadata``: the KRaft cluster image at any point of ``__cluster_metadata``, diffs and histories.

The point is an offset (every record at or below it) or a time (every record whose timestamp is at or below it).
The image is loaded as a KRaft node loads it (``KafkaRaftClient`` / ``MetadataLoader``): the newest snapshot
(``<endOffset>-<epoch>.checkpoint``, holding the records below ``endOffset``) at or below the point, then the log
records from the snapshot's end offset up to the point (``metadata_image.Replayer`` applies them). The records are
streamed (one batch at a time), so memory is the image's.

What can go wrong is reported, never raised mid-way: a batch whose CRC does not match, a torn tail, a record that
does not decode (``Finding``), a record Kafka's delta refuses (``ReplayProblem``), a gap between the snapshot and
the log or a log that starts after offset 0 with no snapshot to cover the records before it (the image is partial).
"""

from __future__ import annotations

import gc
import itertools
import os
import re
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

from kafkalog_cli.errors import KafkalogError, UnreadableFileError
from kafkalog_cli.format import control
from kafkalog_cli.format.batch import HEADER_SIZE, LOG_APPEND_TIME, Batch
from kafkalog_cli.format.varint import read_varint, read_varlong
from kafkalog_cli.internal_topics import schema as sc
from kafkalog_cli.internal_topics.cluster_metadata import (
    BY_KEY,
    MetadataParseError,
    enum_name,
    read_frame,
    read_frame_28,
)
from kafkalog_cli.internal_topics.metadata_fast import CompiledReplay, FastReader, compiled_replay
from kafkalog_cli.internal_topics.metadata_image import Image, Partition, Replayer, ReplayProblem, Topic, clone
from kafkalog_cli.internal_topics.version_hint import METADATA_VERSIONS
from kafkalog_cli.storage.layout import segment_logs
from kafkalog_cli.storage.segment import MappedFile, entries

METADATA_PARTITION = "__cluster_metadata-0"
_RELEASE_EVERY = 8 << 20
_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")

def metadata_version_name(level: int | None) -> str:
    if level is None:
        return "unknown (no metadata.version record)"
    return f"{METADATA_VERSIONS.get(level, 'unknown')} (level {level})"


@dataclass(frozen=True)
class Point:
    """Where to stop: every record with offset <= ``offset``, or with timestamp <= ``time_ms``; neither = the end."""

    offset: int | None = None
    time_ms: int | None = None

    def label(self) -> str:
        if self.offset is not None:
            return f"offset {self.offset}"
        if self.time_ms is not None:
            return f"time {self.time_ms}"
        return "end of log"


END = Point()


@dataclass(frozen=True)
class Finding:
    """Bytes of the metadata log that could not be used: file, byte position, what was expected and found."""

    file: str
    position: int | None
    message: str
    expected: str | None = None
    found: str | None = None
    hint: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "position": self.position, "message": self.message, "expected": self.expected,
                "found": self.found, "hint": self.hint}


@dataclass(frozen=True)
class Snapshot:
    path: str
    end_offset: int  # the snapshot holds the records below this offset
    epoch: int


@dataclass
class Loaded:
    """An image and how it was obtained."""

    image: Image
    point: Point
    directory: str
    snapshot: Snapshot | None
    records: int = 0  # log records replayed after the snapshot
    snapshot_records: int = 0
    log_start: int | None = None
    log_end: int | None = None  # next offset after the last readable log record
    findings: list[Finding] = field(default_factory=list)
    problems: list[ReplayProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    open_transaction: int | None = None
    quorum_state: dict[str, Any] | None = None  # the node's quorum-state file (leader, epoch, voters), if readable

    @property
    def clean(self) -> bool:
        return not self.findings and not self.problems


class Raw(NamedTuple):
    """One decoded record of a metadata log or snapshot."""

    offset: int
    time_ms: int
    control: str | None  # the control record's name (KRaftVersion, KRaftVoters, LeaderChange, ...) or None
    rtype: str  # MetadataRecordType name, or the control name
    data: dict[str, Any]


# ------------------------------------------------------------------------------------------------- locating
def metadata_dir(path: str) -> str:
    """The ``__cluster_metadata-0`` directory of PATH: the directory itself, or the log dir (metadata.log.dir) that
    holds it. Anything else is an UnreadableFileError (exit 2)."""
    if not os.path.exists(path):
        raise UnreadableFileError("no such file or directory", file=path)
    if not os.path.isdir(path):
        raise UnreadableFileError("not a directory", file=path, expected="a log dir or its __cluster_metadata-0",
                                  found="a file")
    if os.path.basename(os.path.normpath(path)).startswith("__cluster_metadata-"):
        return path
    sub = os.path.join(path, METADATA_PARTITION)
    if os.path.isdir(sub):
        return sub
    raise UnreadableFileError("no __cluster_metadata-0 here", file=path,
                              expected="a KRaft metadata log dir (metadata.log.dir) or its __cluster_metadata-0",
                              found="neither", hint="pass the controller's (or combined node's) metadata.log.dir")


def find_metadata_dir(paths: list[str]) -> str | None:
    """The first of PATHS that is or holds ``__cluster_metadata-0`` (inventory's default), else None."""
    for p in paths:
        try:
            return metadata_dir(p)
        except UnreadableFileError:
            continue
    return None


def quorum_state(directory: str) -> dict[str, Any] | None:
    """The ``quorum-state`` file a KRaft node keeps beside its metadata log (``FileQuorumStateStore``: JSON with
    leaderId, leaderEpoch, votedId, currentVoters): the node's view of the quorum now, whatever the point."""
    import json

    try:
        with open(os.path.join(directory, "quorum-state"), encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def snapshots(directory: str) -> list[Snapshot]:
    """The ``<endOffset>-<epoch>.checkpoint`` files (Snapshots.java's name rule), oldest first."""
    out = []
    for name in os.listdir(directory):
        m = _SNAPSHOT_NAME.match(name)
        if m:
            out.append(Snapshot(os.path.join(directory, name), int(m.group(1)), int(m.group(2))))
    out.sort(key=lambda s: (s.end_offset, s.epoch))
    return out


# ------------------------------------------------------------------------------------------------- reading
_FAST = FastReader(list(BY_KEY.values()), enum_name)


def _decode_value(value: bytes | None) -> tuple[str, dict[str, Any]]:
    """(MetadataRecordType name, values) of one record value: the fast reader where it covers the record, else the
    generic one (which raises MetadataParseError with Kafka's message)."""
    if value is not None:
        got = _FAST.read(value)
        if got is not None:
            return got
    if value and value[0] == 0:
        msg, ver, values = read_frame_28(value)
    else:
        msg, ver, values = read_frame(value)
    return enum_name(msg), values


def _simple_values(buf: bytes | memoryview, batch: Batch) -> list[tuple[int, int, bytes | None, bytes | None]] | None:
    """(offset, timestamp, value, key = None) of each record of an uncompressed batch whose records have the plain shape a KRaft
    controller writes (attributes 0, a null key, no headers) and whose sizes add up exactly; None otherwise, and
    ``Batch.iter_records`` decodes it (and words any problem). The hot path of a long replay."""
    if batch.codec != 0 or batch.records_count < 0:
        return None
    start = batch.position + HEADER_SIZE
    if batch.position + batch.size > len(buf):
        return None
    data = bytes(buf[start:batch.position + batch.size])  # bytes index faster than a view of the map
    end = len(data)
    base, ts0 = batch.base_offset, batch.base_timestamp
    log_append = batch.timestamp_type == LOG_APPEND_TIME
    out: list[tuple[int, int, bytes | None, bytes | None]] = []
    pos = 0
    try:
        # the four varints inline where they are one byte (nearly always): a call each cost ~15 % of a replay
        for _ in range(batch.records_count):
            b = data[pos]
            size, p = ((b >> 1) ^ -(b & 1), pos + 1) if b < 0x80 else read_varint(data, pos, end)
            rec_end = p + size
            if size <= 0 or rec_end > end or data[p] != 0:
                return None
            b = data[p + 1]
            tsd, p = ((b >> 1) ^ -(b & 1), p + 2) if b < 0x80 else read_varlong(data, p + 1, rec_end)
            b = data[p]
            od, p = ((b >> 1) ^ -(b & 1), p + 1) if b < 0x80 else read_varint(data, p, rec_end)
            if p >= rec_end or data[p] != 1:  # key length -1
                return None
            b = data[p + 1]
            vlen, p = ((b >> 1) ^ -(b & 1), p + 2) if b < 0x80 else read_varint(data, p + 1, rec_end)
            if vlen < 0 or p + vlen + 1 != rec_end or data[p + vlen] != 0:  # then zero headers
                return None
            out.append((base + od, batch.max_timestamp if log_append else ts0 + tsd, data[p:p + vlen], None))
            pos = rec_end
    except (KafkalogError, IndexError):
        return None
    return out if pos == end else None


class Applied(NamedTuple):
    """Records the compiled replay (``metadata_fast.CompiledReplay``) applied to the image itself: how many, and the
    offsets of the first and last."""

    records: int
    first: int
    last: int


def read_records(path: str, findings: list[Finding], start: int = 0, stop: Point = END) -> Iterator[Raw]:
    """Every record of one segment or snapshot file with offset >= ``start`` and within ``stop``, in order. Damage
    ends the file (a raft replica truncates there) with a Finding; an undecodable record is a Finding and skipped."""
    return cast(Iterator[Raw], read_items(path, findings, start, stop, None))


def read_items(path: str, findings: list[Finding], start: int = 0, stop: Point = END,
               fast: CompiledReplay | None = None) -> Iterator[Raw | Applied]:
    """``read_records``, where ``fast`` (the compiled replay of the image being built) applies what it takes of each
    plain batch itself (an ``Applied`` in the stream, in order with the ``Raw`` records it left to the caller)."""
    try:
        mf = MappedFile(path)
    except KafkalogError as exc:
        findings.append(Finding(path, exc.position, exc.message, exc.expected, exc.found))
        return
    with mf:
        buf = mf.buf
        mf.advise_sequential()
        released = 0
        try:
            for batch in entries(buf, file=path):
                if batch.position - released >= _RELEASE_EVERY:  # keep the resident map small: memory stays flat
                    cut = batch.position & ~0xFFF
                    mf.release_pages(released, cut - released)
                    released = cut
                if batch.is_legacy:
                    findings.append(Finding(path, batch.position, "a v0/v1 message in the metadata log",
                                            expected="magic 2", found=f"magic {batch.magic}"))
                    return
                if batch.last_offset < start:
                    continue
                if not batch.is_valid(buf):
                    findings.append(Finding(
                        path, batch.position, f"batch at offset {batch.base_offset}: CRC mismatch",
                        expected=f"crc {batch.computed_crc(buf)}", found=f"crc {batch.crc}",
                        hint="the replica truncates its log here and fetches the rest from the quorum leader; "
                             "the image below stops before this batch"))
                    return
                if stop.offset is not None and batch.base_offset > stop.offset:
                    return
                if batch.is_control:
                    items: Iterable[_Item] = ((r.offset, r.timestamp, r.value, r.key) for r in batch.iter_records(buf))
                elif (fast is not None and batch.codec == 0 and batch.records_count > 0
                      and batch.position + batch.size <= len(buf)):
                    if (yield from _fast_batch(fast, buf, batch, path, findings, start, stop)):
                        return
                    continue
                else:
                    simple = _simple_values(buf, batch)
                    items = simple if simple is not None else (
                        (r.offset, r.timestamp, r.value, r.key) for r in batch.iter_records(buf))
                if (yield from _batch_records(items, batch, path, findings, start, stop)):
                    return
        except KafkalogError as exc:
            findings.append(Finding(path, exc.position, exc.message, exc.expected, exc.found,
                                    hint="a torn or damaged tail: the replica truncates here"))
        mf_findings = mf.findings()
        for f in mf_findings:
            findings.append(Finding(path, getattr(f, "start", None), str(f)))


_Item = tuple[int, int, "bytes | None", "bytes | None"]


def _fast_batch(fast: CompiledReplay, buf: Any, batch: Batch, path: str, findings: list[Finding], start: int,
                stop: Point) -> Generator[Raw | Applied, None, bool]:
    """One plain batch through the compiled replay: it applies records until one it does not take, which goes to
    the caller as a ``Raw`` (Python applies it), then it goes on after it. True: the point is reached."""
    pos, end = batch.position + HEADER_SIZE, batch.position + batch.size
    left, done, skip = batch.records_count, 0, False
    simple: list[_Item] | None = None
    log_append = batch.timestamp_type == LOG_APPEND_TIME
    while left:
        got = fast.apply(buf, pos, end, batch.base_offset, batch.base_timestamp, batch.max_timestamp, log_append,
                         left + skip, skip, start, stop.offset, stop.time_ms)  # from pos: the skipped one too
        if got is None:
            break
        pos, n, first, last = got
        if n:
            yield Applied(n, first, last)
            done += n
            left -= n
        if not left:
            return False
        if simple is None:
            simple = _simple_values(buf, batch)  # not None: the records' frames are the ones metadata_apply took
            if simple is None:
                break
        if (yield from _batch_records(simple[done:done + 1], batch, path, findings, start, stop)):
            return True
        done += 1
        left -= 1
        skip = True
    if simple is None:
        simple = _simple_values(buf, batch)
    rest: Iterable[_Item] = simple[done:] if simple is not None else itertools.islice(
        ((r.offset, r.timestamp, r.value, r.key) for r in batch.iter_records(buf)), done, None)
    return (yield from _batch_records(rest, batch, path, findings, start, stop))


def _batch_records(items: Iterable[_Item], batch: Batch, path: str, findings: list[Finding], start: int,
                   stop: Point) -> Generator[Raw, None, bool]:
    """The records of one batch as ``Raw`` values (decoded, control records included); True when the point is
    reached (the caller stops reading)."""
    for off, ts, value, key in items:
        if off < start:
            continue
        if (stop.offset is not None and off > stop.offset) or (stop.time_ms is not None and ts > stop.time_ms):
            return True
        if batch.is_control:
            try:
                _v, ctype = control.parse_control_key(key)
                if ctype not in control.SCHEMAS:
                    continue  # transaction markers never appear here; unknown types are skipped
                name = control.SCHEMAS[ctype][0]
                data = control.decode_kraft_control(ctype, value)
            except KafkalogError as exc:
                findings.append(Finding(path, batch.position, f"control record at offset {off}: {exc.message}"))
                continue
            yield Raw(off, ts, name, name, data)
            continue
        try:
            rtype, data = _decode_value(None if value is None else bytes(value))
        except MetadataParseError as exc:
            findings.append(Finding(path, batch.position, f"record at offset {off}: {exc}",
                                    hint="a broker's metadata loader fails on this record"))
            continue
        yield Raw(off, ts, None, rtype, data)
    return False


def snapshot_header_time(snap: Snapshot) -> int | None:
    """The SnapshotHeader's lastContainedLogTimestamp (the time of the last record the snapshot holds)."""
    for raw in read_records(snap.path, []):
        if raw.control == "SnapshotHeader":
            return int(raw.data.get("lastContainedLogTimestamp", 0))
        break
    return None


def _apply(rep: Replayer, raw: Raw) -> None:
    if raw.control is not None:
        rep.apply_control(raw.control, raw.data, raw.offset, raw.time_ms)
    else:
        rep.apply(raw.rtype, raw.data, raw.offset, raw.time_ms)


def _compiled(rep: Replayer) -> CompiledReplay | None:
    """The compiled replay of ``rep``'s image (None without the accelerator): the records it takes never reach
    ``Replayer.apply``, so it is used only where nothing watches each record (no ``--history`` callback)."""
    return compiled_replay(rep, list(BY_KEY.values()), enum_name)


def load_snapshot(snap: Snapshot, findings: list[Finding] | None = None) -> tuple[Image, int]:
    """The image a snapshot holds (applied to an empty image, as ``MetadataDelta.finishSnapshot`` makes it) and the
    number of metadata records in it."""
    rep = Replayer()
    n = 0
    found: list[Finding] = findings if findings is not None else []
    for raw in read_items(snap.path, found, fast=_compiled(rep)):
        if isinstance(raw, Applied):
            n += raw.records
            continue
        _apply(rep, raw)
        n += raw.control is None
    rep.image.offset = snap.end_offset - 1
    return rep.image, n


def _choose_snapshot(snaps: list[Snapshot], point: Point) -> Snapshot | None:
    best = None
    for s in snaps:
        if point.offset is not None and s.end_offset - 1 > point.offset:
            continue
        if point.time_ms is not None:
            t = snapshot_header_time(s)
            if t is None or t > point.time_ms:
                continue
        best = s
    return best


def log_segments(directory: str) -> list[tuple[int, str]]:
    return segment_logs(directory)


@contextmanager
def _no_gc() -> Iterator[None]:
    """The replay allocates a few objects per record and keeps the image (hundreds of thousands of objects, no
    cycles): the cyclic collector's passes over it would cost more than the replay itself (2x at 100,000
    partitions), so it is paused for the replay and restored after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def load(directory: str, point: Point = END, *, use_snapshots: bool = True,
         on_partition: Callable[[int, int | None, Topic, int, Partition | None], None] | None = None,
         on_record: Callable[[Raw], None] | None = None) -> Loaded:
    """The image at ``point``: the newest usable snapshot, then the log records after it."""
    with _no_gc():
        return _load(directory, point, use_snapshots, on_partition, on_record)


def _load(directory: str, point: Point, use_snapshots: bool,
          on_partition: Callable[[int, int | None, Topic, int, Partition | None], None] | None,
          on_record: Callable[[Raw], None] | None) -> Loaded:
    snaps = snapshots(directory) if use_snapshots else []
    snap = _choose_snapshot(snaps, point)
    findings: list[Finding] = []
    if snap is not None:
        image, n_snap = load_snapshot(snap, findings)
        start = snap.end_offset
    else:
        image, n_snap, start = Image(), 0, 0
    rep = Replayer(image)
    rep.on_partition = on_partition
    loaded = Loaded(image, point, directory, snap, snapshot_records=n_snap, findings=findings,
                    quorum_state=quorum_state(directory))
    segs = log_segments(directory)
    first_offset: int | None = None
    last = start - 1
    fast = _compiled(rep) if on_partition is None and on_record is None else None
    for _base, path in segs:
        for raw in read_items(path, findings, start, point, fast):
            if first_offset is None:
                first_offset = raw.first if isinstance(raw, Applied) else raw.offset
                if first_offset > start:
                    loaded.findings.append(Finding(
                        path, None, f"the log has no records {start}..{first_offset - 1}",
                        expected=f"the log to continue at offset {start}"
                                 + (f" (the end of snapshot {os.path.basename(snap.path)})" if snap else ""),
                        found=f"the first record at offset {first_offset}",
                        hint="the image is partial: records the broker applied are gone (a newer snapshot on "
                             "another controller holds them)"))
            if isinstance(raw, Applied):
                loaded.records += raw.records
                last = raw.last
                continue
            if on_record is not None:
                on_record(raw)
            if raw.control is None:
                rep.apply(raw.rtype, raw.data, raw.offset, raw.time_ms)
                loaded.records += 1
            else:
                rep.apply_control(raw.control, raw.data, raw.offset, raw.time_ms)
            last = raw.offset
    loaded.log_start = segs[0][0] if segs else None
    loaded.log_end = last + 1
    loaded.problems = rep.problems
    if rep.in_transaction:
        loaded.open_transaction = rep._txn_start
        loaded.notes.append(f"a metadata transaction begun at offset {rep._txn_start} is not ended at this point: "
                            "its records are not in the image (MetadataBatchLoader applies them at the "
                            "EndTransactionRecord)")
    if not segs and snap is None:
        loaded.notes.append("no log segments and no snapshot: the image is empty")
    if point.offset is not None and point.offset >= loaded.log_end:
        loaded.notes.append(f"the log ends at offset {loaded.log_end - 1}, below the point {point.offset}")
    return loaded


# ------------------------------------------------------------------------------------------------- diff, history
@dataclass
class Change:
    area: str  # topic, partition, broker, config, feature, ...
    name: str
    kind: str  # added, removed, changed
    before: Any = None
    after: Any = None

    def as_dict(self) -> dict[str, Any]:
        return {"area": self.area, "name": self.name, "kind": self.kind, "before": self.before, "after": self.after}


def _diff_maps(area: str, a: dict[str, Any], b: dict[str, Any], out: list[Change]) -> None:
    for k in sorted(set(a) | set(b), key=str):
        if k not in b:
            out.append(Change(area, str(k), "removed", a[k], None))
        elif k not in a:
            out.append(Change(area, str(k), "added", None, b[k]))
        elif a[k] != b[k]:
            if isinstance(a[k], dict) and isinstance(b[k], dict):
                before = {f: v for f, v in a[k].items() if b[k].get(f) != v}
                after = {f: v for f, v in b[k].items() if a[k].get(f) != v}
                out.append(Change(area, str(k), "changed", before, after))
            else:
                out.append(Change(area, str(k), "changed", a[k], b[k]))


def diff(a: Image, b: Image, *, quorum: bool = True) -> list[Change]:
    """What changed from image ``a`` to image ``b``: topics (by name, with the id: a recreated topic is removed and
    added), partitions, brokers, configs, features, ACLs, tokens, the producer id block, the quorum."""
    sa, sb = a.state(), b.state()
    out: list[Change] = []
    ta, tb = sa["topics"], sb["topics"]
    for name in sorted(set(ta) | set(tb)):
        x, y = ta.get(name), tb.get(name)
        if x is not None and y is not None and x["topic_id"] != y["topic_id"]:
            out.append(Change("topic", name, "recreated", x["topic_id"], y["topic_id"]))
            continue
        if x is None or y is None:
            out.append(Change("topic", name, "added" if x is None else "removed",
                              None if x is None else x["topic_id"], None if y is None else y["topic_id"]))
            continue
        pa = {f"{name}-{p}": v for p, v in x["partitions"].items()}
        pb = {f"{name}-{p}": v for p, v in y["partitions"].items()}
        _diff_maps("partition", pa, pb, out)
    _diff_maps("broker", sa["brokers"], sb["brokers"], out)
    _diff_maps("controller", sa["controllers"], sb["controllers"], out)
    _diff_maps("config", sa["configs"], sb["configs"], out)
    _diff_maps("feature", sa["features"], sb["features"], out)
    _diff_maps("acl", sa["acls"], sb["acls"], out)
    _diff_maps("delegation-token", sa["delegation_tokens"], sb["delegation_tokens"], out)
    _diff_maps("scram", sa["scram_credentials"], sb["scram_credentials"], out)
    _diff_maps("quota", sa["client_quotas"], sb["client_quotas"], out)
    _diff_maps("cluster", {"next_producer_id": sa["next_producer_id"], "zk_migration_state": sa["zk_migration_state"]},
               {"next_producer_id": sb["next_producer_id"], "zk_migration_state": sb["zk_migration_state"]}, out)
    if quorum:  # the quorum's control records (voters, leader) are not metadata records: no snapshot holds them all
        _diff_maps("quorum", a.quorum(), b.quorum(), out)
    return out


def diff_points(directory: str, a: Point, b: Point) -> tuple[Loaded, Loaded, list[Change]]:
    la = load(directory, a)
    lb = load(directory, b)
    return la, lb, diff(la.image, lb.image)


@dataclass
class HistoryEvent:
    offset: int
    time_ms: int | None
    topic: str
    topic_id: str
    partition: int
    state: dict[str, Any] | None  # None: the partition is gone (its topic was removed)
    changed: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {"offset": self.offset, "time_ms": self.time_ms, "topic": self.topic, "topic_id": self.topic_id,
                "partition": self.partition, "state": self.state, "changed": self.changed}


def parse_selector(text: str, known: set[str]) -> tuple[str, int | None]:
    """``TOPIC`` or ``TOPIC-P``: a name that is a topic (in any image seen) is the topic; else the last ``-N`` is
    the partition."""
    if text in known:
        return text, None
    topic, sep, part = text.rpartition("-")
    if sep and topic and part.isdigit():
        return topic, int(part)
    return text, None


def history(directory: str, selector: str, point: Point = END) -> tuple[Loaded, list[HistoryEvent], str, int | None]:
    """The timeline of one topic's (or partition's) leader, ISR, epochs, directories: every change from the oldest
    state on disk (the oldest snapshot, else the log from its start) to ``point``. The oldest snapshot's state is the
    first event of each partition (at the snapshot's last offset)."""
    snaps = snapshots(directory)
    names: set[str] = set()
    events: list[HistoryEvent] = []
    last: dict[tuple[str, int], dict[str, Any] | None] = {}
    want: dict[str, Any] = {"topic": selector, "partition": None}

    def note(offset: int, t: int | None, topic: Topic, pid: int, part: Partition | None) -> None:
        names.add(topic.name)
        if topic.name != want["topic"] or (want["partition"] is not None and pid != want["partition"]):
            return
        state = None if part is None else part.as_dict()
        prev = last.get((topic.topic_id, pid))
        if prev is None or state is None:
            changed = sorted(state) if state else ["removed"]
        else:
            changed = [k for k in state if state[k] != prev.get(k)]
        last[(topic.topic_id, pid)] = state
        events.append(HistoryEvent(offset, t, topic.name, topic.topic_id, pid, state, changed))

    # first pass over names only when the selector might be TOPIC-P: resolve it against the final image's names
    base: Image | None = None
    if snaps and (point.offset is None or snaps[0].end_offset - 1 <= point.offset):
        base, _n = load_snapshot(snaps[0])
    probe = load(directory, point)
    names |= set(probe.image.names)
    if base is not None:
        names |= set(base.names)
    topic, part = parse_selector(selector, names)
    want["topic"], want["partition"] = topic, part
    if base is not None:
        for t in sorted(base.topics.values(), key=lambda t: t.name):
            for pid, p in sorted(t.partitions.items()):
                note(base.offset, base.time_ms, t, pid, p)
        rep_image = clone(base)
        loaded = _replay_from(directory, rep_image, snaps[0], point, note)
    else:
        loaded = load(directory, point, use_snapshots=False, on_partition=note)
    return loaded, events, topic, part


def _replay_from(directory: str, image: Image, snap: Snapshot, point: Point,
                 note: Callable[[int, int | None, Topic, int, Partition | None], None]) -> Loaded:
    rep = Replayer(image)
    rep.on_partition = note
    findings: list[Finding] = []
    loaded = Loaded(image, point, directory, snap, findings=findings)
    last = snap.end_offset - 1
    for _base, path in log_segments(directory):
        for raw in read_records(path, findings, snap.end_offset, point):
            _apply(rep, raw)
            loaded.records += raw.control is None
            last = raw.offset
    loaded.log_end = last + 1
    loaded.problems = rep.problems
    return loaded


def check_snapshots(directory: str) -> list[tuple[Snapshot, list[Change] | None]]:
    """Each snapshot against the log replayed to its end offset (from offset 0 or the previous snapshot): the
    replayed image must equal the snapshot's own content. None where the log does not reach the snapshot."""
    out: list[tuple[Snapshot, list[Change] | None]] = []
    for s in snapshots(directory):
        image, _n = load_snapshot(s)
        replayed = load(directory, Point(offset=s.end_offset - 1), use_snapshots=False)
        if replayed.log_end is None or replayed.log_end < s.end_offset or replayed.findings:
            out.append((s, None))
            continue
        out.append((s, diff(replayed.image, image, quorum=False)))
    return out


def to_json_image(loaded: Loaded) -> dict[str, Any]:
    im = loaded.image
    return {
        "directory": loaded.directory,
        "point": {"offset": loaded.point.offset, "time_ms": loaded.point.time_ms},
        "snapshot": None if loaded.snapshot is None else os.path.basename(loaded.snapshot.path),
        "snapshot_records": loaded.snapshot_records,
        "log_records": loaded.records,
        "last_offset": im.offset,
        "last_time_ms": im.time_ms,
        "metadata_version": im.features.get("metadata.version"),
        "image": im.state(),
        "quorum": im.quorum(),
        "quorum_state_file": loaded.quorum_state,
        "findings": [f.as_dict() for f in loaded.findings],
        "problems": [p.as_dict() for p in loaded.problems],
        "notes": loaded.notes,
    }


def plain(v: Any) -> Any:
    return sc.plain_json(v)
