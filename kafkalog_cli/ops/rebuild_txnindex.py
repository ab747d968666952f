"""``.txnindex`` files rebuilt from the log's own markers, as the broker's segment recovery writes them.

Why (errata E1): the cleaner learns which transactions were aborted ONLY from the ``.txnindex`` files; a missing or
short one makes the next clean keep aborted data as committed and later delete the ABORT marker, which nothing can
undo. The broker rebuilds a ``.txnindex`` only for segments it recovers, so ``rebuild-index`` rebuilds them too.

How: producer state is replayed (``producer_state.ProducerState``, the broker's rules) from the newest readable
producer snapshot at or below the first segment's base (transactions that began before the log start are known
from it), else from an empty state; every ABORT marker that closes a transaction gives the entry
(producerId, firstOffset, markerOffset, lastStableOffset) in the segment holding the marker; LSO = first offset of
the earliest other ongoing transaction, or marker + 1 (ProducerStateManager.lastStableOffset). Replay stops at a
segment whose batches fail the recovery checks: entries from there on cannot be known.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kafkalog_cli.broker import producer_state_manager as pst
from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.format.batch import Batch
from kafkalog_cli.ops import rebuild_index as ri
from kafkalog_cli.storage import companions as comp
from kafkalog_cli.storage.layout import segment_logs
from kafkalog_cli.storage.segment import MappedFile, read_entry, walk


@dataclass
class TxnIndexResult:
    """The rebuilt ``.txnindex`` of one segment and how the file on disk compares."""

    base: int
    name: str
    data: bytes | None  # None: unknown (replay stopped before this segment)
    status: str  # match | missing | differs | absent (no entries, no file) | unknown

    @property
    def needs_write(self) -> bool:
        return self.status in ("missing", "differs")


def _start_state(pdir: str, first_base: int) -> pst.ProducerState:
    offsets = []
    for name in os.listdir(pdir):
        if name.endswith(".snapshot") and name[:20].isascii() and name[:20].isdigit() and len(name) == 29:
            off = int(name[:20])
            if off <= first_base:
                offsets.append(off)
    for off in sorted(offsets, reverse=True):
        path = os.path.join(pdir, f"{off:020d}.snapshot")
        try:
            with open(path, "rb") as f:
                entries = comp.parse_producer_snapshot(f.read(), path).entries
        except (KafkalogError, OSError):
            continue
        return pst.load_snapshot_state(entries, off, None)
    return pst.ProducerState(first_base)


def rebuild_txn_indexes(partition_dir: str) -> list[TxnIndexResult]:
    """One result per segment, in offset order."""
    logs = segment_logs(partition_dir)
    if not logs:
        return []
    state = _start_state(partition_dir, logs[0][0])
    out: list[TxnIndexResult] = []
    stopped = False
    for base, path in logs:
        name = f"{base:020d}.txnindex"
        xpath = os.path.join(partition_dir, name)
        existing = comp.read_if_exists(xpath)
        if stopped:
            out.append(TxnIndexResult(base, name, None, "unknown"))
            continue
        aborted: list[tuple[int, int, int, int]] = []
        with MappedFile(path) as mf:
            rb = ri.rebuild_segment(mf.buf, base, file=path)
            try:
                for pos, _size, magic in walk(mf.buf, 0, rb.valid_bytes, file=path):
                    if magic >= 2:
                        b = read_entry(mf.buf, pos, magic, file=path)
                        assert isinstance(b, Batch)
                        state.replay([pst.batch_info(b, mf.buf)], aborted)
            except KafkalogError:
                stopped = True
        if rb.problem is not None or stopped:
            stopped = True  # recovery would cut this segment: leave its .txnindex to the broker / recover
            out.append(TxnIndexResult(base, name, None, "unknown"))
            continue
        data = comp.encode_txn_index([comp.AbortedTxn(0, *a) for a in aborted])
        if existing is None:
            status = "missing" if data else "absent"
        else:
            status = "match" if existing == data else "differs"
        out.append(TxnIndexResult(base, name, data, status))
    return out
