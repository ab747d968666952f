"""The oracle fixture itself: Kafka's code builds, writes a partition, and kafkalog's dump of it equals Kafka's."""

from __future__ import annotations

import subprocess
import sys

import pytest
from kafka_real import dir_digest, write_partition

pytestmark = pytest.mark.oracle


def test_write_load_dump_roundtrip(kafka_real, tmp_path):
    plan = {
        "config": {"segment.bytes": "600"},
        "ops": [{"op": "append", "count": 3, "keyFormat": "k%d", "batches": 6}],
    }
    part = write_partition(kafka_real, tmp_path / "w", plan)
    logs = sorted(part.glob("*.log"))
    assert len(logs) > 1
    before = dir_digest(part)
    load = kafka_real.json("Load", "--in", str(part), "--work", str(tmp_path / "load"), "--now-ms", "1700000100000")
    assert "error" not in load and load["log"]["logEndOffset"] == 18
    assert dir_digest(part) == before  # Load works on a copy
    for f in logs:
        k = kafka_real.batch("Dump", "--files", str(f), "--deep-iteration", "--print-data-log")
        ours = subprocess.run(
            [sys.executable, "-m", "kafkalog_cli", "dump", str(f), "--deep-iteration", "--print-data-log"],
            capture_output=True,
        )
        assert k.rc == 0 and ours.returncode == 0
        assert ours.stdout == k.stdout
