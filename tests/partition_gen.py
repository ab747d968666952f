"""Build synthetic partition directories for the repair tests (compact, truncate-to-epoch).

The builder keeps its own model of every record (offset, key, value, producer, transaction outcome) so that test
oracles never read our engine's view of the files. Batches are written with the engine's encoder, indexes by the
recovery rule, ``.txnindex`` entries and ``leader-epoch-checkpoint`` from the model.
"""

from __future__ import annotations

import os
import random
import struct
from dataclasses import dataclass, field

from kafkalog_cli.format.control import ABORT, COMMIT, encode_control_key, encode_end_txn_marker
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.ops.rebuild_index import rebuild_segment


@dataclass
class ModelRecord:
    offset: int
    key: bytes | None
    value: bytes | None
    pid: int
    txn: bool
    control: bool = False
    outcome: str = "none"  # "commit" | "abort" | "open" for transactional data, "none" otherwise
    leader_epoch: int = 0


@dataclass
class PartitionBuilder:
    path: str
    next_offset: int = 0
    segments: list[list[bytes]] = field(default_factory=lambda: [[]])
    bases: list[int] = field(default_factory=lambda: [0])
    records: list[ModelRecord] = field(default_factory=list)
    seq: dict[int, int] = field(default_factory=dict)
    open_txn: dict[int, list[ModelRecord]] = field(default_factory=dict)
    open_first: dict[int, int] = field(default_factory=dict)
    aborted: list[tuple[int, int, int, int]] = field(default_factory=list)  # pid, first, last, lso
    epochs: list[tuple[int, int]] = field(default_factory=list)
    batch_ranges: list[tuple[int, int]] = field(default_factory=list)  # (base, last) of every batch
    ts: int = 1_700_000_000_000

    def _epoch(self, le: int) -> None:
        if not self.epochs or le > self.epochs[-1][0]:
            self.epochs.append((le, self.next_offset))

    def batch(self, kvs: list[tuple[bytes | None, bytes | None]], *, pid: int = -1, epoch: int = 0, txn: bool = False,
              leader_epoch: int = 0, codec: int = 0) -> None:
        base = self.next_offset
        specs = []
        for i, (k, v) in enumerate(kvs):
            self.ts += 1
            specs.append(RecordSpec(key=k, value=v, timestamp=self.ts, offset_delta=i))
        seq = -1
        if pid >= 0:
            seq = self.seq.get(pid, 0)
            self.seq[pid] = seq + len(kvs)
        self._epoch(leader_epoch)
        data = encode_batch(specs, base_offset=base, codec=codec, transactional=txn, producer_id=pid,
                            producer_epoch=epoch if pid >= 0 else -1, base_sequence=seq,
                            partition_leader_epoch=leader_epoch)
        self.segments[-1].append(data)
        self.batch_ranges.append((base, base + len(kvs) - 1))
        for i, (k, v) in enumerate(kvs):
            r = ModelRecord(base + i, k, v, pid, txn, leader_epoch=leader_epoch, outcome="open" if txn else "none")
            self.records.append(r)
            if txn:
                self.open_txn.setdefault(pid, []).append(r)
                self.open_first.setdefault(pid, base)
        self.next_offset += len(kvs)

    def marker(self, pid: int, *, abort: bool, epoch: int = 0, leader_epoch: int = 0) -> None:
        off = self.next_offset
        self._epoch(leader_epoch)
        spec = RecordSpec(key=encode_control_key(ABORT if abort else COMMIT), value=encode_end_txn_marker(5),
                          timestamp=self.ts, offset_delta=0)
        data = encode_batch([spec], base_offset=off, transactional=True, control=True, producer_id=pid,
                            producer_epoch=epoch, partition_leader_epoch=leader_epoch)
        self.segments[-1].append(data)
        self.batch_ranges.append((off, off))
        recs = self.open_txn.pop(pid, [])
        first = self.open_first.pop(pid, None)
        for r in recs:
            r.outcome = "abort" if abort else "commit"
        if abort and first is not None:
            lso = min(self.open_first.values(), default=off + 1)
            self.aborted.append((pid, first, off, lso))
        self.records.append(ModelRecord(off, None, None, pid, True, control=True, leader_epoch=leader_epoch))
        self.next_offset += 1

    def roll(self) -> None:
        self.segments.append([])
        self.bases.append(self.next_offset)

    def write(self, *, drop_txn_entries: int = 0, snapshot: bool = False) -> None:
        os.makedirs(self.path, exist_ok=True)
        aborted = list(self.aborted)
        if drop_txn_entries:
            aborted = aborted[:-drop_txn_entries]
        for i, (base, batches) in enumerate(zip(self.bases, self.segments)):
            data = b"".join(batches)
            stem = os.path.join(self.path, f"{base:020d}")
            with open(stem + ".log", "wb") as f:
                f.write(data)
            rb = rebuild_segment(data, base)
            assert rb.problem is None, rb.problem
            with open(stem + ".index", "wb") as f:
                f.write(rb.index)
            with open(stem + ".timeindex", "wb") as f:
                f.write(rb.timeindex)
            end = self.bases[i + 1] if i + 1 < len(self.bases) else self.next_offset + 1
            entries = [a for a in aborted if base <= a[2] < end]
            if entries:
                with open(stem + ".txnindex", "wb") as f:
                    for pid, first, last, lso in entries:
                        f.write(struct.pack(">hqqqq", 0, pid, first, last, lso))
        with open(os.path.join(self.path, "leader-epoch-checkpoint"), "w") as f:
            f.write(f"0\n{len(self.epochs)}\n" + "".join(f"{e} {s}\n" for e, s in self.epochs))


def random_partition(path: str, seed: int, *, batches: int = 60, roll_every: int = 8, keys: int = 12,
                     codec_choices: tuple[int, ...] = (0, 0, 1, 3, 4), drop_txn_entries: int = 0) -> PartitionBuilder:
    """Keys, tombstones, keyless records, idempotent and transactional producers (commits and aborts), several
    leader epochs and segments. Every transaction is closed before the active segment, so it is all cleanable."""
    rnd = random.Random(seed)
    pb = PartitionBuilder(path)
    leader_epoch = 0
    txn_pids = [1000, 1001, 1002]
    idem_pids = [2000, 2001]
    open_pids: set[int] = set()
    for n in range(batches):
        if n and n % roll_every == 0:
            pb.roll()
        if rnd.random() < 0.05:
            leader_epoch += rnd.choice([1, 2])

        def rec(n: int = n) -> tuple[bytes | None, bytes | None]:
            k = None if rnd.random() < 0.05 else f"k{rnd.randrange(keys)}".encode()
            v = None if (k is not None and rnd.random() < 0.15) else f"v{n}-{rnd.randrange(1000)}".encode()
            return k, v

        kvs = [rec() for _ in range(rnd.randint(1, 5))]
        codec = rnd.choice(codec_choices)
        roll = rnd.random()
        if roll < 0.35:
            pid = rnd.choice(txn_pids)
            pb.batch(kvs, pid=pid, txn=True, leader_epoch=leader_epoch, codec=codec)
            open_pids.add(pid)
        elif roll < 0.55 and open_pids:
            pid = rnd.choice(sorted(open_pids))
            pb.marker(pid, abort=rnd.random() < 0.5, leader_epoch=leader_epoch)
            open_pids.discard(pid)
        elif roll < 0.75:
            pb.batch(kvs, pid=rnd.choice(idem_pids), leader_epoch=leader_epoch, codec=codec)
        else:
            pb.batch(kvs, leader_epoch=leader_epoch, codec=codec)
    for pid in sorted(open_pids):
        pb.marker(pid, abort=rnd.random() < 0.5, leader_epoch=leader_epoch)
    pb.roll()
    pb.batch([(b"tail", b"active")], leader_epoch=leader_epoch)
    pb.write(drop_txn_entries=drop_txn_entries)
    return pb


def verify_crc_clean(pdir: str) -> None:
    """`kafkalog verify-crc`, an independent check of the repaired partition, must find nothing wrong."""
    from click.testing import CliRunner

    from kafkalog_cli.cli.main import cli

    res = CliRunner().invoke(cli, ["verify-crc", pdir])
    assert res.exit_code == 0, res.output


def mark_clean_shutdown(pdir: str) -> None:
    """Write the broker's ``.kafka_cleanshutdown`` beside ``pdir``: the partition is one a broker stopped cleanly, so
    compact and truncate-to-epoch apply no start-up recovery first (they do on a partition left by a crash, as the
    broker's own load does; ops/load_first.py). random_partition writes no marker."""
    with open(os.path.join(os.path.dirname(os.path.abspath(pdir)), ".kafka_cleanshutdown"), "w") as f:
        f.write('{"version":0,"brokerEpoch":3}')
