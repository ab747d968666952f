"""``find-key``: every copy of one record key in the files given, its state, what removes it; ``--prove-erased``.

Why: "where is every copy of customer 42's data" (an erasure request, a record to quarantine) has no answer from a
consumer: it reads live leaders only. The bytes of a key can be in every replica's live segments, in the loader's
leftovers (``.deleted``, ``.cleaned``, ``.swap``), in ``-delete``/``-stray``/``-future`` directories, in tiered
storage objects, in kafkalog's own repair backups and in any other copy of a segment (salvage or export output).

How it searches (nothing here prints):

* Files: every file under each PATH (``os.walk``). A file is classified by the one set of name rules
  (``storage/layout.py``, ``storage/partition_name.py``, ``storage/tiered.py``): a broker segment, a leftover, a
  remote segment, a segment-like ``*.log`` / KRaft ``.checkpoint`` file elsewhere (read as a log), an index (no
  record bytes: skipped), or any other file (searched as raw bytes, plus the key's base64 and hex spellings, which
  is how JSON exports write binary keys).
* Pruning: the topic's partition count is the highest partition number seen + 1 (or ``--partitions``); a file of
  a known topic-partition is read only when the producer's partitioner (Java's murmur2 by default,
  ``format/partitioners.py``) maps the key there, unless ``--any-partition``. Files whose partition is unknown (a
  backup, an export) are always read. ``--since`` skips live segments whose largest timestamp (the time index's
  last entry, as the broker's ``LogSegment.largestTimestamp``) is older.
* Batches: the header walk (the accelerator's ``scan_v2`` where built, ``storage/segment.walk`` otherwise, resynced
  after damage with verify-crc's ``find_next_valid``). A compressed batch is decompressed and its record bytes
  searched; an uncompressed batch is decoded only when the key's bytes occur inside it. A record whose key equals
  the key is a hit; the key's bytes anywhere else (inside another record, in bytes that do not parse as a batch)
  are reported separately (``match`` = ``key-bytes`` / ``unparsed``).
* States, per partition copy, in offset order: the key's last record is its ``live`` value or a ``tombstone``;
  older records are ``superseded`` (``tombstoned`` when the last record is a tombstone); a record of a
  transactional batch whose producer's next marker is ABORT is ``aborted`` (``open-transaction`` with no marker).
  A record in a leftover, a ``-delete`` dir or another copy outside the broker's logs takes that copy's state.
* What removes it: the log cleaner's rules (``ops/cleaner_explain.explain``: first uncleanable offset, dirty
  ratio, the delete horizon for tombstones) when cleanup.policy has ``compact``; retention's rules
  (``ops/retention.explain``) when it has ``delete``; the loader's fate of a leftover (``layout.leftover_fate``).

``--prove-erased`` adds a second pass: every value the key has had (read in the first pass) and ``--value-regex``
are searched as raw bytes in every decompressed batch and every file, so a copy under another key or in a corrupt
batch is found; then a verdict per location and overall (ERASED, PENDING, PRESENT, or UNKNOWN when a location
could not be searched, e.g. an encrypted tiered object).
"""

from __future__ import annotations

import base64
import os
import re
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.format import codecs, partitioners
from kafkalog_cli.format.control import ABORT, parse_control_key
from kafkalog_cli.format.entry import Entry
from kafkalog_cli.format.layouts import BATCH_V2, V2_ATTRIBUTES_OFFSET, V2_HEADER_SIZE
from kafkalog_cli.storage import layout, tiered
from kafkalog_cli.storage.partition_name import (
    DELETE_DIR_SUFFIX,
    FUTURE_DIR_SUFFIX,
    STRAY_DIR_SUFFIX,
    parse_topic_partition_name,
)
from kafkalog_cli.storage.segment import MappedFile, read_entry, walk
from kafkalog_cli.timefmt import iso_utc

# where a copy lives (Location.kind)
LIVE, LEFTOVER, DELETE_DIR, FUTURE_DIR, STRAY_DIR, TIERED, COPY, OTHER = (
    "live", "leftover", "delete-dir", "future-dir", "stray-dir", "tiered", "copy", "other-file")
_DIR_KIND = {DELETE_DIR_SUFFIX: DELETE_DIR, FUTURE_DIR_SUFFIX: FUTURE_DIR, STRAY_DIR_SUFFIX: STRAY_DIR}
_NO_RECORDS = {"index", "timeindex", "txnindex", "snapshot", "leader-epoch-checkpoint", "broker-checkpoint",
               "partition-metadata", "quorum-state"}
_SKIP_NAMES = {".lock", "meta.properties", "journal.json"}
MIN_VALUE_PATTERN = 4  # shorter values are not searched as raw bytes (they would match everywhere)

_MAGIC_AT = BATCH_V2.offset("magic")  # 16


@dataclass
class Location:
    """One file searched (or skipped), with what the broker does with it."""

    path: str
    kind: str
    topic: str | None
    partition: int | None
    broker: str | None
    log_dir: str | None
    fate: str  # what removes the file itself (the loader, an operator, nothing)
    searched: bool = True
    why_not: str = ""
    bytes_read: int = 0
    unsearched: list[str] = field(default_factory=list)  # byte ranges whose records could not be read


@dataclass
class Hit:
    file: str
    kind: str  # Location.kind
    match: str  # "key" | "key-bytes" | "value-bytes" | "value-regex" | "unparsed"
    topic: str | None
    partition: int | None
    broker: str | None
    log_dir: str | None
    position: int  # the batch's byte position in the file (the match's position for raw hits)
    batch_end: int
    offset: int | None
    timestamp: int | None
    tombstone: bool
    value_size: int
    codec: str | None
    crc_valid: bool | None
    producer_id: int = -1
    transactional: bool = False
    state: str = ""
    removed_by: str = ""
    removed_at_ms: int | None = None
    detail: str = ""
    _delete_horizon_ms: int | None = field(default=None, repr=False)
    _value: bytes | None = field(default=None, repr=False)

    def as_dict(self) -> dict[str, object]:
        d = {k: v for k, v in asdict(self).items() if not k.startswith("_")}
        if self.removed_at_ms is not None:
            d["removed_at"] = iso_utc(self.removed_at_ms)
        return d


@dataclass
class Options:
    key: bytes | None
    partitions: int | None = None
    any_partition: bool = False
    partitioner_names: tuple[str, ...] = ("murmur2",)
    since_ms: int | None = None
    until_ms: int | None = None
    value_regex: bytes | None = None
    prove_erased: bool = False
    cleanup_policy: str = "delete"
    cleaner_props: dict[str, str] = field(default_factory=dict)
    now_ms: int | None = None


@dataclass
class Verdict:
    location: str  # a partition copy (its directory) or a file
    verdict: str  # ERASED | PENDING | PRESENT | UNKNOWN
    reason: str


@dataclass
class FindResult:
    key: bytes | None
    hits: list[Hit]
    locations: list[Location]
    targets: dict[str, dict[str, object]]  # topic -> {"partitions": n, "searched": [..], "source": ...}
    notes: list[str]
    now_ms: int
    verdicts: list[Verdict] = field(default_factory=list)
    verdict: str | None = None

    @property
    def bytes_read(self) -> int:
        return sum(loc.bytes_read for loc in self.locations)

    def as_dict(self) -> dict[str, object]:
        key = self.key
        doc: dict[str, object] = {
            "key": None if key is None else key.decode("utf-8", "replace"),
            "key_hex": None if key is None else key.hex(),
            "now_ms": self.now_ms,
            "hits": [h.as_dict() for h in self.hits],
            "targets": self.targets,
            "files_searched": sum(1 for loc in self.locations if loc.searched),
            "files_skipped": sum(1 for loc in self.locations if not loc.searched),
            "bytes_read": self.bytes_read,
            "locations": [asdict(loc) for loc in self.locations],
            "notes": self.notes,
        }
        if self.verdict is not None:
            doc["verdict"] = self.verdict
            doc["verdicts"] = [asdict(v) for v in self.verdicts]
        return doc


# ------------------------------------------------------------------------------------------------ discovery
def _broker_of(log_dir: str | None, cache: dict[str, str | None]) -> str | None:
    from kafkalog_cli.internal_topics.logdir import broker_id

    if log_dir is None:
        return None
    if log_dir not in cache:
        cache[log_dir] = broker_id(log_dir)
    return cache[log_dir]


def _classify(path: str, names: list[str], brokers: dict[str, str | None]) -> Location | None:
    """The Location of one file, None for files that hold no record bytes (indexes, checkpoints, snapshots)."""
    name = os.path.basename(path)
    parent = os.path.dirname(path)
    if name in _SKIP_NAMES:
        return None
    remote = tiered.classify(path)
    if remote is not None:
        if remote.suffix != ".log":
            return None
        why = tiered.encoding_problem(path)
        return Location(path, TIERED, remote.topic, remote.partition, None, remote.root,
                        "remote retention (retention.ms/retention.bytes over the whole log) deletes it; compaction "
                        "does not apply to tiered topics", searched=why is None, why_not=why or "")
    tp = parse_topic_partition_name(os.path.basename(parent))
    outer = parse_topic_partition_name(os.path.basename(os.path.dirname(parent)))
    if tp is not None and outer is not None and outer.suffix is not None:
        # a directory inside a -delete/-future/-stray one (kafkalog's exchange side dir, docs/safety.md): its files
        # share that directory's fate
        tp = outer
        parent = os.path.dirname(parent)
    log_dir = os.path.dirname(parent) if tp is not None else None
    broker = _broker_of(log_dir, brokers)
    kind_by_name = layout.classify(name)
    if kind_by_name in _NO_RECORDS:
        return None
    topic, part = (tp.topic, tp.partition) if tp is not None else (None, None)
    if layout.is_leftover(name):
        if not name[: name.rindex(".")].endswith((layout.LOG_SUFFIX, ".checkpoint")):
            return None  # an index leftover: no record bytes
        return Location(path, LEFTOVER, topic, part, broker, log_dir, layout.leftover_fate(name, names))
    is_log = name.endswith(layout.LOG_SUFFIX) or kind_by_name == "checkpoint"
    if tp is not None and is_log:
        if tp.suffix is None:
            if layout.is_segment_name(name):
                return Location(path, LIVE, topic, part, broker, log_dir, "")
            if kind_by_name == "checkpoint":
                return Location(path, COPY, topic, part, broker, log_dir,
                                "a KRaft snapshot: the metadata log deletes it once a newer snapshot and its "
                                "retention (metadata.max.retention.*) allow")
            fate = next((s.fate for s in layout.stray_logs([name])), "the broker never reads it")
            return Location(path, COPY, topic, part, broker, log_dir, fate)
        kind = _DIR_KIND[tp.suffix]
        fate = {DELETE_DIR: "the broker deletes this -delete directory (LogManager, after file.delete.delay.ms)",
                FUTURE_DIR: "the broker makes it the live log when the replica move completes (or deletes it if "
                            "the move is cancelled)",
                STRAY_DIR: "the broker keeps a -stray directory (LogManager.loadLog marks it stray, it is not "
                           "deleted automatically): an operator must delete it"}[kind]
        return Location(path, kind, topic, part, broker, log_dir, fate)
    if is_log:
        return Location(path, COPY, None, None, None, None,
                        "a copy outside the broker's logs (backup, salvage or export output): nothing in Kafka "
                        "deletes it; delete the file")
    return Location(path, OTHER, topic, part, broker, log_dir,
                    "not a Kafka log file (an export or other copy): nothing in Kafka deletes it; delete the file")


def _files(root: str, names: list[str], brokers: dict[str, str | None], out: list[Location]) -> None:
    for f in names:
        path = os.path.join(root, f)
        if os.path.isfile(path):
            loc = _classify(path, names, brokers)
            if loc is not None:
                out.append(loc)


def discover(paths: list[str], opts: Options | None = None) -> tuple[list[Location], list[str]]:
    """Every file under ``paths`` that can hold record bytes, classified; notes for unreadable directories.

    Partition directories (``<topic>-<n>``, suffixed ones too) are listed only when ``opts`` wants their partition
    (``_wanted``: the partitioner's choice); the others become one skipped Location each, so a pruned search
    reads neither their files nor their directory blocks. Their names alone give the partition count."""
    from kafkalog_cli.storage.paths import missing

    out: list[Location] = []
    notes: list[str] = []
    brokers: dict[str, str | None] = {}
    seen: set[str] = set()
    part_dirs: list[tuple[str, str]] = []  # (partition dir, its log dir)
    for arg in paths:
        if not os.path.lexists(arg):
            raise missing(arg)
        if os.path.isfile(arg):
            _files(os.path.dirname(os.path.abspath(arg)), [os.path.basename(arg)], brokers, out)
            continue
        for root, dirs, files in os.walk(arg, onerror=lambda e: notes.append(f"{e.filename}: cannot list ({e.strerror})")):
            root = os.path.abspath(root)
            if root in seen:
                dirs[:] = []
                continue
            seen.add(root)
            dirs.sort()
            keep = []
            for d in dirs:
                if parse_topic_partition_name(d) is not None and os.path.join(root, d) not in seen:
                    part_dirs.append((os.path.join(root, d), root))
                    seen.add(os.path.join(root, d))
                else:
                    keep.append(d)
            dirs[:] = keep
            _files(root, sorted(files), brokers, out)
    names: list[Location] = []
    for d, log_dir in part_dirs:
        tp = parse_topic_partition_name(os.path.basename(d))
        assert tp is not None
        kind = LIVE if tp.suffix is None else _DIR_KIND[tp.suffix]
        names.append(Location(d, kind, tp.topic, tp.partition, _broker_of(log_dir, brokers), log_dir, ""))
    targets = _targets(out + names, opts) if opts is not None else {}
    for loc in names:
        if opts is not None and not _wanted(loc, targets, opts):
            loc.searched, loc.why_not = False, "pruned: the partitioner does not map the key to this partition"
            out.append(loc)
            continue
        try:
            listing = sorted(layout.list_directory(loc.path))
        except KafkalogError as exc:
            notes.append(f"{loc.path}: {exc.describe()}")
            continue
        _files(loc.path, listing, brokers, out)
        for sub in listing:  # directories inside a partition directory (a -delete dir's side copy)
            if os.path.isdir(os.path.join(loc.path, sub)) and not os.path.islink(os.path.join(loc.path, sub)):
                for root, dirs, files in os.walk(os.path.join(loc.path, sub)):
                    dirs.sort()
                    _files(os.path.abspath(root), sorted(files), brokers, out)
    return out, notes


# ------------------------------------------------------------------------------------------------ pruning
def _targets(locs: list[Location], opts: Options) -> dict[str, dict[str, object]]:
    """Per topic: the partition count and the partitions the key maps to under the chosen partitioners."""
    counts: dict[str, set[int]] = {}
    for loc in locs:
        if loc.topic is not None and loc.partition is not None and loc.partition >= 0:
            counts.setdefault(loc.topic, set()).add(loc.partition)
    out: dict[str, dict[str, object]] = {}
    for topic, seen in sorted(counts.items()):
        n = opts.partitions or (max(seen) + 1)
        chosen: dict[str, int | None] = {}
        for name in opts.partitioner_names:
            chosen[name] = None if opts.key is None else partitioners.partition_for(opts.key, n, name)
        doc: dict[str, object] = {"partitions": n, "source": "--partitions" if opts.partitions else
                                  "highest partition directory seen + 1", "chosen": chosen,
                                  "partitions_seen": len(seen)}
        if not opts.partitions and len(seen) != n:
            doc["warning"] = (f"partitions {sorted(set(range(n)) - seen)[:10]} of {topic} are not in the input: the "
                              "partition count is not known, so every partition of it is searched; pass "
                              "--partitions N to search only the key's")
            doc["prune"] = False
        else:
            doc["prune"] = True
        out[topic] = doc
    return out


def _wanted(loc: Location, targets: dict[str, dict[str, object]], opts: Options) -> bool:
    if opts.any_partition or opts.prove_erased or opts.key is None or loc.topic is None or loc.partition is None:
        return True
    t = targets.get(loc.topic)
    if t is None or not t["prune"]:
        return True
    chosen = t["chosen"]
    assert isinstance(chosen, dict)
    return loc.partition in {p for p in chosen.values() if p is not None} or all(p is None for p in chosen.values())


def _too_old(loc: Location, opts: Options) -> bool:
    """A live segment whose largest timestamp (the broker's rule) is before ``--since``."""
    if opts.since_ms is None or loc.kind != LIVE:
        return False
    from kafkalog_cli.ops import seek

    base = layout.offset_from_name(os.path.basename(loc.path))
    with MappedFile(loc.path) as mf:
        ts = seek.largest_timestamp(os.path.dirname(loc.path), base, mf, seek.SeekStats(), [])
    return ts < opts.since_ms


# ------------------------------------------------------------------------------------------------ the walk
def _spellings(key: bytes) -> list[bytes]:
    """How an export may write the key as text: raw, base64, hex."""
    out = [key]
    if key:
        out += [base64.b64encode(key), key.hex().encode()]
    return out


def _findable(buf: memoryview | bytes) -> bytes | bytearray:
    """An object with ``find`` over the same bytes, without a copy (the map or the array under the view)."""
    if isinstance(buf, memoryview):
        obj = buf.obj
        if hasattr(obj, "find") and len(obj) == len(buf):  # type: ignore[arg-type]
            return obj  # type: ignore[return-value]
        return bytes(buf)
    return buf


def _batches(buf: memoryview | bytes, path: str) -> Iterator[tuple[int, int, Entry | None]]:
    """(position, end, entry) of every entry, resynced past damage; entry None for unparsed bytes [position, end)."""
    from kafkalog_cli.storage import accel
    from kafkalog_cli.storage.segment_check import find_next_valid

    pos, end = 0, len(buf)
    fast = accel.module() is not None
    while pos < end:
        if fast:
            scanned, stop, why = accel.scan_v2(buf, pos, end)
            for b in scanned:
                yield b.position, b.position + b.size, read_entry(buf, b.position, 2, file=path)
            pos = stop
            if why == "end" and not any(bytes(buf[pos:end])):
                return
        try:
            got = next(walk(buf, pos, end, file=path), None)
            if got is None:
                if pos < end and any(bytes(buf[pos:end])):
                    yield pos, end, None  # a cut entry at the end
                return
            p, size, magic = got
            entry = read_entry(buf, p, magic, file=path)
            yield p, p + size, entry
            pos = p + size
        except KafkalogError:
            nxt = find_next_valid(buf, pos + 1)
            yield pos, end if nxt is None else nxt, None
            if nxt is None:
                return
            pos = nxt


@dataclass
class _Marker:
    producer_id: int
    offset: int
    abort: bool


@dataclass
class _FileScan:
    hits: list[Hit]
    markers: list[_Marker]
    values: list[bytes]
    unsearched: list[str] = field(default_factory=list)  # byte ranges whose records could not be read


def _readable_part(codec: int, data: bytes) -> bytes:
    """What a damaged or cut compressed payload yields before the damage (fed 4 KiB at a time, the output so far
    kept when the decoder fails): gzip, lz4 and zstd frames; nothing for snappy's framing."""
    out = bytearray()
    feed: Any
    try:
        if codec == codecs.GZIP:
            import zlib

            dec = zlib.decompressobj(16 + zlib.MAX_WBITS)
            feed = dec.decompress
        elif codec == codecs.LZ4:
            import lz4.frame

            lz = lz4.frame.LZ4FrameDecompressor()
            feed = lz.decompress
        elif codec == codecs.ZSTD:
            import zstandard

            feed = zstandard.ZstdDecompressor().decompressobj().decompress
        else:
            return b""
        for i in range(0, len(data), 4096):
            out += feed(data[i:i + 4096])
            if len(out) > codecs.DEFAULT_LIMIT:
                break
    except Exception:  # noqa: BLE001 - the damage: keep what came before it
        pass
    return bytes(out)


def _codec_name(entry: Entry) -> str:
    try:
        return codecs.codec_name(entry.codec)
    except KafkalogError:
        return f"unknown({entry.codec})"


def _scan_log(loc: Location, key: bytes | None, patterns: list[bytes], opts: Options,
              data: bytes | None = None) -> _FileScan:
    """The records of ``key`` in one log-format file (or ``data``, its decompressed bytes), raw matches of
    ``patterns`` elsewhere in it."""
    if data is not None:
        return _scan_buffer(loc, data, key, patterns, opts)
    with MappedFile(loc.path) as mf:
        loc.bytes_read += len(mf.buf)
        return _scan_buffer(loc, mf.buf, key, patterns, opts)


def _scan_buffer(loc: Location, buf: memoryview | bytes, key: bytes | None, patterns: list[bytes],
                 opts: Options) -> _FileScan:
    hits: list[Hit] = []
    markers: list[_Marker] = []
    values: list[bytes] = []
    unsearched: list[str] = []
    # the patterns looked for inside records of other keys: only when proving erasure, and only long enough
    # not to match by chance (a one-byte key is in half the values)
    inner = [p for p in patterns if p and len(p) >= MIN_VALUE_PATTERN] if opts.prove_erased else []
    regex = re.compile(opts.value_regex, re.S) if opts.value_regex else None
    pats = [p for p in patterns if p]

    def raw(kind: str, pos: int, end: int, detail: str, entry: Entry | None = None) -> Hit:
        return Hit(loc.path, loc.kind, kind, loc.topic, loc.partition, loc.broker, loc.log_dir, pos, end,
                   None if entry is None else entry.base_offset, None if entry is None else entry.max_timestamp,
                   False, 0, None if entry is None else _codec_name(entry), None, detail=detail)

    flat = _findable(buf)
    raw_at: list[int] = []
    for p in pats:
        i = flat.find(p)
        while i >= 0:
            raw_at.append(i)
            i = flat.find(p, i + 1)
    raw_at.sort()
    covered: list[tuple[int, int]] = []
    for pos, end, entry in _batches(buf, loc.path):
        inside = [i for i in raw_at if pos <= i < end] if raw_at else []
        if entry is None:
            for i in inside:
                hits.append(raw("unparsed", i, end, f"the bytes [{pos}, {end}) do not parse as a batch "
                                                  "(damage or a cut write)"))
            if not inside and end - pos > V2_HEADER_SIZE and buf[pos + _MAGIC_AT] == 2:  # a cut compressed v2 batch?
                codec = int.from_bytes(buf[pos + V2_ATTRIBUTES_OFFSET:pos + V2_ATTRIBUTES_OFFSET + 2], "big") & 7
                part = _readable_part(codec, bytes(buf[pos + V2_HEADER_SIZE:end])) if codec != codecs.NONE else b""
                for p in pats:
                    if p in part:
                        hits.append(raw("unparsed", pos, end, f"in the readable part of a damaged or cut "
                                                              f"{codecs.CODEC_NAMES.get(codec, codec)} batch at "
                                                              f"[{pos}, {end})"))
                        break
            continue
        covered.append((pos, end))
        if entry.is_control and not entry.is_legacy:
            try:
                for rec in entry.iter_records(buf):
                    if rec.key is not None:
                        markers.append(_Marker(entry.producer_id, rec.offset,
                                               parse_control_key(rec.key)[1] == ABORT))
                    break
            except KafkalogError:
                pass
            continue
        compressed = entry.codec != codecs.NONE
        if compressed:
            try:
                data = _findable(entry.payload(buf)[0]) if not entry.is_legacy else None
            except KafkalogError as exc:
                unsearched.append(f"{loc.path} bytes [{pos}, {end}): a compressed batch that does not "
                                  f"decompress ({exc.message}): its records cannot be searched")
                part = _readable_part(entry.codec, bytes(buf[pos + V2_HEADER_SIZE:end])) if not entry.is_legacy else b""
                for p in pats:
                    if p in part:
                        hits.append(raw("unparsed", pos, end, "in the readable part of a compressed batch that does "
                                                              "not decompress whole", entry))
                        break
                continue
            if data is not None and regex is None and not any(p in data for p in pats):
                continue
        elif regex is None and not inside:
            continue
        try:
            recs = list(entry.iter_records(buf))
        except KafkalogError as exc:
            if inside if not compressed else (data is not None and any(p in data for p in pats)):
                hits.append(raw("unparsed", inside[0] if inside and not compressed else pos, end,
                                f"the batch's records do not decode ({exc.message}); the bytes are in it", entry))
            else:
                unsearched.append(f"{loc.path} bytes [{pos}, {end}): records that do not decode ({exc.message})")
            continue
        crc_ok = entry.is_valid(buf)
        for rec in recs:
            is_key = key is not None and rec.key is not None and bytes(rec.key) == key
            value = None if rec.value is None else bytes(rec.value)
            what = "key" if is_key else None
            if what is None and regex is not None and value is not None and regex.search(value):
                what = "value-regex"
            if what is None and inner:
                blob = bytes(rec.key or b"") + (value or b"") + b"".join(
                    bytes(k) + bytes(v or b"") for k, v in rec.headers)
                for p in inner:
                    if p in blob:
                        what = "key-bytes" if key is not None and p == key else "value-bytes"
                        break
            if what is None:
                continue
            if opts.since_ms is not None and rec.timestamp < opts.since_ms:
                continue
            if opts.until_ms is not None and rec.timestamp > opts.until_ms:
                continue
            if is_key and value is not None:
                values.append(value)
            h = Hit(loc.path, loc.kind, what, loc.topic, loc.partition, loc.broker, loc.log_dir, pos, end,
                    rec.offset, rec.timestamp, value is None, len(value or b""), _codec_name(entry), crc_ok,
                    entry.producer_id, entry.is_transactional,
                    _delete_horizon_ms=entry.delete_horizon_ms if entry.has_delete_horizon else None,
                    _value=value)
            if what in ("key-bytes", "value-bytes"):
                other = "a null key" if rec.key is None else f"a {len(rec.key)}-byte key"
                h.detail = f"inside a record of another key ({other}, offset {rec.offset})"
            hits.append(h)
    for i in raw_at:
        if not any(a <= i < b for a, b in covered) and not any(h.position == i for h in hits):
            hits.append(raw("unparsed", i, i + 1, "outside every batch (bytes the walk skipped)"))
    return _FileScan(hits, markers, values, unsearched)


MAX_WHOLE_FILE = 1 << 30  # a gzip/zstd file is decompressed whole up to this size


def _looks_like_log(buf: bytes | bytearray | memoryview) -> bool:
    """The first bytes read as a log entry: offset, a length that fits, magic 0, 1 or 2 (a renamed segment, a
    salvage or export output in Kafka's format)."""
    if len(buf) < 26:
        return False
    size = int.from_bytes(buf[8:12], "big", signed=True)
    return buf[16] in (0, 1, 2) and 14 <= size <= len(buf) - 12 and int.from_bytes(buf[0:8], "big", signed=True) >= 0


def _decompressed(buf: bytes | bytearray | memoryview) -> bytes | None:
    """A whole gzip or zstd file's bytes (an archived segment or export), None for any other file."""
    head = bytes(buf[:4])
    try:
        if head[:2] == b"\x1f\x8b":
            import zlib

            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            return d.decompress(bytes(buf), MAX_WHOLE_FILE)
        if head == tiered.ZSTD_MAGIC:
            import zstandard

            return zstandard.ZstdDecompressor().decompressobj().decompress(bytes(buf))[:MAX_WHOLE_FILE]
    except Exception:  # noqa: BLE001 - not a whole compressed file after all: searched as raw bytes
        return None
    return None


def _raw_hits(loc: Location, buf: bytes | bytearray, patterns: list[bytes], spellings: bool, detail: str) -> list[Hit]:
    hits: list[Hit] = []
    for p in patterns:
        for s in _spellings(p) if spellings else [p]:
            i = buf.find(s)
            while i >= 0:
                how = "raw bytes" if s == p else ("base64" if s == base64.b64encode(p) else "hex") + " spelling"
                hits.append(Hit(loc.path, loc.kind, "key-bytes" if p is patterns[0] else "value-bytes", loc.topic,
                                loc.partition, loc.broker, loc.log_dir, i, i + len(s), None, None, False, 0, None,
                                None, detail=how + detail))
                i = buf.find(s, i + 1)
    return hits


def _parquet_hits(loc: Location, patterns: list[bytes]) -> list[Hit] | None:
    """Cells of a Parquet file (an export) holding a pattern, raw or spelled; None when it does not read."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pq.read_table(loc.path)
    except Exception:  # noqa: BLE001 - not readable as Parquet: searched as raw bytes
        return None
    hits: list[Hit] = []
    for name in table.column_names:
        col = table[name]
        if not (pa.types.is_binary(col.type) or pa.types.is_string(col.type) or pa.types.is_large_binary(col.type)
                or pa.types.is_large_string(col.type)):
            continue
        for row, cell in enumerate(col.to_pylist()):
            if cell is None:
                continue
            data = cell.encode("utf-8", "surrogatepass") if isinstance(cell, str) else bytes(cell)
            for p in patterns:
                if any(sp in data for sp in _spellings(p)):
                    hits.append(Hit(loc.path, loc.kind, "key-bytes" if p is patterns[0] else "value-bytes",
                                    loc.topic, loc.partition, loc.broker, loc.log_dir, row, row + 1, None, None, False,
                                    0, None, None, detail=f"Parquet column {name!r}, row {row}"))
                    break
    return hits


def _scan_other(loc: Location, key: bytes | None, patterns: list[bytes], opts: Options) -> _FileScan:
    """A file that is not named as a log: read as a log when its bytes are one (a renamed segment), decompressed
    when it is a whole gzip/zstd file, its cells when it is Parquet; and always searched as raw bytes with the
    key's base64 and hex spellings (JSON/CSV exports)."""
    out = _FileScan([], [], [])
    if not patterns:
        return out
    try:
        if loc.path.endswith(".parquet"):
            cells = _parquet_hits(loc, patterns)
            if cells is not None:
                loc.bytes_read += os.path.getsize(loc.path)
                out.hits += cells
                return out
        with MappedFile(loc.path) as mf:
            buf = _findable(mf.buf)
            loc.bytes_read += len(buf)
            inner = _decompressed(buf)
            for data, detail in ((buf, ""), (inner, " (inside the decompressed file)")):
                if data is None:
                    continue
                if _looks_like_log(data):
                    scan = _scan_buffer(loc, mf.buf if data is buf else bytes(data), key, patterns, opts)
                    out.hits += scan.hits
                    out.markers += scan.markers
                    out.values += scan.values
                    out.unsearched += scan.unsearched
                    out.hits += [h for h in _raw_hits(loc, data, patterns, True, detail) if h.detail.startswith(
                        ("base64", "hex"))]
                else:
                    out.hits += _raw_hits(loc, data, patterns, True, detail)
    except KafkalogError as exc:
        loc.searched, loc.why_not = False, exc.describe()
    return out


# ------------------------------------------------------------------------------------------------ states
def _copy_key(loc: Location) -> str:
    """The partition copy a file belongs to: its directory (a live log, a -delete dir ...), or the file itself."""
    if loc.kind in (LIVE, DELETE_DIR, FUTURE_DIR, STRAY_DIR, TIERED) and not loc.why_not.startswith("pruned"):
        return os.path.dirname(loc.path)
    return loc.path


def _assign_states(hits: list[Hit], markers: list[_Marker]) -> None:
    """States of the key's records within one partition copy (offset order)."""
    keyed = sorted((h for h in hits if h.match == "key" and h.offset is not None), key=lambda h: h.offset or 0)
    by_pid: dict[int, list[_Marker]] = {}
    for m in sorted(markers, key=lambda m: m.offset):
        by_pid.setdefault(m.producer_id, []).append(m)
    committed: list[Hit] = []
    for h in keyed:
        if h.transactional:
            nxt = next((m for m in by_pid.get(h.producer_id, []) if m.offset > (h.offset or 0)), None)
            if nxt is None:
                h.state = "open-transaction"
                h.detail = "no transaction marker after it: not visible to read_committed consumers yet"
                continue
            if nxt.abort:
                h.state = "aborted"
                h.detail = f"the producer's transaction was aborted (marker at offset {nxt.offset})"
                continue
        committed.append(h)
    if not committed:
        return
    last = committed[-1]
    last.state = "tombstone" if last.tombstone else "live"
    for h in committed[:-1]:
        if h.tombstone:
            h.state = "superseded-tombstone"
        else:
            h.state = "tombstoned" if last.tombstone else "superseded"


def _partition_copy(directory: str, loc: Location):  # noqa: ANN202 (internal_topics.logdir.PartitionCopy)
    from kafkalog_cli.internal_topics.logdir import PartitionCopy

    return PartitionCopy(loc.topic or "", loc.partition if loc.partition is not None else -1, directory,
                         loc.log_dir or os.path.dirname(directory), loc.broker)


def _views(directory: str, loc: Location, opts: Options, now: int, notes: list[str]) -> tuple[Any, Any, Any]:
    """The cleaner's and retention's views of one live partition copy (computed once per copy), and the cleaner
    config: what ``explain-cleaner`` and ``explain-retention`` would say of it at ``now``."""
    from kafkalog_cli.ops import cleaner_explain, retention

    copy = _partition_copy(directory, loc)
    policy = opts.cleanup_policy
    ccfg = cleaner_explain.config_from(opts.cleaner_props)
    ccfg.cleanup_policy, ccfg.now_ms = policy, now
    rprops = {k: v for k, v in opts.cleaner_props.items() if k in ("retention.ms", "retention.bytes")}
    rcfg = retention.config_from(dict(rprops, **{"cleanup.policy": policy}))
    rcfg.now_ms, rcfg.policy_explicit = now, True
    cleaner = None
    if "compact" in [p.strip() for p in policy.split(",")]:
        try:
            cleaner = cleaner_explain.explain(copy, ccfg, estimate=False)
        except KafkalogError as exc:
            notes.append(f"{directory}: the cleaner's view is unknown ({exc.describe()})")
    try:
        ret = retention.explain(copy, rcfg)
    except KafkalogError as exc:
        ret = None
        notes.append(f"{directory}: retention's view is unknown ({exc.describe()})")
    return cleaner, ret, ccfg


def _removal(hits: list[Hit], views: tuple[Any, Any, Any], loc: Location, opts: Options, now: int) -> None:
    """``removed_by`` for the key's records of one segment of a live partition copy, by the cleaner's and
    retention's rules (``_views``)."""
    cleaner, ret, ccfg = views
    policy = opts.cleanup_policy
    delete = "delete" in [p.strip() for p in policy.split(",")]
    fates = {} if ret is None else {s.base_offset: s for s in ret.segments}
    base = layout.offset_from_name(os.path.basename(loc.path)) if loc.kind == LIVE else None
    for h in hits:
        if h.file != loc.path or h.offset is None:
            continue
        seg = fates.get(base) if base is not None else None
        by_retention = ""
        if seg is not None and seg.deleted:
            why = seg.reason if seg.reason.startswith(seg.rule) else f"{seg.rule}: {seg.reason}"  # not twice
            by_retention = f"retention deletes its segment now ({why})"
            h.removed_at_ms = now
        elif seg is not None and seg.ms_until_deleted is not None and delete:
            by_retention = f"retention.ms deletes its segment at {iso_utc(now + seg.ms_until_deleted)}"
            h.removed_at_ms = now + seg.ms_until_deleted
        by_cleaner = ""
        if cleaner is not None and h.match == "key":
            fu = cleaner.first_uncleanable_offset
            when = ("the cleaner would pick this log now (" + cleaner.decision + ")") if cleaner.would_clean else (
                "the cleaner does not pick this log yet (" + cleaner.decision + ")")
            if h.state in ("superseded", "tombstoned", "superseded-tombstone", "aborted"):
                if h.offset < fu:
                    by_cleaner = f"the next clean of this log removes it: {when}"
                else:
                    by_cleaner = (f"the cleaner cannot clean past offset {fu} yet ({cleaner.uncleanable_reason}); "
                                  f"a later clean removes it")
            elif h.state == "tombstone":
                dh = h._delete_horizon_ms
                if dh is not None:
                    by_cleaner = (f"the tombstone stays until its delete horizon {iso_utc(dh)} (set by an earlier "
                                  "clean); the first clean after it removes it")
                    h.removed_at_ms = max(dh, now) if h.removed_at_ms is None else h.removed_at_ms
                else:
                    by_cleaner = (f"the first clean past it sets its delete horizon (that clean's time + "
                                  f"delete.retention.ms {ccfg.delete_retention_ms} ms); a clean after that removes it"
                                  f"; {when}")
            elif h.state == "live":
                by_cleaner = "nothing while it is the key's latest value: produce a tombstone (null value) for the key"
            elif h.state == "open-transaction":
                by_cleaner = "the cleaner stops at the last stable offset: not cleaned while the transaction is open"
        parts = [p for p in (by_cleaner, by_retention) if p]
        if not parts:
            parts = [f"cleanup.policy={policy}: " + ("retention keeps its segment for now" if delete else
                                                     "nothing removes it")]
        h.removed_by = "; ".join(parts)


def _keeps(h: Hit) -> bool:
    """Does this copy of a value stay with nothing scheduled to remove it? (False: PENDING.)"""
    if h.match != "key":
        return True  # a value's bytes under another key, in damage, in an export: nothing knows to remove them
    if h.state.rsplit(":", 1)[-1] in ("tombstoned", "aborted"):
        return False  # the cleaner removes them (from the log this copy is or becomes)
    if h.kind == LEFTOVER:
        return "deletes it" not in h.removed_by  # a .swap the loader installs becomes the live log
    return h.kind != DELETE_DIR


def _verdicts(result: FindResult, locs: dict[str, list[Location]]) -> None:
    """ERASED / PENDING / PRESENT / UNKNOWN per partition copy (or file) and overall."""
    by_copy: dict[str, list[Hit]] = {}
    for h in result.hits:
        loc = Location(h.file, h.kind, h.topic, h.partition, h.broker, h.log_dir, "")
        by_copy.setdefault(_copy_key(loc), []).append(h)
    rank = {"ERASED": 0, "PENDING": 1, "UNKNOWN": 2, "PRESENT": 3}
    out: list[Verdict] = []
    for copy, group in sorted(locs.items()):
        unsearched = [loc for loc in group if (not loc.searched and loc.why_not and not loc.why_not.startswith("pruned"))
                      or loc.unsearched]
        hits = by_copy.get(copy, [])
        values = [h for h in hits if not (h.match == "key" and h.tombstone)]
        if not values:
            if unsearched:
                out.append(Verdict(copy, "UNKNOWN", "; ".join(f"{loc.path}: {loc.why_not}" if loc.why_not else
                                                              "; ".join(loc.unsearched) for loc in unsearched)))
            else:
                tomb = [h for h in hits if h.tombstone]
                out.append(Verdict(copy, "ERASED", "no value of the key here" + (
                    f" (its tombstone remains at offset {tomb[-1].offset}: {tomb[-1].removed_by or 'kept'})"
                    if tomb else "")))
            continue
        present = [h for h in values if _keeps(h)]
        present = list({id(h): h for h in present}.values())
        if present:
            h = present[0]
            where = f"offset {h.offset}" if h.offset is not None else f"byte {h.position}"
            out.append(Verdict(copy, "PRESENT", f"{len(present)} value cop{'y' if len(present) == 1 else 'ies'} "
                                                f"remain ({h.state or h.match} at {where}: {h.removed_by or h.detail})"))
            continue
        times = [h.removed_at_ms for h in values if h.removed_at_ms is not None]
        until = f"until {iso_utc(max(times))}" if times and len(times) == len(values) else "until removed"
        first = values[0]
        out.append(Verdict(copy, "PENDING", f"{len(values)} older value(s) remain {until}, because "
                                            f"{first.removed_by or first.detail or first.state}"))
    result.verdicts = out
    result.verdict = max((v.verdict for v in out), key=lambda v: rank[v], default="ERASED")


# ------------------------------------------------------------------------------------------------ the engine
def find_key(paths: list[str], opts: Options) -> FindResult:
    """Search ``paths`` for ``opts.key`` (and ``opts.value_regex``); states, removals and, with ``prove_erased``,
    the raw-bytes pass and the verdicts."""
    now = opts.now_ms if opts.now_ms is not None else int(time.time() * 1000)
    locs, notes = discover(paths, opts)
    targets = _targets(locs, opts)
    for t, doc in targets.items():
        if "warning" in doc:
            notes.append(f"{t}: {doc['warning']}")
    key = opts.key
    patterns = [key] if key else []
    scans: dict[str, _FileScan] = {}
    for loc in locs:
        if not loc.searched:
            continue
        try:
            if _too_old(loc, opts):
                loc.searched, loc.why_not = False, "pruned: its largest timestamp is before --since"
                continue
            if loc.kind == OTHER:
                scans[loc.path] = _scan_other(loc, key, patterns, opts)
            else:
                scans[loc.path] = _scan_log(loc, key, patterns, opts)
        except KafkalogError as exc:
            loc.searched, loc.why_not = False, exc.describe()
            notes.append(f"{loc.path}: not searched ({exc.describe()})")
    if opts.prove_erased:
        values = sorted({v for s in scans.values() for v in s.values if len(v) >= MIN_VALUE_PATTERN})
        if values:
            extra = [v for v in values if v != key]
            for loc in locs:
                if loc.path not in scans:
                    continue
                loc.bytes_read = 0
                if loc.kind == OTHER:
                    scans[loc.path] = _scan_other(loc, key, patterns + extra, opts)
                else:
                    scans[loc.path] = _scan_log(loc, key, patterns + extra, opts)
    by_copy: dict[str, list[Location]] = {}
    for loc in locs:
        by_copy.setdefault(_copy_key(loc), []).append(loc)
        if loc.path in scans and scans[loc.path].unsearched:
            loc.unsearched = scans[loc.path].unsearched
            notes.extend(loc.unsearched)
    hits: list[Hit] = []
    for copy, group in sorted(by_copy.items()):
        chits = [h for loc in group if loc.path in scans for h in scans[loc.path].hits]
        markers = [m for loc in group if loc.path in scans for m in scans[loc.path].markers]
        live = [h for h in chits if h.kind == LIVE]
        _assign_states(live, markers)
        others = [h for h in chits if h.kind != LIVE]
        for loc in group:
            if loc.kind == LIVE:
                continue
            fh = [h for h in others if h.file == loc.path]
            _assign_states(fh, markers if loc.kind in (DELETE_DIR, FUTURE_DIR, STRAY_DIR, TIERED) else
                           scans[loc.path].markers if loc.path in scans else [])
            for h in fh:
                h.state = (f"{loc.kind}:{h.state}" if h.state else loc.kind)
                h.removed_by = loc.fate
        views = None
        for loc in group:
            if loc.kind == LIVE and loc.topic is not None and any(h.file == loc.path for h in live):
                views = views or _views(copy, loc, opts, now, notes)
                _removal(live, views, loc, opts, now)
        for h in chits:
            if not h.state:
                h.state = h.match
        hits += chits
    hits.sort(key=lambda h: (h.topic or "", h.partition if h.partition is not None else -1, h.file, h.position))
    result = FindResult(key, hits, locs, targets, notes, now)
    if opts.prove_erased:
        _verdicts(result, by_copy)
    return result
