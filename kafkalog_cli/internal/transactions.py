"""Open ("hanging") transactions in a partition: transactional data with no COMMIT/ABORT marker after it.

A hanging transaction blocks ``read_committed`` consumers at its first offset (the last stable offset cannot pass
it) and stops the cleaner from compacting past it, so finding one from the files alone is a common forensic need.
Rule: walk segments in base-offset order; a transactional non-control batch opens a transaction for its producer id
at the batch's base offset if none is open; a control batch of the same producer whose marker is ABORT or COMMIT
closes it. Whatever is still open at the end is reported. Nothing is printed here.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from kafkalog_cli.errors import KafkalogError, UnreadableFileError
from kafkalog_cli.format import control
from kafkalog_cli.storage.layout import segment_logs
from kafkalog_cli.storage.segment import MappedFile, entries


@dataclass
class OpenTransaction:
    producer_id: int
    producer_epoch: int
    first_offset: int
    last_offset: int
    last_timestamp: int
    segment: str
    batches: int = 1

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def segment_files(path: str) -> list[str]:
    """The ``.log`` files of a partition directory in base-offset order (or the given file list)."""
    if os.path.isdir(path):
        return [p for _base, p in segment_logs(path)]
    if not os.path.exists(path):
        raise UnreadableFileError("no such file or directory", file=path)
    return [path]


def _marker(batch, buf) -> int | None:  # noqa: ANN001
    """Control type of the batch's first record (ABORT=0 / COMMIT=1 / KRaft types), or None if unreadable."""
    for rec in batch.iter_records(buf):
        _ver, ctype = control.parse_control_key(rec.key)
        return ctype
    return None


def find_open(paths: list[str]) -> tuple[list[OpenTransaction], list[str]]:
    """(open transactions sorted by first offset, warnings). Files are processed in the order given."""
    open_txns: dict[int, OpenTransaction] = {}
    warnings: list[str] = []
    for f in paths:
        with MappedFile(f) as mf:
            try:
                for batch in entries(mf.buf, file=f):
                    if getattr(batch, "is_legacy", False) or not batch.is_transactional:
                        continue
                    pid = batch.producer_id
                    if batch.is_control:
                        try:
                            ctype = _marker(batch, mf.buf)
                        except KafkalogError as exc:
                            warnings.append(f"{f}: unreadable control batch at offset {batch.base_offset}: {exc.message}")
                            continue
                        if ctype in (control.ABORT, control.COMMIT):
                            open_txns.pop(pid, None)
                        continue
                    txn = open_txns.get(pid)
                    if txn is None:
                        open_txns[pid] = OpenTransaction(pid, batch.producer_epoch, batch.base_offset, batch.last_offset,
                                                         batch.max_timestamp, f)
                    else:
                        txn.last_offset = batch.last_offset
                        txn.last_timestamp = max(txn.last_timestamp, batch.max_timestamp)
                        txn.producer_epoch = batch.producer_epoch
                        txn.segment = f
                        txn.batches += 1
            except KafkalogError as exc:
                warnings.append(f"{f}: stopped reading: {exc.describe()}")
    return sorted(open_txns.values(), key=lambda t: t.first_offset), warnings
