"""Generate multi-segment partitions with the encoder for the index/seek tests and bench, and a brute-force scan."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

from kafkalog_cli.format import codecs
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.ops.rebuild_index import rebuild_segment
from kafkalog_cli.storage.segment import MappedFile, entries

CODECS = [codecs.NONE, codecs.NONE, codecs.NONE, 1, 2, 3, 4]


@dataclass
class Rec:
    offset: int
    timestamp: int
    segment: str
    position: int  # of its batch
    batch_last: int


def make_partition(pdir: str, seed: int, *, segments: int = 3, max_batches: int = 25, interval: int = 512,
                   write_indexes: bool = True, gaps: bool = True) -> list[str]:
    """Write ``segments`` segments of random batches (mixed sizes, codecs, LogAppendTime, timestamps that go back
    and forth, offset gaps like a compacted log); indexes built with the recovery rule. Returns the .log paths."""
    rng = random.Random(seed)
    os.makedirs(pdir, exist_ok=True)
    offset = rng.choice([0, 0, 1000, 2**31 - 5])
    ts = 1_700_000_000_000
    paths = []
    for _s in range(segments):
        base = offset
        data = bytearray()
        for _b in range(rng.randint(1, max_batches)):
            n = rng.randint(1, 8)
            recs = []
            delta = 0
            for _r in range(n):
                ts += rng.randint(-50, 120)
                recs.append(RecordSpec(key=b"k%d" % rng.randint(0, 9), value=rng.randbytes(rng.choice([0, 10, 100, 700, 2000])),
                                       timestamp=ts, offset_delta=delta))
                delta += 1 + (rng.randint(0, 3) if gaps and rng.random() < 0.2 else 0)
            kw = {}
            if rng.random() < 0.2:  # LogAppendTime: every record takes the batch timestamp
                kw = {"timestamp_type": 1, "max_timestamp": ts + rng.randint(0, 30)}
            data += encode_batch(recs, base_offset=offset, codec=rng.choice(CODECS), **kw)
            offset += delta + (rng.randint(1, 5) if gaps and rng.random() < 0.1 else 0)
        path = os.path.join(pdir, f"{base:020d}.log")
        with open(path, "wb") as f:
            f.write(data)
        if write_indexes:
            rb = rebuild_segment(bytes(data), base, interval)
            assert rb.problem is None, rb.problem
            with open(path[:-4] + ".index", "wb") as f:
                f.write(rb.index)
            with open(path[:-4] + ".timeindex", "wb") as f:
                f.write(rb.timeindex)
        paths.append(path)
        offset += rng.randint(0, 3) if gaps else 0
    return paths


def brute_records(pdir: str) -> list[Rec]:
    """Every record of every segment in offset order, by decoding everything (the oracle)."""
    out = []
    names = sorted(n for n in os.listdir(pdir) if n.endswith(".log"))
    for n in names:
        path = os.path.join(pdir, n)
        with MappedFile(path) as mf:
            for e in entries(mf.buf):
                for r in e.iter_records(mf.buf):
                    ts = e.max_timestamp if e.timestamp_type == 1 else r.timestamp
                    out.append(Rec(r.offset, ts, path, e.position, e.last_offset))
    return out
