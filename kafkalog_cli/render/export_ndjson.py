"""``export --format ndjson``: one JSON object per record, kcat ``-J``'s fields first, then kafkalog's (the format is
docs/export.md's "NDJSON"; the replay command reads it).

Bytes that are valid UTF-8 are written as the string; others as standard base64 (padded), marked by
``key_encoding`` / ``payload_encoding`` = "base64" and, when any header name or value is base64, ``header_encodings``
(one entry per element of the flat ``headers`` list: "utf8" or "base64").

The lines are ``json.dumps(obj, ensure_ascii=False, separators=(",", ":"))`` of ``record_object``'s dict: that is
the reference. ``_accel.export_ndjson`` writes the same bytes for a whole v2 batch without a Python object per
record (``render/export_accel.py``); where it declines (malformed records, too many headers), this module's Python
path runs.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import IO, Any

from kafkalog_cli.format.batch import Record
from kafkalog_cli.ops.export import BatchItem, PartitionStats, SourcePartition, record_control

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _text(b: bytes | None) -> tuple[str | None, bool]:
    """(the JSON value, is base64) of a key, value or header element."""
    if b is None:
        return None, False
    try:
        return bytes(b).decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(bytes(b)).decode("ascii"), True


def batch_fields(item: BatchItem) -> tuple[dict[str, Any], dict[str, Any]]:
    """The fields of every record object of a batch: (before the record's own fields, after them)."""
    e = item.entry
    part = item.partition
    head = {"topic": part.topic, "partition": part.partition}
    ctl = None if item.control is None else {"type": item.control[0], "coordinator_epoch": item.control[1]}
    tail = {
        "transactional": bool(not e.is_legacy and e.is_transactional),
        "txn": item.txn,
        "control": ctl,
        "magic": e.magic,
        "codec": item.codec_name,
        "batch_base_offset": e.base_offset,
        "source": {"file": item.file, "position": e.position},
    }
    return head, tail


def record_object(item: BatchItem, rec: Record, head: dict[str, Any], tail: dict[str, Any], broker: int
                  ) -> dict[str, Any]:
    """The record's JSON object, keys in the documented order."""
    e = item.entry
    obj: dict[str, Any] = dict(head)
    obj["offset"] = rec.offset
    obj["tstype"] = item.timestamp_type
    obj["ts"] = rec.timestamp
    obj["broker"] = broker
    encodings: list[str] = []
    if rec.headers:
        flat: list[str | None] = []
        for k, v in rec.headers:
            kt, kb = _text(k)
            vt, vb = _text(v)
            flat += [kt, vt]
            encodings += ["base64" if kb else "utf8", "base64" if vb else "utf8"]
        obj["headers"] = flat
    key, key_b64 = _text(rec.key)
    value, value_b64 = _text(rec.value)
    obj["key"] = key
    obj["payload"] = value
    if key_b64:
        obj["key_encoding"] = "base64"
    if value_b64:
        obj["payload_encoding"] = "base64"
    if "base64" in encodings:
        obj["header_encodings"] = encodings
    obj["leader_epoch"] = e.partition_leader_epoch
    obj["producer_id"] = e.producer_id
    obj["producer_epoch"] = e.producer_epoch
    obj["sequence"] = rec.sequence
    obj.update(tail)
    return obj


RUN_OUT = 1 << 20  # bytes of lines per compiled run call (then written, and the call made again)
_PIECES: dict[tuple[int, str, int], tuple[bytes, bytes, str]] = {}  # (partition, file, broker) -> constant parts
_TSTYPE = {t: (',"tstype":' + _dumps(t) + ',"ts":').encode() for t in ("create", "logappend", "none")}


def _constant_pieces(part: SourcePartition, file: str, broker: int) -> tuple[bytes, bytes, str]:
    """The parts of a line constant per partition and file: (head up to the offset, broker, the file as JSON)."""
    key = (id(part), file, broker)
    got = _PIECES.get(key)
    if got is None:
        head = _dumps({"topic": part.topic, "partition": part.partition})[:-1] + ',"offset":'
        if len(_PIECES) > 4096:
            _PIECES.clear()
        got = _PIECES[key] = (head.encode("utf-8", "surrogatepass"), f',"broker":{broker}'.encode(),
                              _dumps(file))
    return got


def line_pieces(item: BatchItem, broker: int) -> tuple[bytes, bytes, bytes, bytes, bytes]:
    """The batch-constant parts of ``record_object``'s line, as ``_accel.export_ndjson`` puts them around the record's
    own fields: offset, ts, [headers] key payload [encodings], sequence. The same text as ``json.dumps`` of
    ``batch_fields`` (tests compare the two paths); what is constant per partition and file is built once."""
    e = item.entry
    p1, p3, file_json = _constant_pieces(item.partition, item.file, broker)
    ctl = "null" if item.control is None else _dumps({"type": item.control[0], "coordinator_epoch": item.control[1]})
    txn = "null" if item.txn is None else _dumps(item.txn)
    transactional = "true" if not e.is_legacy and e.is_transactional else "false"
    p4 = (f',"leader_epoch":{e.partition_leader_epoch},"producer_id":{e.producer_id},'
          f'"producer_epoch":{e.producer_epoch},"sequence":')
    p5 = (f',"transactional":{transactional},"txn":{txn},"control":{ctl},"magic":{e.magic},'
          f'"codec":{_dumps(item.codec_name)},"batch_base_offset":{e.base_offset},'
          f'"source":{{"file":{file_json},"position":{e.position}}}}}\n')
    return p1, _TSTYPE[item.timestamp_type], p3, p4.encode(), p5.encode("utf-8", "surrogatepass")


def python_lines(item: BatchItem, broker: int) -> tuple[bytes, int]:
    """(the lines of the batch's selected records, how many) by the reference path."""
    head, tail = batch_fields(item)
    recs = item.records()
    if item.control is not None:  # each control record under its own type (a KRaft batch may hold several)
        objs = []
        for r in recs:
            ctype, epoch = record_control(r)
            objs.append(record_object(item, r, head, dict(tail, control={"type": ctype, "coordinator_epoch": epoch}),
                                      broker))
    else:
        objs = [record_object(item, r, head, tail, broker) for r in recs]
    text = "".join(_dumps(o) + "\n" for o in objs)
    return text.encode("utf-8", "surrogatepass"), len(recs)


class NdjsonSink:
    """Writes each partition's lines to the stream ``open_partition`` gives it (one file per partition, or one
    stream for all); ``fast`` (``render/export_accel.ndjson_fast``) formats whole v2 batches when it can."""

    keeps_markers = False

    def __init__(self, open_partition: Callable[[SourcePartition], tuple[IO[bytes], str]],
                 close_partition: Callable[[IO[bytes]], None],
                 fast: Callable[[BatchItem, int], tuple[bytes, int] | None] | None = None,
                 run_fast: Callable[..., Any] | None = None) -> None:
        self.open_partition = open_partition
        self.close_partition = close_partition
        self.fast = fast
        self.run_fast = run_fast
        self.part: SourcePartition | None = None
        self.out: IO[bytes] | None = None
        self.output = ""
        self.broker = -1

    def begin(self, part: SourcePartition) -> None:
        self.out, self.output = self.open_partition(part)
        self.broker = part.broker
        self.part = part

    def run(self, buf: Any, pos: int, next_offset: int | None, max_batch_size: int, file: str
            ) -> tuple[int, int, int, int, int, int] | None:
        """The lines of a run of plain v2 batches from ``pos`` in one compiled call (``_accel.export_ndjson_run``:
        the same bytes as ``batch`` for each; it takes only uncompressed, non-transactional, non-control batches
        that Exporter._file hands over whole). (next position, batches with records, records, first base offset,
        last offset of the last of them, last offset walked), or None without the accelerator."""
        if self.run_fast is None:
            return None
        assert self.out is not None and self.part is not None
        p1, p3, file_json = _constant_pieces(self.part, file, self.broker)
        text, used, npos, batches, records, first, last_taken, last = self.run_fast(
            buf, pos, len(buf), RUN_OUT, -(1 << 63) if next_offset is None else next_offset, max_batch_size,
            (p1, _TSTYPE["create"], _TSTYPE["logappend"], p3), file_json.encode("utf-8", "surrogatepass"))
        if used:
            with memoryview(text) as view:
                self.out.write(view[:used])
        return npos, batches, records, first, last_taken, last

    def batch(self, item: BatchItem) -> int:
        assert self.out is not None
        got = self.fast(item, self.broker) if self.fast is not None and item.control is None else None
        data, n = got if got is not None else python_lines(item, self.broker)
        if data:
            self.out.write(data)
        return n

    def end(self, part: SourcePartition, stats: PartitionStats) -> None:
        stats.output = self.output
        if self.out is not None:
            self.close_partition(self.out)
        self.out = None
