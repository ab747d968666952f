"""``export --format kafka``: a log directory of real partition directories that Kafka's own loader accepts as they
are, and whose DumpLogSegments output shows the source's records.

What is written, per partition ``<topic>-<partition>`` (the broker's files after a clean shutdown):

* one ``.log`` per source segment that contributed a batch, named by its first batch's base offset. A v2 batch
  exported whole is copied byte for byte (offsets, timestamps, producer fields, epoch, codec, CRC: the original).
  A batch exported in part (a window's edge, offsets an earlier file held) is rebuilt as the log cleaner rebuilds
  a batch it keeps records of (``MemoryRecords.buildRetainedRecordsInto``: same base offset, last offset delta,
  producer fields, epoch, codec and timestamp type), except that a batch whose base offset an earlier batch
  already wrote starts at its first kept record (base sequence moved with it), so offsets only increase.
  A v0/v1 entry is converted to one v2 batch (a legacy partition cannot be written by a current broker): its
  records keep their offsets, timestamps and timestamp type (v0: none, written as -1 CreateTime), uncompressed,
  no producer id, leader epoch -1.
* ``.index`` / ``.timeindex`` of each segment by the broker's recovery rule (``broker/log_segment.IndexBuilder``, fed batch by batch,
  index.interval.bytes 4096), ``.txnindex`` where an ABORT marker closes a transaction (the producer-state replay
  of ``broker/producer_state_manager``, as the broker appends it), the producer snapshot at the log end offset
  (``ProducerStateManager.takeSnapshot`` at a clean close) and at each later segment's base offset (the one
  ``UnifiedLog.roll`` takes), ``leader-epoch-checkpoint`` (the first batch of each
  higher epoch, ``LogSegment.recover``'s rule).
* in the log dir: ``recovery-point-offset-checkpoint`` (every partition at its log end: nothing to recover) and an
  empty ``log-start-offset-checkpoint`` (the log starts at its first segment, as Kafka writes it then).

Transaction markers are always written (without its marker a committed transaction would be open forever and
block read_committed consumers at its first offset).

Kafka (trunk 1eb7644): the retained-records rebuild is ``MemoryRecords.buildRetainedRecordsInto``
(MemoryRecords.java:292); the roll's snapshot ``UnifiedLog.roll`` (UnifiedLog.scala:1715, 1726), the close's
snapshot at the log end (UnifiedLog.scala:660); an unclean load snapshots the last two segment bases and the log
end (``UnifiedLog.rebuildProducerState``, storage UnifiedLog.java:65-73), which is why every later segment's base
has its snapshot here: Kafka's Load then finds nothing to add (tests/test_export_oracle.py).
"""

from __future__ import annotations

import os
from typing import IO

from kafkalog_cli.broker import producer_state_manager as pst
from kafkalog_cli.broker.checkpoints import LOG_START_FILE, RECOVERY_POINT_FILE
from kafkalog_cli.broker.leader_epoch_cache import first_of_each_higher_epoch, truncate_from_start
from kafkalog_cli.broker.log_segment import IndexBuilder
from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.format.batch import LOG_APPEND_TIME, Batch, Record
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.format.text import increment_sequence
from kafkalog_cli.ops.export import BatchItem, Destination, PartitionStats, SourcePartition
from kafkalog_cli.storage import accel, layout
from kafkalog_cli.storage import companions as comp


def retained_batch(item: BatchItem, kept: list[Record], after: int | None) -> bytes:
    """A v2 batch holding ``kept`` of ``item``'s records (module docstring); ``after``: the next offset the
    partition may use (the base moves up to the first kept record when the original base is below it)."""
    b = item.entry
    if b.is_legacy:
        first = kept[0]
        log_append = b.timestamp_type == LOG_APPEND_TIME
        specs = [RecordSpec(key=r.key, value=r.value, headers=r.headers, timestamp=r.timestamp,
                            offset_delta=r.offset - first.offset) for r in kept]
        return encode_batch(specs, base_offset=first.offset, base_timestamp=first.timestamp,
                            timestamp_type=1 if log_append else 0,
                            max_timestamp=b.timestamp if log_append else None)
    base = b.base_offset
    base_seq = b.base_sequence
    if after is not None and base < after:
        base = kept[0].offset
        if base_seq >= 0:
            base_seq = increment_sequence(base_seq, base - b.base_offset)
    specs = [RecordSpec(key=r.key, value=r.value, headers=r.headers, timestamp=r.timestamp,
                        offset_delta=r.offset - base, attributes=r.attributes) for r in kept]
    return encode_batch(
        specs, base_offset=base, codec=b.codec, timestamp_type=b.timestamp_type,
        base_timestamp=kept[0].timestamp if b.timestamp_type != LOG_APPEND_TIME else b.base_timestamp,
        max_timestamp=b.max_timestamp if b.timestamp_type == LOG_APPEND_TIME else None,
        transactional=b.is_transactional, control=b.is_control,
        producer_id=b.producer_id, producer_epoch=b.producer_epoch, base_sequence=base_seq,
        partition_leader_epoch=b.partition_leader_epoch,
        last_offset_delta=b.last_offset - base if base == b.base_offset else kept[-1].offset - base,
    )


class KafkaDirSink:
    """Writes partition directories into a ``Destination`` (a directory)."""

    keeps_markers = True

    def __init__(self, dest: Destination) -> None:
        self.dest = dest
        self.recovery_points: list[tuple[str, int, int]] = []
        self.log_starts: list[tuple[str, int, int]] = []  # a source's log start offset above its first segment's base
        self._reset()

    def _reset(self) -> None:
        self.pdir = ""
        self.name = ""
        self.log: IO[bytes] | None = None
        self.log_path = ""
        self.ix: IndexBuilder | None = None
        self.log_base = 0
        self.source = ""
        self.state = pst.ProducerState()
        self.aborted: list[tuple[int, int, int, int]] = []
        self.epochs: list[tuple[int, int]] = []
        self.next_offset: int | None = None
        self.first_base: int | None = None  # the first segment's base offset

    def begin(self, part: SourcePartition) -> None:
        self._reset()
        self.name = part.name
        self.pdir = self.dest.path(self.name)
        os.mkdir(self.pdir)

    # ------------------------------------------------------------------------------------------ batches
    def batch(self, item: BatchItem) -> int:
        e = item.entry
        sel = item.selection
        clean = _clean_count(item) if sel.everything else None
        if clean is not None:  # the whole batch, its records certainly intact: copied without a record object
            data = bytes(item.buf[e.position:e.position + e.size])
            written = clean
        else:
            recs = item.all_records()
            kept = recs if sel.everything else [r for r in recs if sel.holds(r)]
            if sel.limit is not None:
                kept = kept[: sel.limit]
            if not kept and not (not e.is_legacy and e.records_count == 0 and sel.everything):
                return 0
            if not e.is_legacy and len(kept) == len(recs):
                data = bytes(item.buf[e.position:e.position + e.size])
            elif kept:
                data = retained_batch(item, kept, self.next_offset)
            else:
                return 0
            written = len(kept)
        if self.log is None or item.file != self.source:
            self._roll(Batch(data, 0).base_offset)
            self.source = item.file
        assert self.log is not None
        self.log.write(data)
        b = Batch(data, 0)
        assert self.ix is not None
        self.ix.add(b.last_offset, b.max_timestamp, len(data))
        try:
            info = pst.batch_info(b, data)
            done = self.state.apply(info)
        except KafkalogError:
            done = None
        if done is not None:
            if done.aborted:
                self.aborted.append((done.producer_id, done.first_offset, done.last_offset,
                                     self.state.last_stable_offset(done)))
            self.state.complete(done)
        self.state.map_end_offset = b.last_offset + 1
        epoch = b.partition_leader_epoch  # kept as first_of_each_higher_epoch keeps it: one entry per epoch, not per
        if epoch >= 0 and (not self.epochs or epoch > self.epochs[-1][0]):  # batch (memory flat in the log's size)
            self.epochs.append((epoch, b.base_offset))
        self.next_offset = b.last_offset + 1
        return written

    def open_producers(self) -> set[int]:
        """The producers whose transaction is open in what was written so far (their marker not yet written)."""
        return set(self.state.ongoing.values())

    def _roll(self, base: int) -> None:
        if self.log is not None:  # the producer snapshot a broker takes when it rolls (UnifiedLog.roll)
            self._write(layout.segment_name(base, "snapshot"), self.state.snapshot_bytes(java_map=True))
        self._close_segment()
        if self.first_base is None:
            self.first_base = base
        self.log_base = base
        self.log_path = os.path.join(self.pdir, layout.segment_name(base))
        self.log = open(self.log_path, "xb")  # noqa: SIM115 - closed by _close_segment
        self.ix = IndexBuilder(base, file=self.log_path)

    def _close_segment(self) -> None:
        if self.log is None:
            return
        self.log.close()
        self.log = None
        base = self.log_base
        assert self.ix is not None
        rb = self.ix.finish()  # the broker's recovery rule, fed as the batches were written (rebuild_segment's)
        self.ix = None
        index, timeindex = rb.index, rb.timeindex
        self._write(layout.segment_name(base, "index"), index)
        self._write(layout.segment_name(base, "timeindex"), timeindex)
        if self.aborted:
            self._write(layout.segment_name(base, "txnindex"),
                        comp.encode_txn_index([comp.AbortedTxn(0, *a) for a in self.aborted]))
        self.aborted = []

    def _write(self, name: str, data: bytes | str) -> None:
        raw = data.encode() if isinstance(data, str) else data
        with open(os.path.join(self.pdir, name), "xb") as f:
            f.write(raw)

    def end(self, part: SourcePartition, stats: PartitionStats) -> None:
        self._close_segment()
        stats.output = self.dest.final(self.name)
        if self.next_offset is None:  # nothing written: no partition directory
            os.rmdir(self.pdir)
            stats.output = ""
            stats.notes.append("nothing exported: no partition directory written")
            return
        leo = self.next_offset
        self._write(layout.segment_name(leo, "snapshot"), self.state.snapshot_bytes(java_map=True))
        epochs = first_of_each_higher_epoch(self.epochs)
        if part.log_start is not None and self.first_base is not None and part.log_start > self.first_base:
            epochs = truncate_from_start(epochs, min(part.log_start, leo))  # as the broker keeps its cache
        self._write("leader-epoch-checkpoint", comp.encode_leader_epoch_checkpoint(epochs))
        self.recovery_points.append((part.topic, part.partition, leo))
        if part.log_start is not None and self.first_base is not None and part.log_start > self.first_base:
            self.log_starts.append((part.topic, part.partition, min(part.log_start, leo)))

    def close(self) -> None:
        """The log dir's checkpoints (call once, after the last partition)."""
        rp = self.recovery_points
        text = "0\n" + f"{len(rp)}\n" + "".join(f"{t} {p} {o}\n" for t, p, o in rp)
        with open(self.dest.path(RECOVERY_POINT_FILE), "x") as f:
            f.write(text)
        ls = self.log_starts
        with open(self.dest.path(LOG_START_FILE), "x") as f:
            f.write("0\n" + f"{len(ls)}\n" + "".join(f"{t} {p} {o}\n" for t, p, o in ls))


def _clean_count(item: BatchItem) -> int | None:
    """The record count of a v2 batch whose records the compiled check (``_accel.check_records``, verify-crc
    --deep's) finds certainly clean, or None: then the records are decoded in Python, which words any problem (a
    malformed record skips the batch). Decoding every record only to count them made a 1 GiB Kafka-format export
    take 52 s (bench/export_scale_bench.py)."""
    e = item.entry
    if e.is_legacy:
        return None
    mod = accel.module()
    check = getattr(mod, "check_records", None) if mod is not None else None
    if check is None:
        return None
    b = Batch(item.buf, e.position)
    base, last = b.base_offset, b.last_offset
    if b.records_count <= 0 or b.streams_payload or not accel.fits_int64(base, last):
        return None
    try:
        data, start = b.payload(item.buf, item.decompress_limit)
    except KafkalogError:
        return None
    stop = e.position + e.size if data is item.buf else len(data)
    return b.records_count if check(data, start, stop, b.records_count, base, last) else None
