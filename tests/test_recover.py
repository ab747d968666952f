"""``recover`` (the broker's LogLoader, offline) and ``salvage`` on generated crash scenarios.

Expected outcomes come from the loader rules (spec §8, errata E2/E12/E14, LogLoader.java/LogSegment.recover at
apache/kafka 1eb7644) applied to the builder's own model of the partition (batch offsets and byte positions), never
from our engine's view of the files.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner
from partition_gen import PartitionBuilder, verify_crc_clean
from realdata_path import REALDATA

from kafkalog_cli.broker import loader as ld
from kafkalog_cli.broker import producer_state_manager as pst
from kafkalog_cli.cli.main import cli
from kafkalog_cli.storage.companions import ProducerEntry, encode_producer_snapshot, parse_producer_snapshot


# ------------------------------------------------------------------------------------------------ builders
def build(root: Path, *, segments: int = 3, per_segment: int = 10, producers: bool = True, txn: bool = False,
          name: str = "orders-0") -> tuple[str, PartitionBuilder, dict[int, list[tuple[int, int, int]]]]:
    """A partition of ``segments`` segments; returns (dir, builder, base -> [(base offset, position, size)])."""
    logdir = root / "logs"
    pdir = logdir / name
    pdir.mkdir(parents=True)
    (logdir / "meta.properties").write_text("version=1\ncluster.id=x\nnode.id=1\n")
    pb = PartitionBuilder(str(pdir))
    n = 0
    for s in range(segments):
        if s:
            pb.roll()
        for i in range(per_segment):
            pid = 7 if producers and i % 2 else -1
            if txn and s == 1 and i == 2:
                pb.batch([(b"t", b"aborted")], pid=9, txn=True, leader_epoch=s)
                pb.marker(9, abort=True, leader_epoch=s)
            pb.batch([(f"k{n}".encode(), b"v" * 40)], pid=pid, leader_epoch=s)
            n += 1
    pb.write()
    layout: dict[int, list[tuple[int, int, int]]] = {}
    for base, batches in zip(pb.bases, pb.segments):
        pos, rows = 0, []
        for data in batches:
            rows.append((struct.unpack_from(">q", data, 0)[0], pos, len(data)))
            pos += len(data)
        layout[base] = rows
    return str(pdir), pb, layout


def flip(pdir: str, base: int, position: int) -> None:
    path = os.path.join(pdir, f"{base:020d}.log")
    data = bytearray(open(path, "rb").read())
    data[position] ^= 0xFF
    open(path, "wb").write(bytes(data))


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.output


def checkpoint(logdir: str, name: str, entries: list[tuple[str, int, int]]) -> None:
    with open(os.path.join(logdir, name), "w") as f:
        f.write(f"0\n{len(entries)}\n" + "".join(f"{t} {p} {o}\n" for t, p, o in entries))


# ------------------------------------------------------------------------------------------------ producer snapshots
def test_snapshot_writer_round_trip_and_java_order():
    entries = [ProducerEntry(5, 0, 9, 100, 2, 1_700_000_000_000, -1, -1), ProducerEntry(1 << 40, 3, -1, -1, 0, 7, 4, 55)]
    data = encode_producer_snapshot(entries)
    assert parse_producer_snapshot(data).entries == entries
    # java.util.HashMap<Long,_>: bucket = spread(Long.hashCode) & 15; same bucket keeps insertion order
    assert pst.java_hashmap_order([16, 0, 1]) == [16, 0, 1]
    assert pst.java_hashmap_order([(1 << 32) + 5, 3]) == [3, (1 << 32) + 5]  # hash (1 ^ 5) = 4 > 3
    assert pst.java_hashmap_order(list(range(20, 0, -1))) == list(range(1, 21))  # 20 keys: 32 buckets


def _realdata() -> Path | None:
    return REALDATA if REALDATA.is_dir() else None


@pytest.mark.realdata
def test_snapshot_writer_matches_real_broker_snapshots():
    """Replaying a real partition up to a real snapshot's offset gives that snapshot byte for byte."""
    from kafkalog_cli.format.batch import Batch
    from kafkalog_cli.storage.layout import segment_logs
    from kafkalog_cli.storage.segment import MappedFile, entries

    root = _realdata()
    if root is None:
        pytest.skip("shared/realdata not present")
    checked = with_entries = 0
    for snap in sorted(root.rglob("*.snapshot")):
        off = int(snap.name[:20])
        logs = segment_logs(str(snap.parent))
        if not logs or any(not os.path.exists(p) for _b, p in logs):
            continue
        st = pst.ProducerState()
        for _b, p in logs:
            with MappedFile(p) as mf:
                st.replay([pst.batch_info(e, mf.buf) for e in entries(mf.buf, file=p)
                           if isinstance(e, Batch) and e.last_offset < off])
        assert st.snapshot_bytes() == snap.read_bytes(), snap
        checked += 1
        with_entries += snap.stat().st_size > 10
    assert checked >= 200 and with_entries >= 20  # 245 and 22 in the realdata of 2026-11-23


# ------------------------------------------------------------------------------------------------ recover
def test_clean_partition_unclean_shutdown_changes_nothing_after_first_execute(tmp_path):
    pdir, _pb, _layout = build(tmp_path)
    code, out = run("recover", pdir)
    assert code == 1, out  # snapshots the broker writes during recovery (none exist yet)
    plan = ld.plan_load(pdir)
    assert not plan.deleted_segments and all(r.outcome == "intact" for r in plan.recovered)
    assert plan.snapshots_written == [10, 20, 30]  # one after each recovered segment (LogLoader.recoverSegment)
    code, out = run("recover", "--execute", "--backup-dir", str(tmp_path / "bk"), pdir)
    assert code == 0, out
    code, out = run("recover", pdir)
    assert code == 0 and "the broker would change nothing" in out, out


def test_corrupt_batch_mid_segment_truncates_and_deletes_later_segments(tmp_path):
    pdir, pb, layout = build(tmp_path, segments=4)
    bad_base, bad_pos, bad_size = layout[10][4]  # offset 14
    flip(pdir, 10, bad_pos + 70)  # inside the CRC-covered part: a CRC mismatch
    plan = ld.plan_load(pdir)
    rec = {r.base: r for r in plan.recovered}
    assert rec[0].outcome == "intact"
    assert rec[10].outcome == "truncated" and rec[10].stop_position == bad_pos and rec[10].valid_bytes == bad_pos
    assert rec[10].lost.first_offset == bad_base == 14 == rec[10].truncate_offset and rec[10].lost.last_offset == 19
    assert rec[10].lost.batches == 5 and rec[10].lost.corrupt_bytes == bad_size  # 15..19 intact, 14 unreadable
    assert [d.segment for d in plan.deleted_segments] == [20, 30]  # every later segment (recoverLog)
    assert sum(d.records for d in plan.deleted_segments) == 20
    assert plan.log_end_offset == 14 and plan.epochs_after == [(0, 0), (1, 10)]
    assert plan.lost_records == 25
    names = {(c.kind, c.name) for c in plan.changes}
    assert ("truncate", f"{10:020d}.log") in names and ("delete", f"{20:020d}.log") in names
    code, out = run("recover", "--format", "json", pdir)
    assert code == 1 and json.loads(out)["log_end_offset"] == 14
    # execute does exactly the plan, the result verifies clean and the next load changes nothing
    code, out = run("recover", "--execute", "--backup-dir", str(tmp_path / "bk"), pdir)
    assert code == 0, out
    assert os.path.getsize(os.path.join(pdir, f"{10:020d}.log")) == bad_pos
    assert not os.path.exists(os.path.join(pdir, f"{20:020d}.log"))
    verify_crc_clean(pdir)
    assert not ld.plan_load(pdir).changes
    backups = list((tmp_path / "bk").rglob(f"{20:020d}.log"))
    assert backups, "deleted segments are kept in the backup"


def test_torn_tail_only_loses_the_partial_batch(tmp_path):
    pdir, _pb, layout = build(tmp_path, segments=2)
    path = os.path.join(pdir, f"{10:020d}.log")
    _b, last_pos, last_size = layout[10][-1]
    with open(path, "r+b") as f:
        f.truncate(last_pos + last_size // 2)
    plan = ld.plan_load(pdir)
    rec = {r.base: r for r in plan.recovered}
    assert rec[10].outcome == "truncated" and rec[10].valid_bytes == last_pos
    assert not plan.deleted_segments and plan.log_end_offset == 19


def test_clean_shutdown_marker_skips_recovery(tmp_path):
    pdir, _pb, layout = build(tmp_path, producers=False)
    flip(pdir, 10, layout[10][4][1] + 70)
    Path(os.path.dirname(pdir), ".kafka_cleanshutdown").write_text("")
    plan = ld.plan_load(pdir)
    assert plan.clean_shutdown and not plan.recovered and not plan.deleted_segments
    # no snapshot + clean shutdown: the "upgrade" shortcut writes empty snapshots at the last two bases and the LEO
    assert plan.snapshots_written == [10, 20, 30]
    assert all(c.name.endswith(".snapshot") for c in plan.changes)


def test_missing_index_recovers_at_load_and_keeps_later_segments(tmp_path):
    """errata E2: the load-time path truncates the segment but does not delete the later ones."""
    pdir, _pb, layout = build(tmp_path, producers=False)
    Path(os.path.dirname(pdir), ".kafka_cleanshutdown").write_text("")
    os.unlink(os.path.join(pdir, f"{10:020d}.index"))
    flip(pdir, 10, layout[10][4][1] + 70)
    plan = ld.plan_load(pdir)
    rec = {r.base: r for r in plan.recovered}
    assert list(rec) == [10] and rec[10].outcome == "truncated" and "missing" in rec[10].reason
    assert not plan.deleted_segments and plan.log_end_offset == 30


def test_recovery_point_limits_which_segments_are_recovered(tmp_path):
    pdir, _pb, layout = build(tmp_path, segments=3, producers=False)
    logdir = os.path.dirname(pdir)
    checkpoint(logdir, "recovery-point-offset-checkpoint", [("orders", 0, 25)])
    flip(pdir, 10, layout[10][4][1] + 70)  # below the recovery point's segment: not recovered
    plan = ld.plan_load(pdir)
    assert [r.base for r in plan.recovered] == [20] and plan.log_end_offset == 30
    flip(pdir, 20, layout[20][3][1] + 70)
    plan = ld.plan_load(pdir)
    assert plan.recovered[0].outcome == "truncated" and plan.log_end_offset == 23


def test_recovery_point_named_twice_last_entry_wins(tmp_path):
    """The broker reads the checkpoint into a map in file order (OffsetCheckpointFile.java:65-69): when a partition
    is named twice the LAST entry wins. Before, recover/salvage took the first (0 here: every segment recovered)."""
    pdir, _pb, layout = build(tmp_path, segments=3, producers=False)
    logdir = os.path.dirname(pdir)
    checkpoint(logdir, "recovery-point-offset-checkpoint", [("orders", 0, 0), ("orders", 0, 25)])
    assert ld.read_offset_checkpoint(logdir, ld.RECOVERY_POINT_FILE, ("orders", 0)) == (
        25, "recovery-point-offset-checkpoint: 25")
    flip(pdir, 10, layout[10][4][1] + 70)  # below the recovery point's segment: not recovered
    plan = ld.plan_load(pdir)
    assert [r.base for r in plan.recovered] == [20] and plan.log_end_offset == 30
    checkpoint(logdir, "recovery-point-offset-checkpoint", [("orders", 0, 25), ("orders", 0, 0)])
    assert ld.read_offset_checkpoint(logdir, ld.RECOVERY_POINT_FILE, ("orders", 0))[0] == 0


def test_txnindex_rebuilt_from_markers(tmp_path):
    pdir, pb, _layout = build(tmp_path, txn=True)
    xname = next(n for n in os.listdir(pdir) if n.endswith(".txnindex"))
    want = open(os.path.join(pdir, xname), "rb").read()
    os.unlink(os.path.join(pdir, xname))
    plan = ld.plan_load(pdir)
    ch = [c for c in plan.changes if c.name == xname]
    assert ch and ch[0].data == want  # (pid, first, marker, LSO) as the builder's model computes them
    assert pb.aborted


def test_interrupted_clean_swap_completed_by_version(tmp_path):
    """3.0+: the .swap range deletion and rename (errata E12); <= 2.8: index files deleted, swap recovered."""
    pdir, _pb, _layout = build(tmp_path, producers=False)
    # a cleaner merged segments 0 and 10 into 0.log.swap and crashed before the renames
    merged = open(os.path.join(pdir, f"{0:020d}.log"), "rb").read() + open(os.path.join(pdir, f"{10:020d}.log"), "rb").read()
    open(os.path.join(pdir, f"{0:020d}.log.swap"), "wb").write(merged)
    open(os.path.join(pdir, f"{20:020d}.log.deleted"), "wb").write(b"x")
    Path(os.path.dirname(pdir), ".kafka_cleanshutdown").write_text("")
    plan = ld.plan_load(pdir, "3.9")
    kinds = {(c.kind, c.name) for c in plan.changes if c.phase == "leftovers"}
    assert ("delete", f"{20:020d}.log.deleted") in kinds
    assert ("delete", f"{10:020d}.log") in kinds and ("delete", f"{0:020d}.index") in kinds  # range [0, 20)
    assert ("rename", f"{0:020d}.log") in kinds
    # the swap came without index .swap files: the loader's readNextOffset on 0.log.swap creates 0.index.swap
    # zero-filled at segment.index.bytes, the renames install it as 0.index, and the clean load recovers nothing
    # (as kafka-real Load does, 4.0; the 3.x Scala loader opens the swap segment the same way)
    assert plan.log_end_offset == 30 and plan.recovered == []
    assert ("write", f"{0:020d}.index.swap") in kinds and ("rename", f"{0:020d}.index") in kinds
    assert next(c for c in plan.changes if c.name == f"{0:020d}.index.swap").size == 10 * 1024 * 1024
    old = ld.plan_load(pdir, "2.8")
    assert [r.base for r in old.recovered] == [0]  # the completed swap segment is recovered
    assert ("delete", f"{10:020d}.log") in {(c.kind, c.name) for c in old.changes}
    code, out = run("recover", "--execute", "--backup-dir", str(tmp_path / "bk"), pdir)
    assert code == 0, out
    assert sorted(n for n in os.listdir(pdir) if n.endswith(".log")) == [f"{0:020d}.log", f"{20:020d}.log"]
    verify_crc_clean(pdir)


def test_unfinished_split_swaps_deleted(tmp_path):
    pdir, _pb, _layout = build(tmp_path, producers=False)
    open(os.path.join(pdir, f"{10:020d}.log.cleaned"), "wb").write(b"")
    open(os.path.join(pdir, f"{15:020d}.log.swap"), "wb").write(b"")
    plan = ld.plan_load(pdir)
    kinds = {(c.kind, c.name) for c in plan.changes if c.phase == "leftovers"}
    assert ("delete", f"{15:020d}.log.swap") in kinds and ("delete", f"{10:020d}.log.cleaned") in kinds
    assert not any(c.kind == "rename" for c in plan.changes)


def test_fatal_states_refused(tmp_path):
    pdir, _pb, _layout = build(tmp_path)
    open(os.path.join(pdir, "backup.log"), "wb").write(b"")
    code, out = run("recover", pdir)
    assert code == 2 and "FATAL" in out
    code, _out = run("recover", "--execute", pdir)
    assert code == 2 and os.path.exists(os.path.join(pdir, "backup.log"))


def test_log_dir_argument_expands_partitions(tmp_path):
    build(tmp_path, name="a-0")
    build(tmp_path / "x", name="b-1")
    shutil.move(str(tmp_path / "x" / "logs" / "b-1"), str(tmp_path / "logs" / "b-1"))
    code, out = run("recover", "--format", "json", str(tmp_path / "logs"))
    docs = json.loads(out)
    assert code == 1 and [os.path.basename(d["partition_dir"]) for d in docs] == ["a-0", "b-1"]


# ------------------------------------------------------------------------------------------------ salvage
def test_salvage_keeps_every_batch_outside_the_corrupt_range(tmp_path):
    pdir, pb, layout = build(tmp_path, segments=4)
    _bad, bad_pos, bad_size = layout[10][4]
    flip(pdir, 10, bad_pos + 70)
    code, out = run("salvage", pdir)
    assert code == 1 and "the broker's own recovery would lose: 25 intact records" in out, out
    code, out = run("salvage", "--execute", "--backup-dir", str(tmp_path / "bk"), pdir)
    assert code == 0, out
    verify_crc_clean(pdir)
    kept = []
    for name in sorted(n for n in os.listdir(pdir) if n.endswith(".log")):
        data = open(os.path.join(pdir, name), "rb").read()
        pos = 0
        while pos < len(data):
            kept.append(struct.unpack_from(">q", data, pos)[0])
            pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    assert kept == [b for b, _e in pb.batch_ranges if b != 14]
    plan = ld.plan_load(pdir)  # loads without truncation: nothing left for the broker to change
    assert not plan.changes and all(r.outcome == "intact" for r in plan.recovered) and plan.log_end_offset == 40
    assert plan.epochs_after == [(0, 0), (1, 10), (2, 20), (3, 30)]


def test_salvage_refuses_a_transaction_whose_marker_may_be_cut(tmp_path):
    pdir, pb, layout = build(tmp_path, segments=3, txn=True)
    rows = layout[10]
    marker = next(r for r in rows if r[0] == 13)  # data at 12, ABORT marker at 13
    flip(pdir, 10, marker[1] + 70)
    before = {n: open(os.path.join(pdir, n), "rb").read() for n in os.listdir(pdir)}
    code, out = run("salvage", "--execute", pdir)
    assert code == 2 and "transaction from offset 12" in out, out
    assert {n: open(os.path.join(pdir, n), "rb").read() for n in os.listdir(pdir)} == before


def test_clean_interrupted_between_cleaned_and_swap_renames_is_discarded(tmp_path):
    """LogSegment.changeFileSuffixes renames .log first: a crash leaves 0.log.swap beside 0.index.cleaned, whose base
    is <= the swap's, so the loader deletes the swap and the old segments stay (errata E12)."""
    pdir, _pb, _layout = build(tmp_path, producers=False)
    merged = open(os.path.join(pdir, f"{0:020d}.log"), "rb").read() + open(os.path.join(pdir, f"{10:020d}.log"), "rb").read()
    open(os.path.join(pdir, f"{0:020d}.log.swap"), "wb").write(merged)
    open(os.path.join(pdir, f"{0:020d}.index.cleaned"), "wb").write(b"")
    plan = ld.plan_load(pdir)
    left = [(c.kind, c.name) for c in plan.changes if c.phase == "leftovers"]
    assert sorted(left) == [("delete", f"{0:020d}.index.cleaned"), ("delete", f"{0:020d}.log.swap")]
    assert plan.log_end_offset == 30 and not plan.deleted_segments
    code, out = run("recover", "--execute", "--backup-dir", str(tmp_path / "bk"), pdir)
    assert code == 0, out
    assert not [n for n in os.listdir(pdir) if n.endswith((".swap", ".cleaned"))]
    verify_crc_clean(pdir)


def test_invalid_offset_empties_in_the_unclean_pass_but_is_fatal_at_load(tmp_path):
    """Non-increasing offsets at an index point make recovery throw InvalidOffsetException: recoverLog empties the
    segment and deletes the later ones; in the load-time path (missing .index) nothing catches it and the broker
    does not start (LogLoader.java 371-386 call recoverSegment inside the catch blocks)."""
    from kafkalog_cli.format.encoder import RecordSpec, encode_batch

    pdir, _pb, _layout = build(tmp_path, producers=False, per_segment=3)
    path = os.path.join(pdir, f"{3:020d}.log")
    big = [RecordSpec(key=b"k", value=b"x" * 5000, timestamp=1, offset_delta=0)]
    data = encode_batch(big, base_offset=3) + encode_batch(big, base_offset=4) + encode_batch(big, base_offset=4)
    open(path, "wb").write(data)
    plan = ld.plan_load(pdir)
    rec = {r.base: r for r in plan.recovered}
    assert rec[3].outcome == "emptied" and rec[3].valid_bytes == 0
    assert [d.segment for d in plan.deleted_segments] == [6] and plan.log_end_offset == 3
    os.unlink(os.path.join(pdir, f"{3:020d}.index"))
    plan = ld.plan_load(pdir)
    assert plan.fatal and "InvalidOffsetException" in plan.fatal[0]
    code, out = run("recover", "--execute", pdir)
    assert code == 2 and open(path, "rb").read() == data


def test_salvage_refuses_what_it_cannot_repair(tmp_path):
    pdir, _pb, layout = build(tmp_path)
    flip(pdir, 10, layout[10][4][1] + 70)
    open(os.path.join(pdir, "backup.log"), "wb").write(b"")
    code, out = run("salvage", pdir)
    assert code == 2 and "backup.log" in out, out


def test_stray_snapshots_removed_from_2_8(tmp_path):
    """removeStraySnapshots (new in 2.8.0): snapshots not at a segment base go, except the newest one above the
    last base."""
    pdir, _pb, _layout = build(tmp_path, producers=False)
    Path(os.path.dirname(pdir), ".kafka_cleanshutdown").write_text("")
    empty = encode_producer_snapshot([])
    for off in (5, 10, 25, 27, 30):
        open(os.path.join(pdir, f"{off:020d}.snapshot"), "wb").write(empty)
    plan = ld.plan_load(pdir, "3.9")
    assert plan.snapshots_deleted == [5, 25, 27] and not plan.snapshots_written
    assert ld.plan_load(pdir, "2.7").snapshots_deleted == []


@pytest.mark.slow
@pytest.mark.realdata
def test_real_log_dir_recover_execute_then_nothing_left(tmp_path):
    """A real broker log dir (copied): execute the plan, then the loader model finds nothing left to change and
    verify-crc is clean."""
    root = _realdata()
    src = root / "DonaldY__kafka-2.7.1" / "kafka-logs" if root else None
    if src is None or not src.is_dir():
        pytest.skip("shared/realdata not present")
    dst = tmp_path / "kafka-logs"
    shutil.copytree(src, dst)
    for p in [dst, *dst.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    code, out = run("recover", "--kafka-version", "2.7", "--execute", "--backup-dir", str(tmp_path / "bk"), str(dst))
    assert code == 0, out
    code, out = run("recover", "--kafka-version", "2.7", str(dst))
    assert code == 0 and "the broker would change nothing" in out, out
    code, out = run("verify-crc", str(dst))
    assert code == 0, out


def test_non_transactional_batch_inside_an_open_transaction_is_fatal(tmp_path):
    """ProducerAppendInfo.appendDataBatch throws InvalidTxnStateException; nothing in the loader catches it."""
    logdir = tmp_path / "logs"
    pdir = logdir / "t-0"
    pb = PartitionBuilder(str(pdir))
    pb.batch([(b"a", b"1")], pid=5, txn=True)
    pb.batch([(b"b", b"2")], pid=5, txn=False)
    pb.write()
    plan = ld.plan_load(str(pdir))
    assert plan.fatal and "InvalidTxnStateException" in plan.fatal[0] and not plan.changes
    code, out = run("salvage", str(pdir))
    assert code == 2, out
