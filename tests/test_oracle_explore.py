"""compact, truncate-to-epoch and seek against Kafka's own code on the cases of tests/oracle_explore.py (issue 26):
many producers interleaved, aborted transactions across rolls, a codec per batch, LogAppendTime, tombstones and
empty values with headers, follower offset gaps, DeleteRecords moving the log start into a segment, tiny
``segment.index.bytes``; compaction over 3-5 rounds with the clock advancing; truncation to every epoch, inside
transactions, at markers, below the log start; seeks on compacted output.

The default run is a small sample; ``pytest -m oracle_long tests/test_oracle_explore.py`` runs
``KAFKALOG_EXPLORE_LONG`` seeds of each (seeds from ``KAFKALOG_EXPLORE_BASE``). scripts/explore_oracle.py runs the
same functions over a seed range, one line per seed. The classes this generator found have hand-written regressions
in tests/test_oracle_compact.py, tests/test_oracle_truncate.py and tests/test_safety.py.
"""

from __future__ import annotations

import os

import pytest
from oracle_explore import run_compact, run_salvage, run_seek, run_truncate

pytestmark = pytest.mark.oracle

LONG = int(os.environ.get("KAFKALOG_EXPLORE_LONG", 200))
BASE = int(os.environ.get("KAFKALOG_EXPLORE_BASE", 2_000_000))


@pytest.mark.parametrize("seed", [0, 2, 4])
def test_explore_compact_matches_kafka_cleaner(kafka_real, tmp_path, seed):
    run_compact(kafka_real, tmp_path, seed)


@pytest.mark.parametrize("seed", [8, 10])
def test_explore_truncate_matches_kafka(kafka_real, tmp_path, seed):
    run_truncate(kafka_real, tmp_path, seed)


@pytest.mark.parametrize("seed", [0, 1])
def test_explore_seek_matches_kafka(kafka_real, tmp_path, seed):
    assert run_seek(kafka_real, tmp_path, seed) > 0


@pytest.mark.oracle_long
@pytest.mark.parametrize("seed", range(BASE, BASE + LONG))
def test_explore_compact_matches_kafka_cleaner_long(kafka_real, tmp_path, seed):
    run_compact(kafka_real, tmp_path, seed)


@pytest.mark.oracle_long
@pytest.mark.parametrize("seed", range(BASE, BASE + LONG // 2))
def test_explore_truncate_matches_kafka_long(kafka_real, tmp_path, seed):
    run_truncate(kafka_real, tmp_path, seed)


@pytest.mark.oracle_long
@pytest.mark.parametrize("seed", range(BASE, BASE + LONG // 2))
def test_explore_seek_matches_kafka_long(kafka_real, tmp_path, seed):
    run_seek(kafka_real, tmp_path, seed)


@pytest.mark.parametrize("seed", [0, 2])
def test_salvage_rebuilds_indexes_with_the_topic_config(kafka_real, tmp_path, seed):
    """salvage rebuilt every index with Kafka's default index.interval.bytes (it had no --config), so an unclean
    start's recovery of the active segment, which follows the topic's index.interval.bytes, rewrote it (explore_oracle
    salvage seeds 0 and 2: topics with index.interval.bytes 1 and 17). ``salvage --config`` takes the topic's, as
    ``recover --config`` does."""
    assert run_salvage(kafka_real, tmp_path, seed) in ("ok", "refused")
