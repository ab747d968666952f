"""Seeded generators of kafka-real ``Write`` plans (tests only): the inputs of the differential tests (issue 26).

``plan(seed)`` returns one plan: a topic config (small or default ``segment.bytes`` and ``index.interval.bytes``,
CreateTime or LogAppendTime, ``cleanup.policy``), then a random program of appends (codecs none/gzip/snappy/lz4/zstd;
null, empty, binary and text keys, values and headers; plain, idempotent and transactional producers), COMMIT/ABORT
markers, leader-epoch changes, rolls, time steps, flushes, and a clean or crash shutdown. The same seed always gives
the same plan (``random.Random(seed)``), so a failing case is reproduced by its seed alone.

``Profile`` narrows what a command's tests want (e.g. compaction wants keys and tombstones, no crash) without a second
generator. Every plan is valid for Kafka's leader path: transactions are closed or left open only at the end, and a
producer's epoch never goes down.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
SHUTDOWNS = ("clean", "crash", "crash-no-checkpoint")


@dataclass(frozen=True)
class Profile:
    """What to generate. Defaults: everything."""

    codecs: tuple[str, ...] = CODECS
    shutdowns: tuple[str, ...] = SHUTDOWNS
    transactions: bool = True
    idempotent: bool = True
    keyed: float = 0.7  # probability that an append has keys
    tombstones: bool = True
    log_append_time: bool = True
    compact: bool = False  # cleanup.policy=compact and keys drawn from a small key space
    epochs: bool = True
    open_txn_at_end: bool = True
    max_ops: int = 14
    small_segments: float = 0.7  # probability of a small segment.bytes (many rolls)


DEFAULT = Profile()


def _bytes_value(rng: random.Random, kind: str, i: int, small: bool = False) -> object:
    """A key/value/header value of one kind: None, '' , text, or binary (hex) bytes."""
    if kind == "null":
        return None
    if kind == "empty":
        return ""
    if kind == "binary":
        n = rng.randint(1, 24)
        return {"hex": bytes(rng.randrange(256) for _ in range(n)).hex()}
    if kind == "unicode":
        return rng.choice(["ключ", "キー", "clé", "k\u00e9y"]) + str(i)
    return f"{kind}{i}-" + "x" * rng.choice([0, 3, 40] if small else [0, 3, 40, 300])


def _explicit_records(rng: random.Random, n: int, keyed: bool, tombstones: bool, keyspace: int, small: bool) -> list[dict]:
    recs = []
    for i in range(n):
        kkind = rng.choice(["text", "text", "binary", "empty", "unicode"]) if keyed else "null"
        if keyed and keyspace:
            key: object = f"key-{rng.randrange(keyspace)}"
        else:
            key = _bytes_value(rng, kkind, i, small)
        vkind = rng.choice(["text", "text", "binary", "empty"] + (["null"] if tombstones else []))
        rec: dict = {"key": key, "value": _bytes_value(rng, vkind, i, small)}
        if rng.random() < 0.3:
            hs = []
            for h in range(rng.randint(1, 3)):
                hs.append([rng.choice(["h", "trace-id", "ключ", ""]) + str(h), _bytes_value(rng, rng.choice(["text", "null", "binary", "empty"]), h)])
            rec["headers"] = hs
        recs.append(rec)
    return recs


def plan(seed: int, profile: Profile = DEFAULT, topic: str = "t", partition: int = 0) -> dict:
    rng = random.Random(seed)
    config: dict[str, str] = {}
    if rng.random() < profile.small_segments:
        config["segment.bytes"] = str(rng.choice([600, 1024, 2000, 4096]))
    if rng.random() < 0.6:
        config["index.interval.bytes"] = str(rng.choice([1, 64, 100, 300]))
    if profile.log_append_time and rng.random() < 0.2:
        config["message.timestamp.type"] = "LogAppendTime"
    if profile.compact:
        config["cleanup.policy"] = "compact"
    keyspace = rng.choice([3, 5, 12]) if profile.compact else 0
    # a batch must fit a segment (RecordBatchTooLargeException): small segments get small batches
    small = int(config.get("segment.bytes", "1073741824")) <= 2000

    ops: list[dict] = []
    epoch = 0
    next_pid = 1000
    producers: dict[int, int] = {}  # pid -> epoch
    open_txn: set[int] = set()
    n_ops = rng.randint(3, profile.max_ops)
    for _ in range(n_ops):
        r = rng.random()
        if r < 0.08 and profile.epochs:
            epoch += rng.choice([1, 1, 2])
            continue
        if r < 0.14:
            ops.append({"op": "roll"})
            continue
        if r < 0.18:
            ops.append({"op": "advanceTime", "ms": rng.choice([1, 1000, 60000, 86_400_000])})
            continue
        if r < 0.21:
            ops.append({"op": "flush"})
            continue
        if r < 0.32 and open_txn:
            pid = rng.choice(sorted(open_txn))
            ops.append(
                {"op": "marker", "type": rng.choice(["COMMIT", "ABORT"]), "producerId": pid,
                 "producerEpoch": producers[pid], "coordinatorEpoch": rng.choice([0, 3]), "leaderEpoch": epoch}
            )
            open_txn.discard(pid)
            continue
        op: dict = {"op": "append", "leaderEpoch": epoch, "codec": rng.choice(profile.codecs)}
        keyed = profile.compact or rng.random() < profile.keyed  # a compacted topic rejects null keys
        kind = rng.random()
        if profile.transactions and kind < 0.3:
            if open_txn and rng.random() < 0.5:
                pid = rng.choice(sorted(open_txn))
            else:
                pid = next_pid
                next_pid += 1
                producers[pid] = rng.choice([0, 0, 5])
                open_txn.add(pid)
            op.update(producerId=pid, producerEpoch=producers[pid], transactional=True)
        elif profile.idempotent and kind < 0.55:
            idem = [p for p in producers if p not in open_txn]
            if idem and rng.random() < 0.6:
                pid = rng.choice(idem)
            else:
                pid = next_pid
                next_pid += 1
                producers[pid] = 0
            op.update(producerId=pid, producerEpoch=producers[pid])
        if rng.random() < 0.5:
            op["records"] = _explicit_records(rng, rng.randint(1, 4 if small else 6), keyed, profile.tombstones, keyspace, small)
        else:
            op["count"] = rng.randint(1, 8 if small else 30)
            if keyed:
                op["keyFormat"] = "k%d"
                if keyspace:
                    op["keyModulo"] = keyspace
            op["valueFormat"] = rng.choice(["value-%d", "v%d" + "y" * (10 if small else 50), ""])
            if profile.tombstones and rng.random() < 0.3:
                op["nullValueEvery"] = rng.choice([2, 3, 5])
        op["batches"] = rng.choice([1, 1, 2, 4])
        ops.append(op)
    if not profile.open_txn_at_end or rng.random() < 0.5:
        for pid in sorted(open_txn):
            ops.append({"op": "marker", "type": rng.choice(["COMMIT", "ABORT"]), "producerId": pid,
                        "producerEpoch": producers[pid], "leaderEpoch": epoch})
    if not any(o["op"] == "append" for o in ops):
        ops.append({"op": "append", "count": 3, "leaderEpoch": epoch})
    return {
        "topic": topic,
        "partition": partition,
        "config": config,
        "startTimeMs": 1_700_000_000_000,
        "timeStepMs": rng.choice([1, 1, 7, 1000]),
        "ops": ops,
        "shutdown": rng.choice(profile.shutdowns),
    }


def seeds(n: int, base: int = 0) -> list[int]:
    """The seeds a test parametrises over: ``n`` of them from ``base`` (KAFKALOG_ORACLE_SEEDS/BASE override)."""
    import os

    n = int(os.environ.get("KAFKALOG_ORACLE_SEEDS", n))
    base = int(os.environ.get("KAFKALOG_ORACLE_SEED_BASE", base))
    return list(range(base, base + n))
