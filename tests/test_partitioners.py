"""format/partitioners.py against three independent oracles: Kafka's own test vectors (UtilsTest.testMurmur2),
kafka-python's Java-compatible murmur2, and librdkafka's partitioners observed through confluent-kafka's mock
cluster (the partition each delivery report names)."""

from __future__ import annotations

import random
import zlib

import pytest

from kafkalog_cli.format import partitioners as P

# clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java:106-118 (apache/kafka 1eb7644)
KAFKA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize(("key", "expected"), sorted(KAFKA_MURMUR2.items()))
def test_murmur2_kafka_vectors(key, expected):
    assert P.murmur2(key) == expected


def test_to_positive_is_a_mask_not_abs():
    # Utils.toPositive: number & 0x7fffffff (Utils.java:1187); Math.abs would give 1 for -1
    assert P.to_positive(-1) == 0x7FFFFFFF
    assert P.to_positive(-(2**31)) == 0
    assert P.to_positive(5) == 5


def _keys(n: int, seed: int = 7) -> list[bytes]:
    rnd = random.Random(seed)
    keys = [b"", b"a", b"ab", b"abc", b"abcd", b"\xff\xfe\xfd", bytes(range(256))]
    keys += [rnd.randbytes(rnd.randrange(0, 70)) for _ in range(n)]
    keys += [f"customer-{i}".encode() for i in range(200)]
    return keys


def test_murmur2_matches_kafka_python():
    from kafka.partitioner.default import murmur2 as kp_murmur2  # kafka-python: "Java-compatible" murmur2

    for key in _keys(3000):
        assert P.murmur2(key) & 0xFFFFFFFF == kp_murmur2(key) & 0xFFFFFFFF, key


def test_java_default_matches_kafka_python_partitioner():
    from kafka.partitioner.default import DefaultPartitioner

    class Cluster:  # the two calls DefaultPartitioner.partition makes of kafka-python's ClusterMetadata
        def __init__(self, n: int) -> None:
            self.n = n

        def topics(self):
            return {"t"}

        def partitions_for_topic(self, topic):
            return set(range(self.n))

        def available_partitions_for_topic(self, topic):
            return set(range(self.n))

    for n in (1, 3, 7, 12, 100):
        cluster = Cluster(n)
        for key in _keys(300, seed=n):
            assert P.java_default(key, n) == DefaultPartitioner().partition("t", key, key, b"", b"", cluster), (key, n)


def test_null_and_empty_keys():
    assert P.java_default(None, 5) is None  # Java: sticky partitioning for a null key
    assert P.java_default(b"", 5) == P.to_positive(P.murmur2(b"")) % 5  # an empty key is hashed
    assert P.consistent(None, 5) == 0 and P.consistent(b"", 5) == 0  # crc32 of nothing is 0
    assert P.consistent_random(b"", 5) is None and P.consistent_random(None, 5) is None
    assert P.murmur2_random(None, 5) is None and P.murmur2_random(b"", 5) is not None
    assert P.consistent(b"k", 7) == zlib.crc32(b"k") % 7


def test_fnv1a_negation_matches_sarama_rule():
    # rd_fnv1a takes the absolute value of the int32 hash (src/rdfnv1a.c:43-66)
    for key in _keys(500):
        h = 0x811C9DC5
        for b in key:
            h = ((h ^ b) * 16777619) & 0xFFFFFFFF
        signed = h - (1 << 32) if h >= 1 << 31 else h
        want = (abs(signed) & 0xFFFFFFFF) if signed != -(1 << 31) else 0x80000000
        assert P.fnv1a(key) == want


def test_partition_for_rejects_bad_input():
    with pytest.raises(ValueError):
        P.partition_for(b"k", 0)
    with pytest.raises(ValueError):
        P.partition_for(b"k", 3, "nope")


MOCK_PARTITIONS = 4  # librdkafka's mock cluster auto-creates topics with 4 partitions (src/rdkafka_mock.c:3327);
# it has no CreateTopics handler, so that is the one count observable through it


def _observe(partitioner: str, keys: list[bytes]) -> dict[bytes, int]:
    """The partition librdkafka (confluent-kafka's producer on its mock cluster) delivers each key to."""
    ck = pytest.importorskip("confluent_kafka")
    seen: dict[bytes, int] = {}

    def report(err, msg):
        assert err is None, err
        seen[msg.key()] = msg.partition()

    prod = ck.Producer({"test.mock.num.brokers": 1, "partitioner": partitioner, "linger.ms": 0})
    md = prod.list_topics("t", timeout=10)
    assert len(md.topics["t"].partitions) == MOCK_PARTITIONS
    for key in keys:
        prod.produce("t", key=key, value=b"v", on_delivery=report)
        prod.poll(0)
    assert prod.flush(30) == 0
    return seen


OBSERVED = {  # librdkafka name -> ours
    "consistent": P.consistent,
    "consistent_random": P.consistent_random,
    "murmur2": P.murmur2_librdkafka,
    "murmur2_random": P.murmur2_random,
    "fnv1a": P.fnv1a_partition,
    "fnv1a_random": P.fnv1a_random,
}


@pytest.mark.parametrize("name", sorted(OBSERVED))
def test_librdkafka_partitioners_observed(name):
    partitions = MOCK_PARTITIONS
    keys = list(dict.fromkeys(k for k in _keys(400) if k))  # empty keys: random under *_random
    seen = _observe(name, keys)
    assert set(seen) == set(keys)
    wrong = {k: (seen[k], OBSERVED[name](k, partitions)) for k in keys if seen[k] != OBSERVED[name](k, partitions)}
    assert not wrong, list(wrong.items())[:5]


def test_java_and_librdkafka_disagree_often():
    """The mixed-fleet problem the audit looks for: the default partitioners of the two clients differ."""
    keys = [f"customer-{i}".encode() for i in range(1000)]
    differ = sum(P.java_default(k, 12) != P.consistent_random(k, 12) for k in keys)
    assert differ > 800
