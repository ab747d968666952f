"""``explain-cleaner``: scenarios of Kafka's LogCleanerManagerTest (core/src/test/scala/unit/kafka/log/), rebuilt
as files. Each test names the Kafka test it follows; the oracle is the scenario's own offsets and sizes."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner
from partition_gen import PartitionBuilder, random_partition

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.ops.compact import CompactOptions, plan_compaction

T0 = 1_700_000_000_000
LAG = 3_600_000


def _build(pdir: str, segments: int, per_segment: int = 3, *, ts: list[int] | None = None,
           keys: int = 1000) -> PartitionBuilder:
    """``segments`` segments of ``per_segment`` one-record batches (keys k0, k1, ... mod ``keys``); segment i's
    records carry timestamps from ``ts[i]`` (PartitionBuilder adds 1 per record)."""
    pb = PartitionBuilder(pdir)
    n = 0
    for i in range(segments):
        if i:
            pb.roll()
        if ts is not None:
            pb.ts = ts[i]
        for _ in range(per_segment):
            pb.batch([(f"k{n % keys}".encode(), b"v")])
            n += 1
    pb.write()
    return pb


def _run(*args: str, now: int = T0 + 10 * LAG) -> dict:
    r = CliRunner().invoke(cli, ["explain-cleaner", *args, "--format", "json", "--now-ms", str(now)])
    assert r.exit_code == 0, r.output
    parts = json.loads(r.stdout)["partitions"]
    assert len(parts) == 1
    return parts[0]


def _checkpoint(log_dir: Path, name: str, entries: dict[str, int]) -> None:
    lines = [f"{tp.rpartition('-')[0]} {tp.rpartition('-')[2]} {off}" for tp, off in entries.items()]
    (log_dir / name).write_text(f"0\n{len(lines)}\n" + "".join(line + "\n" for line in lines))


def test_cleanable_offsets_bounded_by_hw_and_active_segment(tmp_path: Path) -> None:
    """testCleanableOffsetsForNone / testCleanableOffsetsActiveSegment: 8 segments of 3; with the high watermark
    at 13 the last stable offset bounds the range (rounded down to the segment holding it, 12); with the high
    watermark at the log end the active segment does."""
    ld = tmp_path / "data"
    pdir = str(ld / "foo-0")
    _build(pdir, 8)
    _checkpoint(ld, "replication-offset-checkpoint", {"foo-0": 13})
    p = _run(pdir)
    assert (p["first_dirty_offset"], p["first_uncleanable_offset_unrounded"], p["first_uncleanable_offset"]) == (0, 13, 12)
    assert "last stable offset 13" in p["uncleanable_reason"]
    _checkpoint(ld, "replication-offset-checkpoint", {"foo-0": 24})
    p = _run(pdir)
    assert (p["first_uncleanable_offset_unrounded"], p["first_uncleanable_offset"]) == (21, 21)
    assert "active segment" in p["uncleanable_reason"]
    assert p["would_clean"] is True and p["dirty_ratio"] == 1.0


def test_min_compaction_lag(tmp_path: Path) -> None:
    """testCleanableOffsetsForTime / testCleanableOffsetsForShortTime."""
    pdir = str(tmp_path / "foo-0")
    t1 = T0 + LAG + 1
    _build(pdir, 8, ts=[T0] * 4 + [t1] * 4)
    p = _run(pdir, "--min-compaction-lag-ms", str(LAG), now=t1 + 10)
    assert p["first_uncleanable_offset"] == 12 and "min.compaction.lag.ms" in p["uncleanable_reason"]
    pdir2 = str(tmp_path / "bar-0")
    _build(pdir2, 8, ts=[T0] * 8)
    p = _run(pdir2, "--min-compaction-lag-ms", str(LAG), now=T0 + 100 + LAG + 1)
    assert p["first_uncleanable_offset"] == 21 and "active segment" in p["uncleanable_reason"]


def test_checkpoint_resets(tmp_path: Path) -> None:
    """testCleanableOffsetsNeedsCheckpointReset / testDirtyOffsetResetIfLargerThanEndOffset /
    testDirtyOffsetResetIfSmallerThanStartOffset."""
    ld = tmp_path / "data"
    pdir = str(ld / "foo-0")
    _build(pdir, 10)
    _checkpoint(ld, "log-start-offset-checkpoint", {"foo-0": 10})
    _checkpoint(ld, "cleaner-offset-checkpoint", {"foo-0": 15})
    p = _run(pdir)
    assert p["checkpoint"] == 15 and p["first_dirty_offset"] == 15
    # clean bytes: segments based below 15 (0..12); dirty: from the segment holding 15 (15) to the active (27)
    sizes = {s["base_offset"]: s["size"] for s in p["segments"]}
    assert p["clean_bytes"] == sum(v for k, v in sizes.items() if k < 15)
    assert p["dirty_bytes"] == sum(v for k, v in sizes.items() if 15 <= k < 27)
    assert abs(p["dirty_ratio"] - p["dirty_bytes"] / (p["clean_bytes"] + p["dirty_bytes"])) < 1e-12
    _checkpoint(ld, "log-start-offset-checkpoint", {"foo-0": 20})
    p = _run(pdir)
    assert p["first_dirty_offset"] == 20 and "below the log start" in p["checkpoint_note"]
    _checkpoint(ld, "cleaner-offset-checkpoint", {"foo-0": 200})
    p = _run(pdir)
    assert p["first_dirty_offset"] == 20 and "past the log end" in p["checkpoint_note"]


def test_log_start_beyond_active_segment_base_is_not_filthy(tmp_path: Path) -> None:
    """testLogStartOffsetLargerThanActiveSegmentBaseOffset: one segment, log start 2, checkpoint 0: nothing
    cleanable (the range rounds down to the active segment), so the cleaner does not pick it."""
    ld = tmp_path / "data"
    pdir = str(ld / "foo-0")
    _build(pdir, 1, per_segment=9)
    _checkpoint(ld, "log-start-offset-checkpoint", {"foo-0": 2})
    _checkpoint(ld, "cleaner-offset-checkpoint", {"foo-0": 0})
    p = _run(pdir)
    assert (p["first_dirty_offset"], p["first_uncleanable_offset_unrounded"], p["first_uncleanable_offset"]) == (2, 2, 0)
    assert p["dirty_bytes"] == 0 and p["dirty_ratio"] == 0.0 and p["would_clean"] is False


def test_undecided_transactional_data_not_cleanable(tmp_path: Path) -> None:
    """testUndecidedTransactionalDataNotCleanable: an open transaction at 0 holds the range at 0; once aborted, the
    segment holding the marker is within the lag and bounds it; after the lag, the active segment does."""
    ld = tmp_path / "data"
    pdir = str(ld / "foo-0")
    pb = PartitionBuilder(pdir)
    pb.ts = T0
    pb.batch([(b"1", b"a"), (b"2", b"b")], pid=15, txn=True)
    pb.batch([(b"3", b"c")], pid=15, txn=True)
    pb.roll()
    pb.write()
    p = _run(pdir, "--min-compaction-lag-ms", str(LAG), now=T0 + LAG + 10)
    assert (p["first_dirty_offset"], p["first_uncleanable_offset"]) == (0, 0)
    assert "open transaction" in p["uncleanable_reason"] and p["would_clean"] is False

    pdir2 = str(ld / "bar-0")
    pb = PartitionBuilder(pdir2)
    pb.ts = T0
    pb.batch([(b"1", b"a"), (b"2", b"b")], pid=15, txn=True)
    pb.batch([(b"3", b"c")], pid=15, txn=True)
    pb.roll()
    pb.ts = T0 + LAG + 10
    pb.marker(15, abort=True)
    pb.roll()
    pb.write()
    p = _run(pdir2, "--min-compaction-lag-ms", str(LAG), now=T0 + LAG + 10)
    assert p["first_uncleanable_offset"] == 3 and p["last_stable_offset"] == 4
    p = _run(pdir2, "--min-compaction-lag-ms", str(LAG), now=T0 + 2 * LAG + 20)
    assert p["first_uncleanable_offset"] == 4


def test_dirty_ratio_threshold_and_max_lag_forcing(tmp_path: Path) -> None:
    """grabFilthiestCompactedLog: below min.cleanable.dirty.ratio the log is not picked unless
    max.compaction.lag.ms forces it (LogCleanerManager.maxCompactionDelay)."""
    ld = tmp_path / "data"
    pdir = str(ld / "foo-0")
    _build(pdir, 5, ts=[T0, T0 + 10, T0 + 20, T0 + 30, T0 + 40])
    _checkpoint(ld, "cleaner-offset-checkpoint", {"foo-0": 9})
    p = _run(pdir, now=T0 + 1000)
    assert p["first_dirty_offset"] == 9 and p["first_uncleanable_offset"] == 12
    sizes = {s["base_offset"]: s["size"] for s in p["segments"]}
    assert p["dirty_ratio"] == sizes[9] / (sizes[0] + sizes[3] + sizes[6] + sizes[9])  # ~0.25
    assert p["would_clean"] is False and p["forced_by_max_lag"] is False
    p = _run(pdir, "--min-cleanable-dirty-ratio", "0.2", now=T0 + 1000)
    assert p["would_clean"] is True and p["rank"] == 1
    # the dirty segment's first batch (T0 + 31) is older than now - max lag (T0 + 1000 - 500): forced, 469 ms overdue
    p = _run(pdir, "--max-compaction-lag-ms", "500", now=T0 + 1000)
    assert p["forced_by_max_lag"] is True and p["would_clean"] is True and p["max_compaction_delay_ms"] == 469
    p = _run(pdir, "--cleanup-policy", "delete", now=T0 + 1000)
    assert p["would_clean"] is False


def test_offset_map_capacity(tmp_path: Path) -> None:
    """SkimpyOffsetMap holds int(memory / 24 * 0.9) keys; buildOffsetMapForSegment stops at the first keyed record
    that finds it full, and the round ends after the last batch read whole."""
    pdir = str(tmp_path / "foo-0")
    _build(pdir, 4, per_segment=5, keys=12)  # offsets 0..19, keys k0..k11 then k0..k7 again; active at 15
    p = _run(pdir, "--dedupe-buffer-size", str(24 * 10))
    assert p["dedupe_capacity"] == 9
    assert (p["dirty_keys"], p["map_full_at"]) == (9, 9)
    p = _run(pdir)
    assert (p["dirty_keys"], p["dirty_keyed_records"], p["map_full_at"]) == (12, 15, None)


def test_tombstones_by_delete_horizon(tmp_path: Path) -> None:
    pdir = tmp_path / "foo-0"
    pdir.mkdir()
    data = b"".join([
        encode_batch([RecordSpec(key=b"a", value=None, timestamp=T0)], base_offset=0, delete_horizon_ms=T0 + 5),
        encode_batch([RecordSpec(key=b"b", value=None, timestamp=T0)], base_offset=1, delete_horizon_ms=T0 + 50_000),
        encode_batch([RecordSpec(key=b"c", value=None, timestamp=T0)], base_offset=2),
        encode_batch([RecordSpec(key=b"d", value=b"x", timestamp=T0)], base_offset=3),
    ])
    (pdir / f"{0:020d}.log").write_bytes(data)
    (pdir / f"{4:020d}.log").write_bytes(encode_batch([RecordSpec(key=b"e", value=b"y", timestamp=T0)], base_offset=4))
    p = _run(str(pdir), now=T0 + 1000)
    assert p["tombstones"] == {"horizon_passed": 1, "horizon_pending": 1, "horizon_unset": 1}


def test_estimate_is_compacts_own_plan(tmp_path: Path) -> None:
    pdir = str(tmp_path / "foo-0")
    random_partition(pdir, 7)
    now = T0 + 10 * LAG
    plan = plan_compaction(pdir, CompactOptions(now_ms=now))
    total = sum(os.path.getsize(os.path.join(pdir, n)) for n in os.listdir(pdir) if n.endswith(".log"))
    p = _run(pdir, now=now)
    est = p["estimate"]
    assert est["available"] is True and est["cleaned_up_to"] == plan.first_uncleanable_offset
    t = plan.totals()
    assert est["bytes_after"] == total - t["bytes_before"] + t["bytes_after"]
    assert est["bytes_after"] < est["bytes_before"] == total
    r = CliRunner().invoke(cli, ["explain-cleaner", pdir, "--now-ms", str(now)])
    assert r.exit_code == 0 and "would clean now: YES" in r.output and "estimate after cleaning" in r.output


def test_bad_input_exit_2(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["explain-cleaner", str(tmp_path / "missing")])
    assert r.exit_code == 2 and "Traceback" not in r.output
    r = CliRunner().invoke(cli, ["explain-cleaner", str(tmp_path), "--min-cleanable-dirty-ratio", "2"])
    assert r.exit_code == 2
