"""The producers' key -> partition functions, bit for bit: Java's default and librdkafka's hashing partitioners.

A record's partition was chosen by its producer, not by the broker, so finding "the partition key K lives in"
(find-key) or checking that the records of a topic are where their keys say (audit-partitioning) means
recomputing the producer's choice. Two families write most of the world's keyed records:

* Java's producer (``BuiltInPartitioner.partitionForKey``, clients/.../producer/internals/BuiltInPartitioner.java:329):
  ``Utils.toPositive(Utils.murmur2(keyBytes)) % numPartitions`` (Utils.java:492 murmur2, Utils.java:1187
  toPositive: ``number & 0x7fffffff``, not ``Math.abs``). A null key is not hashed (sticky partitioning).
* librdkafka and everything built on it (confluent-kafka-python/-go/-dotnet, node-rdkafka): the ``partitioner``
  topic setting, default ``consistent_random`` (src/rdkafka_conf.c:1825). src/rdkafka_msg.c:1063-1125:
  ``consistent`` = ``rd_crc32(key) % n`` (zlib's CRC-32, so an empty or null key goes to partition 0),
  ``consistent_random`` = random for an empty or null key, else ``consistent``; ``murmur2`` =
  ``(rd_murmur2(key) & 0x7fffffff) % n`` (src/rdmurmur2.c:57, the same hash as Java's); ``murmur2_random`` =
  random for a null key, else ``murmur2``; ``fnv1a`` = ``rd_fnv1a(key) % n`` (src/rdfnv1a.c:43: 32-bit FNV-1a
  computed in int32, negated when negative to match Sarama's NewHashPartitioner, returned as uint32).

Each function here returns the partition, or ``None`` where the producer would have chosen at random (that
record is explained by any partition). Keys are the record's key bytes as stored in the log.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: MurmurHash2 (seed 0x9747b28c, little-endian words) as a signed Java int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    words = length >> 2
    if words:
        for k in struct.unpack_from(f"<{words}I", data):
            k = (k * _M) & _MASK
            k ^= k >> 24
            k = (k * _M) & _MASK
            h = ((h * _M) & _MASK) ^ k
    tail = length & 3
    base = length & ~3
    if tail == 3:
        h ^= data[base + 2] << 16
    if tail >= 2:
        h ^= data[base + 1] << 8
    if tail >= 1:
        h ^= data[base]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """``Utils.toPositive``: ``number & 0x7fffffff`` (Integer.MIN_VALUE -> 0, -1 -> 0x7fffffff)."""
    return number & 0x7FFFFFFF


def fnv1a(data: bytes) -> int:
    """librdkafka's ``rd_fnv1a`` (uint32): FNV-1a in int32, absolute value taken (Sarama compatible)."""
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & _MASK
    if h & 0x80000000:  # int32 h < 0: h = -h (INT_MIN stays 0x80000000)
        h = (-(h - 0x100000000)) & _MASK
    return h


def crc32(data: bytes) -> int:
    """librdkafka's ``rd_crc32``: zlib's CRC-32 (IEEE, reflected)."""
    return zlib.crc32(data) & _MASK


def java_default(key: bytes | None, partitions: int) -> int | None:
    """Java's producer (``BuiltInPartitioner.partitionForKey``); a null key is sticky (None: any partition)."""
    return None if key is None else to_positive(murmur2(key)) % partitions


def consistent(key: bytes | None, partitions: int) -> int | None:
    """librdkafka ``consistent``: CRC-32 of the key; empty and null keys to one partition (crc32 of nothing = 0)."""
    return crc32(key or b"") % partitions


def consistent_random(key: bytes | None, partitions: int) -> int | None:
    """librdkafka ``consistent_random`` (its default): random for an empty or null key, else ``consistent``."""
    return None if not key else crc32(key) % partitions


def murmur2_librdkafka(key: bytes | None, partitions: int) -> int | None:
    """librdkafka ``murmur2``: Java compatible; a null key hashes as empty (one partition)."""
    return to_positive(murmur2(key or b"")) % partitions


# librdkafka ``murmur2_random``: random for a null key, else Java's murmur2 (an empty key is hashed): "functionally
# equivalent to the default partitioner in the Java Producer" (src/rdkafka_conf.c:1836), and the same function here
murmur2_random = java_default


def fnv1a_partition(key: bytes | None, partitions: int) -> int | None:
    """librdkafka ``fnv1a``: ``rd_fnv1a(key) % n``; a null key hashes as empty (one partition)."""
    return fnv1a(key or b"") % partitions


def fnv1a_random(key: bytes | None, partitions: int) -> int | None:
    """librdkafka ``fnv1a_random``: random for a null key, else ``fnv1a``."""
    return None if key is None else fnv1a(key) % partitions


Partitioner = Callable[[bytes | None, int], "int | None"]

# The partitioners the audit reports, by the name a user would configure (Java's default first).
PARTITIONERS: dict[str, Partitioner] = {
    "murmur2": java_default,
    "consistent": consistent,
    "consistent_random": consistent_random,
    "murmur2_random": murmur2_random,
    "fnv1a": fnv1a_partition,
}

# Every name librdkafka accepts for a hashing partitioner (the ``partitioner`` setting), for callers that replay
# records with a given producer's choice. ``murmur2`` here is librdkafka's (null key hashed as empty).
LIBRDKAFKA: dict[str, Partitioner] = {
    "consistent": consistent,
    "consistent_random": consistent_random,
    "murmur2": murmur2_librdkafka,
    "murmur2_random": murmur2_random,
    "fnv1a": fnv1a_partition,
    "fnv1a_random": fnv1a_random,
}


def partition_for(key: bytes | None, partitions: int, partitioner: str = "murmur2") -> int | None:
    """The partition ``partitioner`` (a name of ``PARTITIONERS``) picks for ``key`` among ``partitions``."""
    if partitions <= 0:
        raise ValueError(f"partition count must be positive, got {partitions}")
    try:
        fn = PARTITIONERS[partitioner]
    except KeyError:
        raise ValueError(f"unknown partitioner {partitioner!r} (known: {', '.join(PARTITIONERS)})") from None
    return fn(key, partitions)


def all_partitions(key: bytes | None, partitions: int) -> dict[str, int | None]:
    """Every partitioner's choice for ``key`` (None where that producer picks at random)."""
    return {name: fn(key, partitions) for name, fn in PARTITIONERS.items()}
