"""The records ``kafkalog replay`` reads: from an export (NDJSON, Parquet) or from partition directories.

Why a module of its own: ``replay`` takes any input the rescue path produces (``kafkalog export``'s NDJSON and
Parquet, whose fields are fixed on the export command's docs page, or a partition directory / ``-delete`` copy / log dir read with
kafkalog's own engine, like ``dump``) and needs one stream of records per source partition, in offset order, each
with its transaction outcome, plus a located finding for everything it could not read. Nothing here prints or
talks to a cluster.

Partition directories are read in two passes per partition: the first walks every segment with verify-crc's walk
(``storage/segment_check.map_segment``: intact batches and the corrupt regions between them) and replays the
transactional batches with the repairs' producer-state replay (``broker/repair_view.replay_log``, the code
``compact`` and ``explain`` use), so each transaction is known as committed, aborted or still open (no marker in
the log) from the log's own markers; the second yields the records of the intact batches. A read_committed
consumer learns the aborted transactions from the ``.txnindex`` (``LocalLog.collectAbortedTransactions``), which
is built from the same markers; the markers are the log's own record of the outcome (a ``.txnindex`` can be
missing or short, spec errata E1), so they decide here.
"""

from __future__ import annotations

import base64
import binascii
import json
import mmap
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kafkalog_cli.errors import KafkalogError, UnreadableFileError
from kafkalog_cli.storage.verify_model import ERROR, Problem

#: what kafkalog export names the timestamp types (kcat's words) -> ours
TSTYPES = {"create": "create", "logappend": "logappend", "none": "none",
           "CreateTime": "create", "LogAppendTime": "logappend", "NoTimestampType": "none"}


@dataclass(slots=True)
class SourceRecord:
    """One record to replay. ``txn``: "committed" | "aborted" | "open" | None (not transactional)."""

    topic: str
    partition: int
    offset: int
    timestamp: int  # ms, -1 when none
    tstype: str  # "create" | "logappend" | "none"
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    txn: str | None = None
    control: bool = False


#: "no offset read yet" for the compiled walks (Python passes None)
INT64_MIN = -(1 << 63)
#: an export's records are grouped into batches of at most this many (one outcome, one source partition each)
CHUNK = 1000

#: what the produce loop hands to confluent-kafka's produce() per record: (offset, timestamp (0: the client's now),
#: key, value, headers (the offset header last) or None)
Item = tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]] | None]


def python_items(recs: list[SourceRecord], after: int | None, header: str | None, prefix: bytes) -> list[Item]:
    """The reference of ``_accel.replay_items``: the records whose offset is above the running maximum (``after``,
    then each record taken) as produce() tuples; the offset header ``(header, prefix + offset)`` appended last."""
    out: list[Item] = []
    last = after
    for r in recs:
        if last is not None and r.offset <= last:
            continue
        last = r.offset
        hs = r.headers
        if header:
            hs = [*hs, (header, prefix + str(r.offset).encode())]
        ts = r.timestamp if r.timestamp > 0 and r.tstype != "none" else 0
        out.append((r.offset, ts, r.key, r.value, hs or None))
    return out


def python_count(recs: list[SourceRecord], after: int | None) -> tuple[int, int, int]:
    """The reference of ``_accel.replay_count``: (taken, first, last) of the records ``python_items`` takes."""
    taken, first, last = 0, -1, after
    for r in recs:
        if last is not None and r.offset <= last:
            continue
        if not taken:
            first = r.offset
        last = r.offset
        taken += 1
    return taken, first, (last if taken and last is not None else -1)


class SourceBatch:
    """Records of one source partition with one outcome (``txn``, ``control``, ``tstype``): an intact batch of a
    partition directory (decoded on demand, by the compiled walk where it can: ``count`` and ``items`` create no
    Python object per record there), or a run of an export's records."""

    __slots__ = ("topic", "partition", "txn", "control", "tstype", "_recs", "_entry", "_buf", "_path", "_src",
                 "_decoded", "floor")

    def __init__(self, topic: str, partition: int, txn: str | None, control: bool, tstype: str, *,
                 recs: list[SourceRecord] | None = None, entry: Any = None, buf: Any = None, path: str = "",
                 src: Source | None = None) -> None:
        self.topic, self.partition, self.txn, self.control, self.tstype = topic, partition, txn, control, tstype
        self._recs, self._entry, self._buf, self._path, self._src = recs, entry, buf, path, src
        self._decoded = recs is not None
        self.floor: int | None = None  # the log start offset inside this batch: its records below are left out

    def records(self) -> list[SourceRecord] | None:
        """The records (the reference decode); None when they do not decode (a ``bad-record`` finding, once)."""
        if self._decoded:
            return self._recs
        self._decoded = True
        e, buf, path = self._entry, self._buf, self._path
        try:
            recs = list(e.iter_records(buf))
        except KafkalogError as exc:
            exc.located(path)
            if self._src is not None:
                self._src.findings.append(Problem(path, e.position, e.position + e.size, "bad-record",
                                                  f"batch at offset {e.base_offset}: {exc.message}; its records are "
                                                  "not replayed", ERROR, offset=e.base_offset))
            return None
        topic, partition, tstype, txn, control = self.topic, self.partition, self.tstype, self.txn, self.control
        self._recs = [SourceRecord(topic, partition, r.offset, r.timestamp, tstype,
                                   None if r.key is None else bytes(r.key),
                                   None if r.value is None else bytes(r.value),
                                   [(bytes(k).decode("utf-8", "replace"), None if v is None else bytes(v))
                                    for k, v in r.headers],
                                   txn, control) for r in recs]
        return self._recs

    def _compiled(self) -> tuple[Any, Any, int, int] | None:
        """(module, records buffer, start, end) for the compiled walks, None where they do not apply."""
        if self._decoded or self._entry is None:
            return None
        from kafkalog_cli.storage import accel

        mod = accel.module()
        e = self._entry
        if mod is None or not hasattr(mod, "replay_items") or e.is_legacy or e.records_count < 0 or e.streams_payload:
            return None
        try:
            data, start = e.payload(self._buf)
        except KafkalogError:
            return None  # the reference raises it again and words the finding
        end = e.position + e.size if data is self._buf else len(data)
        return mod, data, start, end

    def count(self, after: int | None) -> tuple[int, int, int, int] | None:
        """(records, taken, first, last): the batch's records, those above ``after`` (the running maximum, as
        ``python_count``) and their first and last offsets; None when the records do not decode (a finding). A
        batch holding the log start offset (``floor``): its records below it are neither taken nor in ``records``
        (they are counted on the source, ``below_log_start``)."""
        floor = self.floor
        if floor is not None and (after is None or after < floor - 1):
            full = self._count(after)
            cut = self._count(floor - 1)
            if full is None or cut is None:
                return None
            below = full[1] - cut[1]
            if self._src is not None:
                self._src.below_log_start += below
            return (cut[0] - below, *cut[1:])
        return self._count(after)

    def _count(self, after: int | None) -> tuple[int, int, int, int] | None:
        c = self._compiled()
        if c is not None and after != INT64_MIN:
            mod, data, start, end = c
            got = mod.replay_count(data, start, end, self._entry.records_count, self._entry.base_offset,
                                   INT64_MIN if after is None else after)
            if got is not None:
                return (self._entry.records_count, *got)
        recs = self.records()
        if recs is None:
            return None
        return (len(recs), *python_count(recs, after))

    def items(self, after: int | None, header: str | None) -> list[Item] | None:
        """The produce() tuples of the records above ``after`` (``python_items``; ``_accel.replay_items`` where it
        applies); None when the records do not decode (a finding)."""
        prefix = f"{self.topic}-{self.partition}@".encode() if header else b""
        if self.floor is not None and (after is None or after < self.floor - 1):
            after = self.floor - 1
        c = self._compiled()
        if c is not None and after != INT64_MIN and self.tstype != "none":
            mod, data, start, end = c
            e = self._entry
            got = mod.replay_items(data, start, end, e.records_count, e.base_offset, e.base_timestamp,
                                   e.max_timestamp, e.timestamp_type == 1, INT64_MIN if after is None else after,
                                   header or None, prefix)
            if got is not None:
                return got
        recs = self.records()
        if recs is None:
            return None
        return python_items(recs, after, header, prefix)


@dataclass
class Source:
    """One input: a partition directory, an NDJSON file or a Parquet file/dataset. ``batches()`` and ``records()``
    may be called more than once (the plan and the replay each read the input); findings are collected on each
    call afresh."""

    path: str
    kind: str  # "partition-dir" | "segment" | "ndjson" | "parquet"
    topic: str | None = None  # known before reading for a partition directory
    partition: int | None = None
    findings: list[Problem] = field(default_factory=list)
    _reader: Callable[[Source], Iterator[SourceRecord]] | None = None
    keep_below_log_start: bool = False  # --below-log-start
    log_start: int | None = None  # a live partition directory's log start offset (its log dir's checkpoint)
    below_log_start: int = 0  # records below it left out by the last walk

    def batches(self) -> Iterator[SourceBatch]:
        """The input's records as batches, in input order (a partition directory's intact batches; an export's
        records in runs of one source partition and outcome)."""
        self.findings = []
        self.below_log_start = 0
        if self.kind in ("partition-dir", "segment"):
            yield from _partition_batches(self)
            return
        assert self._reader is not None
        run: list[SourceRecord] = []
        for rec in self._reader(self):
            if run and (len(run) >= CHUNK or rec.topic != run[0].topic or rec.partition != run[0].partition
                        or rec.txn != run[0].txn or rec.control != run[0].control):
                r0 = run[0]
                yield SourceBatch(r0.topic, r0.partition, r0.txn, r0.control, r0.tstype, recs=run)
                run = []
            run.append(rec)
        if run:
            r0 = run[0]
            yield SourceBatch(r0.topic, r0.partition, r0.txn, r0.control, r0.tstype, recs=run)

    def records(self) -> Iterator[SourceRecord]:
        """Every record of the input (the reference path: each decoded in Python)."""
        for b in self.batches():
            recs = b.records()
            if recs is not None:
                yield from recs


# ------------------------------------------------------------------------------------------ input resolution
def _is_parquet_file(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PAR1"
    except OSError:
        return False


def _ndjson_files(d: str) -> list[str]:
    return sorted(os.path.join(d, n) for n in os.listdir(d)
                  if n.endswith((".ndjson", ".jsonl")) and os.path.isfile(os.path.join(d, n)))


def _has_parquet(d: str) -> bool:
    for _root, _dirs, files in os.walk(d):
        if any(n.endswith((".parquet", ".pq")) for n in files):
            return True
    return False


def resolve(args: list[str]) -> tuple[list[Source], list[str]]:
    """EXPORT arguments -> sources in argument order, and notes. A missing path raises UnreadableFileError.

    A file is NDJSON or Parquet (by its first bytes: ``PAR1``); a ``.log`` file is one segment of the partition its
    directory names; a directory is an NDJSON export dir (``*.ndjson`` files), a Parquet dataset (``*.parquet``
    files below it), a partition directory (``-delete``/``-future``/``-stray`` copies too) or a log dir / folder of
    log dirs (its live partitions; internal topics, whose names start with ``__``, are left out: ``__consumer_offsets``
    is read for the consumer groups instead)."""
    from kafkalog_cli.storage import paths
    from kafkalog_cli.storage.partition_name import parse_topic_partition_name

    out: list[Source] = []
    notes: list[str] = []
    for raw in args:
        path = os.path.abspath(raw)
        if not os.path.exists(path):
            raise paths.missing(raw)
        if os.path.isfile(path):
            if path.endswith(".log") and os.path.basename(path)[:20].isdigit():
                tp = parse_topic_partition_name(os.path.basename(os.path.dirname(path)))
                out.append(Source(path, "segment", tp.topic if tp else None, tp.partition if tp else None))
            elif path.endswith((".parquet", ".pq")) or _is_parquet_file(path):
                out.append(Source(path, "parquet", _reader=_read_parquet))
            else:
                out.append(Source(path, "ndjson", _reader=_read_ndjson))
            continue
        try:
            nd = _ndjson_files(path)
        except OSError as exc:
            from kafkalog_cli.errors import cannot_list

            raise cannot_list(exc, path) from None
        if nd:
            out += [Source(f, "ndjson", _reader=_read_ndjson) for f in nd]
            continue
        if not paths.holds_segments(path) and _has_parquet(path):
            out.append(Source(path, "parquet", _reader=_read_parquet))
            continue
        pairs, pnotes = paths.log_dir_partitions([raw])
        notes += pnotes
        for pdir, _log_dir in pairs:
            tp = parse_topic_partition_name(os.path.basename(pdir))
            topic = tp.topic if tp else os.path.basename(pdir)
            if topic.startswith("__") and pdir != path:
                continue  # an internal topic of a log dir given whole
            out.append(Source(pdir, "partition-dir", topic, tp.partition if tp else -1))
    return out, notes


# ------------------------------------------------------------------------------------------ partition dirs
def _log_start(src: Source) -> int | None:
    """A live partition directory's log start offset (its log dir's ``log-start-offset-checkpoint``: DeleteRecords,
    or retention that advanced it before it deleted a segment); None for a suffixed copy (``-delete``, ``-stray``:
    the checkpoint's entry of that name is another log's) or when unknown."""
    from kafkalog_cli.broker.checkpoints import LOG_START_FILE, read_offset_checkpoint

    pdir = src.path if src.kind == "partition-dir" else os.path.dirname(src.path)
    if src.topic is None or src.partition is None or src.partition < 0 \
            or os.path.basename(pdir) != f"{src.topic}-{src.partition}":
        return None
    off, _why = read_offset_checkpoint(os.path.dirname(pdir), LOG_START_FILE, (src.topic, src.partition))
    return off if off is not None and off > 0 else None


def _later_segments(path: str) -> list[str]:
    """The segments after ``path`` in its directory (a lone segment given by name: the markers of its open
    transactions may be in them, as export reads them), [] when the file is not a segment of a directory."""
    from kafkalog_cli.storage import layout

    name = os.path.basename(path)
    if not layout.is_segment_name(name):
        return []
    base = int(name[:20])
    try:
        return [p for b, p in layout.segment_logs(os.path.dirname(path)) if b > base]
    except (KafkalogError, OSError):
        return []


def _txn_outcomes(segments: list[str], src: Source,
                  markers_only: list[str] | None = None) -> dict[int, list[tuple[int, int, bool]]]:
    """pid -> [(first offset, marker offset, aborted)] of the transactions the partition's markers close, from its
    intact batches (``repair_view.replay_log`` over them, in offset order); the findings of the walk go to ``src``.
    A transactional batch in none of them is in a transaction still open (no marker). ``markers_only``: later
    segments read for their markers alone (their findings are not the source's)."""
    from kafkalog_cli.broker import repair_view as rv
    from kafkalog_cli.format.batch import Batch
    from kafkalog_cli.storage.segment import MappedFile, read_entry
    from kafkalog_cli.storage.segment_check import map_segment

    items: list[tuple[Batch, int | None]] = []
    for path in [*segments, *(markers_only or [])]:
        report, smap = map_segment(path)
        if path in segments:
            for p in report.problems:
                src.findings.append(p)
        if not smap.entries:
            continue
        with MappedFile(path) as mf:
            behind = _Behind(mf)
            for pos, _size, _base, _last in smap.entries:
                behind.upto(pos)
                try:
                    item = rv.txn_item(read_entry(mf.buf, pos, mf.buf[pos + 16], file=path), mf.buf)
                except KafkalogError:
                    continue  # an unreadable marker closes nothing; its batch is a finding of the second pass
                if item is not None:
                    items.append(item)
    facts = rv.replay_log(items, 0)
    closed: dict[int, list[tuple[int, int, bool]]] = {}
    for t in facts.txns:
        closed.setdefault(t.producer_id, []).append((t.first_offset, t.marker_offset, t.aborted))
    return closed


RELEASE_STEP = 32 << 20  # the mapped pages behind each walk are given back every this many bytes


class _Behind:
    """Gives the mapped pages of a segment behind a walk back to the kernel (``MappedFile.release_pages``, as
    export's walk does): a replay of a 1 GiB segment was 1.1 GiB resident, every page it had read still mapped
    (bench/export_scale_bench.py). Safe whatever still refers to the bytes: a read-only file mapping re-reads a
    released page from the page cache when it is touched again."""

    def __init__(self, mf: Any) -> None:
        self.mf = mf
        self.done = 0

    def upto(self, pos: int) -> None:
        if pos - self.done >= RELEASE_STEP:
            end = pos - pos % mmap.PAGESIZE
            self.mf.release_pages(self.done, end - self.done)
            self.done = end


def _outcome(pid: int, offset: int, closed: dict[int, list[tuple[int, int, bool]]]) -> str:
    for first, marker, aborted in closed.get(pid, ()):
        if first <= offset < marker:
            return "aborted" if aborted else "committed"
    return "open"


def _partition_batches(src: Source) -> Iterator[SourceBatch]:
    from kafkalog_cli.format.batch import LOG_APPEND_TIME, NO_TIMESTAMP_TYPE
    from kafkalog_cli.storage.layout import segment_logs
    from kafkalog_cli.storage.segment import MappedFile, read_entry
    from kafkalog_cli.storage.segment_check import map_segment

    later: list[str] = []
    if src.kind == "segment":
        segments = [src.path]
        later = _later_segments(src.path)
    else:
        segments = [p for _b, p in segment_logs(src.path)]
    closed = _txn_outcomes(segments, src, later)
    topic = src.topic or "?"
    partition = src.partition if src.partition is not None else -1
    src.log_start = _log_start(src)
    floor = None if src.keep_below_log_start else src.log_start
    tsnames = {LOG_APPEND_TIME: "logappend", NO_TIMESTAMP_TYPE: "none"}
    for path in segments:
        _report, smap = map_segment(path)  # the same walk again: findings were taken in the first pass
        if not smap.entries:
            continue
        with MappedFile(path) as mf:
            buf = mf.buf
            behind = _Behind(mf)
            for pos, _size, _base, _last in smap.entries:
                behind.upto(pos)
                e = read_entry(buf, pos, buf[pos + 16], file=path)
                if floor is not None and e.last_offset < floor:
                    src.below_log_start += 1 if e.is_legacy else max(e.records_count, 0)
                    continue
                control = e.is_control
                txn = None
                if e.is_transactional and not control and not e.is_legacy and e.producer_id >= 0:
                    txn = _outcome(e.producer_id, e.base_offset, closed)
                sb = SourceBatch(topic, partition, txn, control, tsnames.get(e.timestamp_type, "create"), entry=e,
                                 buf=buf, path=path, src=src)
                if floor is not None and (e.is_legacy or e.base_offset < floor):
                    sb.floor = floor
                yield sb


# ------------------------------------------------------------------------------------------ NDJSON
def _decode_bytes(v: object, encoding: object, what: str) -> bytes | None:
    if v is None:
        return None
    if not isinstance(v, str):
        raise ValueError(f"{what} is {type(v).__name__}, not a string or null")
    if encoding == "base64":
        try:
            return base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"{what} is marked base64 but is not valid base64") from None
    if encoding not in (None, "utf8"):
        raise ValueError(f"{what}: unknown encoding {encoding!r} (utf8 or base64)")
    return v.encode("utf-8")


def _int(d: dict, name: str, default: int | None = None) -> int:
    v = d.get(name, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"field {name!r} is {v!r}, not an integer")
    return v


def record_from_json(d: object) -> SourceRecord:
    """One NDJSON object of ``kafkalog export`` (its NDJSON fields) as a record; ValueError names what is wrong."""
    if not isinstance(d, dict):
        raise ValueError("a line is not a JSON object")
    topic = d.get("topic")
    if not isinstance(topic, str):
        raise ValueError("field 'topic' is missing or not a string")
    headers_raw = d.get("headers") or []
    if not isinstance(headers_raw, list) or len(headers_raw) % 2:
        raise ValueError("field 'headers' is not a flat list of name, value pairs")
    encs = d.get("header_encodings") or []
    pairs = len(headers_raw) // 2
    if not isinstance(encs, list) or (encs and len(encs) not in (pairs, 2 * pairs)):
        raise ValueError("field 'header_encodings' is not parallel to the header pairs")
    headers: list[tuple[str, bytes | None]] = []
    for i in range(pairs):
        name, value = headers_raw[2 * i], headers_raw[2 * i + 1]
        if len(encs) == 2 * pairs:  # one encoding per list element (name, value)
            name_enc, value_enc = encs[2 * i], encs[2 * i + 1]
        else:
            name_enc, value_enc = "utf8", (encs[i] if encs else "utf8")
        nb = _decode_bytes(name, name_enc, f"header {i} name")
        if nb is None:
            raise ValueError(f"header {i} has a null name")
        headers.append((nb.decode("utf-8", "replace"), _decode_bytes(value, value_enc, f"header {i} value")))
    tstype = TSTYPES.get(str(d.get("tstype", "create")))
    if tstype is None:
        raise ValueError(f"field 'tstype' is {d.get('tstype')!r} (create, logappend or none)")
    txn = d.get("txn")
    if txn not in (None, "committed", "aborted", "open"):
        raise ValueError(f"field 'txn' is {txn!r} (committed, aborted, open or null)")
    return SourceRecord(topic, _int(d, "partition", -1), _int(d, "offset"), _int(d, "ts", -1), tstype,
                        _decode_bytes(d.get("key"), d.get("key_encoding"), "key"),
                        _decode_bytes(d.get("payload"), d.get("payload_encoding"), "payload"),
                        headers, txn, d.get("control") is not None)


def _read_ndjson(src: Source) -> Iterator[SourceRecord]:
    try:
        f = open(src.path, "rb")  # noqa: SIM115 (closed below; a generator)
    except OSError as exc:
        from kafkalog_cli.errors import unreadable

        raise unreadable(exc, src.path) from None
    with f:
        pos = 0
        lineno = 0
        for line in f:
            lineno += 1
            start, pos = pos, pos + len(line)
            if not line.strip():
                continue
            try:
                yield record_from_json(json.loads(line))
            except (ValueError, UnicodeDecodeError) as exc:
                src.findings.append(Problem(src.path, start, pos, "bad-line",
                                            f"line {lineno}: {exc}; the line is not replayed", ERROR))


# ------------------------------------------------------------------------------------------ Parquet
_PARQUET_TSTYPE = {"CreateTime": "create", "LogAppendTime": "logappend", "NoTimestampType": "none"}


def _read_parquet(src: Source) -> Iterator[SourceRecord]:
    import pyarrow as pa
    import pyarrow.dataset as ds

    try:
        dataset = ds.dataset(src.path, format="parquet")
    except (OSError, pa.ArrowInvalid) as exc:
        raise UnreadableFileError(f"not a readable Parquet file or dataset: {exc}", file=src.path) from None
    names = set(dataset.schema.names)
    need = {"topic", "partition", "offset"}
    if not need <= names:
        raise UnreadableFileError("Parquet input lacks the export columns", file=src.path,
                                  expected="topic, partition, offset, timestamp, key, value, header_keys, ...",
                                  found=", ".join(sorted(names)) or "no columns")
    wanted = [c for c in ("topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value",
                          "header_keys", "header_values", "txn", "control_type") if c in names]
    for batch in dataset.to_batches(columns=wanted):
        cols = {n: batch.column(n) for n in wanted}
        if "timestamp" in cols:  # timestamp[ms] -> int ms
            cols["timestamp"] = cols["timestamp"].cast(pa.int64())
        py = {n: c.to_pylist() for n, c in cols.items()}
        n = batch.num_rows
        for i in range(n):
            ts = py["timestamp"][i] if "timestamp" in py else None
            hk = py["header_keys"][i] if "header_keys" in py else None
            hv = py["header_values"][i] if "header_values" in py else None
            hk = hk or []
            hv = hv if hv is not None else [None] * len(hk)
            yield SourceRecord(
                py["topic"][i], py["partition"][i], py["offset"][i], -1 if ts is None else ts,
                _PARQUET_TSTYPE.get(py["timestamp_type"][i] if "timestamp_type" in py else "CreateTime", "create"),
                py["key"][i] if "key" in py else None, py["value"][i] if "value" in py else None,
                list(zip(hk, hv)), py["txn"][i] if "txn" in py else None,
                bool(py["control_type"][i]) if "control_type" in py else False)
