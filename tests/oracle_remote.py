"""``__remote_log_metadata`` partitions for the ``--remote-log-metadata-decoder`` oracle (tests only; issue 26).

``records(seed)`` draws a seeded list of (key, value) byte pairs: every record type TopicBasedRemoteLogMetadataManager
writes (RemoteLogSegmentMetadataRecord, ...UpdateRecord, RemotePartitionDeleteMetadataRecord, ...SnapshotRecord;
apiKeys 0-3, all at version 0, the only version Kafka has), framed as ``RemoteLogMetadataSerde`` frames them
(``AbstractApiMessageSerde``: unsigned varint frame version 1, apiKey, version, then the message). The values are
drawn to reach every branch of the objects' constructors and ``toString`` (custom metadata absent / empty / present,
several leader epochs in any order with repeats, every segment and partition-delete state and ids no state has,
negative start offsets, end offsets below the start, no epochs, unicode and empty topic names), and some frames are
changed after encoding: versions and apiKeys Kafka does not know, frame versions 0 and 2+, an unknown tagged field,
a cut body, bytes after the body, a null topic name, a null or empty value, a key. The bodies come from kafkalog's
encoder (``internal_topics/schema.encode``): kafka-real's ``Records`` program has no JSON converters for the storage
module's generated classes; Kafka's own tool then decodes them, so an encoder mistake shows as a disagreement too.

``plan(specs, seed)`` wraps them into a ``Write`` plan on ``__remote_log_metadata`` (codecs, batch sizes, segment
rolls).
"""

from __future__ import annotations

import random

from kafkalog_cli.format.flexible import kafka_uuid
from kafkalog_cli.format.varint import write_uvarint
from kafkalog_cli.internal_topics import schema as sc
from kafkalog_cli.internal_topics.schemas_remote import MESSAGES

BY_KEY = {m.api_key: m for m in MESSAGES}
NAMES = ["foo", "orders", "__consumer_offsets", "тема-ü", "", "a" * 40]
MUTATIONS = ["none"] * 12 + ["version", "api-key", "frame0", "frame2", "frame-big", "tagged", "cut", "garbage",
                             "null-name", "null-value", "empty-value", "key", "one-byte"]


def _uuid(rng: random.Random) -> str:
    return kafka_uuid(bytes(rng.randrange(256) for _ in range(16)) if rng.random() < 0.95 else bytes(16))


def _tip(rng: random.Random, topics: list[tuple[str, str, int]]) -> dict:
    name, tid, part = rng.choice(topics)
    return {"name": name, "id": tid, "partition": part}


def _epochs(rng: random.Random, start: int) -> list[dict]:
    n = rng.choice([0, 1, 1, 2, 3, 5]) if rng.random() < 0.93 else 0
    out = [{"leaderEpoch": rng.choice([0, 1, 2, 3, 7, 2**31 - 1, -1]), "offset": start + rng.randint(0, 500)}
           for _ in range(n)]
    if n > 1 and rng.random() < 0.5:
        out.sort(key=lambda e: e["leaderEpoch"])
    return out


def _offsets(rng: random.Random) -> tuple[int, int]:
    start = rng.choice([0, 0, 17, 10**6, 2**40]) if rng.random() < 0.92 else rng.choice([-1, -100])
    end = start + rng.randint(0, 1000) if rng.random() < 0.9 else start - rng.randint(1, 5)
    return start, end


def _state(rng: random.Random, n: int) -> int:
    return rng.randrange(n) if rng.random() < 0.9 else rng.choice([n, 9, -1, 127])


def _custom(rng: random.Random) -> bytes | None:
    return rng.choice([None, None, b"", bytes(rng.randrange(256) for _ in range(rng.randint(1, 40)))])


def _values(rng: random.Random, key: int, topics: list[tuple[str, str, int]]) -> dict:
    ts = 1_700_000_000_000 + rng.randint(0, 10**6)
    if key in (0, 1):
        sid = {"topicIdPartition": _tip(rng, topics), "id": _uuid(rng)}
        if key == 1:
            return {"remoteLogSegmentId": sid, "brokerId": rng.choice([0, 1, 3, -1]), "eventTimestampMs": ts,
                    "customMetadata": _custom(rng), "remoteLogSegmentState": _state(rng, 4)}
        start, end = _offsets(rng)
        return {"remoteLogSegmentId": sid, "startOffset": start, "endOffset": end, "brokerId": rng.choice([0, 1, 3]),
                "maxTimestampMs": ts - rng.randint(0, 1000), "eventTimestampMs": ts,
                "segmentLeaderEpochs": _epochs(rng, max(start, 0)), "segmentSizeInBytes": rng.choice([0, 1024, 2**31 - 1]),
                "customMetadata": _custom(rng), "remoteLogSegmentState": _state(rng, 4)}
    if key == 2:
        return {"topicIdPartition": _tip(rng, topics), "brokerId": rng.choice([0, 1, 3]), "eventTimestampMs": ts,
                "remotePartitionDeleteState": _state(rng, 3)}
    start, end = _offsets(rng)
    return {"segmentId": _uuid(rng), "startOffset": start, "endOffset": end, "brokerId": rng.choice([0, 2]),
            "maxTimestampMs": ts - 5, "eventTimestampMs": ts, "segmentLeaderEpochs": _epochs(rng, max(start, 0)),
            "segmentSizeInBytes": rng.randint(0, 10**6), "customMetadata": _custom(rng),
            "remoteLogSegmentState": _state(rng, 4)}


def _frame(frame: int, api_key: int, version: int, body: bytes) -> bytes:
    out = bytearray()
    for v in (frame, api_key, version):
        write_uvarint(v, out)
    return bytes(out) + body


def _record(rng: random.Random, topics: list[tuple[str, str, int]]) -> tuple[bytes | None, bytes | None, str]:
    key = rng.choice([0, 0, 1, 1, 2, 3])
    values = _values(rng, key, topics)
    mutation = rng.choice(MUTATIONS)
    if mutation == "null-name":
        tip = values.get("topicIdPartition") or (values.get("remoteLogSegmentId") or {}).get("topicIdPartition")
        if tip is None:
            mutation = "none"
        else:
            tip["name"] = None
    body = sc.encode(BY_KEY[key], values, 0)
    frame, api_key, version = 1, key, 0
    if mutation == "version":
        version = rng.choice([1, 2, 200])
    elif mutation == "api-key":
        api_key = rng.choice([4, 5, 17, 300])
    elif mutation == "frame0":
        frame = 0
    elif mutation == "frame2":
        frame = rng.choice([2, 3])
    elif mutation == "frame-big":
        frame = rng.choice([128, 40000, 70000])
    elif mutation == "tagged":
        # the top-level struct's tagged fields are its last bytes (no tagged field: one 0x00): an unknown tag,
        # which the generated reader keeps as an unknown tagged field and toString never shows
        tag, data = rng.choice([0, 1, 9, 200]), bytes(rng.randrange(256) for _ in range(rng.randint(0, 5)))
        extra = bytearray()
        write_uvarint(1, extra)
        write_uvarint(tag, extra)
        write_uvarint(len(data), extra)
        body = body[:-1] + bytes(extra) + data
    elif mutation == "cut":
        body = body[: rng.randint(0, max(len(body) - 1, 0))]
    elif mutation == "garbage":
        body = body + bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
    value: bytes | None = _frame(frame, api_key, version, body)
    if mutation == "null-value":
        value = None
    elif mutation == "empty-value":
        value = b""
    elif mutation == "one-byte":
        value = value[:1] if value is not None else None
    k = bytes(rng.randrange(256) for _ in range(rng.randint(0, 8))) if mutation == "key" else None
    return k, value, mutation


def records(seed: int, n: int | None = None) -> list[tuple[bytes | None, bytes | None, str]]:
    """(key, value, what was changed) per record of one generated partition."""
    rng = random.Random(f"remote-{seed}")
    topics = [(rng.choice(NAMES), _uuid(rng), rng.choice([0, 1, 7, -1])) for _ in range(rng.randint(1, 3))]
    return [_record(rng, topics) for _ in range(n if n is not None else rng.randint(4, 24))]


def plan(recs: list[tuple[bytes | None, bytes | None, str]], seed: int) -> dict:
    rng = random.Random(seed)
    ops: list[dict] = []
    i = 0
    while i < len(recs):
        n = rng.randint(1, 5)
        batch = [{"key": None if k is None else {"hex": k.hex()}, "value": None if v is None else {"hex": v.hex()}}
                 for k, v, _ in recs[i:i + n]]
        ops.append({"op": "append", "records": batch, "codec": rng.choice(["none", "none", "gzip", "lz4", "zstd"])})
        i += n
    return {"topic": "__remote_log_metadata", "partition": rng.randint(0, 49),
            "config": {"segment.bytes": str(rng.choice([1500, 1 << 20]))}, "ops": ops, "shutdown": "clean"}
