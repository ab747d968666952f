"""``kafkalog compact``: the cleaner rules of issue 12 (one transaction tracker per round, refusal of overlapping or
backwards offsets, overflow splitting, min.compaction.lag.ms from largestTimestamp, a bounded MD5 offset map).

Each test rebuilds one of Kafka's cleaner scenarios as files and runs the real command (CliRunner on the click
command, or the engine where the plan's fields are the point)."""

from __future__ import annotations

import os
import struct

from click.testing import CliRunner
from partition_gen import PartitionBuilder
from test_compact import decode_dir

from kafkalog_cli.broker import repair_view as ps
from kafkalog_cli.cli.main import cli

NOW = 1_800_000_000_000
RETENTION = 86_400_000


def _compact(pdir: str, *args: str, execute: bool = True, backup: str | None = None):  # noqa: ANN202
    # --no-recover-first: these hand-built partitions (no marker, no indexes) test the cleaner's rules and refusals on
    # the files as they are; the start-up recovery a crash-shutdown input gets first is compared with Kafka in
    # tests/test_oracle_compact.py (crash inputs) and tests/test_crash_kafka_load.py
    argv = ["compact", "--no-recover-first", *args, pdir]
    if execute:
        argv[1:1] = ["--execute", "--backup-dir", backup or os.path.join(os.path.dirname(os.path.dirname(pdir)), "bk")]
    return CliRunner().invoke(cli, argv, catch_exceptions=False)


def _replay(pdir: str) -> ps.LogFacts:
    segs = ps.list_segments(pdir)
    items = []
    for _s, mf, batches in ps.iter_segment_batches(segs):
        for b in batches:
            items.append((b, ps.control_type(b, mf.buf) if b.is_control else None))
    return ps.replay_log(items, 0)


# ------------------------------------------------------------------------------------------ (1) one tracker per round
def test_commit_marker_in_a_later_group_survives_two_runs(tmp_path) -> None:  # noqa: ANN001
    """Transaction data in group 1, its COMMIT in group 2 (--segment-bytes 128: every segment is its own group).
    A per-group tracker took the COMMIT for one whose data was gone, gave it a horizon on run 1 and removed it on
    run 2 (delete.retention.ms later): the transaction then never ends for `kafkalog transactions` or a broker."""
    pdir = str(tmp_path / "logs" / "t-0")
    pb = PartitionBuilder(pdir)
    pb.batch([(b"t", b"in-txn")], pid=300, txn=True)
    pb.batch([(b"a", b"1")])
    pb.roll()
    pb.marker(300, abort=False)
    pb.batch([(b"b", b"2")])
    pb.roll()
    pb.batch([(b"c", b"active")])
    pb.write()
    commit_at = pb.bases[1]
    for now in (NOW, NOW + RETENTION + 1):
        r = _compact(pdir, "--now-ms", str(now), "--segment-bytes", "128")
        assert r.exit_code == 0, r.output
    facts = _replay(pdir)
    assert commit_at in facts.markers, "the COMMIT marker was removed while its transaction's data is still there"
    assert not facts.open_txns
    assert (0, b"t", b"in-txn") in decode_dir(pdir)[0]


def test_abort_marker_in_a_later_group_is_indexed_in_that_group(tmp_path) -> None:  # noqa: ANN001
    """Kafka's shared tracker appends the ABORT entry to the output index of the group holding the marker, so the
    aborted data of the earlier group is known for what it is; the marker keeps a .txnindex entry."""
    pdir = str(tmp_path / "logs" / "t-0")
    pb = PartitionBuilder(pdir)
    pb.batch([(b"k", b"committed")])
    pb.batch([(b"k", b"aborted"), (b"x", b"aborted")], pid=301, txn=True)
    pb.roll()
    pb.marker(301, abort=True)
    pb.batch([(b"y", b"2")])
    pb.roll()
    pb.batch([(b"z", b"active")])
    pb.write()
    r = _compact(pdir, "--now-ms", str(NOW), "--segment-bytes", "128")
    assert r.exit_code == 0, r.output
    recs = decode_dir(pdir)[0]
    assert (0, b"k", b"committed") in recs
    assert not [x for x in recs if x[2] == b"aborted"]
    txn = os.path.join(pdir, f"{pb.bases[1]:020d}.txnindex")
    assert os.path.exists(txn)
    pid, first, last = struct.unpack_from(">hqqq", open(txn, "rb").read())[1:4]
    assert (pid, first, last) == (301, 1, pb.bases[1])
    # and a second run accepts its own output
    r = _compact(pdir, "--now-ms", str(NOW + 1), "--segment-bytes", "128")
    assert r.exit_code == 0, r.output


# ------------------------------------------------------------------------------------------ (2) offsets never go back
def _batches(first: int, n: int, key: bytes = b"k") -> bytes:
    from kafkalog_cli.format.encoder import RecordSpec, encode_batch

    return b"".join(encode_batch([RecordSpec(key, b"v%d" % o, timestamp=1000 + o)], base_offset=o,
                                 partition_leader_epoch=0) for o in range(first, first + n))


def _snapshot(pdir: str) -> dict[str, bytes]:
    return {n: open(os.path.join(pdir, n), "rb").read() for n in sorted(os.listdir(pdir))}


def _refused(pdir: str, *needles: str) -> None:
    before = _snapshot(pdir)
    for execute in (False, True):
        r = _compact(pdir, "--now-ms", str(NOW), "--include-active", execute=execute)
        assert r.exit_code == 2, r.output
        assert "Traceback" not in r.output
        for n in needles:
            assert n in r.stderr, (n, r.stderr)
        assert _snapshot(pdir) == before
    assert not os.path.exists(os.path.join(os.path.dirname(os.path.dirname(pdir)), "bk"))


def test_overlapping_segments_are_refused(tmp_path) -> None:  # noqa: ANN001
    """A stray segment 5 holding offsets 5..14 beside segment 0 holding 0..9: a clean would merge them into a log
    whose offsets go backwards (what verify-crc reports as segment-order)."""
    pdir = tmp_path / "logs" / "t-0"
    pdir.mkdir(parents=True)
    (pdir / f"{0:020d}.log").write_bytes(_batches(0, 10))
    (pdir / f"{5:020d}.log").write_bytes(_batches(5, 10))
    (pdir / f"{15:020d}.log").write_bytes(_batches(15, 2))
    _refused(str(pdir), f"{0:020d}.log", f"{5:020d}.log", "overlapping range 5..9")


def test_backwards_offsets_inside_a_segment_are_refused(tmp_path) -> None:  # noqa: ANN001
    pdir = tmp_path / "logs" / "t-0"
    pdir.mkdir(parents=True)
    (pdir / f"{0:020d}.log").write_bytes(_batches(0, 6) + _batches(3, 2))
    (pdir / f"{10:020d}.log").write_bytes(_batches(10, 2))
    _refused(str(pdir), f"{0:020d}.log", "overlapping range 3..3", "offsets go backwards")


def test_segment_starting_below_its_name_is_refused(tmp_path) -> None:  # noqa: ANN001
    pdir = tmp_path / "logs" / "t-0"
    pdir.mkdir(parents=True)
    (pdir / f"{0:020d}.log").write_bytes(_batches(0, 3))
    (pdir / f"{8:020d}.log").write_bytes(_batches(5, 4))
    (pdir / f"{20:020d}.log").write_bytes(_batches(20, 1))
    _refused(str(pdir), f"{8:020d}.log", "below its base offset", "overlapping range 5..7")


# ------------------------------------------------------------------------------------------ (4) min.compaction.lag.ms
LAG = 3_600_000


def _lag_partition(p: str, batch_ts: int):  # noqa: ANN202
    pb = PartitionBuilder(p)
    pb.ts = batch_ts
    for i in range(4):
        pb.batch([(b"k", b"v%d" % i)])
    pb.roll()
    pb.batch([(b"k", b"last")])
    pb.roll()
    pb.batch([(b"z", b"active")])
    pb.write()
    return pb


def _plan(p: str):  # noqa: ANN202
    from kafkalog_cli.ops.compact import CompactOptions, plan_compaction

    return plan_compaction(p, CompactOptions(now_ms=NOW, min_compaction_lag_ms=LAG))


def test_lag_uses_the_last_time_index_entry_not_the_batches(tmp_path) -> None:  # noqa: ANN001
    """Old batches, but the .timeindex's last entry is young: the broker finds the segment uncleanable."""
    p = str(tmp_path / "logs" / "t-0")
    pb = _lag_partition(p, NOW - 10 * LAG)
    with open(os.path.join(p, f"{pb.bases[0]:020d}.timeindex"), "wb") as f:
        f.write(struct.pack(">qi", NOW - LAG // 2, 3))
    plan = _plan(p)
    assert plan.first_uncleanable_offset == 0, plan.notes
    assert not plan.has_changes
    # and the reverse: young batches, an old last time-index entry: cleanable
    p2 = str(tmp_path / "logs2" / "t-0")
    pb = _lag_partition(p2, NOW - LAG // 2)
    for base in pb.bases[:2]:
        with open(os.path.join(p2, f"{base:020d}.timeindex"), "wb") as f:
            f.write(struct.pack(">qi", NOW - 10 * LAG, 0))
    plan = _plan(p2)
    assert plan.first_uncleanable_offset == pb.bases[2], plan.notes
    assert plan.has_changes


def test_lag_uses_the_log_mtime_when_the_time_index_is_empty(tmp_path) -> None:  # noqa: ANN001
    p = str(tmp_path / "logs" / "t-0")
    pb = _lag_partition(p, NOW - 10 * LAG)
    open(os.path.join(p, f"{pb.bases[0]:020d}.timeindex"), "wb").close()
    young = (NOW - LAG // 2) / 1000
    os.utime(os.path.join(p, f"{pb.bases[0]:020d}.log"), (young, young))
    plan = _plan(p)
    assert plan.first_uncleanable_offset == 0, plan.notes
    assert any("mtime" in n for n in plan.notes), plan.notes
    old = (NOW - 10 * LAG) / 1000
    os.utime(os.path.join(p, f"{pb.bases[0]:020d}.log"), (old, old))
    os.remove(os.path.join(p, f"{pb.bases[0]:020d}.timeindex"))
    plan = _plan(p)
    assert plan.first_uncleanable_offset == pb.bases[2], plan.notes


# ------------------------------------------------------------------------------------------ (3) overflow split
def _json(pdir: str, *args: str, execute: bool = False) -> dict:
    import json

    r = _compact(pdir, "--format", "json", "--now-ms", str(NOW), *args, execute=execute)
    assert r.exit_code != 2, r.output
    return json.loads(r.stdout)


def _actions(doc: dict) -> list[tuple[str, str, int]]:
    return [(a["kind"], os.path.basename(a["path"]), a["size"]) for a in doc["actions"]]


def _offsets_in_range(pdir: str) -> None:
    from kafkalog_cli.ops.rebuild_index import rebuild_segment

    for name in sorted(os.listdir(pdir)):
        if name.endswith(".log"):
            data = open(os.path.join(pdir, name), "rb").read()
            rb = rebuild_segment(data, int(name[:20]))
            assert rb.problem is None, (name, rb.problem)
            if os.path.exists(os.path.join(pdir, name[:-4] + ".index")):  # the untouched active segment has none
                assert open(os.path.join(pdir, name[:-4] + ".index"), "rb").read() == rb.index
                assert open(os.path.join(pdir, name[:-4] + ".timeindex"), "rb").read() == rb.timeindex


def test_overflowed_segment_is_split_and_dry_run_agrees_with_execute(tmp_path) -> None:  # noqa: ANN001
    """Segment 0 holds offsets 3..4 and 2^31+10..2^31+12 (a pre-KAFKA-6264 broker wrote such files). The dry run
    showed a plan whose --execute then refused (the output failed the 32-bit check); now both split it where
    LocalLog.splitOverflowedSegment does: a part based at 3, one based at 2^31+10."""
    from kafkalog_cli.format.encoder import RecordSpec, encode_batch

    pdir = tmp_path / "logs" / "t-0"
    pdir.mkdir(parents=True)
    hi = 2**31 + 10

    def one(off: int, key: bytes, value: bytes) -> bytes:
        return encode_batch([RecordSpec(key, value, timestamp=1000 + off % 1000)], base_offset=off,
                            partition_leader_epoch=0)

    seg0 = one(3, b"a", b"old") + one(4, b"b", b"1") + one(hi, b"a", b"new") + one(hi + 1, b"c", b"1")
    seg0 += one(hi + 2, b"c", b"2")
    (pdir / f"{0:020d}.log").write_bytes(seg0)
    (pdir / f"{hi + 3:020d}.log").write_bytes(one(hi + 3, b"z", b"active"))
    p = str(pdir)
    dry = _json(p)
    assert dry["splits"] == [{"segment": 0, "parts": [3, hi]}]
    run = _json(p, "--backup-dir", str(tmp_path / "bk"), execute=True)
    assert run["written"] and _actions(run) == _actions(dry)
    names = sorted(n for n in os.listdir(p) if n.endswith(".log"))
    assert names == [f"{3:020d}.log", f"{hi:020d}.log", f"{hi + 3:020d}.log"]
    recs = sorted(decode_dir(p)[0])
    assert recs == [(4, b"b", b"1"), (hi, b"a", b"new"), (hi + 2, b"c", b"2"), (hi + 3, b"z", b"active")]
    _offsets_in_range(p)
    again = _json(p)  # the result needs no further split and nothing more to remove
    assert again["splits"] == [] and not [a for a in again["actions"] if a["kind"] != "delete" or "txnindex" in a["path"]]


# ------------------------------------------------------------------------------------------ (5) bounded offset map
def test_skimpy_offset_map_sizing_and_probing() -> None:
    """SkimpyOffsetMap: slots = memory // 24 (16-byte MD5 + 8-byte offset), filled to 90% (load factor)."""
    from kafkalog_cli.ops.compact_io import SkimpyOffsetMap

    m = SkimpyOffsetMap(128 * 1024 * 1024)
    assert (m.slots, m.max_entries) == (5592405, 5033164)
    m.close()
    m = SkimpyOffsetMap(24 * 3)  # 3 slots: every put past the first probes
    m.put(b"a", 1)
    m.put(b"b", 2)
    m.put(b"a", 7)
    m.put(b"c", 9)
    assert (m.get(b"a"), m.get(b"b"), m.get(b"c"), m.entries, m.latest_offset) == (7, 2, 9, 3, 9)
    m2 = SkimpyOffsetMap(24 * 3)
    assert m2.get(b"zz") == -1 and m2.max_entries == 2


def _many_keys(p: str) -> PartitionBuilder:
    pb = PartitionBuilder(p)
    for i in range(6):
        pb.batch([(b"k%d" % i, b"old")])  # offsets 0..5
    pb.roll()
    for i in range(6):
        pb.batch([(b"k%d" % i, b"new")])  # 6..11: updates of known keys
    for i in range(6, 12):
        pb.batch([(b"k%d" % i, b"x")])  # 12..17: new keys
    pb.roll()
    for i in range(12):
        pb.batch([(b"k%d" % i, b"newest")])  # 18..29
    pb.roll()
    pb.batch([(b"z", b"active")])
    pb.write()
    return pb


def test_full_offset_map_limits_the_round_like_kafka(tmp_path) -> None:  # noqa: ANN001
    """10 slots -> 9 keys. Kafka's buildOffsetMapForSegment stops at the record that would be the 10th key (offset
    15, k9): the map's latest offset is 14, so records from 15 on are kept as they are and segment 18 is not
    cleaned; the plan says so. Before, the map was an unbounded dict of exact keys."""
    p = str(tmp_path / "logs" / "t-0")
    pb = _many_keys(p)
    dry = _json(p, "--dedupe-buffer-bytes", str(24 * 10))
    m = dry["offset_map"]
    assert (m["slots"], m["max_entries"], m["entries"], m["full"], m["cleaned_up_to"]) == (10, 9, 9, True, 15)
    assert any("offset map is full" in n for n in dry["notes"])
    assert [g["bases"] for g in dry["groups"]] == [[0, 6]]  # segment 18 lies past the round's end offset
    run = _json(p, "--dedupe-buffer-bytes", str(24 * 10), "--backup-dir", str(tmp_path / "bk"), execute=True)
    assert _actions(run) == _actions(dry)
    recs = sorted(decode_dir(p)[0])
    expect = [(o, k, v) for o, k, v in [(r.offset, r.key, r.value) for r in pb.records]
              if o >= 15 or (k, o) in {(b"k%d" % i, 6 + i) for i in range(6)} | {(b"k%d" % i, 6 + i) for i in range(6, 9)}]
    assert recs == sorted(expect)
    # with the default buffer everything up to the active segment is cleaned
    full = _json(p)
    assert not full["offset_map"]["full"] and full["offset_map"]["cleaned_up_to"] == pb.bases[-1]


def test_dedupe_buffer_too_small_is_a_usage_error(tmp_path) -> None:  # noqa: ANN001
    p = str(tmp_path / "logs" / "t-0")
    _many_keys(p)
    r = _compact(p, "--dedupe-buffer-bytes", "47", execute=False)
    assert r.exit_code == 2 and "too small" in r.stderr


def test_streamed_index_matches_rebuild_index(tmp_path) -> None:  # noqa: ANN001
    """IndexBuilder (fed one batch at a time) is rebuild_segment's rule: same bytes on varied segments."""
    from partition_gen import random_partition

    from kafkalog_cli.ops.compact_io import IndexBuilder, SegmentReader
    from kafkalog_cli.ops.rebuild_index import rebuild_segment

    for seed, interval in ((1, 0), (2, 100), (3, 4096), (4, 300)):
        p = str(tmp_path / f"s{seed}" / "t-0")
        random_partition(p, seed)
        for name in sorted(os.listdir(p)):
            if not name.endswith(".log"):
                continue
            path = os.path.join(p, name)
            b = IndexBuilder(int(name[:20]), interval, 10 * 1024 * 1024, path)
            with SegmentReader(path) as r:
                for batch in r.batches(validate=True):
                    b.add(batch.size, batch.last_offset, batch.max_timestamp)
            rb = rebuild_segment(open(path, "rb").read(), int(name[:20]), interval)
            assert rb.problem is None and b.finish() == (rb.index, rb.timeindex), (seed, name)


def test_dry_run_lists_exactly_what_execute_writes(tmp_path) -> None:  # noqa: ANN001
    """The execution filters the groups again and must produce the plan's files and sizes, byte for byte."""
    from partition_gen import random_partition

    for seed, extra in ((1, ()), (5, ("--include-active",)), (8, ("--segment-bytes", "400"))):
        p = str(tmp_path / f"s{seed}" / "logs" / "t-0")
        random_partition(p, seed)
        dry = _json(p, *extra)
        run = _json(p, *extra, "--backup-dir", str(tmp_path / f"bk{seed}"), execute=True)
        assert run["written"] and _actions(run) == _actions(dry)
        for kind, name, size in _actions(dry):
            if kind != "delete" and name.endswith(".log"):
                assert os.path.getsize(os.path.join(p, name)) == size
        _offsets_in_range(p)
