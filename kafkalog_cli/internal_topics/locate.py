"""Which ``__consumer_offsets`` / ``__transaction_state`` partition holds a group or transactional id.

Kafka's coordinators use ``Utils.abs(id.hashCode()) % partitionCount`` (GroupCoordinator.partitionFor,
TransactionStateManager.partitionFor) where ``hashCode`` is Java's ``String.hashCode`` over UTF-16 code units and
``Utils.abs`` is ``Math.abs`` except that Integer.MIN_VALUE maps to 0 (not ``n & 0x7fffffff``). The default partition count (50) is the
broker default of ``offsets.topic.num.partitions`` and ``transaction.state.log.num.partitions``.
"""

from __future__ import annotations

from kafkalog_cli.format.javahash import java_string_hash, kafka_abs

DEFAULT_PARTITIONS = 50
TOPICS = {"group": "__consumer_offsets", "txn": "__transaction_state"}


def partition_for(ident: str, partitions: int = DEFAULT_PARTITIONS) -> int:
    if partitions <= 0:
        raise ValueError(f"partition count must be positive, got {partitions}")
    return kafka_abs(java_string_hash(ident)) % partitions


def locate(ident: str, kind: str, partitions: int = DEFAULT_PARTITIONS) -> dict[str, object]:
    """Structured answer: id, Java hash, partition and the directory name to look in."""
    p = partition_for(ident, partitions)
    topic = TOPICS[kind]
    return {"id": ident, "hash_code": java_string_hash(ident), "partitions": partitions, "partition": p,
            "topic": topic, "directory": f"{topic}-{p}"}
