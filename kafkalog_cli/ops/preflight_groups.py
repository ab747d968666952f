"""Each consumer group's LATEST committed offset per partition, with its leader epoch, for ``preflight``.

Why a module of its own: ``preflight`` needs only the position a group resumes from (the committed offset and the
leader epoch the consumer validates it with, KIP-320), not the history ``group-history`` reconstructs; this is the
small piece the integrator may later point at that engine.

The rule is the group coordinator's load of ``__consumer_offsets`` (``GroupMetadataManager`` /
``OffsetMetadataManager.replay``): the last OffsetCommit record per (group, topic, partition) wins, a tombstone
deletes it (expiry, ``kafka-consumer-groups --delete-offsets``, a deleted group), and a transactional commit
(``sendOffsetsToTransaction``) counts only once its COMMIT marker is read (an ABORT drops it). The records are read
through ``internal_topics/transactions.py``'s coordinator walk (the best copy of each ``__consumer_offsets``
partition, undecodable records skipped, damage a warning), so both commands read the coordinator topic the same way.

``leaderEpoch`` exists from OffsetCommitValue version 3 (Kafka 2.1, KIP-320); an older value, or -1, is a commit
without an epoch: the consumer then skips the position validation (SubscriptionState.java:1012-1025).
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkalog_cli.format import control
from kafkalog_cli.internal_topics import consumer_offsets as cof
from kafkalog_cli.internal_topics.logdir import PartitionCopy
from kafkalog_cli.internal_topics.transactions import coordinator_records

OFFSETS_TOPIC = "__consumer_offsets"


@dataclass(frozen=True)
class Commit:
    """One group's committed position on one partition, as the coordinator serves it to OffsetFetch."""

    group: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int | None  # None: the value has no epoch (version < 3) or -1
    metadata: str
    commit_timestamp: int | None
    source: str  # the __consumer_offsets partition directory and the record's offset
    transactional: bool = False


def latest_commits(copies: list[PartitionCopy], ends: dict[str, int] | None = None) -> tuple[list[Commit], list[str]]:
    """(every live committed offset, sorted by group, topic, partition; warnings) from the ``__consumer_offsets``
    copies among ``copies`` (give one copy per partition: the one the coordinator will load, else the largest is
    read). ``ends``: copy path -> the offset its log ends at once the broker has loaded it (records at or past it are
    cut by recovery and never replayed by the coordinator)."""
    live: dict[tuple[str, str, int], Commit] = {}
    ends = ends or {}
    warnings: list[str] = []
    # (copy path, producer id) -> commits waiting for their transaction's marker (None: a tombstone)
    waiting: dict[tuple[str, int], list[tuple[tuple[str, str, int], Commit | None]]] = {}
    for c, batch, ctype, d in coordinator_records(copies, OFFSETS_TOPIC, cof.KEYS, cof.VALUES, warnings):
        if c.path in ends and batch.last_offset >= ends[c.path]:
            continue
        if d is None:  # a transaction marker: COMMIT applies the producer's pending commits, ABORT drops them
            held = waiting.pop((c.path, batch.producer_id), [])
            if ctype == control.COMMIT:
                for key, commit in held:
                    _put(live, key, commit)
            continue
        if d.record_type not in (0, 1):  # group metadata and the new protocols' records carry no offsets
            continue
        key = (d.key["group"], d.key["topic"], d.key["partition"])
        commit = None
        if d.value is not None:
            epoch = d.value.get("leaderEpoch", -1)
            ts = d.value.get("commitTimestamp")
            commit = Commit(key[0], key[1], key[2], d.value["offset"], epoch if epoch is not None and epoch >= 0 else None,
                            d.value.get("metadata") or "", ts if isinstance(ts, int) and ts >= 0 else None,
                            f"{c.path} offset {batch.base_offset}", batch.is_transactional)
        if batch.is_transactional:
            waiting.setdefault((c.path, batch.producer_id), []).append((key, commit))
        else:
            _put(live, key, commit)
    return [live[k] for k in sorted(live)], warnings


def _put(live: dict[tuple[str, str, int], Commit], key: tuple[str, str, int], commit: Commit | None) -> None:
    if commit is None:
        live.pop(key, None)
    else:
        live[key] = commit
