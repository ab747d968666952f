"""seek-offset / seek-time against a brute-force scan of every record, on generated multi-segment partitions."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from index_partition_gen import brute_records, make_partition

from kafkalog_cli.cli.seek import parse_timestamp
from kafkalog_cli.ops import seek

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _oracle_offset(recs, target):
    for r in recs:
        if r.batch_last >= target:
            return r
    return None


def _oracle_time(recs, target):
    for r in recs:
        if r.timestamp >= target:
            return r
    return None


@SETTINGS
@given(seed=st.integers(0, 10**6), picks=st.lists(st.floats(-0.05, 1.05), min_size=5, max_size=5))
def test_seek_offset_agrees_with_brute_force(tmp_path_factory, seed, picks):
    pdir = str(tmp_path_factory.mktemp("p") / "t-0")
    make_partition(pdir, seed, segments=1 + seed % 4)
    recs = brute_records(pdir)
    lo, hi = recs[0].offset, recs[-1].offset
    for f in picks:
        target = int(lo + f * (hi - lo + 1))
        want = _oracle_offset(recs, target)
        if target < min(int(n[:20]) for n in os.listdir(pdir) if n.endswith(".log")):
            with pytest.raises(seek.OffsetNotFound):
                seek.seek_offset(pdir, target)
            continue
        if want is None:
            with pytest.raises(seek.OffsetNotFound):
                seek.seek_offset(pdir, target, want_record=True)
            continue
        res = seek.seek_offset(pdir, target, want_record=True)
        assert (res.segment, res.position) == (want.segment, want.position)
        first = next(r for r in recs if r.offset >= target)
        assert res.record.offset == first.offset
        assert res.exact == (first.offset == target)
        assert not [w for w in res.warnings if "scanning" in w]


@SETTINGS
@given(seed=st.integers(0, 10**6), picks=st.lists(st.floats(-0.05, 1.05), min_size=5, max_size=5))
def test_seek_time_agrees_with_brute_force(tmp_path_factory, seed, picks):
    pdir = str(tmp_path_factory.mktemp("p") / "t-0")
    make_partition(pdir, seed, segments=1 + seed % 4)
    recs = brute_records(pdir)
    ts = [r.timestamp for r in recs]
    lo, hi = min(ts), max(ts)
    targets = [int(lo + f * (hi - lo + 1)) for f in picks] + [recs[len(recs) // 2].timestamp]
    for target in targets:
        want = _oracle_time(recs, target)
        if want is None:
            with pytest.raises(seek.OffsetNotFound):
                seek.seek_time(pdir, target)
            continue
        res = seek.seek_time(pdir, target)
        assert (res.record.offset, res.record.timestamp, res.segment) == (want.offset, want.timestamp, want.segment)


def test_missing_and_corrupt_index_fall_back_to_a_scan(tmp_path):
    pdir = str(tmp_path / "t-0")
    paths = make_partition(pdir, 7, segments=2, max_batches=40, interval=256)
    recs = brute_records(pdir)
    idx = paths[0][:-4] + ".index"
    good = open(idx, "rb").read()
    assert len(good) >= 16
    target = int(os.path.basename(paths[0])[:20]) + int.from_bytes(good[-8:-4], "big")  # the last entry is probed
    want = _oracle_offset(recs, target)
    # an entry pointing into the middle of a batch
    bad = bytearray(good)
    bad[-4:] = (int.from_bytes(good[-4:], "big") + 3).to_bytes(4, "big")
    open(idx, "wb").write(bytes(bad))
    res = seek.seek_offset(pdir, target)
    assert (res.segment, res.position) == (want.segment, want.position)
    assert any("does not point at a valid batch" in w for w in res.warnings)
    # a negative relative offset: the sanity check fails
    open(idx, "wb").write(good + (-5).to_bytes(4, "big", signed=True) + b"\0\0\0\0")
    res = seek.seek_offset(pdir, target)
    assert res.position == want.position and any("Corrupt index" in w for w in res.warnings)
    os.unlink(idx)
    res = seek.seek_offset(pdir, target)
    assert res.position == want.position and any("missing" in w for w in res.warnings)


def test_preallocated_tail_is_ignored(tmp_path):
    pdir = str(tmp_path / "t-0")
    paths = make_partition(pdir, 11, segments=1, max_batches=40, interval=256)
    for ext, size in ((".index", 8), (".timeindex", 12)):
        p = paths[0][:-4] + ext
        with open(p, "ab") as f:
            f.write(bytes(size * 3000))
    recs = brute_records(pdir)
    stats = seek.SeekStats()
    res = seek.seek_offset(pdir, recs[-1].offset, stats=stats)
    assert res.position == recs[-1].position and not res.warnings
    assert stats.index_probes < 40  # a binary search, not a scan
    res = seek.seek_time(pdir, recs[-1].timestamp)
    assert res.record.timestamp >= recs[-1].timestamp


def test_segment_choice_opens_one_segment(tmp_path):
    pdir = str(tmp_path / "t-0")
    make_partition(pdir, 3, segments=30, max_batches=3, gaps=False)
    recs = brute_records(pdir)
    stats = seek.SeekStats()
    seek.seek_offset(pdir, recs[len(recs) // 2].offset, stats=stats)
    assert stats.files_opened <= 2 and stats.segments == 30


def test_parse_timestamp():
    assert parse_timestamp("1700000000000") == 1700000000000
    assert parse_timestamp("1970-01-01T00:00:01.5Z") == 1500
    assert parse_timestamp("1970-01-01 00:00:01") == 1000  # naive = UTC
    assert parse_timestamp("1970-01-01T01:00:00+01:00") == 0
    with pytest.raises(ValueError):
        parse_timestamp("yesterday")


def _run(*args):
    return subprocess.run([sys.executable, "-m", "kafkalog_cli", *args], capture_output=True, text=True, timeout=60)


def test_cli_exit_codes_and_output(tmp_path):
    pdir = str(tmp_path / "t-0")
    make_partition(pdir, 5, segments=2, gaps=False)
    recs = brute_records(pdir)
    r = _run("seek-offset", "--print-data-log", "--verbose", pdir, str(recs[3].offset))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[1].startswith("baseOffset: ") and f"position: {recs[3].position} " in lines[1]
    assert lines[2].startswith(f"| offset: {recs[3].offset} ")
    assert "index entries probed" in r.stderr
    r = _run("seek-offset", "--format", "json", pdir, str(recs[3].offset))
    doc = json.loads(r.stdout)
    assert doc["offset"] == recs[3].offset and doc["position"] == recs[3].position
    r = _run("seek-offset", pdir, str(recs[-1].offset + 10))
    assert r.returncode == 1 and "beyond the end of the log" in r.stderr and not r.stdout
    r = _run("seek-time", "--format", "json", pdir, str(recs[5].timestamp))
    assert r.returncode == 0 and json.loads(r.stdout)["offset"] == _oracle_time(recs, recs[5].timestamp).offset
    r = _run("seek-time", pdir, str(max(x.timestamp for x in recs) + 1))
    assert r.returncode == 1 and "no record" in r.stderr
    r = _run("seek-time", pdir, "not-a-time")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    r = _run("seek-offset", str(tmp_path / "nope"), "1")
    assert r.returncode == 2 and "no such file or directory" in r.stderr


def test_seek_time_uses_log_mtime_when_time_index_is_empty(tmp_path):
    """Errata E14: with an empty/missing time index the broker's largestTimestamp is the .log mtime, and that is what
    picks the segment; a header scan once picked a segment the broker skips."""
    pdir = str(tmp_path / "t-0")
    paths = make_partition(pdir, 3, segments=3, max_batches=5, gaps=False)
    recs = brute_records(pdir)
    first = [r for r in recs if r.segment == paths[0]]
    target = max(r.timestamp for r in first)  # segment 0 holds a record this late
    open(paths[0][:-4] + ".timeindex", "wb").close()
    os.utime(paths[0], ns=(0, (target - 1) * 10**6))  # but its mtime says older than the target
    res = seek.seek_time(pdir, target)
    assert res.segment != paths[0]
    assert any("mtime" in w for w in res.warnings)
    os.unlink(paths[0][:-4] + ".timeindex")
    os.utime(paths[0], ns=(0, (target + 10) * 10**6))
    res = seek.seek_time(pdir, target)
    assert res.segment == paths[0]
