"""The synthetic segment of the dump benchmarks (bench/dump_bench.py, bench/e2e_bench.py): one generator, so that
their figures describe the same bytes, and one client-library decode to compare against. Not a benchmark itself."""

from __future__ import annotations

import base64
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kafkalog_cli.format.encoder import RecordSpec, encode_batch  # noqa: E402


def generate(path: Path, mib: float, codec: int, value: int = 100, *, filler: bool = False) -> int:
    """Write a segment of 100-record v2 batches (key ``key-%08d``, a header on every 4th record) of about ``mib``
    MiB to ``path``; returns the record count. Values are ``value`` bytes of base64 text of random bytes, so that
    lz4 compresses them about as much as real JSON-ish payloads (~0.75); ``filler`` gives the older ``value-N-xxx..``
    values instead (highly compressible), which bench/dump_bench.py's figures since issue 9 used."""
    off = 0
    total = 0
    rng = random.Random(20)
    pool = base64.b64encode(rng.randbytes(value * 300))
    with open(path, "wb") as f:
        while total < mib * 1024 * 1024:
            recs = []
            for i in range(100):
                if filler:
                    v = b"value-%d-" % i + b"x" * max(value - 20, 0)  # value=100: the old 88-89 bytes
                else:
                    p = rng.randrange(0, len(pool) - value)
                    v = pool[p:p + value]
                recs.append(RecordSpec(b"key-%08d" % (off + i), v, headers=[("trace", b"1")] if i % 4 == 0 else [],
                                       timestamp=1_700_000_000_000 + off + i))
            b = encode_batch(recs, base_offset=off, codec=codec, partition_leader_epoch=1)
            f.write(b)
            total += len(b)
            off += 100
    return off


def decode_all(memory_records_cls, data: bytes) -> int:  # noqa: ANN001
    """Iterate every record with a client library's reader, touching the fields a dump prints."""
    n = 0
    mr = memory_records_cls(data)
    while True:
        b = mr.next_batch()
        if b is None:
            return n
        for rec in b:
            rec.key, rec.value, rec.headers, rec.timestamp, rec.offset  # noqa: B018
            n += 1


def aiokafka_decode(data: bytes) -> int:
    from aiokafka.record.memory_records import MemoryRecords

    return decode_all(MemoryRecords, data)
