"""kafkalog's lz4 encoder against Kafka's own (issue 26): the bytes of every lz4 batch Kafka's producer path writes.

Kafka compresses an lz4 batch with ``Lz4BlockOutputStream`` (clients/.../compress/Lz4BlockOutputStream.java:79, at the
default level the fastCompressor of lz4-java; the oracle links pyspark's lz4-java 1.11.0). kafkalog re-encodes the
records a compaction keeps (format/codecs.compress_lz4); where the codec's bytes differ, the cleaned segment has
other sizes than the cleaner's, so its index positions and a later round's segment grouping move. This test takes
every lz4 batch of partitions Kafka's ``UnifiedLog`` wrote (magic 2, and legacy magic 0/1 wrappers with Kafka's
broken v0 header checksum), decompresses it and compresses the records again with kafkalog: the frame must be
Kafka's byte for byte, for one block, several 64 KiB blocks, incompressible (raw) blocks and tiny inputs.
Marker ``oracle``.
"""

from __future__ import annotations

import random
import struct

import pytest
from kafka_real import write_partition

from kafkalog_cli.format import codecs

pytestmark = pytest.mark.oracle


def _records(rng: random.Random, n: int, kind: str) -> list[dict]:
    out = []
    for i in range(n):
        if kind == "random":  # printable noise: little to match, raw blocks where nothing shrinks
            value = "".join(rng.choice("0123456789abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randrange(1, 400)))
        elif kind == "json":
            tags = ",".join(str(rng.randrange(100)) for _ in range(rng.randrange(8)))
            value = f'{{"id":{rng.randrange(10**6)},"name":"{"x" * rng.randrange(40)}","tags":[{tags}]}}'
        else:  # repetitive
            value = "value-" + str(i % 7) * rng.randrange(1, 200)
        rec: dict = {"key": None if i % 5 == 0 else f"k{rng.randrange(50)}", "value": value}
        if i % 3 == 0:
            rec["headers"] = {"h": f"v{i}", "n": None}
        out.append(rec)
    return out


def _lz4_payloads(log: bytes) -> list[tuple[int, bytes]]:
    """(magic, compressed payload) of every lz4 batch / legacy lz4 wrapper of a ``.log``."""
    out = []
    pos = 0
    while pos + 17 <= len(log):
        (length,) = struct.unpack_from(">i", log, pos + 8)
        magic = log[pos + 16]
        raw = log[pos: pos + 12 + length]
        if magic == 2:
            if struct.unpack_from(">h", raw, 21)[0] & 7 == codecs.LZ4:
                out.append((2, raw[61:]))
        elif raw[17] & 7 == codecs.LZ4:
            from kafkalog_cli.format.legacy import LegacyEntry

            _key, value = LegacyEntry(log, pos).key_value(log)
            out.append((magic, bytes(value or b"")))
        pos += 12 + length
    return out


@pytest.mark.parametrize("seed", range(6))
def test_lz4_frames_equal_kafkas(kafka_real, tmp_path, seed):
    rng = random.Random(9100 + seed)
    ops = []
    for j, kind in enumerate(("random", "json", "repetitive", "json")):
        n = rng.choice((1, 3, 40, 400, 1500))  # 1500 records of up to 400 bytes: several 64 KiB blocks
        ops.append({"op": "append", "records": _records(rng, n, kind), "codec": "lz4",
                    "magic": 2 if j < 3 else rng.choice((0, 1))})
    plan = {"topic": "lz4", "partition": 0, "config": {"segment.bytes": str(64 << 20), "max.message.bytes": str(8 << 20)},
            "startTimeMs": 1_700_000_000_000, "timeStepMs": 1, "ops": ops, "shutdown": "clean"}
    part = write_partition(kafka_real, tmp_path / "w", plan)
    payloads = [p for f in sorted(part.glob("*.log")) for p in _lz4_payloads(f.read_bytes())]
    assert len(payloads) >= 3, "Kafka wrote fewer lz4 batches than planned"
    for i, (magic, kafka_frame) in enumerate(payloads):
        records = bytes(codecs.decompress(codecs.LZ4, kafka_frame, magic=magic))
        ours = codecs.compress_lz4(records, magic=magic)
        assert ours == kafka_frame, (f"batch {i} (magic {magic}, {len(records)} bytes of records): kafkalog's lz4 "
                                     f"frame is {len(ours)} bytes, Kafka's {len(kafka_frame)}")
