"""``dump --transaction-log-decoder`` / ``--offsets-decoder`` against Kafka's own DumpLogSegments at every version
(issue 26, item 5).

Generated ``__transaction_state`` and ``__consumer_offsets`` partitions (tests/oracle_coordinator.py: Kafka-serialised
records of every version and transaction state, tombstones, tagged fields, then record versions, record types and
states a release does not know, cut values, bytes after a value, empty values, null keys), written by kafka-real's
``Write``, dumped by each release's tool and by ``kafkalog dump --kafka-version V``, with and without
``--skip-record-metadata``: stdout byte for byte, stderr too where the tool prints no stack trace (tests/dump_oracle.py).

- 4.0: kafka-real's ``Dump`` (1eb7644). Its offsets decoder is 4.0's JSON one (compared at ``--kafka-version 4.0``);
  its transaction-log decoder is still 3.9's text (TransactionLog.formatRecordKeyAndValue, DumpLogSegments.scala
  :586-590 at 1eb7644), so that one is compared at ``--kafka-version 3.9`` (4.0.0's JSON transaction-log decoder
  has no oracle here: tests/test_internal_golden.py keeps it).
- 3.9, 3.6, 3.0, 2.8: each release's own tool, one JVM per option set over every segment of the partition.

Marker ``oracle``; ``-m oracle_long`` runs 40 seeds per kind.
"""

from __future__ import annotations

import os
from pathlib import Path

import dump_oracle as do
import oracle_coordinator as oc
import oracle_internal as oi
import pytest
from kafka_real import launcher, write_partition
from oracle_plans import seeds

pytestmark = pytest.mark.oracle

VERSIONS = ("4.0", "3.9", "3.6", "3.0", "2.8")
LONG = int(os.environ.get("KAFKALOG_ORACLE_LONG_SEEDS", "40"))


def _ours(kind: str, version: str) -> str:
    return "3.9" if version == "4.0" and kind == "transaction-log" else version


def _run(kafka_real, kafka_dump_tool, tmp_path: Path, kind: str, chosen: list[int]) -> int:
    problems, n = [], 0
    for v in VERSIONS[1:]:
        kafka_dump_tool(v)  # build (or find) each release's tool first: skips cleanly without it
    for seed in chosen:
        part = write_partition(kafka_real, tmp_path / f"{kind}{seed}", oi.plan(kind, oc.pairs(launcher(), kind, seed), seed))
        files = [str(f) for f in sorted(part.glob("*.log"))]
        for version in VERSIONS:
            for extra in ([], ["--skip-record-metadata"]):
                args = ["--files", ",".join(files), oi.FLAGS[kind], *extra]
                ours = do.kafkalog(args, _ours(kind, version), accel=seed % 2 == 0)
                k = do.kafka(kafka_real, args, version, kafka_dump_tool)
                d = do.judge(k, ours, files)
                n += 1
                if d:
                    problems.append(f"[{kind} {version} seed {seed}] {' '.join(extra)}\n{d}")
    assert not problems, f"{len(problems)} disagreement(s):\n\n" + "\n\n".join(problems[:6])
    return n


@pytest.mark.parametrize("kind", ["transaction-log", "offsets"])
def test_coordinator_decoders_as_every_release(kafka_real, kafka_dump_tool, tmp_path, kind):
    assert _run(kafka_real, kafka_dump_tool, tmp_path, kind, seeds(2, base=90_000)) >= 20


@pytest.mark.oracle_long
@pytest.mark.parametrize("kind", ["transaction-log", "offsets"])
def test_coordinator_decoders_long(kafka_real, kafka_dump_tool, tmp_path, kind):
    assert _run(kafka_real, kafka_dump_tool, tmp_path, kind, seeds(LONG, base=190_000)) > 0
