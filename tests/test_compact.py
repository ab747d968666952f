"""``kafkalog compact``: survivors against a brute-force oracle, decoded independently with kafka-python; E1
refusal; lock refusal; kill -9 during --execute leaves the old or the new state, never a mix."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess

import pytest
from click.testing import CliRunner
from crash_driver import hashes as _hashes
from kafka.record.default_records import DefaultRecordBatch
from partition_gen import mark_clean_shutdown, random_partition, verify_crc_clean
from repair_helpers import kill_after_delays, refused_while_locked

from kafkalog_cli.cli.compact import compact as compact_cmd
from kafkalog_cli.errors import RepairRefused
from kafkalog_cli.ops.compact import CompactOptions, plan_compaction

NOW = 1_800_000_000_000
RETENTION = 86_400_000


def decode_dir(pdir: str) -> tuple[list[tuple[int, bytes | None, bytes | None]], list[DefaultRecordBatch], int]:
    """(data records, batch headers, log end offset) of every .log, decoded by kafka-python; asserts every CRC."""
    records, batches, leo = [], [], 0
    for name in sorted(os.listdir(pdir)):
        if not name.endswith(".log"):
            continue
        with open(os.path.join(pdir, name), "rb") as f:
            data = f.read()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack_from(">i", data, pos + 8)
            batch = DefaultRecordBatch(data[pos : pos + 12 + length])
            assert batch.validate_crc(), f"{name}@{pos}"
            batches.append(batch)
            leo = max(leo, batch.base_offset + batch.last_offset_delta + 1)
            if not batch.is_control_batch:
                for rec in batch:
                    records.append((rec.offset, rec.key, rec.value))
            pos += 12 + length
    return records, batches, leo


def oracle(pb, upper: int, tombstones_kept: bool) -> list[tuple[int, bytes | None, bytes | None]]:
    """Latest value per key below ``upper`` (aborted records and keyless records out), tombstones per the flag;
    everything at or above ``upper`` untouched."""
    data = [r for r in pb.records if not r.control]
    latest: dict[bytes, int] = {}
    for r in data:
        if r.offset < upper and r.outcome != "abort" and r.key is not None:
            latest[r.key] = r.offset
    out = []
    for r in data:
        if r.offset >= upper:
            out.append((r.offset, r.key, r.value))
        elif r.outcome == "abort" or r.key is None or latest[r.key] != r.offset:
            continue
        elif r.value is None and not tombstones_kept:
            continue
        else:
            out.append((r.offset, r.key, r.value))
    return out


def run_cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(compact_cmd, list(args))
    return res.exit_code, res.output


@pytest.mark.parametrize("seed", [1, 2, 3, 7])
def test_compact_matches_oracle_and_tombstones_expire(tmp_path, seed):
    pdir = str(tmp_path / "logs" / "topic-0")
    pb = random_partition(pdir, seed)
    # stopped cleanly: the brute-force oracle below is the cleaner's rules on the log as it is; after a crash the
    # broker's start-up (and compact, by default) first recovers it, at NOW expiring the idle producers
    mark_clean_shutdown(pdir)
    active = pb.bases[-1]
    _, before_batches, leo_before = decode_dir(pdir)
    with open(os.path.join(pdir, f"{active:020d}.log"), "rb") as f:
        active_bytes = f.read()

    code, text = run_cli(pdir, "--now-ms", str(NOW))  # dry run changes nothing
    assert code == 1, text  # the dry-run rule: 1 when --execute would change files
    assert "Dry run" in text
    code, text = run_cli(pdir, "--execute", "--now-ms", str(NOW), "--backup-dir", str(tmp_path / "bk"))
    assert code == 0, text
    recs, batches, leo = decode_dir(pdir)
    assert sorted(recs) == sorted(oracle(pb, active, tombstones_kept=True))
    assert leo == leo_before
    with open(os.path.join(pdir, f"{active:020d}.log"), "rb") as f:
        assert f.read() == active_bytes
    # each producer's last batch survives (maybe empty), with its sequence fields
    last_of: dict[int, tuple[int, int]] = {}
    for b in before_batches:
        if b.producer_id >= 0 and not b.is_control_batch:
            last_of[b.producer_id] = (b.base_offset, b.base_sequence)
    kept = {(b.producer_id, b.base_offset, b.base_sequence) for b in batches}
    for pid, (base, seq) in last_of.items():
        assert (pid, base, seq) in kept
    # no new tombstone without a horizon
    for b in batches:
        if not b.is_control_batch and any(r.value is None for r in b):
            assert b.attributes & 0x40
    # a clean before the horizon keeps them; one after the horizon drops them
    code, text = run_cli(pdir, "--execute", "--now-ms", str(NOW + RETENTION - 1), "--backup-dir", str(tmp_path / "bk"))
    assert code == 0, text
    assert sorted(decode_dir(pdir)[0]) == sorted(oracle(pb, active, tombstones_kept=True))
    later = NOW + RETENTION + 1
    code, text = run_cli(pdir, "--execute", "--now-ms", str(later), "--backup-dir", str(tmp_path / "bk"))
    assert code == 0, text
    recs, _, leo = decode_dir(pdir)
    assert sorted(recs) == sorted(oracle(pb, active, tombstones_kept=False))
    assert leo == leo_before
    verify_crc_clean(pdir)


def test_compact_verifies_with_rebuild_and_dump(tmp_path):
    pdir = str(tmp_path / "logs" / "t-0")
    random_partition(pdir, 11)
    code, text = run_cli(pdir, "--execute", "--now-ms", str(NOW), "--backup-dir", str(tmp_path / "bk"))
    assert code == 0, text
    from kafkalog_cli.ops.rebuild_index import rebuild_segment
    from kafkalog_cli.storage.segment import MappedFile

    for name in os.listdir(pdir):
        if name.endswith(".log"):
            with MappedFile(os.path.join(pdir, name)) as mf:
                rb = rebuild_segment(mf.buf, int(name[:20]))
            assert rb.problem is None
            with open(os.path.join(pdir, name[:-4] + ".index"), "rb") as f:
                assert f.read() == rb.index


def test_compact_include_active_keeps_log_end_offset(tmp_path):
    pdir = str(tmp_path / "logs" / "t-0")
    pb = random_partition(pdir, 5)
    code, text = run_cli(pdir, "--execute", "--include-active", "--now-ms", str(NOW), "--no-backup",
                         "--backup-dir", str(tmp_path / "bk"))
    assert code == 0, text
    recs, _, leo = decode_dir(pdir)
    assert leo == pb.next_offset  # the batch ending the round stays (errata E5)
    assert sorted(recs) == sorted(oracle(pb, pb.next_offset, tombstones_kept=True))


def test_compact_refuses_missing_txnindex_entry(tmp_path):
    pdir = str(tmp_path / "logs" / "t-0")
    pb = random_partition(pdir, 3, drop_txn_entries=1)
    mark_clean_shutdown(pdir)  # after a crash the start-up recovery would rebuild the .txnindex first (Kafka's too)
    assert pb.aborted, "the seed must produce an aborted transaction"
    before = {n: open(os.path.join(pdir, n), "rb").read() for n in os.listdir(pdir)}
    code, text = run_cli(pdir, "--execute", "--now-ms", str(NOW), "--backup-dir", str(tmp_path / "bk"))
    assert code == 2
    assert "do not record" in text and "Traceback" not in text
    after = {n: open(os.path.join(pdir, n), "rb").read() for n in os.listdir(pdir)}
    assert after == before


def test_compact_refuses_corrupt_batch(tmp_path):
    pdir = str(tmp_path / "logs" / "t-0")
    random_partition(pdir, 4)
    path = os.path.join(pdir, f"{0:020d}.log")
    with open(path, "r+b") as f:
        f.seek(70)
        b = f.read(1)
        f.seek(70)
        f.write(bytes([b[0] ^ 0xFF]))
    code, text = run_cli(pdir, "--now-ms", str(NOW))
    assert code == 2 and "CRC" in text


def test_compact_refuses_locked_log_dir(tmp_path):
    pdir = str(tmp_path / "logs" / "t-0")
    random_partition(pdir, 2)
    proc = refused_while_locked(str(tmp_path), pdir, ["compact", "--execute", "--now-ms", str(NOW), "--backup-dir",
                                                      str(tmp_path / "bk"), pdir])
    assert proc.returncode == 2, proc.stderr
    assert "locked" in proc.stderr and "Traceback" not in proc.stderr


def test_compact_crash_leaves_old_or_new(tmp_path):
    src = str(tmp_path / "src" / "logs" / "t-0")
    random_partition(src, 9)
    old = _hashes(src)
    ref = str(tmp_path / "ref" / "logs" / "t-0")
    shutil.copytree(src, ref)
    # compact's own commit (kill_after_delays copies the partition dir alone, so no clean-shutdown marker): the
    # crash input's recovery + compact, killed at every step, is tests/test_crash_steps.py's compact-after-crash
    code, text = run_cli(ref, "--execute", "--no-recover-first", "--now-ms", str(NOW), "--backup-dir",
                         str(tmp_path / "refbk"))
    assert code == 0, text
    new = _hashes(ref)
    assert new != old
    seen = kill_after_delays(str(tmp_path), src, new,
                             lambda work, bk: ["compact", "--execute", "--no-recover-first", "--now-ms", str(NOW),
                                               "--backup-dir", bk, work],
                             [0.05, 0.15, 0.25, 0.35, 0.45, 0.6, 0.8, 1.0])
    assert seen  # at least one kill landed; usually both outcomes are seen


def _overstated_lso_partition(p: str):
    """Aborted txn A in segment 0 (its entry's lastStableOffset overstated to segment 2's base), aborted txn B in
    segment 1 overwriting a committed key; segments 0 and 1 are cleaned as one group (review case cp.py)."""
    from partition_gen import PartitionBuilder

    pb = PartitionBuilder(p)
    pb.batch([(b"k", b"committed-old")])
    pb.batch([(b"a", b"A-aborted")], pid=1000, txn=True)
    pb.marker(1000, abort=True)
    pb.roll()
    pb.batch([(b"k", b"B-ABORTED-VALUE")], pid=1001, txn=True)
    pb.marker(1001, abort=True)
    pb.roll()
    pb.batch([(b"x", b"1")])
    pb.roll()
    pb.batch([(b"tail", b"active")])
    pb.write()
    s0 = f"{p}/{pb.bases[0]:020d}.txnindex"
    b = bytearray(open(s0, "rb").read())
    struct.pack_into(">q", b, 26, pb.bases[2])
    open(s0, "wb").write(b)
    sizes = [os.path.getsize(f"{p}/{x:020d}.log") for x in pb.bases]
    return pb, CompactOptions(segment_bytes=sizes[0] + sizes[1], now_ms=1_800_000_000_000)


def test_impossible_last_stable_offset_is_refused(tmp_path):
    """lastStableOffset > lastOffset + 1 ends the broker's search early and hides later aborted txns (E1)."""
    _pb, opts = _overstated_lso_partition(str(tmp_path / "logs" / "t-0"))
    with pytest.raises(RepairRefused, match="lastStableOffset"):
        plan_compaction(str(tmp_path / "logs" / "t-0"), opts)


def test_aborted_transactions_are_collected_per_source_segment(tmp_path, monkeypatch):
    """cleanSegments collects each source segment's aborted txns with its own bounds; a per-group search stopped at
    segment 0's overstated LSO and kept segment 1's aborted value as committed, giving its marker a horizon."""
    from kafkalog_cli.ops import compact

    p = str(tmp_path / "logs" / "t-0")
    pb, opts = _overstated_lso_partition(p)
    monkeypatch.setattr(compact, "_check_txn_indexes", lambda *a, **k: None)  # look past the guard at the rule
    plan = plan_compaction(p, opts)
    g = plan.groups[0]
    assert g.bases == [pb.bases[0], pb.bases[1]]
    assert sorted(t.producer_id for t in g.txn_entries) == [1000, 1001]
    assert sum(s.aborted_records_removed for s in plan.stats) == 2


def test_unknown_high_watermark_is_said_in_the_plan(tmp_path):
    """A missing, malformed or partition-less replication-offset-checkpoint once dropped the HW cap silently."""
    pdir = str(tmp_path / "logs" / "t-0")
    random_partition(pdir, 3)
    cp = tmp_path / "logs" / "replication-offset-checkpoint"
    opts = CompactOptions(now_ms=NOW)
    for content, why in ((None, "does not exist"), ("0\n1\nt 0\n", "malformed"), ("0\n1\nother 0 5\n", "no entry"),
                         (b"0\n1\nt 0 \xff\n", "not UTF-8"), ("0\n1\nt 0 x\n", "non-numeric")):
        if content is None:
            cp.unlink(missing_ok=True)
        else:
            cp.write_bytes(content if isinstance(content, bytes) else content.encode())
        plan = plan_compaction(pdir, opts)
        unknown = [n for n in plan.notes if "high watermark is unknown" in n]
        assert unknown and why in unknown[0], (why, plan.notes)
    cp.write_text("0\n1\nt 0 1\n")
    plan = plan_compaction(pdir, opts)
    assert plan.first_uncleanable_offset <= 1 and not [n for n in plan.notes if "unknown" in n]


def test_second_run_accepts_an_aborted_transaction_reduced_to_empty_batches(tmp_path) -> None:  # noqa: ANN001
    """Data and ABORT marker in different output groups: run 1 removes the data and keeps the producer's last batch
    empty (the round's shared tracker indexes the marker in its own group). Run 2 must accept that state, and also
    the state an older per-group tracker left (no entry): no record is left that could be taken for committed."""
    from click.testing import CliRunner

    from kafkalog_cli.cli.main import cli
    from kafkalog_cli.format import control as ctl
    from kafkalog_cli.format.encoder import RecordSpec, encode_batch
    from kafkalog_cli.storage.companions import AbortedTxn, encode_txn_index

    pdir = tmp_path / "kafka-logs" / "t-0"
    pdir.mkdir(parents=True)
    seg0 = encode_batch([RecordSpec(b"a", b"aborted", timestamp=1000)], base_offset=0, producer_id=201, producer_epoch=0,
                        base_sequence=0, transactional=True, partition_leader_epoch=0)
    seg0 += b"".join(encode_batch([RecordSpec(b"k%d" % i, b"v", timestamp=1000 + i)], base_offset=i, partition_leader_epoch=0)
                     for i in range(1, 10))
    seg10 = encode_batch([RecordSpec(ctl.encode_control_key(ctl.ABORT), ctl.encode_end_txn_marker(0), timestamp=2000)],
                         base_offset=10, producer_id=201, producer_epoch=0, transactional=True, control=True,
                         partition_leader_epoch=0)
    seg10 += b"".join(encode_batch([RecordSpec(b"k1", b"w", timestamp=2000 + i)], base_offset=i, partition_leader_epoch=0)
                      for i in range(11, 20))
    seg20 = encode_batch([RecordSpec(b"k2", b"x", timestamp=3000)], base_offset=20, partition_leader_epoch=0)
    (pdir / "00000000000000000000.log").write_bytes(seg0)
    (pdir / "00000000000000000010.log").write_bytes(seg10)
    (pdir / "00000000000000000010.txnindex").write_bytes(encode_txn_index([AbortedTxn(0, 201, 0, 10, 11)]))
    (pdir / "00000000000000000020.log").write_bytes(seg20)
    args = ["compact", "--now-ms", "1000000", "--segment-bytes", str(len(seg0) + 10), str(pdir)]
    r1 = CliRunner().invoke(cli, [*args, "--execute", "--backup-dir", str(tmp_path / "b1")], catch_exceptions=False)
    assert r1.exit_code == 0, r1.stdout + r1.stderr
    r2 = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert r2.exit_code in (0, 1), r2.stdout + r2.stderr
    assert "do not record" not in r2.stderr


def test_compact_passes_report_progress_in_bytes(tmp_path):
    """Issue 19: every pass reports the bytes it read through the progress callback, ending at its total; the engine
    prints nothing (the bar is the command's)."""
    from kafkalog_cli.ops.compact import Progress, run

    pdir = str(tmp_path / "logs" / "t-0")
    random_partition(pdir, 5)
    seg_bytes = sum(os.path.getsize(os.path.join(pdir, n)) for n in os.listdir(pdir) if n.endswith(".log"))
    for execute in (False, True):
        advanced: list[int] = []
        totals: list[int] = []
        progress = Progress(advanced.append, totals.append)
        plan, _, written = run(pdir, CompactOptions(now_ms=NOW), execute=execute, backup_dir=str(tmp_path / "bk"),
                               progress=progress)
        assert plan.has_changes and (written is not None) == execute
        assert totals == sorted(totals) and totals[-1] == progress.total  # the total only grows, pass by pass
        assert sum(advanced) == progress.done == progress.total
        # pass 1 reads every segment, the offset map and the filter the cleaned ones again, the execution once more
        cleaned = plan.totals()["bytes_before"]
        assert progress.total >= seg_bytes + (3 if execute else 2) * cleaned > seg_bytes


def test_compact_progress_bar_only_on_a_terminal(tmp_path):
    """The bar goes to stderr when it is a terminal (like dump's), never into a pipe."""
    from shipping_helpers import python_argv, run_in_pty

    pdir = str(tmp_path / "logs" / "t-0")
    random_partition(pdir, 5)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "TERM": "xterm-256color", "COLUMNS": "120"}
    argv = [*python_argv(), "compact", pdir, "--now-ms", str(NOW)]
    code, raw = run_in_pty(argv, env, cwd=tmp_path)
    assert code == 1 and b"compacting" in raw, raw[-500:]
    piped = subprocess.run(argv, capture_output=True, env=env, cwd=tmp_path, timeout=60, stdin=subprocess.DEVNULL)
    assert piped.returncode == 1
    assert b"compacting" not in piped.stderr + piped.stdout and b"\x1b" not in piped.stderr
