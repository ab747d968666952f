"""Builders shared by the verify-crc tests: segments made with the encoder, with the byte position of every batch
known independently (cumulative encoded lengths), so tests can corrupt known positions and predict regions."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from realdata_path import realdata_root

from kafkalog_cli.format import codecs
from kafkalog_cli.format.encoder import RecordSpec, encode_batch, encode_legacy_message

REALDATA = realdata_root()  # $KAFKALOG_REALDATA, default ../shared/realdata (tests/realdata_path.py)
TS0 = 1_700_000_000_000


@dataclass
class Seg:
    data: bytes
    starts: list[int]  # byte position of each batch, plus the end of the file
    first: list[int]  # base offset of each batch
    last: list[int]  # last offset of each batch
    max_ts: list[int]

    def batch(self, i: int) -> tuple[int, int]:
        return self.starts[i], self.starts[i + 1]


def make_segment(n_batches: int = 8, records: int = 4, base: int = 0, *, seed: int = 1, codec: int = codecs.NONE,
                 value_size: int = 60, epoch: int = 0) -> Seg:
    rng = random.Random(seed)
    parts, starts, first, last, max_ts = [], [0], [], [], []
    off = base
    for _b in range(n_batches):
        recs = [RecordSpec(key=b"k%d" % i, value=rng.randbytes(value_size), timestamp=TS0 + off + i)
                for i in range(records)]
        data = encode_batch(recs, base_offset=off, codec=codec, partition_leader_epoch=epoch)
        parts.append(data)
        starts.append(starts[-1] + len(data))
        first.append(off)
        last.append(off + records - 1)
        max_ts.append(TS0 + off + records - 1)
        off += records
    return Seg(b"".join(parts), starts, first, last, max_ts)


def make_legacy_segment(n: int = 6, magic: int = 1, base: int = 0) -> Seg:
    parts, starts, first, last, ts = [], [0], [], [], []
    for i in range(n):
        data = encode_legacy_message(offset=base + i, key=b"k", value=b"v%d" % i, magic=magic, timestamp=TS0 + i)
        parts.append(data)
        starts.append(starts[-1] + len(data))
        first.append(base + i)
        last.append(base + i)
        ts.append(TS0 + i if magic == 1 else -1)
    return Seg(b"".join(parts), starts, first, last, ts)


def write_segment(directory: Path, data: bytes, base: int = 0) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{base:020d}.log"
    path.write_bytes(data)
    return path
