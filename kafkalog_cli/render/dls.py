"""DumpLogSegments text, per Kafka version (spec §3, errata-dump C): events from ``ops.dump`` in, lines out.

Every version difference is looked up in the ``Profile`` (``kafkalog_cli/versions.py``); this module holds the line
templates. Output goes to two streams like the Java tool: ``out`` (stdout) and ``err`` (stderr).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kafkalog_cli.format.batch import TIMESTAMP_TYPE_NAMES
from kafkalog_cli.format.codecs import CODEC_NAMES
from kafkalog_cli.format.text import decrement_sequence, int32, java_utf8
from kafkalog_cli.ops import dump as d
from kafkalog_cli.versions import Profile

Write = Callable[[str], None]


def _b(v: bool) -> str:
    return "true" if v else "false"


def _compact_json(data: dict) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


class DlsRenderer:
    def __init__(self, profile: Profile, options: d.DumpOptions, out: Write, err: Write,
                 out_bytes: Callable[[bytes | bytearray], None] | None = None) -> None:
        """``out_bytes``, when given, takes whole chunks of UTF-8 text lines (each ending in a newline) in the same
        stream as ``out``: the compiled formatter's output then goes to stdout without a str round trip."""
        self.p = profile
        self.o = options
        self.out = out
        self.err = err
        self.out_bytes = out_bytes
        self._partial = False  # stdout ends in a partial batch line (on_PartialBatch)
        self._legacy_base: tuple[tuple[int, int], int] = ((-1, -1), -1)  # (entry, first inner offset), 2.8's lines
        self._decoders: tuple | None | bool = False  # _fast_decoders: False until asked

    # ---------------------------------------------------------------------------------------------- helpers
    def codec(self, cid: int) -> str:
        name = CODEC_NAMES[cid]
        return name.upper() if self.p.codec_upper else name

    def handle(self, ev: object) -> None:
        """Render one event of ``ops.dump``: looked up by its type in ``_HANDLERS`` (end of this module), an explicit
        table, so renaming an event class cannot silently unhook its handler."""
        _HANDLERS[type(ev)](self, ev)

    # ---------------------------------------------------------------------------------------------- events
    def on_Ignored(self, ev: d.Ignored) -> None:
        self.err(f"Ignoring unknown file {ev.arg}")

    def on_FileBegin(self, ev: d.FileBegin) -> None:
        if self._partial:  # Kafka's tool would have stopped at the previous file's error; kafkalog goes on
            self.out("")
            self._partial = False
        self.out(f"Dumping {ev.arg}")

    def on_LogHeader(self, ev: d.LogHeader) -> None:
        if ev.kind == "log":
            self.out(self.p.log_header.format(base=ev.base_offset))
        elif ev.kind == "bootstrap":
            self.out("KRaft bootstrap snapshot")
        else:
            self.out(f"Snapshot end offset: {ev.end_offset}, epoch: {ev.epoch}")

    def on_BatchEvent(self, ev: d.BatchEvent) -> None:
        e = ev.entry
        p = self.p
        deep = self.o.deep
        if p.batch_shape == "g1":
            if deep:
                return  # 2.0-2.1 deep iteration prints record lines only
            ts_name = TIMESTAMP_TYPE_NAMES[e.timestamp_type]
            if e.is_legacy:
                self.out(
                    f"offset: {e.last_offset} position: {e.position} {ts_name}: {e.timestamp} isvalid: {_b(ev.valid)} "
                    f"size: {e.size} magic: {e.magic} compresscodec: {self.codec(e.codec)} crc: {e.crc}"
                )
            else:
                ctrl = f" isControl: {_b(e.is_control)}" if p.g1_is_control else ""
                self.out(
                    f"baseOffset: {e.base_offset} lastOffset: {e.last_offset} count: {e.records_count} "
                    f"baseSequence: {e.base_sequence} lastSequence: {e.last_sequence} producerId: {e.producer_id} "
                    f"producerEpoch: {e.producer_epoch} partitionLeaderEpoch: {e.partition_leader_epoch} "
                    f"isTransactional: {_b(e.is_transactional)}{ctrl} position: {e.position} {ts_name}: {e.max_timestamp} "
                    f"isvalid: {_b(ev.valid)} size: {e.size} magic: {e.magic} compresscodec: {self.codec(e.codec)} crc: {e.crc}"
                )
            return
        ts_name = TIMESTAMP_TYPE_NAMES[e.timestamp_type]
        if e.is_legacy:
            self.out(
                f"offset: {e.last_offset} position: {e.position} {ts_name}: {e.timestamp} size: {e.size} "
                f"magic: {e.magic} compresscodec: {self.codec(e.codec)} crc: {e.crc} isvalid: {_b(ev.valid)}"
            )
            return
        horizon = ""
        if p.delete_horizon:
            dh = e.delete_horizon_ms
            horizon = " deleteHorizonMs: " + ("OptionalLong.empty" if dh is None else f"OptionalLong[{dh}]")
        self.out(
            f"baseOffset: {e.base_offset} lastOffset: {e.last_offset} count: {e.records_count} "
            f"baseSequence: {e.base_sequence} lastSequence: {e.last_sequence} producerId: {e.producer_id} "
            f"producerEpoch: {e.producer_epoch} partitionLeaderEpoch: {e.partition_leader_epoch} "
            f"isTransactional: {_b(e.is_transactional)} isControl: {_b(e.is_control)}{horizon} position: {e.position} "
            f"{ts_name}: {e.max_timestamp} size: {e.size} magic: {e.magic} compresscodec: {self.codec(e.codec)} "
            f"crc: {e.crc} isvalid: {_b(ev.valid)}"
        )

    def control_suffix(self, c: d.ControlInfo | None) -> str:
        if c is None:
            return ""
        if c.type in (0, 1):
            return f" endTxnMarker: {'ABORT' if c.type == 0 else 'COMMIT'} coordinatorEpoch: {c.coordinator_epoch}"
        label = self.p.control_json.get(c.type)
        if label is not None and c.data is not None:
            return " " + label + _compact_json(c.data)
        name = self.p.control_names.get(c.type, "UNKNOWN")
        return f" controlType: {name}({c.type})"

    def on_RecordEvent(self, ev: d.RecordEvent) -> None:
        e, r, p = ev.entry, ev.record, self.p
        style = p.record_style
        ts_name = TIMESTAMP_TYPE_NAMES[e.timestamp_type]
        is_v2 = not e.is_legacy
        header_keys = ""
        if is_v2:
            header_keys = "[" + ",".join(java_utf8(k) for k, _v in r.headers) + "]"
        if style == "g1":
            line = (
                f"offset: {r.offset} position: {e.position} {ts_name}: {r.timestamp} "
                f"isvalid: {_b(r.is_valid if r.is_valid is not None else True)} keysize: {r.key_size} "
                f"valuesize: {r.value_size} magic: {e.magic} compresscodec: {self.codec(e.codec)}"
            )
            if is_v2:
                line += (
                    f" producerId: {e.producer_id} producerEpoch: {e.producer_epoch} sequence: {r.sequence} "
                    f"isTransactional: {_b(e.is_transactional)} headerKeys: {header_keys}"
                )
            else:
                line += f" crc: {r.crc}"
            if e.is_control:
                line += self.control_suffix(ev.control)
            else:
                line += self._key_payload(ev, " ")[0]
            self.out(line)
            return
        if style == "keysize":
            line = f"| offset: {r.offset} {ts_name}: {r.timestamp} keysize: {r.key_size} valuesize: {r.value_size}"
            if is_v2:
                line += f" sequence: {r.sequence} headerKeys: {header_keys}"
            else:
                line += f" crc: {r.crc} isvalid: {_b(bool(r.is_valid))}"
            if e.is_control:
                line += self.control_suffix(ev.control)
            else:
                line += self._key_payload(ev, " ")[0]
            self.out(line)
            return
        # compact (3.0+) and verbose (2.8)
        prefix = "| "
        line = ""
        if not self.o.skip_record_metadata:
            if style == "verbose":
                crc = "null" if is_v2 else str(r.crc)
                base = e.base_offset
                if not is_v2:
                    # a legacy wrapper's baseOffset is its first inner record's offset (AbstractLegacyRecordBatch
                    # .baseOffset iterates it), not the wrapper's offset: remember the first record of each entry
                    if self._legacy_base[0] != (e.position, e.last_offset):
                        self._legacy_base = ((e.position, e.last_offset), r.offset)
                    base = self._legacy_base[1]
                valid = "true" if is_v2 else _b(bool(r.is_valid))
                line = (
                    f"| offset: {r.offset} isValid: {valid} crc: {crc} keySize: {r.key_size} valueSize: {r.value_size} "
                    f"{ts_name}: {r.timestamp} baseOffset: {base} lastOffset: {e.last_offset} "
                    f"baseSequence: {e.base_sequence} lastSequence: {e.last_sequence} producerEpoch: {e.producer_epoch} "
                    f"partitionLeaderEpoch: {e.partition_leader_epoch} batchSize: {e.size} magic: {e.magic} "
                    f"compressType: {CODEC_NAMES[e.codec].upper()} position: {e.position}"
                )
                if is_v2:
                    line += f" sequence: {r.sequence} headerKeys: {header_keys}"
                else:
                    line += f" crc: {r.crc} isvalid: {_b(bool(r.is_valid))}"
            else:
                line = f"| offset: {r.offset} {ts_name}: {r.timestamp} keySize: {r.key_size} valueSize: {r.value_size}"
                if is_v2:
                    line += f" sequence: {r.sequence} headerKeys: {header_keys}"
                else:
                    line += f" isValid: {_b(bool(r.is_valid))} crc: {r.crc}" + ("}" if p.legacy_brace else "")
            if e.is_control:
                line += self.control_suffix(ev.control)
            prefix = " "
        if self.o.print_data_log and not e.is_control:
            text, prefix = self._key_payload(ev, prefix)
            line += text
        self.out(line)

    def on_PartialBatch(self, ev: d.PartialBatch) -> None:
        """What DumpLogSegments (2.2+) prints of a batch line before it fails on an unknown codec id: its first
        ``print`` (no newline) ends before `` position:``, the ``println`` that would print the codec throws
        (printBatchLevel, DumpLogSegments.scala:354-366 at 4.0, :316-328 at 2.8). A legacy entry's first part is
        ``offset: N``; a v2 batch's runs to ``isControl`` (``deleteHorizonMs`` from 3.2). 2.0-2.1 build the whole
        line first, so nothing."""
        e = ev.entry
        if self.p.batch_shape != "modern":
            return
        if e.is_legacy:
            text = f"offset: {e.last_offset}"
        else:
            text = (
                f"baseOffset: {e.base_offset} lastOffset: {e.last_offset} count: {e.records_count} "
                f"baseSequence: {e.base_sequence} lastSequence: {e.last_sequence} producerId: {e.producer_id} "
                f"producerEpoch: {e.producer_epoch} partitionLeaderEpoch: {e.partition_leader_epoch} "
                f"isTransactional: {_b(e.is_transactional)} isControl: {_b(e.is_control)}"
            )
            if self.p.delete_horizon:
                dh = e.delete_horizon_ms
                text += " deleteHorizonMs: " + ("OptionalLong.empty" if dh is None else f"OptionalLong[{dh}]")
        if self.out_bytes is None:
            self.out(text)  # a stdout that takes no bytes: the partial line as a line
            return
        self.out_bytes(text.encode("utf-8"))  # without a newline, as Kafka leaves it
        self._partial = True

    def on_PartialRecord(self, ev: d.PartialRecord) -> None:
        """A record line up to where Kafka's tool stops when the decoder throws: the metadata, without a newline
        (nothing with --skip-record-metadata)."""
        lines: list[str] = []
        out, self.out = self.out, lines.append
        try:
            self.on_RecordEvent(d.RecordEvent(ev.entry, ev.record))
        finally:
            self.out = out
        text = "".join(lines)
        if not text:
            return
        if self.out_bytes is None:
            self.out(text)
            return
        self.out_bytes(text.encode("utf-8"))
        self._partial = True

    def on_FormattedBatch(self, ev: d.FormattedBatch) -> None:
        text = ev.text
        if isinstance(text, bytes):
            assert self.out_bytes is not None  # bytes are asked for only when out_bytes was given (as_bytes)
            self.out_bytes(text)
        else:
            self.out(text[:-1])

    def on_FormattedRun(self, ev: d.FormattedRun) -> None:
        assert self.out_bytes is not None  # runs are formatted only for a renderer with out_bytes (fast_run)
        self.out_bytes(ev.text)

    def fast_run(self):  # noqa: ANN201
        """The compiled formatter of whole runs of clean batches (``_accel.dump_run``) where ``fast_formatter``
        applies and the text goes out as bytes, else None."""
        from kafkalog_cli.render import accel

        if self.out_bytes is None or self.fast_formatter() is None:
            return None
        p = self.p
        return accel.make_run(json=False, print_data=bool(self.o.print_data_log), codec_upper=bool(p.codec_upper),
                              print_horizon=bool(p.delete_horizon), decoders=self._fast_decoders())

    def fast_formatter(self):  # noqa: ANN201
        """The compiled batch formatter where it reproduces this renderer's lines exactly, else None."""
        from kafkalog_cli.render import accel
        from kafkalog_cli.render.parsers import DecoderParser, string_decoder

        o, p = self.o, self.p
        if p.batch_shape != "modern":
            return None
        records = p.record_style == "compact" and not o.skip_record_metadata
        if o.print_data_log:
            parser = o.parser
            records = records and (
                (isinstance(parser, DecoderParser)
                 and parser.key_decoder is string_decoder
                 and parser.value_decoder is string_decoder
                 and bool(parser.tombstone_key))
                or self._fast_decoders() is not None
            )
        if o.deep and not records:
            return None
        return accel.make_formatter(
            records=records, print_data=o.print_data_log, codec_upper=bool(p.codec_upper),
            print_horizon=bool(p.delete_horizon), as_bytes=self.out_bytes is not None, decoders=self._fast_decoders(),
        )

    def _fast_decoders(self):  # noqa: ANN202
        """The record parser's callables for the compiled formatter (``SchemaRegistryParser.fast_decoders``), made
        once; None for any other parser (the plain UTF-8 text, or the Python tier)."""
        if self._decoders is False:
            from kafkalog_cli.internal_topics.schema_decode import SchemaRegistryParser
            from kafkalog_cli.render.parsers import string_decoder

            parser = self.o.parser if self.o.print_data_log else None
            self._decoders = (parser.fast_decoders(string_decoder) if isinstance(parser, SchemaRegistryParser)
                              else None)
        return self._decoders

    def _key_payload(self, ev: d.RecordEvent, prefix: str) -> tuple[str, str]:
        if not self.o.print_data_log:
            return "", prefix
        text = ""
        if ev.key_text is not None:
            text += prefix + "key: " + ev.key_text
            prefix = " "
        if ev.payload_text is not None:
            text += (prefix if self.p.java_payload_prefix else " ") + "payload: " + ev.payload_text
        return text, prefix

    def on_IndexEntryEvent(self, ev: d.IndexEntryEvent) -> None:
        self.out(f"offset: {ev.offset} position: {ev.position}")

    def on_TimeIndexEntryEvent(self, ev: d.TimeIndexEntryEvent) -> None:
        self.out(f"timestamp: {ev.timestamp} offset: {ev.offset}")

    def on_IndexEmpty(self, ev: d.IndexEmpty) -> None:
        if self.p.index_is_empty_line:
            self.out(f"{ev.arg} is empty.")
        elif self.o.index_sanity_check:
            self.out(f"{ev.arg} passed sanity check.")

    def on_SanityPassed(self, ev: d.SanityPassed) -> None:
        self.out(f"{ev.arg} passed sanity check.")

    def on_SnapshotEntryEvent(self, ev: d.SnapshotEntryEvent) -> None:
        e, p = ev.entry, self.p
        if p.snapshot_txn_first == "optional-long":
            txn = "OptionalLong.empty" if e.current_txn_first_offset < 0 else f"OptionalLong[{e.current_txn_first_offset}]"
        else:
            txn = "None" if e.current_txn_first_offset < 0 else f"Some({e.current_txn_first_offset})"
        line = (
            f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} coordinatorEpoch: {e.coordinator_epoch} "
            f"currentTxnFirstOffset: {txn} "
        )
        if p.snapshot_last_timestamp:
            line += f"lastTimestamp: {e.timestamp} "
        if p.snapshot_batch_always or e.last_offset >= 0:
            if p.snapshot_first_seq_wrap:
                first_seq = decrement_sequence(e.last_sequence, e.offset_delta)
            else:
                first_seq = int32(e.last_sequence - e.offset_delta)
            line += (
                f"firstSequence: {first_seq} lastSequence: {e.last_sequence} lastOffset: {e.last_offset} "
                f"offsetDelta: {e.offset_delta} timestamp: {e.timestamp}"
            )
        elif not p.snapshot_trailing_space:
            line = line.rstrip(" ")
        self.out(line)

    def on_SnapshotFailure(self, ev: d.SnapshotFailure) -> None:
        exc = ev.error
        kind = getattr(exc, "kind", "")
        if kind == "crc":
            self.err(exc.message)
        elif kind == "version":
            if self.p.snapshot_error_wrap == "wrapped":
                self.err(f"Snapshot failed schema validation: {exc.message}")
            else:
                self.err(exc.message)
        else:
            if self.p.snapshot_error_wrap == "wrapped":  # the generated reader's message, or null (an underflow)
                self.err(f"Snapshot failed schema validation: {getattr(exc, 'generated', None) or 'null'}")
            else:
                self.err(f"Snapshot failed schema validation: {exc.message}")

    def on_TxnEntryEvent(self, ev: d.TxnEntryEvent) -> None:
        e = ev.entry
        self.out(
            f"version: {e.version} producerId: {e.producer_id} firstOffset: {e.first_offset} "
            f"lastOffset: {e.last_offset} lastStableOffset: {e.last_stable_offset}"
        )

    def on_CheckpointEvent(self, ev: d.CheckpointEvent) -> None:
        # Kafka's tool has no output for these files (it aborts or ignores them); this is kafkalog's own format.
        if ev.kind == "leader-epoch-checkpoint":
            self.out(f"Leader epoch checkpoint version: {ev.version} entries: {len(ev.entries)}")
            for row in ev.entries:
                self.out(f"epoch: {row['epoch']} startOffset: {row['startOffset']}")
        elif ev.kind == "broker-checkpoint":
            self.out(f"Checkpoint version: {ev.version} entries: {len(ev.entries)}")
            for row in ev.entries:
                self.out(f"topic: {row['topic']} partition: {row['partition']} offset: {row['offset']}")
        elif ev.kind == "partition-metadata":
            self.out(f"version: {ev.version} topicId: {ev.entries[0]['topicId']}")
        elif ev.kind == "quorum-state":
            self.out("quorum-state: " + _compact_json(ev.entries[0]))
        else:
            self.out(f"Checkpoint version: {ev.version} entries: {len(ev.entries)}")
            for row in ev.entries:
                self.out(" ".join(row["fields"]))

    def on_TrailingBytes(self, ev: d.TrailingBytes) -> None:
        if ev.reported:
            self.out(f"Found {ev.count} invalid bytes at the end of {ev.name}")

    def on_ReadFindingEvent(self, ev: d.ReadFindingEvent) -> None:
        f = ev.finding
        self.err(f"kafkalog: {'note' if f.is_note else 'error'}: {f.file} bytes [{f.start}, {f.end}): {f.kind}: "
                 f"{f.message}" if f.end else f"kafkalog: note: {f.file}: {f.kind}: {f.message}")

    def on_FileError(self, ev: d.FileError) -> None:
        self.err(f"kafkalog: error: {ev.error.describe()}")
        hint = d.hint_for(ev.error)
        if hint:
            self.err(f"hint: {hint}")

    # ---------------------------------------------------------------------------------------------- summary
    def _ordered(self, found: dict[str, list[tuple[int, int]]]) -> list[tuple[str, list[tuple[int, int]]]]:
        """The files of one summary map in the order Kafka's tool prints them (``Profile.summary_order``)."""
        if self.p.summary_order == "insertion" or len(found) < 2:
            return list(found.items())
        from kafkalog_cli.format.javahash import java_string_hash, scala213_order

        return [(k, found[k]) for k in scala213_order(list(found), java_string_hash)]

    def summary(self, s: d.DumpSummary) -> None:
        for path, items in self._ordered(s.index_mismatches):
            self.err(f"Mismatches in :{path}")
            for idx_off, log_off in reversed(items):
                self.err(f"  Index offset: {idx_off}, log offset: {log_off}")
        for path, items in self._ordered(s.ts_mismatches):
            self.err(f"Found timestamp mismatch in :{path}")
            for idx_ts, log_ts in items:
                self.err(f"  Index timestamp: {idx_ts}, log timestamp: {log_ts}")
        for path, items in self._ordered(s.out_of_order):
            self.err(f"Found out of order timestamp in :{path}")
            for idx_ts, prev in items:
                self.err(f"  Index timestamp: {idx_ts}, Previously indexed timestamp: {prev}")
        for _path, items in self._ordered(s.not_found):
            self.err("The following indexed offsets are not found in the log.")
            for idx_off, log_off in items:
                self.err(f"Indexed offset: {idx_off}, found log offset: {log_off}")
        for path, items in self._ordered(s.gaps):
            self.err(self.p.gap_header.format(path=path))
            ordered = sorted(items) if self.o.gap_tracker == "java" else list(reversed(items))
            for prev, nxt in ordered:
                self.err(f"  {prev} is followed by {nxt}")


# event type -> handler; tests/test_render_dispatch.py checks that every event class and every on_* method is here
_HANDLERS: dict[type, Callable[[DlsRenderer, Any], None]] = {
    d.Ignored: DlsRenderer.on_Ignored,
    d.FileBegin: DlsRenderer.on_FileBegin,
    d.LogHeader: DlsRenderer.on_LogHeader,
    d.BatchEvent: DlsRenderer.on_BatchEvent,
    d.RecordEvent: DlsRenderer.on_RecordEvent,
    d.PartialBatch: DlsRenderer.on_PartialBatch,
    d.PartialRecord: DlsRenderer.on_PartialRecord,
    d.FormattedBatch: DlsRenderer.on_FormattedBatch,
    d.FormattedRun: DlsRenderer.on_FormattedRun,
    d.IndexEntryEvent: DlsRenderer.on_IndexEntryEvent,
    d.TimeIndexEntryEvent: DlsRenderer.on_TimeIndexEntryEvent,
    d.IndexEmpty: DlsRenderer.on_IndexEmpty,
    d.SanityPassed: DlsRenderer.on_SanityPassed,
    d.SnapshotEntryEvent: DlsRenderer.on_SnapshotEntryEvent,
    d.SnapshotFailure: DlsRenderer.on_SnapshotFailure,
    d.TxnEntryEvent: DlsRenderer.on_TxnEntryEvent,
    d.CheckpointEvent: DlsRenderer.on_CheckpointEvent,
    d.TrailingBytes: DlsRenderer.on_TrailingBytes,
    d.ReadFindingEvent: DlsRenderer.on_ReadFindingEvent,
    d.FileError: DlsRenderer.on_FileError,
}
