"""``--transaction-log-decoder``: ``__transaction_state`` records as each Kafka version prints them.

* 2.0 – 2.4.0: ``transactionalId=<id>`` / ``producerId:..,partitions=Set(..),..``; a tombstone aborts (NPE);
* 2.4.1 – 3.9: ``transaction_metadata::transactionalId=<id>``, ``<DELETE>``, partitions ``[t-0,t-1]`` (2.5+);
  ``unknown::version=<v>`` from 3.5 (earlier: abort, errata E4); a null key aborts with an NPE (errata E5);
* 4.0+: the JSON coordinator form shared with the offsets decoder.

Partitions are held by Kafka in a Scala ``mutable.HashSet``; they are printed in that set's iteration order
(emulated for Scala 2.13 builds).
"""

from __future__ import annotations

from typing import Any

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.format.javahash import scala213_order, topic_partition_hash
from kafkalog_cli.format.layouts import SCHEMA_VERSION
from kafkalog_cli.internal_topics import coordinator as co
from kafkalog_cli.internal_topics import schema as sc
from kafkalog_cli.internal_topics import schemas_txn_share as st
from kafkalog_cli.internal_topics.releases import release_for

Version = tuple[int, int, int]
KEYS = {0: st.TransactionLogKey}
VALUES = {0: st.TransactionLogValue}
STATES = ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"]
NPE = "java.lang.NullPointerException"


def partitions_in_set_order(value: dict[str, Any]) -> list[str]:
    """``topic-partition`` strings in the iteration order of the broker's ``mutable.HashSet[TopicPartition]``."""
    groups = value.get("transactionPartitions") or []
    items: list[tuple[str, int]] = []
    batches: list[int] = []
    for g in groups:
        distinct = list(dict.fromkeys((g["topic"], p) for p in g.get("partitionIds") or []))
        items.extend(distinct)
        batches.append(len(distinct))
    ordered = scala213_order(items, lambda tp: topic_partition_hash(tp[0], tp[1]), batches)
    return [f"{t}-{p}" for t, p in ordered]


class TransactionTextParser:
    """``TransactionLog.formatRecordKeyAndValue`` (2.4.1 – 3.9) and the 2.0 – 2.4.0 parser."""

    def __init__(self, version: Version) -> None:
        self.version = version
        self.release = release_for(version)

    def _key(self, key: bytes | None) -> tuple[int, str | None]:
        if key is None or len(key) < 2:
            raise InvalidRecordError(NPE if key is None else "java.nio.BufferUnderflowException")
        (ver,) = SCHEMA_VERSION.unpack_from(key, 0)
        if not st.TransactionLogKey.supports(ver):
            return ver, None
        try:
            vals, _ = sc.read(key, st.TransactionLogKey, ver, pos=2)
            co.check_non_nullable(st.TransactionLogKey.fields, vals, ver)
        except InvalidRecordError as exc:
            raise InvalidRecordError(co.java_message(exc)) from None
        return ver, vals["transactionalId"]

    def _value(self, value: bytes) -> str:
        if len(value) < 2:
            raise InvalidRecordError("java.nio.BufferUnderflowException")
        (ver,) = SCHEMA_VERSION.unpack_from(value, 0)
        if not st.TransactionLogValue.supports(ver) or ver > self.release.txn_value_max_version:
            raise InvalidRecordError(self.release.txn_unknown_value_error.format(v=ver))
        try:
            v, _ = sc.read(value, st.TransactionLogValue, ver, pos=2)
            co.check_non_nullable(st.TransactionLogValue.fields, v, ver)
        except InvalidRecordError as exc:
            raise InvalidRecordError(co.java_message(exc)) from None
        status = v["transactionStatus"]
        if not 0 <= status < len(STATES):
            raise InvalidRecordError(f"Unknown transaction state id {status} from the transaction status message")
        state = STATES[status]
        if state != "Empty" and v.get("transactionPartitions") is None:
            # readTxnRecordValue adds the partitions of every state but Empty with value.transactionPartitions
            # .forEach: a null array (what the coordinator writes for Empty) is a NullPointerException that aborts
            # the dump (TransactionLog.scala:136-141 at 1eb7644 and 3.9.0-rc3, :136-137 at 3.0.2 and 2.8.2)
            raise InvalidRecordError(
                f"{NPE}: the transaction partitions are null in a value of state {state} (Kafka's decoder "
                "reads them for every state but Empty and fails here)")
        parts = [] if state == "Empty" else partitions_in_set_order(v)
        if self.release.txn_partitions_list:
            ptext = "[" + ",".join(parts) + "]"
        else:
            ptext = "Set(" + ", ".join(parts) + ")"  # Scala 2.12 builds; 2.13 builds print "HashSet("
        return (
            f"producerId:{v['producerId']},producerEpoch:{v['producerEpoch']},state={state},"
            f"partitions={ptext},txnLastUpdateTimestamp={v['transactionLastUpdateTimestampMs']},"
            f"txnTimeoutMs={v['transactionTimeoutMs']}"
        )

    def parse(self, record, batch) -> tuple[str | None, str | None]:  # noqa: ANN001
        key = None if record.key is None else bytes(record.key)
        value = None if record.value is None else bytes(record.value)
        ver, txn_id = self._key(key)
        if txn_id is None:
            if self.release.unknown_key_text:
                return f"unknown::version={ver}", None
            raise InvalidRecordError(self.release.txn_unknown_key_error.format(v=ver))
        if self.release.txn_old_text:
            if value is None:
                raise InvalidRecordError(NPE)
            return f"transactionalId={txn_id}", self._value(value)
        key_text = f"transaction_metadata::transactionalId={txn_id}"
        return key_text, "<DELETE>" if value is None else self._value(value)


class TransactionJsonParser(co.JsonCoordinatorParser):
    decoder_name = "transaction log"

    def __init__(self, version: Version) -> None:
        super().__init__(KEYS, VALUES, version)


def make(version: Version):
    return TransactionJsonParser(version) if release_for(version).txn_json else TransactionTextParser(version)


def decode_json(record) -> dict[str, Any]:  # noqa: ANN001
    return co.structured_or_error(record, KEYS, VALUES)
