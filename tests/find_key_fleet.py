"""A fixture fleet for find-key: one key planted by construction in every kind of place a copy can live, and an
independent brute-force decompress-and-grep of every file (its own header parser, varints and codecs: nothing of
kafkalog's reader) to check the search's precision and recall.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import struct
from dataclasses import dataclass, field

from partition_gen import PartitionBuilder

from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.format.partitioners import java_default

KEY = b"customer-42"
V1 = b"email=alice@example.com;v1"
V2 = b"email=alice@new.example.org;v2"
TOPIC = "users"
N = 4
P = java_default(KEY, N)
OTHER_P = next(p for p in range(N) if p != P)
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"
SEG_ID = "BBBBBBBBBBBBBBBBBBBBBB"
NOW = 1_700_000_100_000


@dataclass
class Fleet:
    root: str
    planted: dict[str, str] = field(default_factory=dict)  # place -> file


def _meta(log_dir: str, node: int) -> None:
    os.makedirs(log_dir, exist_ok=True)
    with open(os.path.join(log_dir, "meta.properties"), "w") as f:
        f.write(f"version=1\nnode.id={node}\ncluster.id=c\n")


def _filler(pb: PartitionBuilder, n: int, tag: str) -> None:
    pb.batch([(f"{tag}-{i}".encode(), f"x{i}".encode()) for i in range(n)])


def build(root: str) -> Fleet:
    fleet = Fleet(root)
    b1, b2 = os.path.join(root, "broker1", "kafka"), os.path.join(root, "broker2", "kafka")
    _meta(b1, 1)
    _meta(b2, 2)
    for p in range(N):  # every partition exists on broker1 (the count is seen), a few keys each
        if p in (P, OTHER_P):
            continue
        pb = PartitionBuilder(os.path.join(b1, f"{TOPIC}-{p}"))
        _filler(pb, 3, f"p{p}")
        pb.write()
    # broker1, the key's partition: v1 (gzip) in an old segment, an aborted transactional value, v2 plain, a
    # record of another key carrying v1 as its value, then the tombstone (the latest record of the key)
    pb = PartitionBuilder(os.path.join(b1, f"{TOPIC}-{P}"))
    _filler(pb, 2, "a")
    pb.batch([(KEY, V1), (b"bob", b"b1")], codec=1)
    pb.batch([(KEY, b"aborted-value-of-42")], pid=7, txn=True)
    pb.marker(7, abort=True)
    pb.roll()
    pb.batch([(KEY, V2)])
    pb.batch([(b"other-key", V1)], codec=4)
    pb.batch([(KEY, None)])
    pb.roll()
    _filler(pb, 2, "b")
    pb.write()
    fleet.planted["live-leader"] = pb.path
    # a leftover of an unfinished delete: a copy of the first segment scheduled for deletion
    with open(os.path.join(pb.path, "00000000000000000000.log"), "rb") as f:
        seg0 = f.read()
    with open(os.path.join(pb.path, "00000000000000000000.log.deleted"), "wb") as f:
        f.write(seg0)
    # a cut write at the end of the active segment holding the key's bytes (does not parse as a batch)
    last = sorted(n for n in os.listdir(pb.path) if n.endswith(".log"))[-1]
    cut = encode_batch([RecordSpec(key=KEY, value=V2, timestamp=NOW)], base_offset=pb.next_offset)
    with open(os.path.join(pb.path, last), "ab") as f:
        f.write(cut[: len(cut) - 3])
    fleet.planted["cut-write"] = os.path.join(pb.path, last)

    # broker2: the follower replica of the key's partition (v1 only: it lags), a -stray and a -future copy
    pb2 = PartitionBuilder(os.path.join(b2, f"{TOPIC}-{P}"))
    _filler(pb2, 2, "a")
    pb2.batch([(KEY, V1), (b"bob", b"b1")], codec=1)
    pb2.write()
    for suffix in ("stray", "future"):
        d = PartitionBuilder(os.path.join(b2, f"{TOPIC}-{P}.0123456789abcdef0123456789abcdef-{suffix}"))
        d.batch([(KEY, V1)])
        d.write()
    # broker1: a -delete directory of the key's partition
    d = PartitionBuilder(os.path.join(b1, f"{TOPIC}-{P}.fedcba9876543210fedcba9876543210-delete"))
    d.batch([(KEY, V1)], codec=1)
    d.write()
    # another partition of the topic: a librdkafka producer's copy (crc32 partitioner), found with --any-partition
    po = PartitionBuilder(os.path.join(b1, f"{TOPIC}-{OTHER_P}"))
    _filler(po, 2, "c")
    po.batch([(KEY, b"written-by-librdkafka")])
    po.write()
    fleet.planted["other-partition"] = po.path
    # a compacted-away range: the key was written at offset 5 of a partition of another topic, then compaction
    # removed that record (the offsets show the gap); nothing of it remains
    cpath = os.path.join(b1, "sessions-0")
    os.makedirs(cpath)
    specs = [RecordSpec(key=f"s{i}".encode(), value=b"x", timestamp=NOW, offset_delta=i) for i in range(10) if i != 5]
    with open(os.path.join(cpath, "00000000000000000000.log"), "wb") as f:
        f.write(encode_batch(specs, base_offset=0))
    # tiered storage (Kafka's LocalTieredStorage layout) of the key's partition
    tdir = os.path.join(root, "tiered", "kafka-tiered-storage", f"{TOPIC}-{P}-{TOPIC_ID}")
    os.makedirs(tdir)
    with open(os.path.join(tdir, f"00000000000000000000-{SEG_ID}.log"), "wb") as f:
        f.write(seg0)
    # a kafkalog repair backup and an NDJSON export with the key in base64
    bdir = os.path.join(root, "kafkalog-backups", f"{TOPIC}-{P}-20261202T000000Z")
    os.makedirs(bdir)
    with open(os.path.join(bdir, "00000000000000000000.log"), "wb") as f:
        f.write(seg0)
    edir = os.path.join(root, "exports")
    os.makedirs(edir)
    with open(os.path.join(edir, "users.ndjson"), "w") as f:
        f.write(json.dumps({"offset": 2, "key": base64.b64encode(KEY).decode(), "value": "x"}) + "\n")
    return fleet


# ------------------------------------------------------------------------------------------------ brute force
def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos


def _decompress(codec: int, data: bytes) -> bytes:
    if codec == 0:
        return data
    if codec == 1:
        return gzip.decompress(data)
    if codec == 4:
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    raise AssertionError(f"codec {codec} not used by the fleet")


def brute_force(root: str, key: bytes) -> tuple[set[tuple[str, int]], set[str]]:
    """(file, offset) of every record whose key is ``key`` in every file of ``root``, decoded by this module's own
    parser; and every file whose raw bytes (or base64) contain the key at all."""
    records: set[tuple[str, int]] = set()
    raw_files: set[str] = set()
    b64 = base64.b64encode(key)
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                data = f.read()
            if key in data or b64 in data:
                raw_files.add(path)
            pos = 0
            while pos + 61 <= len(data):
                base, length = struct.unpack_from(">qi", data, pos)
                end = pos + 12 + length
                if length < 49 or end > len(data) or data[pos + 16] != 2:
                    break
                attrs = struct.unpack_from(">h", data, pos + 21)[0]
                payload = data[pos + 61:end]
                try:
                    payload = _decompress(attrs & 7, payload)
                except Exception:
                    break
                if key in payload:
                    raw_files.add(path)
                count = struct.unpack_from(">i", data, pos + 57)[0]
                q = 0
                for _ in range(count):
                    size, q = _varint(payload, q)
                    rend = q + size
                    q += 1  # attributes
                    _ts, q = _varint(payload, q)
                    od, q = _varint(payload, q)
                    klen, q = _varint(payload, q)
                    k = payload[q:q + klen] if klen >= 0 else None
                    if k == key and not attrs & 0x20:
                        records.add((path, base + od))
                    q = rend
                pos = end
    return records, raw_files
