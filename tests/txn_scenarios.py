"""Build whole broker log dirs for the ``transactions`` tests: data partitions (via ``partition_gen``),
``__transaction_state`` and ``__consumer_offsets`` partitions with coordinator records encoded from Kafka's schemas,
and the per-log-dir files the broker keeps (meta.properties, checkpoints).

The scenarios follow the coordinator's state machine (TransactionMetadata.scala: Empty -> Ongoing ->
PrepareCommit/PrepareAbort -> CompleteCommit/CompleteAbort, PrepareEpochFence, tombstones on expiration) and the
hanging-transaction cases KIP-664 was written for.
"""

from __future__ import annotations

import os
import struct

from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.internal_topics import schema as sc
from kafkalog_cli.internal_topics import schemas_group as sg
from kafkalog_cli.internal_topics import schemas_txn_share as st
from kafkalog_cli.internal_topics.locate import partition_for
from kafkalog_cli.internal_topics.transaction_log import STATES
from kafkalog_cli.storage.companions import ProducerEntry, encode_producer_snapshot

TS = 1_700_000_000_000


def _pref(v: int, body: bytes) -> bytes:
    return struct.pack(">h", v) + body


def txn_record(txn_id: str, pid: int, epoch: int, state: str, partitions: dict[str, list[int]], *,
               start_ms: int = TS, update_ms: int = TS) -> tuple[bytes, bytes]:
    key = _pref(0, sc.encode(st.TransactionLogKey, {"transactionalId": txn_id}, 0))
    value = _pref(0, sc.encode(st.TransactionLogValue, {
        "producerId": pid, "producerEpoch": epoch, "transactionTimeoutMs": 60000,
        "transactionStatus": STATES.index(state),
        "transactionPartitions": [{"topic": t, "partitionIds": ps} for t, ps in partitions.items()],
        "transactionLastUpdateTimestampMs": update_ms, "transactionStartTimestampMs": start_ms}, 0))
    return key, value


def offset_commit(group: str, topic: str, partition: int, offset: int) -> tuple[bytes, bytes]:
    key = _pref(1, sc.encode(sg.OffsetCommitKey, {"group": group, "topic": topic, "partition": partition}, 1))
    value = _pref(3, sc.encode(sg.OffsetCommitValue, {"offset": offset, "leaderEpoch": 0, "metadata": "",
                                                      "commitTimestamp": TS, "expireTimestamp": -1}, 3))
    return key, value


def write_records(pdir: str, records: list[tuple[bytes, bytes | None]], base: int = 0) -> None:
    """One segment, one batch per record (as the coordinators append them)."""
    os.makedirs(pdir, exist_ok=True)
    data = b"".join(encode_batch([RecordSpec(key=k, value=v, timestamp=TS)], base_offset=base + i)
                    for i, (k, v) in enumerate(records))
    with open(os.path.join(pdir, f"{base:020d}.log"), "wb") as f:
        f.write(data)


def txn_state_partition(log_dir: str, records: list[tuple[bytes, bytes | None]], *, partitions: int = 50,
                        txn_id: str | None = None, partition: int | None = None) -> int:
    """Write ``__transaction_state-N`` (N from ``locate-txn``'s rule for ``txn_id`` unless given)."""
    if partition is None:
        assert txn_id is not None
        partition = partition_for(txn_id, partitions)
    write_records(os.path.join(log_dir, f"__transaction_state-{partition}"), records)
    return partition


def meta(log_dir: str, broker: int) -> None:
    os.makedirs(log_dir, exist_ok=True)
    with open(os.path.join(log_dir, "meta.properties"), "w") as f:
        f.write(f"version=1\nnode.id={broker}\ncluster.id=abc\n")


def checkpoint(log_dir: str, name: str, entries: dict[str, int]) -> None:
    lines = []
    for tp, off in entries.items():
        t, _, p = tp.rpartition("-")
        lines.append(f"{t} {p} {off}")
    with open(os.path.join(log_dir, name), "w") as f:
        f.write(f"0\n{len(lines)}\n" + "".join(line + "\n" for line in lines))


def snapshot(pdir: str, offset: int, entries: list[tuple[int, int, int, int]]) -> None:
    """A producer snapshot: (pid, epoch, last offset, current txn first offset or -1) per producer."""
    data = encode_producer_snapshot([ProducerEntry(pid, ep, 0, last, 0, TS, 0, first) for pid, ep, last, first in entries])
    with open(os.path.join(pdir, f"{offset:020d}.snapshot"), "wb") as f:
        f.write(data)
