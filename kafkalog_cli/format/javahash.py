"""Java/Scala hashing needed to reproduce Kafka's choices: String.hashCode, Utils.abs, Scala 2.13 hash order.

Kafka picks a coordinator partition from ``String.hashCode`` and prints some sets and maps in the iteration order
of Scala's mutable hash collections, so both must be computed exactly as the JVM does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - 0x100000000 if v & 0x80000000 else v


def java_string_hash(s: str) -> int:
    """``String.hashCode``: ``s[0]*31^(n-1) + ...`` over UTF-16 code units, in int32 arithmetic."""
    data = s.encode("utf-16-be", errors="surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return int32(h)


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs`` (since KAFKA-1988, 2015): ``Math.abs(n)``, except Integer.MIN_VALUE maps to 0.

    Not ``n & 0x7fffffff`` (the pre-2015 rule, and the producer's ``toPositive``): for negative hashes the two
    give different partitions.
    """
    n = int32(n)
    return 0 if n == -(2**31) else abs(n)


def topic_partition_hash(topic: str, partition: int) -> int:
    """``TopicPartition.hashCode``: 31 * (31 + partition) + topic.hashCode()."""
    return int32(31 * int32(31 + partition) + java_string_hash(topic))


def _improve(h: int) -> int:
    return int32(h ^ ((h & 0xFFFFFFFF) >> 16))


def _table_size_for(capacity: int) -> int:
    c = max(capacity - 1, 4)
    return min(1 << c.bit_length(), 1 << 30)


def scala213_order(items: Iterable[T], hash_of: Callable[[T], int], batches: list[int] | None = None) -> list[T]:
    """Iteration order of a Scala 2.13 ``mutable.HashSet``/``HashMap`` filled with ``items`` in order.

    The table starts at 16 slots (load factor 0.75) and doubles before an insert when ``size + 1 >= threshold``;
    ``batches`` gives the sizes of ``++=`` calls whose ``sizeHint`` may grow it earlier. Iteration walks slots in
    index order (improved hash & (len-1)), each bucket sorted by improved hash, equal hashes in insertion order.
    Duplicates (same hash and equal item) keep their first position.
    """
    seq = list(items)
    length, size = 16, 0
    hint_at: dict[int, int] = {}
    if batches:
        pos = 0
        for n in batches:
            hint_at[pos] = n
            pos += n
    seen: dict[tuple[int, object], int] = {}
    order: list[tuple[int, T]] = []
    for i, item in enumerate(seq):
        if i in hint_at:
            target = _table_size_for(int((hint_at[i] + 1) / 0.75))
            if target > length:
                length = target
        if size + 1 >= int(length * 0.75):
            length *= 2
        h = _improve(hash_of(item))
        key = (h, item)
        if key in seen:
            continue
        seen[key] = i
        size += 1
        order.append((h, item))
    ranked = sorted(range(len(order)), key=lambda k: (order[k][0] & (length - 1), order[k][0], k))
    return [order[k][1] for k in ranked]
