"""``kafkalog metadata`` against Kafka's own data: metadata logs whose records are serialised by Kafka's generated
metadata classes (kafka-real Records, MetadataRecordSerde) and written by Kafka's UnifiedLog (kafka-real Write), with
snapshots written by Kafka's RecordsSnapshotWriter at several offsets. The invariant: the image replayed from the
log up to a snapshot's end offset equals the snapshot's own content, and loading at that point from the snapshot
gives the same image as the replay without it."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import metadata_gen as gen  # noqa: E402
from kafka_real import write_partition  # noqa: E402

from kafkalog_cli.ops import metadata as md  # noqa: E402

pytestmark = pytest.mark.oracle


def _records(launcher: Path, reqs: list[dict]) -> list[dict]:
    env = dict(os.environ, LC_ALL="C.UTF-8")
    p = subprocess.run([str(launcher), "Records"], input="\n".join(json.dumps(r) for r in reqs) + "\n",
                       capture_output=True, text=True, timeout=600, env=env, check=True)
    answers = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    errs = [a["error"] for a in answers if "error" in a]
    assert not errs and len(answers) == len(reqs), (errs[:3], len(answers), len(reqs))
    return answers


def _scenario(kafka_real, tmp_path: Path, seed: int, steps: int, snaps: int) -> tuple[Path, list[int]]:
    """A metadata partition written by Kafka, with ``snaps`` snapshots at step boundaries."""
    rng = random.Random(seed)
    c = gen.Cluster(seed)
    points = sorted(rng.sample(range(5, steps), snaps))
    snap_specs: list[tuple[int, list[dict]]] = []
    for i in range(steps):
        c.step()
        if i in points:
            snap_specs.append((len(c.records), c.snapshot_records()))
    values = [a["value"] for a in _records(kafka_real.path, [{"op": "metadata", "record": r} for r in c.records])]
    ops, i = [], 0
    while i < len(values):
        n = rng.randint(1, 4)
        ops.append({"op": "append", "records": [{"key": None, "value": {"hex": v}} for v in values[i:i + n]]})
        i += n
    part = write_partition(kafka_real, tmp_path / "meta", {"topic": "__cluster_metadata", "partition": 0, "ops": ops})
    reqs = [{"op": "snapshot", "dir": str(part), "offset": off, "epoch": 0, "timeMs": 1700000000000 + off,
             "lastContainedLogTimestamp": 1700000000000 + off, "maxBatchSize": 1 << 20, "records": recs} for off, recs in snap_specs]
    _records(kafka_real.path, reqs)
    return part, [off for off, _ in snap_specs]


@pytest.mark.parametrize("seed", [1, 2])
def test_replayed_image_equals_each_kafka_snapshot(kafka_real, tmp_path, seed):
    part, offsets = _scenario(kafka_real, tmp_path, seed, steps=160, snaps=3)
    snaps = md.snapshots(str(part))
    assert [s.end_offset for s in snaps] == sorted(set(offsets))
    results = md.check_snapshots(str(part))
    for snap, changes in results:
        assert changes is not None, f"{snap.path}: the log does not reach it"
        assert changes == [], (snap.path, [c.as_dict() for c in changes][:5])
    for s in snaps:  # loading at the snapshot's point uses it: same image as the replay from offset 0
        via = md.load(str(part), md.Point(offset=s.end_offset - 1))
        assert via.snapshot == s and via.records == 0 and via.clean
        plain = md.load(str(part), md.Point(offset=s.end_offset - 1), use_snapshots=False)
        assert md.diff(via.image, plain.image, quorum=False) == []
    end_snap = md.load(str(part))
    end_plain = md.load(str(part), use_snapshots=False)
    assert end_snap.clean and end_plain.clean
    assert md.diff(end_snap.image, end_plain.image, quorum=False) == []


def test_differs_when_the_snapshot_is_not_the_log(kafka_real, tmp_path):
    """A snapshot holding another state (one partition's ISR changed) is reported, located in its changes."""
    c = gen.Cluster(7)
    for _ in range(30):
        c.step()
    recs = c.snapshot_records()
    pr = next(r for r in recs if r["class"] == "PartitionRecord")
    pr["json"] = dict(pr["json"], isr=pr["json"]["isr"][:1], partitionEpoch=pr["json"]["partitionEpoch"] + 5)
    values = [a["value"] for a in _records(kafka_real.path, [{"op": "metadata", "record": r} for r in c.records])]
    ops = [{"op": "append", "records": [{"key": None, "value": {"hex": v}}]} for v in values]
    part = write_partition(kafka_real, tmp_path / "meta", {"topic": "__cluster_metadata", "partition": 0, "ops": ops})
    _records(kafka_real.path, [{"op": "snapshot", "dir": str(part), "offset": len(values), "epoch": 0,
                                "maxBatchSize": 1 << 20, "records": recs}])
    [(snap, changes)] = md.check_snapshots(str(part))
    assert changes and changes[0].area == "partition" and "partition_epoch" in changes[0].after
