"""Issue 28 (d): transactions v2 (KIP-890) partitions, where the coordinator bumps the producer epoch at every
transaction end so each marker carries the data's epoch + 1 and the next transaction runs at that epoch. Kafka's own
UnifiedLog writes them (kafka-real Write), then kafkalog's recover and salvage agree with Kafka's LogLoader (Load)
file for file and producer state for producer state, and compact with Kafka's cleaner (Clean), round for round."""

from __future__ import annotations

import pytest
from test_oracle_compact import compare_rounds
from test_oracle_recover import NOW, VERSION, compare_recover_case

from kafkalog_cli.broker import loader as ld
from kafkalog_cli.ops import salvage as sv

pytestmark = pytest.mark.oracle

PID = 7


def _txn(epoch: int, keys: str, count: int = 2) -> dict:
    return {"op": "append", "count": count, "keyFormat": keys + "%d", "producerId": PID, "producerEpoch": epoch,
            "transactional": True, "leaderEpoch": 0}


def _marker(kind: str, epoch: int) -> dict:
    return {"op": "marker", "type": kind, "producerId": PID, "producerEpoch": epoch, "leaderEpoch": 0}


def v2_plan(shutdown: str, *, open_tail: bool) -> dict:
    ops = [{"op": "append", "count": 3, "keyFormat": "k%d", "leaderEpoch": 0},
           _txn(3, "a"), _marker("COMMIT", 4),      # v2: the marker's epoch is the data's + 1
           _txn(4, "b"), _marker("ABORT", 5),
           {"op": "roll"},
           _txn(5, "c"), _marker("COMMIT", 6),
           {"op": "append", "count": 2, "keyFormat": "k%d", "leaderEpoch": 0}]
    if open_tail:
        ops.append(_txn(6, "d"))  # an open transaction at the last bumped epoch
    return {"topic": "t", "partition": 0, "config": {"index.interval.bytes": "1", "cleanup.policy": "compact"},
            "ops": ops, "shutdown": shutdown}


@pytest.mark.parametrize("shutdown", ["clean", "crash", "crash-no-checkpoint"])
@pytest.mark.parametrize("open_tail", [False, True])
def test_recover_agrees_with_kafka_on_v2_markers(kafka_real, tmp_path, shutdown, open_tail) -> None:  # noqa: ANN001
    from kafka_real import write_partition

    p = v2_plan(shutdown, open_tail=open_tail)
    pdir = write_partition(kafka_real, tmp_path / "w", p)
    assert compare_recover_case(kafka_real, tmp_path, p, pdir, [f"transactions v2, {shutdown}"]) == []
    k = kafka_real.json("Load", "--in", str(pdir), "--work", str(tmp_path / "load-state"), "--now-ms", str(NOW))
    (producer,) = k["log"]["producers"]
    assert producer["producerEpoch"] == 6  # the last marker's bumped epoch (or the open transaction's data)
    plan = ld.plan_load(str(pdir), VERSION, now_ms=NOW)
    assert not plan.fatal
    s = sv.plan_salvage(str(pdir), kafka_version=VERSION, now_ms=NOW)
    assert s.cuts == [] and s.salvage_lost_bytes == 0 and s.kept_records == k["log"]["logEndOffset"]


def test_compact_agrees_with_kafka_cleaner_on_v2_markers(kafka_real, tmp_path) -> None:  # noqa: ANN001
    p = v2_plan("clean", open_tail=True)
    compare_rounds(kafka_real, tmp_path, p, {"delete_retention_ms": 0, "min_compaction_lag_ms": 0,
                                             "now_ms": 1_700_000_000_000 + 90_000_000, "advance_ms": 90_000_000,
                                             "rounds": 2})
