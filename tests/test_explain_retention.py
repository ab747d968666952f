"""``explain-retention``: scenarios of Kafka's UnifiedLogTest retention tests, rebuilt as files.

Each test names the Kafka test it follows (core/src/test/scala/unit/kafka/log/UnifiedLogTest.scala). The oracle is
the scenario's arithmetic (segment sizes, timestamps), not the engine's reading of the files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.ops.rebuild_index import rebuild_segment
from kafkalog_cli.ops.retention import parse_config_text

NOW = 1_700_000_000_000


def _partition(pdir: str, segments: list[list[int]], *, key: bytes | None = None, timeindex: bool = True) -> int:
    """Segments of single-record batches; ``segments`` lists each segment's record timestamps. Returns the size of
    one batch (all batches are the same size)."""
    os.makedirs(pdir, exist_ok=True)
    off = 0
    size = 0
    for stamps in segments:
        base = off
        data = b""
        for ts in stamps:
            b = encode_batch([RecordSpec(key=key, value=b"test", timestamp=ts)], base_offset=off)
            size = len(b)
            data += b
            off += 1
        stem = os.path.join(pdir, f"{base:020d}")
        with open(stem + ".log", "wb") as f:
            f.write(data)
        rb = rebuild_segment(data, base)
        with open(stem + ".index", "wb") as f:
            f.write(rb.index)
        with open(stem + ".timeindex", "wb") as f:
            f.write(rb.timeindex if timeindex else b"")
    return size


def _run(*args: str) -> dict:
    r = CliRunner().invoke(cli, ["explain-retention", *args, "--format", "json", "--now-ms", str(NOW)])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert len(out["partitions"]) == 1
    return out["partitions"][0]


def _deleted(p: dict) -> list[int]:
    return [s["base_offset"] for s in p["segments"] if s["deleted"]]


def test_size_based(tmp_path: Path) -> None:
    """shouldDeleteSizeBasedSegments / shouldNotDeleteSizeBasedSegmentsWhenUnderRetentionSize: 15 records in 3
    segments of 5; retention.bytes = 10 records deletes the oldest segment only, 15 records deletes nothing."""
    pdir = str(tmp_path / "t-0")
    size = _partition(pdir, [[NOW] * 5] * 3)
    p = _run(pdir, "--retention-bytes", str(size * 10))
    assert _deleted(p) == [0]
    assert p["segments"][0]["rule"] == "retention.bytes"
    assert (p["log_start_offset_after"], p["bytes_freed"], p["size_after"]) == (5, size * 5, size * 10)
    p = _run(pdir, "--retention-bytes", str(size * 15))
    assert _deleted(p) == [] and p["log_start_offset_after"] == 0
    # kept segments say how many more bytes take them: the oldest once the excess covers its 5 records
    assert [s["bytes_until_deleted"] for s in p["segments"]] == [size * 5, size * 10, size * 15]


def test_time_based_rolls_and_deletes_the_active_segment(tmp_path: Path) -> None:
    """shouldDeleteTimeBasedSegmentsReadyToBeDeleted: every segment expired, the non-empty active one included; the
    broker rolls a new empty segment at the log end, so the log start becomes 15."""
    pdir = str(tmp_path / "t-0")
    _partition(pdir, [[10] * 5] * 3)
    p = _run(pdir, "--retention-ms", "10000")
    assert _deleted(p) == [0, 5, 10]
    assert all(s["rule"] == "retention.ms" for s in p["segments"])
    assert p["rolled"] is True and p["log_start_offset_after"] == 15 and p["size_after"] == 0


def test_time_based_none_ready(tmp_path: Path) -> None:
    """shouldNotDeleteTimeBasedSegmentsWhenNoneReadyToBeDeleted, plus the time left for each."""
    pdir = str(tmp_path / "t-0")
    _partition(pdir, [[NOW - 100] * 5, [NOW - 50] * 5, [NOW] * 5])
    p = _run(pdir, "--retention-ms", "10000000")
    assert _deleted(p) == []
    assert [s["ms_until_deleted"] for s in p["segments"]] == [10000000 - 100 + 1, 10000000 - 50 + 1, 10000001]


def test_future_timestamp_stops_time_retention(tmp_path: Path) -> None:
    """A segment whose largest timestamp is in the future is kept, and deletion stops there
    (deletableSegments stops at the first segment the predicate keeps)."""
    pdir = str(tmp_path / "t-0")
    _partition(pdir, [[10] * 2, [NOW + 3_600_000] * 2, [10] * 2, [10] * 2])
    p = _run(pdir, "--retention-ms", "1000")
    assert _deleted(p) == [0]
    assert "in the future" in p["segments"][1]["reason"]
    assert "older segment is kept" in p["segments"][2]["reason"]
    assert p["log_start_offset_after"] == 2


def test_mtime_stands_in_for_an_empty_time_index(tmp_path: Path) -> None:
    """LogSegment.largestTimestamp: no time-index entry -> the .log mtime (shouldNotDeleteSegmentsWhen... uses
    setLastModified the same way)."""
    pdir = str(tmp_path / "t-0")
    _partition(pdir, [[NOW] * 2, [NOW] * 2], timeindex=False)
    os.utime(os.path.join(pdir, f"{0:020d}.log"), ns=((NOW - 20000) * 10**6, (NOW - 20000) * 10**6))
    os.utime(os.path.join(pdir, f"{2:020d}.log"), ns=(NOW * 10**6, NOW * 10**6))
    p = _run(pdir, "--retention-ms", "10000")
    assert _deleted(p) == [0]
    assert p["segments"][0]["timestamp_source"] == "mtime" and p["segments"][0]["largest_timestamp"] == NOW - 20000


def test_cleanup_policy(tmp_path: Path) -> None:
    """shouldNotDeleteSegmentsWhenPolicyDoesNotIncludeDelete / ...WhenCleanupPolicyIsCompactAndDelete /
    shouldDeleteStartOffsetBreachedSegmentsWhenPolicyDoesNotIncludeDelete."""
    pdir = str(tmp_path / "t-0")
    _partition(pdir, [[10] * 5] * 3, key=b"test")
    p = _run(pdir, "--retention-ms", "10000", "--cleanup-policy", "compact")
    assert _deleted(p) == []
    p = _run(pdir, "--retention-ms", "10000", "--cleanup-policy", "compact,delete")
    assert _deleted(p) == [0, 5, 10] and p["rolled"]
    p = _run(pdir, "--retention-ms", "10000", "--cleanup-policy", "compact", "--log-start-offset", "5")
    assert _deleted(p) == [0] and p["segments"][0]["rule"] == "log-start-offset"
    assert p["log_start_offset_after"] == 5


def test_log_start_offset_breach_after_delete_records(tmp_path: Path) -> None:
    """testLogDeletionAfterDeleteRecords: log start 1 deletes nothing, 6 deletes the first segment (its successor
    starts at 5 <= 6), 15 deletes two (the active segment stays: no successor)."""
    pdir = str(tmp_path / "t-0")
    _partition(pdir, [[NOW] * 5] * 3)
    for start, gone, after in ((1, [], 1), (6, [0], 6), (15, [0, 5], 15)):
        p = _run(pdir, "--retention-ms", "-1", "--log-start-offset", str(start))
        assert (_deleted(p), p["log_start_offset_after"]) == (gone, after)
    pdir2 = str(tmp_path / "u-0")
    _partition(pdir2, [[NOW] * 5] * 3)
    os.remove(os.path.join(pdir2, f"{0:020d}.log"))  # the first segment is gone: first base 5
    p = _run(pdir2, "--retention-ms", "-1", "--log-start-offset", "2")
    assert p["log_start_offset_before"] == 5 and any("never below it" in n for n in p["notes"])


def test_high_watermark_bounds_deletion(tmp_path: Path) -> None:
    """testDeleteOldSegments / testSegmentDeletionWithHighWatermarkInitialization: only segments whose upper bound
    is <= the high watermark go; the checkpoint file supplies it."""
    ld = tmp_path / "data"
    pdir = str(ld / "t-0")
    _partition(pdir, [[10] * 5] * 4)
    (ld / "replication-offset-checkpoint").write_text("0\n1\nt 0 12\n")
    p = _run(pdir, "--retention-ms", "999")
    assert _deleted(p) == [0, 5]
    assert p["high_watermark"] == 12 and "high watermark 12" in p["segments"][2]["reason"]
    p = _run(pdir, "--retention-ms", "999", "--high-watermark", "20")
    assert _deleted(p) == [0, 5, 10, 15] and p["log_start_offset_after"] == 20


def test_order_start_then_size_then_time_and_config_file(tmp_path: Path) -> None:
    """deleteOldSegments' order: the log start offset pass first, then size on what is left, then time."""
    pdir = str(tmp_path / "t-0")
    size = _partition(pdir, [[10] * 2, [10] * 2, [NOW] * 2, [NOW] * 2, [NOW] * 2])
    cfg = tmp_path / "orders.cfg"
    cfg.write_text("All configs for topic t are:\n"
                   f"  retention.bytes={size * 6} sensitive=false synonyms={{DYNAMIC_TOPIC_CONFIG:retention.bytes={size * 6}}}\n"
                   "  retention.ms=1000 sensitive=false synonyms={}\n  cleanup.policy=delete sensitive=false synonyms={}\n")
    assert parse_config_text(cfg.read_text())["retention.bytes"] == str(size * 6)
    p = _run(pdir, "--config", str(cfg), "--log-start-offset", "3")
    # start offset takes segment 0; size (8 batches left, limit 6) takes segment 2; time takes nothing more
    # (segment 4's data is from NOW): the time pass stops at segment 4
    assert [(s["base_offset"], s["rule"]) for s in p["segments"] if s["deleted"]] == [
        (0, "log-start-offset"), (2, "retention.bytes")]
    p = _run(pdir, "--config", str(cfg), "--retention-bytes", "-1")  # flags override the file
    assert [(s["base_offset"], s["rule"]) for s in p["segments"] if s["deleted"]] == [
        (0, "retention.ms"), (2, "retention.ms")]


def test_text_output_and_bad_input(tmp_path: Path) -> None:
    pdir = str(tmp_path / "t-0")
    _partition(pdir, [[10] * 2, [NOW] * 2])
    r = CliRunner().invoke(cli, ["explain-retention", pdir, "--retention-ms", "1000", "--now-ms", str(NOW)])
    assert r.exit_code == 0
    assert "DELETE 00000000000000000000.log" in r.output and "log start 0 -> 2" in r.output
    r = CliRunner().invoke(cli, ["explain-retention", str(tmp_path / "missing")])
    assert r.exit_code == 2 and "Traceback" not in r.output
    r = CliRunner().invoke(cli, ["explain-retention", pdir, "--retention-ms", "x"])
    assert r.exit_code == 2


def test_log_dir_internal_topics_keep_compact(tmp_path: Path) -> None:
    """A whole log dir: every partition with the given config, but __consumer_offsets keeps its
    cleanup.policy=compact unless one is given, and __cluster_metadata is skipped."""
    ld = tmp_path / "data"
    _partition(str(ld / "t-0"), [[10] * 2, [10] * 2])
    _partition(str(ld / "__consumer_offsets-3"), [[10] * 2, [10] * 2], key=b"k")
    _partition(str(ld / "__cluster_metadata-0"), [[10] * 2])
    r = CliRunner().invoke(cli, ["explain-retention", str(ld), "--retention-ms", "1000", "--format", "json",
                                 "--now-ms", str(NOW)])
    assert r.exit_code == 0, r.output
    parts = {f"{p['topic']}-{p['partition']}": p for p in json.loads(r.stdout)["partitions"]}
    assert sorted(parts) == ["__consumer_offsets-3", "t-0"]
    assert _deleted(parts["t-0"]) == [0, 2] and _deleted(parts["__consumer_offsets-3"]) == []
    assert parts["__consumer_offsets-3"]["config"]["cleanup.policy"] == "compact"
    r = CliRunner().invoke(cli, ["explain-retention", str(ld), "--retention-ms", "1000", "--format", "json",
                                 "--now-ms", str(NOW), "--cleanup-policy", "delete"])
    parts = {f"{p['topic']}-{p['partition']}": p for p in json.loads(r.stdout)["partitions"]}
    assert _deleted(parts["__consumer_offsets-3"]) == [0, 2]
