"""``--format json`` for dump: one JSON object per line, a stable schema documented in docs/output.md ("JSON").

Every object has ``"type"``: file, header, batch, record, index_entry, timeindex_entry, snapshot_entry,
txn_entry, checkpoint, trailing_bytes, notice, error, ignored, summary. Bytes that are not text (keys, values,
header values) are given as base64 in ``*_b64`` fields beside the decoded text.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from kafkalog_cli.format.batch import TIMESTAMP_TYPE_NAMES
from kafkalog_cli.format.codecs import CODEC_NAMES
from kafkalog_cli.format.text import java_utf8
from kafkalog_cli.ops import dump as d
from kafkalog_cli.render.jsondoc import SCHEMA_VERSION

Write = Callable[[str], None]
# the dump events keep Kafka's text labels (DumpLogSegments prints "startOffset:"); JSON keys are snake_case
_CHECKPOINT_KEYS = {"startOffset": "start_offset", "topicId": "topic_id"}


def _b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode()


class JsonRenderer:
    def __init__(self, options: d.DumpOptions, out: Write, err: Write,
                 out_bytes: Callable[[bytes | bytearray], None] | None = None) -> None:
        """``out_bytes``, when given, takes chunks of UTF-8 lines for the same stream as ``out`` (the compiled path)."""
        self.o = options
        self.out = out
        self.err = err
        self.out_bytes = out_bytes
        self.file: str | None = None
        self._file_json_of: object = object()
        self._file_json_bytes = b""

    def emit(self, obj: dict) -> None:
        self.out(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))

    def handle(self, ev: object) -> None:
        """Render one event of ``ops.dump``: looked up by its type in ``_HANDLERS`` (end of this module), an explicit
        table, so renaming an event class cannot silently unhook its handler."""
        _HANDLERS[type(ev)](self, ev)

    def on_Ignored(self, ev: d.Ignored) -> None:
        self.emit({"type": "ignored", "file": ev.arg, "message": f"Ignoring unknown file {ev.arg}"})

    def on_FileBegin(self, ev: d.FileBegin) -> None:
        self.file = ev.arg
        self.emit({"type": "file", "schema_version": SCHEMA_VERSION, "file": ev.arg, "absolute_path": ev.path, "kind": ev.kind})

    def on_LogHeader(self, ev: d.LogHeader) -> None:
        self.emit(
            {"type": "header", "file": self.file, "kind": ev.kind, "base_offset": ev.base_offset,
             "snapshot_end_offset": ev.end_offset, "snapshot_epoch": ev.epoch}
        )

    def on_BatchEvent(self, ev: d.BatchEvent) -> None:
        self.emit(self._batch_obj(ev.entry, ev.valid, ev.computed_crc))

    def _batch_obj(self, e: d.Entry, valid: bool, computed_crc: int) -> dict:
        obj = {
            "type": "batch",
            "file": self.file,
            "position": e.position,
            "magic": e.magic,
            "base_offset": e.base_offset,
            "last_offset": e.last_offset,
            "size": e.size,
            "compress_codec": CODEC_NAMES[e.codec],
            "timestamp_type": TIMESTAMP_TYPE_NAMES[e.timestamp_type],
            "crc": e.crc,
            "computed_crc": computed_crc,
            "is_valid": valid,
        }
        if e.is_legacy:
            obj["timestamp"] = e.timestamp
        else:
            obj.update(
                {
                    "count": e.records_count,
                    "base_sequence": e.base_sequence,
                    "last_sequence": e.last_sequence,
                    "producer_id": e.producer_id,
                    "producer_epoch": e.producer_epoch,
                    "partition_leader_epoch": e.partition_leader_epoch,
                    "is_transactional": e.is_transactional,
                    "is_control": e.is_control,
                    "delete_horizon_ms": e.delete_horizon_ms,
                    "base_timestamp": e.base_timestamp,
                    "max_timestamp": e.max_timestamp,
                    "attributes": e.attributes,
                }
            )
        return obj

    def on_FormattedBatch(self, ev: d.FormattedBatch) -> None:
        text = ev.text
        if isinstance(text, bytes):
            if self.out_bytes is not None:
                self.out_bytes(text)
                return
            text = text.decode()
        self.out(text[:-1])

    def on_FormattedRun(self, ev: d.FormattedRun) -> None:
        assert self.out_bytes is not None  # runs are formatted only for a renderer with out_bytes (fast_run)
        self.out_bytes(ev.text)

    def _file_json(self) -> bytes:
        """The current file's JSON string as UTF-8 (a non-UTF-8 path arrives as surrogate escapes: replaced, as the
        text stream does), made once per file."""
        if self._file_json_of != self.file:
            self._file_json_of = self.file
            self._file_json_bytes = json.dumps(self.file, ensure_ascii=False).encode("utf-8", "replace")
        return self._file_json_bytes

    def fast_run(self):  # noqa: ANN201
        """The compiled formatter of whole runs of clean batches (``_accel.dump_run``) where ``fast_formatter``
        applies and the lines go out as bytes, else None."""
        from kafkalog_cli.render import accel

        if self.out_bytes is None or self.fast_formatter() is None:
            return None
        return accel.make_run(json=True, print_data=bool(self.o.print_data_log), file_json=self._file_json)

    def fast_formatter(self):  # noqa: ANN201
        """The compiled formatter of a deep dump's record objects (``_accel.json_records``) where it reproduces
        ``on_BatchEvent`` + ``on_RecordEvent`` exactly (default String decoders, no internal-topic decoder), else
        None. It declines batch by batch (invalid CRC, control batches, anything malformed or not strict UTF-8);
        the events path, the reference, prints those."""
        from kafkalog_cli.render import accel
        from kafkalog_cli.render.parsers import DecoderParser, string_decoder

        o = self.o
        if not accel.available() or not hasattr(accel._accel, "json_records") or not o.deep:
            return None
        if o.json_decoder is not None or o.skip_record_metadata:
            return None
        parser = o.parser
        if o.print_data_log and not (isinstance(parser, DecoderParser) and parser.key_decoder is string_decoder
                                     and parser.value_decoder is string_decoder and parser.tombstone_key):
            return None
        json_records = accel._accel.json_records
        print_data = bool(o.print_data_log)
        ts_names = {k: v.encode() for k, v in TIMESTAMP_TYPE_NAMES.items()}
        codec_names = {k: v.encode() for k, v in CODEC_NAMES.items()}
        def format_batch(batch, buf, valid: bool, deep: bool, last: int, java_gaps: bool, limit: int):  # noqa: ANN001, ANN202
            span = accel.records_span(batch, buf, limit) if deep and valid else None
            if span is None:
                return None
            data, start, end = span
            # the batch object and the record objects in one C call (the batch dict + json.dumps was ~25 % of a
            # JSON dump of 100-byte records)
            return json_records(data, start, end, accel.header_tuple(batch, valid), self._file_json(), ts_names[batch.timestamp_type],
                                codec_names[batch.codec], print_data, last, java_gaps)

        return format_batch

    def on_RecordEvent(self, ev: d.RecordEvent) -> None:
        e, r = ev.entry, ev.record
        obj: dict[str, Any] = {
            "type": "record",
            "file": self.file,
            "batch_position": e.position,
            "offset": r.offset,
            "timestamp_type": TIMESTAMP_TYPE_NAMES[e.timestamp_type],
            "timestamp": r.timestamp,
            "key_size": r.key_size,
            "value_size": r.value_size,
        }
        if e.is_legacy:
            obj["is_valid"] = r.is_valid
            obj["crc"] = r.crc
        else:
            obj["sequence"] = r.sequence
            obj["headers"] = [
                {"key": java_utf8(k), "value": None if v is None else java_utf8(v), "value_b64": _b64(v)} for k, v in r.headers
            ]
        if ev.control is not None:
            c = ev.control
            ctrl: dict[str, Any] = {"type": c.type, "version": c.version}
            if c.coordinator_epoch is not None:
                ctrl["end_txn_marker"] = "ABORT" if c.type == 0 else "COMMIT"
                ctrl["coordinator_epoch"] = c.coordinator_epoch
            if c.data is not None:
                ctrl["data"] = c.data
            obj["control"] = ctrl
        if self.o.print_data_log and not e.is_control:
            obj["key"] = ev.key_text
            obj["payload"] = ev.payload_text
            obj["key_b64"] = _b64(r.key)
            obj["value_b64"] = _b64(r.value)
            if self.o.json_decoder is not None:
                obj["decoded"] = self.o.json_decoder(r)
        self.emit(obj)

    def on_PartialBatch(self, ev: d.PartialBatch) -> None:
        pass  # the error object that follows carries the position and the codec id

    def on_PartialRecord(self, ev: d.PartialRecord) -> None:
        pass  # the error object that follows names the record

    def on_IndexEntryEvent(self, ev: d.IndexEntryEvent) -> None:
        self.emit({"type": "index_entry", "file": self.file, "offset": ev.offset, "position": ev.position})

    def on_TimeIndexEntryEvent(self, ev: d.TimeIndexEntryEvent) -> None:
        self.emit({"type": "timeindex_entry", "file": self.file, "timestamp": ev.timestamp, "offset": ev.offset})

    def on_IndexEmpty(self, ev: d.IndexEmpty) -> None:
        self.emit({"type": "notice", "file": self.file, "notice": "empty", "message": f"{ev.arg} is empty."})

    def on_SanityPassed(self, ev: d.SanityPassed) -> None:
        self.emit({"type": "notice", "file": self.file, "notice": "sanity_passed", "message": f"{ev.arg} passed sanity check."})

    def on_SnapshotEntryEvent(self, ev: d.SnapshotEntryEvent) -> None:
        e = ev.entry
        self.emit(
            {"type": "snapshot_entry", "file": self.file, "producer_id": e.producer_id, "producer_epoch": e.producer_epoch,
             "last_sequence": e.last_sequence, "last_offset": e.last_offset, "offset_delta": e.offset_delta,
             "timestamp": e.timestamp, "coordinator_epoch": e.coordinator_epoch,
             "current_txn_first_offset": e.current_txn_first_offset}
        )

    def on_SnapshotFailure(self, ev: d.SnapshotFailure) -> None:
        self.emit({"type": "error", "file": self.file, "kind": "snapshot_" + getattr(ev.error, "kind", "schema"),
                   "message": ev.error.message})

    def on_TxnEntryEvent(self, ev: d.TxnEntryEvent) -> None:
        e = ev.entry
        self.emit({"type": "txn_entry", "file": self.file, "version": e.version, "producer_id": e.producer_id,
                   "first_offset": e.first_offset, "last_offset": e.last_offset, "last_stable_offset": e.last_stable_offset})

    def on_CheckpointEvent(self, ev: d.CheckpointEvent) -> None:
        entries = [{_CHECKPOINT_KEYS.get(k, k): v for k, v in e.items()} for e in ev.entries]
        self.emit({"type": "checkpoint", "file": self.file, "kind": ev.kind, "version": ev.version, "entries": entries})

    def on_TrailingBytes(self, ev: d.TrailingBytes) -> None:
        self.emit({"type": "trailing_bytes", "file": self.file, "count": ev.count})

    def on_ReadFindingEvent(self, ev: d.ReadFindingEvent) -> None:
        f = ev.finding
        self.emit({"type": "read_finding", "file": f.file, "kind": f.kind, "start": f.start, "end": f.end,
                   "severity": "info" if f.is_note else "error", "message": f.message})

    def on_FileError(self, ev: d.FileError) -> None:
        e = ev.error
        self.emit({"type": "error", "file": e.file or self.file, "position": e.position, "kind": type(e).__name__,
                   "message": e.message, "expected": e.expected, "found": e.found, "unreadable": ev.unreadable})

    def summary(self, s: d.DumpSummary) -> None:
        disk = {"unreadable_ranges": s.unreadable_ranges, "notes": s.notes} if s.unreadable_ranges or s.notes else {}
        self.emit(
            {
                **disk,
                "type": "summary",
                "schema_version": SCHEMA_VERSION,
                "files": s.files,
                "batches": s.batches,
                "records": s.records,
                "invalid_batches": s.invalid_batches,
                "files_with_trailing_bytes": s.trailing_files,
                "errors": s.errors,
                "unreadable": s.unreadable,
                "index_mismatches": {k: [list(x) for x in v] for k, v in s.index_mismatches.items()},
                "timestamp_mismatches": {k: [list(x) for x in v] for k, v in s.ts_mismatches.items()},
                "out_of_order_timestamps": {k: [list(x) for x in v] for k, v in s.out_of_order.items()},
                "indexed_offsets_not_found": {k: [list(x) for x in v] for k, v in s.not_found.items()},
                "non_consecutive_offsets": {k: [list(x) for x in v] for k, v in s.gaps.items()},
                "exit_code": s.exit_code(),
            }
        )


# event type -> handler; tests/test_render_dispatch.py checks that every event class and every on_* method is here
_HANDLERS: dict[type, Callable[[JsonRenderer, Any], None]] = {
    d.Ignored: JsonRenderer.on_Ignored,
    d.FileBegin: JsonRenderer.on_FileBegin,
    d.LogHeader: JsonRenderer.on_LogHeader,
    d.BatchEvent: JsonRenderer.on_BatchEvent,
    d.FormattedBatch: JsonRenderer.on_FormattedBatch,
    d.FormattedRun: JsonRenderer.on_FormattedRun,
    d.RecordEvent: JsonRenderer.on_RecordEvent,
    d.PartialBatch: JsonRenderer.on_PartialBatch,
    d.PartialRecord: JsonRenderer.on_PartialRecord,
    d.IndexEntryEvent: JsonRenderer.on_IndexEntryEvent,
    d.TimeIndexEntryEvent: JsonRenderer.on_TimeIndexEntryEvent,
    d.IndexEmpty: JsonRenderer.on_IndexEmpty,
    d.SanityPassed: JsonRenderer.on_SanityPassed,
    d.SnapshotEntryEvent: JsonRenderer.on_SnapshotEntryEvent,
    d.SnapshotFailure: JsonRenderer.on_SnapshotFailure,
    d.TxnEntryEvent: JsonRenderer.on_TxnEntryEvent,
    d.CheckpointEvent: JsonRenderer.on_CheckpointEvent,
    d.TrailingBytes: JsonRenderer.on_TrailingBytes,
    d.ReadFindingEvent: JsonRenderer.on_ReadFindingEvent,
    d.FileError: JsonRenderer.on_FileError,
}
