"""``__transaction_state`` / ``__consumer_offsets`` partitions for the decoder oracle at every version (tests only;
issue 26, item 5).

The records start as tests/oracle_internal.py draws them (Kafka's own serdes through kafka-real's ``Records``:
offset commits v0-v4, group metadata v0-v4 with consumer-protocol members, transaction metadata v0/v1 in every state
with and without the v1 tagged fields, tombstones); ``mutate`` then changes some of the serialised bytes the ways a
newer or an older writer, or a damaged disk, leaves them, so that each release's decoder meets records it does not
know:

- a value version the release does not know (transaction log v2 / v9 / -1; offsets v5 / v9 / -1 / -2: the JSON
  decoders of 3.8+ read a negative version with version 0's fields);
- a key version (record type) it does not know (transaction log key v1 / v3 / -1; offsets types 3, 4, 9, 15 of the
  new group coordinator, 25 and 40 that no release knows, -1). Not drawn, on purpose: offsets types 17-24 (the
  streams groups of 4.1+, which kafkalog's 4.0 decoder reads and 1eb7644's does not: a deliberate difference,
  docs/dump.md);
- an unknown tagged field on a flexible value (tags past the ones the schema declares);
- a transaction state no release has (8, 100, -1), partitions in an Empty state;
- a value cut short, bytes after the value, an empty value, a null key.
"""

from __future__ import annotations

import random
import struct

import oracle_internal as oi

TXN_MUTATIONS = ["none"] * 10 + ["value-version", "key-version", "tagged", "state", "cut", "garbage", "empty-value",
                                 "null-key"]
OFFSETS_MUTATIONS = ["value-version"] * 10 + ["value-version", "key-version", "tagged", "cut", "garbage", "empty-value",
                                     "null-key"]


def _version(b: bytes) -> int:
    return struct.unpack(">h", b[:2])[0]


def _with_version(b: bytes, v: int) -> bytes:
    return struct.pack(">h", v) + b[2:]


def _tagged(b: bytes, rng: random.Random, first_unknown: int) -> bytes | None:
    """An unknown tagged field appended to a flexible value that has none (its last byte is the 0 tag count)."""
    if not b or b[-1] != 0:
        return None
    tag = rng.choice([first_unknown, first_unknown + 5, 90])
    data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 4)))
    return b[:-1] + bytes([1, tag, len(data)]) + data


def _mutate_one(kind: str, key: bytes | None, value: bytes | None, rng: random.Random) -> tuple[bytes | None, bytes | None]:
    mutation = rng.choice(TXN_MUTATIONS if kind == "transaction-log" else OFFSETS_MUTATIONS)
    if mutation == "null-key":
        return None, value
    if key is None:
        return key, value
    if mutation == "key-version":
        choices = [1, 3, -1] if kind == "transaction-log" else [3, 4, 9, 15, 25, 40, -1]
        return _with_version(key, rng.choice(choices)), value
    if value is None or len(value) < 2:
        return key, value
    if mutation == "value-version":
        return key, _with_version(value, rng.choice([2, 9, -1] if kind == "transaction-log" else [5, 9, -1, -2]))
    if mutation == "tagged":
        flexible = _version(value) >= (1 if kind == "transaction-log" else 4 if _version(key) <= 1 else 4)
        got = _tagged(value, rng, 3 if kind == "transaction-log" else 2) if flexible else None
        return key, got if got is not None else value
    if mutation == "state" and kind == "transaction-log":
        # TransactionLogValue: int16 version, int64 producerId, int16 producerEpoch, int32 timeout, int8 status
        pos = 2 + 8 + 2 + 4
        b = bytearray(value)
        b[pos] = rng.choice([8, 100, 0xFF])
        return key, bytes(b)
    if mutation == "cut":
        return key, value[: rng.randint(2, max(2, len(value) - 1))]
    if mutation == "garbage":
        return key, value + bytes(rng.randrange(256) for _ in range(rng.randint(1, 3)))
    if mutation == "empty-value":
        return key, b""
    return key, value


def pairs(launcher, kind: str, seed: int) -> list[tuple[str | None, str | None]]:  # noqa: ANN001
    """(key hex, value hex) of one generated partition: Kafka-serialised records, some changed (module docstring)."""
    specs = oi.serialise(launcher, oi.messages(kind, seed, n=random.Random(seed).randint(8, 22)))
    rng = random.Random(f"mutate-{kind}-{seed}")
    out: list[tuple[str | None, str | None]] = []
    for k, v in specs:
        key, value = _mutate_one(kind, None if k is None else bytes.fromhex(k), None if v is None else bytes.fromhex(v), rng)
        out.append((None if key is None else key.hex(), None if value is None else value.hex()))
    return out
