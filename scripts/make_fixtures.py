#!/usr/bin/env python3
"""Regenerate the segment fixtures under fixtures/ (deterministic: same bytes on every run).

Each fixture exercises one corner of the format; the goldens in fixtures/golden/ are the exact output of
``kafkalog dump`` on them (regenerate those with scripts/update_goldens.py and review the diff). The §3.4 example and
the Kafka 2.3.1 seed batch are checked against text from outside this project (the spec / a real broker's tool).

    python scripts/make_fixtures.py
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafkalog_cli.format import codecs  # noqa: E402
from kafkalog_cli.format import control as c  # noqa: E402
from kafkalog_cli.format.encoder import (  # noqa: E402
    RecordSpec,
    encode_batch,
    encode_legacy_message,
    encode_legacy_wrapper,
)
from kafkalog_cli.storage.companions import (  # noqa: E402
    AbortedTxn,
    ProducerEntry,
    encode_leader_epoch_checkpoint,
    encode_producer_snapshot,
    encode_txn_index,
)
from kafkalog_cli.storage.index import encode_offset_index, encode_time_index  # noqa: E402
from kafkalog_cli.storage.segment import entries  # noqa: E402

FX = ROOT / "fixtures"
T0 = 1700000000000


def write(rel: str, data: bytes | str) -> None:
    p = FX / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data.encode() if isinstance(data, str) else data)


def spec_example() -> bytes:
    """Spec §3.4: batch A (2 records, header h1=x, tombstone), B (transactional), C (COMMIT), 7 zero bytes."""
    a = encode_batch(
        [RecordSpec(b"k0", b"v0", headers=[("h1", b"x")], timestamp=T0), RecordSpec(b"k1", None, timestamp=T0 + 5)],
        partition_leader_epoch=0,
    )
    b = encode_batch([RecordSpec(None, b"txn-value", timestamp=T0 + 10)], base_offset=2, producer_id=1000,
                     producer_epoch=0, base_sequence=0, transactional=True, partition_leader_epoch=0)
    cc = encode_batch([RecordSpec(c.encode_control_key(c.COMMIT), c.encode_end_txn_marker(5), timestamp=T0 + 11)],
                      base_offset=3, producer_id=1000, producer_epoch=0, transactional=True, control=True,
                      partition_leader_epoch=0)
    return a + b + cc + bytes(7)


def recovery_indexes(log: bytes, base: int, interval: int) -> tuple[bytes, bytes]:
    """The broker's recovery rule (spec §6.5), used here only to give fixtures realistic index files."""
    oidx, tidx = [], []
    valid = last_indexed = 0
    max_ts, max_ts_off = -1, -1
    for e in entries(log):
        if e.max_timestamp > max_ts:
            max_ts, max_ts_off = e.max_timestamp, e.last_offset
        if valid - last_indexed > interval:
            oidx.append((e.last_offset, valid))
            if not tidx or max_ts > tidx[-1][0]:
                tidx.append((max_ts, max_ts_off))
            last_indexed = valid
        valid += e.size
    if max_ts >= 0 and (not tidx or max_ts > tidx[-1][0]):
        tidx.append((max_ts, max_ts_off))
    return encode_offset_index(base, oidx), encode_time_index(base, tidx)


def main() -> None:
    write("spec34/t-0/00000000000000000000.log", spec_example())

    # Kafka 2.3.1 seed: one batch, partitionLeaderEpoch 5, key DemoKey, value DemoValue
    write("seed231/demo-0/00000000000000000000.log",
          encode_batch([RecordSpec(b"DemoKey", b"DemoValue", timestamp=1599887411245)], partition_leader_epoch=5))

    # legacy: spec §3.4 v1 + v0 messages, then compressed wrappers
    legacy = encode_legacy_message(offset=2, key=b"k", value=b"v", magic=1, timestamp=T0 + 2)
    legacy += encode_legacy_message(offset=3, key=b"k", value=b"v", magic=0)
    inner = [(b"a", b"alpha", T0 + 10), (None, b"beta", T0 + 11), (b"c", None, T0 + 12)]
    legacy += encode_legacy_wrapper(inner, offset=6, codec=codecs.GZIP, magic=1)  # relative inner offsets 0..2
    legacy += encode_legacy_wrapper(inner, offset=9, codec=codecs.SNAPPY, magic=0)  # absolute inner offsets 7..9
    legacy += encode_legacy_wrapper(inner, offset=12, codec=codecs.LZ4, magic=1, timestamp_type=1,
                                    wrapper_timestamp=T0 + 99)  # LogAppendTime wrapper
    legacy += encode_legacy_wrapper(inner[:2], offset=14, codec=codecs.LZ4, magic=0)  # v0 broken LZ4 HC
    write("legacy/l-0/00000000000000000002.log", legacy)

    # v2 codecs and attributes
    recs = [RecordSpec(f"key-{i}".encode(), (f"value-{i}-" * 20).encode(), headers=[("trace", b"t%d" % i), ("n", None)],
                       timestamp=T0 + i) for i in range(5)]
    log = b""
    off = 100
    for codec in (codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD):
        log += encode_batch(recs, base_offset=off, codec=codec, partition_leader_epoch=3, producer_id=42,
                            producer_epoch=1, base_sequence=off - 100)
        off += 5
    log += encode_batch(recs[:2], base_offset=off, timestamp_type=1, max_timestamp=T0 + 5000, partition_leader_epoch=3)
    off += 2
    # a cleaned batch: delete horizon set, a gap in offsets, count < lastOffsetDelta + 1, a tombstone
    log += encode_batch([RecordSpec(b"kept", b"x", timestamp=T0 + 20, offset_delta=0),
                         RecordSpec(b"gone", None, timestamp=T0 + 21, offset_delta=3)],
                        base_offset=off, delete_horizon_ms=T0 + 86400000, last_offset_delta=4, partition_leader_epoch=4)
    off += 5
    # the cleaner's empty batch kept for producer state
    log += encode_batch([], base_offset=off, base_timestamp=-1, max_timestamp=T0 + 30, producer_id=7,
                        producer_epoch=0, base_sequence=11, last_offset_delta=1, partition_leader_epoch=4)
    off += 2
    # sequence wrap-around near Integer.MAX_VALUE
    log += encode_batch(recs[:3], base_offset=off, producer_id=8, producer_epoch=2, base_sequence=2147483646,
                        partition_leader_epoch=4)
    write("codecs/c-0/00000000000000000100.log", log)

    # KRaft control records and a snapshot
    voters = {"version": 0, "voters": [{"voterId": 1, "voterDirectoryId": "tpx8pd1IQDqJwMfGzXj6GA",
                                        "endpoints": [{"name": "CONTROLLER", "host": "localhost", "port": 9093}],
                                        "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}]}
    kraft = encode_batch([RecordSpec(c.encode_control_key(c.LEADER_CHANGE),
                                     c.encode_kraft_control(c.LEADER_CHANGE, {"version": 0, "leaderId": 1,
                                                                              "voters": [{"voterId": 1}],
                                                                              "grantingVoters": [{"voterId": 1}]}),
                                     timestamp=T0)], control=True, partition_leader_epoch=1)
    kraft += encode_batch([RecordSpec(c.encode_control_key(c.KRAFT_VERSION),
                                      c.encode_kraft_control(c.KRAFT_VERSION, {"version": 0, "kRaftVersion": 1}),
                                      timestamp=T0 + 1),
                           RecordSpec(c.encode_control_key(c.KRAFT_VOTERS), c.encode_kraft_control(c.KRAFT_VOTERS, voters),
                                      timestamp=T0 + 1)], base_offset=1, control=True, partition_leader_epoch=1)
    kraft += encode_batch([RecordSpec(c.encode_control_key(9), b"\x00\x00", timestamp=T0 + 2)], base_offset=3,
                          control=True, partition_leader_epoch=1)
    write("kraft/__cluster_metadata-0/00000000000000000000.log", kraft)
    snap = encode_batch([RecordSpec(c.encode_control_key(c.SNAPSHOT_HEADER),
                                    c.encode_kraft_control(c.SNAPSHOT_HEADER, {"version": 0, "lastContainedLogTimestamp": 10000}),
                                    timestamp=T0)], control=True, partition_leader_epoch=1)
    snap += encode_batch([RecordSpec(c.encode_control_key(c.SNAPSHOT_FOOTER),
                                     c.encode_kraft_control(c.SNAPSHOT_FOOTER, {"version": 0}), timestamp=T0)],
                         base_offset=1, control=True, partition_leader_epoch=1)
    write("kraft/__cluster_metadata-0/00000000000000000004-0000000001.checkpoint", snap)

    # a partition directory with two segments and every companion file
    seg0 = b""
    for i in range(40):
        seg0 += encode_batch([RecordSpec(b"k%d" % (i % 7), os.urandom(0) + (b"payload-%03d-" % i) * 30, timestamp=T0 + 1000 * i)],
                             base_offset=i, partition_leader_epoch=0 if i < 20 else 2)
    aborted_b = encode_batch([RecordSpec(b"tx", b"aborted", timestamp=T0 + 50_000)], base_offset=40, producer_id=500,
                             producer_epoch=3, base_sequence=0, transactional=True, partition_leader_epoch=2)
    abort_m = encode_batch([RecordSpec(c.encode_control_key(c.ABORT), c.encode_end_txn_marker(9), timestamp=T0 + 50_001)],
                           base_offset=41, producer_id=500, producer_epoch=3, transactional=True, control=True,
                           partition_leader_epoch=2)
    seg1 = aborted_b + abort_m
    for i in range(42, 60):
        seg1 += encode_batch([RecordSpec(b"k%d" % (i % 7), b"later-%03d" % i, timestamp=T0 + 1000 * i)], base_offset=i,
                             partition_leader_epoch=2)
    write("partition/orders-0/00000000000000000000.log", seg0)
    i0, t0 = recovery_indexes(seg0, 0, 1024)
    write("partition/orders-0/00000000000000000000.index", i0)
    write("partition/orders-0/00000000000000000000.timeindex", t0)
    write("partition/orders-0/00000000000000000040.log", seg1)
    i1, t1 = recovery_indexes(seg1, 40, 256)
    # the active segment's indexes are preallocated: a zero-filled tail after the valid entries
    write("partition/orders-0/00000000000000000040.index", i1 + bytes(8 * 6))
    write("partition/orders-0/00000000000000000040.timeindex", t1 + bytes(12 * 4))
    write("partition/orders-0/00000000000000000040.txnindex", encode_txn_index([AbortedTxn(0, 500, 40, 41, 42)]))
    write("partition/orders-0/00000000000000000060.snapshot", encode_producer_snapshot([
        ProducerEntry(500, 3, 0, 40, 0, T0 + 50_000, 9, -1),
        ProducerEntry(501, 0, -1, -1, 0, T0 + 60_000, 4, -1),
    ]))
    write("partition/orders-0/leader-epoch-checkpoint", encode_leader_epoch_checkpoint([(0, 0), (2, 20)]))
    write("partition/orders-0/partition.metadata", "version: 0\ntopic_id: B3_HiNPgSQ6oxG9ZZ6ED5A")

    # corrupt inputs: a bad CRC, then a zero-filled preallocated tail (size field 0 -> Kafka aborts here)
    good = [encode_batch([RecordSpec(b"k", b"v%d" % i, timestamp=T0 + i)], base_offset=i, partition_leader_epoch=0)
            for i in range(3)]
    bad = bytearray(good[1])
    bad[-2] ^= 0x01
    write("corrupt/bad-0/00000000000000000000.log", good[0] + bytes(bad) + good[2] + bytes(64))
    # a mismatching index: second entry claims offset 2 at the position of offset 1
    write("corrupt/bad-0/00000000000000000000.index", struct.pack(">iiii", 1, len(good[0]), 2, len(good[0])))
    # a broken producer snapshot (CRC flipped)
    snapb = bytearray(encode_producer_snapshot([ProducerEntry(1, 0, 5, 10, 2, T0, -1, -1)]))
    snapb[3] ^= 0xFF
    write("corrupt/bad-0/00000000000000000003.snapshot", bytes(snapb))

    # the bundled sample log directory for the README's first command
    sample = FX / "sample-logdir"
    for part, n in (("payments-0", 30), ("payments-1", 25)):
        seg = b""
        for i in range(n):
            seg += encode_batch([RecordSpec(b"user-%d" % (i % 5), b'{"amount": %d}' % (i * 10), timestamp=T0 + 60_000 * i)],
                                base_offset=i, producer_id=77, producer_epoch=0, base_sequence=i,
                                codec=codecs.LZ4 if i % 3 == 0 else codecs.NONE, partition_leader_epoch=0)
        write(f"sample-logdir/{part}/00000000000000000000.log", seg)
        i0, t0 = recovery_indexes(seg, 0, 512)
        write(f"sample-logdir/{part}/00000000000000000000.index", i0)
        write(f"sample-logdir/{part}/00000000000000000000.timeindex", t0)
        write(f"sample-logdir/{part}/leader-epoch-checkpoint", encode_leader_epoch_checkpoint([(0, 0)]))
        write(f"sample-logdir/{part}/partition.metadata", "version: 0\ntopic_id: gSnfpEbtQfSDpxM2lhEn9A")
    registry()
    print(f"fixtures written under {sample.parent}")


def registry() -> None:
    """A log dir with a Schema Registry's ``_schemas`` topic (its documented key/value JSON: two Avro versions, a
    CONFIG record, a soft delete) and a topic whose values are Confluent-framed Avro (magic 0, 4-byte id): the
    bundled input of ``kafkalog schemas`` and ``dump --value-decoder schema-registry`` (and the MCP tool's example)."""
    import io
    import json

    import fastavro

    def j(obj: object) -> bytes:
        return json.dumps(obj, separators=(",", ":")).encode()

    v1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}]}
    v2 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"},
                                                        {"name": "qty", "type": "int", "default": 1}]}
    recs = [
        (j({"keytype": "NOOP", "magic": 0}), None),
        (j({"keytype": "SCHEMA", "subject": "orders-value", "version": 1, "magic": 1}),
         j({"subject": "orders-value", "version": 1, "id": 1, "schema": json.dumps(v1), "deleted": False})),
        (j({"keytype": "CONFIG", "subject": "orders-value", "magic": 0}), b'{"compatibilityLevel":"BACKWARD"}'),
        (j({"keytype": "SCHEMA", "subject": "orders-value", "version": 2, "magic": 1}),
         j({"subject": "orders-value", "version": 2, "id": 2, "schema": json.dumps(v2), "deleted": False})),
        (j({"keytype": "SCHEMA", "subject": "orders-value", "version": 1, "magic": 1}),
         j({"subject": "orders-value", "version": 1, "id": 1, "schema": json.dumps(v1), "deleted": True})),
    ]
    seg = b"".join(encode_batch([RecordSpec(k, v, timestamp=T0 + 1000 * i)], base_offset=i, partition_leader_epoch=0)
                   for i, (k, v) in enumerate(recs))
    write("registry/_schemas-0/00000000000000000000.log", seg)
    write("registry/_schemas-0/00000000000000000000.index", b"")
    write("registry/_schemas-0/00000000000000000000.timeindex", b"")
    data = b""
    for i in range(6):
        sid, schema = (1, v1) if i < 3 else (2, v2)
        buf = io.BytesIO()
        rec = {"id": i, "item": f"item-{i}"} if sid == 1 else {"id": i, "item": f"item-{i}", "qty": i}
        fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), rec)
        value = b"\x00" + struct.pack(">i", sid) + buf.getvalue()
        data += encode_batch([RecordSpec(b"order-%d" % i, value, timestamp=T0 + 60_000 * i)], base_offset=i,
                             partition_leader_epoch=0)
    write("registry/orders-0/00000000000000000000.log", data)
    i0, t0 = recovery_indexes(data, 0, 4096)
    write("registry/orders-0/00000000000000000000.index", i0)
    write("registry/orders-0/00000000000000000000.timeindex", t0)


if __name__ == "__main__":
    main()
