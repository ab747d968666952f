"""``kafkalog truncate-to-epoch``: endOffsetFor branches, the resulting log end offset and file consistency
(kafka-python decode, CRCs, indexes, .txnindex, checkpoint), lock refusal and kill -9 crash safety."""

from __future__ import annotations

import os
import shutil
import struct
import time

import pytest
from click.testing import CliRunner
from crash_driver import hashes as _hashes
from kafka.record.default_records import DefaultRecordBatch
from partition_gen import random_partition, verify_crc_clean
from repair_helpers import kill_after_delays, refused_while_locked

from kafkalog_cli.broker.leader_epoch_cache import end_offset_for, truncate_from_end
from kafkalog_cli.cli.truncate import truncate_to_epoch as truncate_cmd


def run_cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(truncate_cmd, list(args))
    return res.exit_code, res.output


def decode(pdir: str) -> tuple[list[tuple[int, bytes | None]], int]:
    recs, leo = [], 0
    for name in sorted(n for n in os.listdir(pdir) if n.endswith(".log")):
        data = open(os.path.join(pdir, name), "rb").read()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack_from(">i", data, pos + 8)
            b = DefaultRecordBatch(data[pos : pos + 12 + length])
            assert b.validate_crc()
            leo = max(leo, b.base_offset + b.last_offset_delta + 1)
            if not b.is_control_batch:
                recs.extend((r.offset, r.key) for r in b)
            pos += 12 + length
    return recs, leo


def checkpoint(pdir: str) -> list[tuple[int, int]]:
    lines = open(os.path.join(pdir, "leader-epoch-checkpoint")).read().split("\n")
    assert lines[0] == "0"
    return [tuple(map(int, ln.split())) for ln in lines[2 : 2 + int(lines[1])]]


def check_consistent(pdir: str, leo: int) -> None:
    """Every index entry and txn entry below the end, positions inside the file."""
    for name in os.listdir(pdir):
        stem, _, ext = name.partition(".")
        if ext == "index":
            size = os.path.getsize(os.path.join(pdir, stem + ".log"))
            data = open(os.path.join(pdir, name), "rb").read()
            for i in range(0, len(data), 8):
                rel, pos = struct.unpack_from(">ii", data, i)
                assert int(stem) + rel < leo and pos < size
        elif ext == "timeindex":
            data = open(os.path.join(pdir, name), "rb").read()
            for i in range(0, len(data), 12):
                _ts, rel = struct.unpack_from(">qi", data, i)
                assert int(stem) + rel < leo
        elif ext == "txnindex":
            data = open(os.path.join(pdir, name), "rb").read()
            for i in range(0, len(data), 34):
                assert struct.unpack_from(">hqqqq", data, i)[3] < leo


def test_end_offset_for_branches():
    cache = [(0, 0), (1, 66), (3, 72), (5, 105)]
    assert end_offset_for(cache, 5, 200) == (5, 200)  # latest epoch -> LEO
    assert end_offset_for(cache, 1, 200) == (1, 72)
    assert end_offset_for(cache, 2, 200) == (1, 72)  # unknown: floor epoch, next higher epoch's start
    assert end_offset_for(cache, 9, 200) == (-1, -1)
    assert end_offset_for(cache, -1, 200) == (-1, -1)
    assert end_offset_for([(4, 10), (6, 20)], 2, 30) == (2, 10)  # older than everything cached
    assert end_offset_for([], 0, 30) == (-1, -1)
    assert truncate_from_end(cache, 72) == [(0, 0), (1, 66)]
    assert truncate_from_end(cache, 300) == cache


@pytest.mark.parametrize("seed", [1, 3])
def test_truncate_each_epoch(tmp_path, seed):
    src = str(tmp_path / "src" / "logs" / "t-0")
    pb = random_partition(src, seed)
    assert len(pb.epochs) >= 3
    for i, (epoch, _start) in enumerate(pb.epochs[:-1]):
        pdir = str(tmp_path / f"e{i}" / "logs" / "t-0")
        shutil.copytree(src, pdir)
        expected_end = pb.epochs[i + 1][1]  # epochs start at batch boundaries in the model
        code, text = run_cli(pdir, str(epoch))
        assert code == 1 and "Dry run" in text, text  # the dry-run rule: 1 when --execute would change files
        code, text = run_cli(pdir, str(epoch), "--execute", "--backup-dir", str(tmp_path / "bk"))
        assert code == 0, text
        recs, leo = decode(pdir)
        assert leo == expected_end
        assert sorted(recs) == sorted((r.offset, r.key) for r in pb.records if r.offset < expected_end and not r.control)
        assert all(s < leo for _e, s in checkpoint(pdir))
        assert checkpoint(pdir) == [(e, s) for e, s in pb.epochs if s < expected_end]
        check_consistent(pdir, leo)
        verify_crc_clean(pdir)
        from kafkalog_cli.ops.rebuild_index import rebuild_segment

        for name in os.listdir(pdir):
            if name.endswith(".log"):
                assert rebuild_segment(open(os.path.join(pdir, name), "rb").read(), int(name[:20])).problem is None


def test_truncate_inside_batch_and_unknown_epoch(tmp_path):
    pdir = str(tmp_path / "logs" / "t-0")
    pb = random_partition(pdir, 1)
    base, last = next((b, la) for b, la in pb.batch_ranges if la - b >= 2)
    code, text = run_cli(pdir, "--to-offset", str(base + 1))
    assert code == 1 and "inside the batch" in text  # a dry run that would change files
    # unknown epoch between two cached ones ends where the next higher starts
    known = [e for e, _ in pb.epochs]
    gap = next(e for e in range(known[-1]) if e not in known and e > known[0])
    higher = next(s for e, s in pb.epochs if e > gap)
    code, text = run_cli(pdir, str(gap), "--execute", "--backup-dir", str(tmp_path / "bk"))
    assert code == 0, text
    assert decode(pdir)[1] == higher
    code, text = run_cli(pdir, str(known[-1] + 10))
    assert code == 2 and "no end offset" in text
    code, text = run_cli(str(tmp_path / "logs" / "t-0"), "--to-offset", str(base + 1), "--execute", "--backup-dir",
                         str(tmp_path / "bk2"))
    assert code == 0
    assert decode(pdir)[1] == min(base, higher)


def test_clean_shutdown_marker_kept_once_the_snapshot_at_the_cut_is_written(tmp_path):
    """The marker used to be removed (no snapshot <= the cut would remain and the broker would skip the producer
    state rebuild); with the snapshot the broker's truncation writes at the cut, it loads that one instead."""
    pdir = str(tmp_path / "logs" / "t-0")
    pb = random_partition(pdir, 1)
    marker = tmp_path / "logs" / ".kafka_cleanshutdown"
    marker.write_text('{"version":0,"brokerEpoch":3}')
    code, text = run_cli(pdir, str(pb.epochs[1][0]), "--execute", "--backup-dir", str(tmp_path / "bk"))
    assert code == 0, text
    assert marker.exists()
    leo = decode(pdir)[1]
    assert os.path.exists(os.path.join(pdir, f"{leo:020d}.snapshot"))
    assert not [f for _r, _d, fs in os.walk(tmp_path / "bk") for f in fs if f == ".kafka_cleanshutdown"]


def _unreplayable(pdir: str) -> int:
    """A partition whose kept log the broker cannot replay (InvalidTxnStateException): no snapshot can be written,
    so the marker-removal fallback applies. Returns the --to-offset to use."""
    from partition_gen import PartitionBuilder

    pb = PartitionBuilder(pdir)
    pb.batch([(b"a", b"1")], pid=5, txn=True)
    pb.batch([(b"b", b"2")], pid=5, txn=False)
    for i in range(6):
        pb.batch([(b"c", str(i).encode())], pid=6, leader_epoch=1)
    pb.write()
    return 5


def test_clean_shutdown_marker_removed_into_backup(tmp_path):
    pdir = str(tmp_path / "logs" / "t-0")
    off = _unreplayable(pdir)
    marker = tmp_path / "logs" / ".kafka_cleanshutdown"
    marker.write_text('{"version":0,"brokerEpoch":3}')
    code, text = run_cli(pdir, "--to-offset", str(off), "--execute", "--backup-dir", str(tmp_path / "bk"))
    assert code == 0, text
    assert not marker.exists()
    found = [os.path.join(r, f) for r, _, fs in os.walk(tmp_path / "bk") for f in fs if f == ".kafka_cleanshutdown"]
    assert found and open(found[0]).read().startswith('{"version"')


def test_truncate_refuses_locked_log_dir(tmp_path):
    pdir = str(tmp_path / "logs" / "t-0")
    random_partition(pdir, 2)
    proc = refused_while_locked(str(tmp_path), pdir, ["truncate-to-epoch", "--execute", "--to-offset", "10",
                                                      "--backup-dir", str(tmp_path / "bk"), pdir])
    assert proc.returncode == 2 and "locked" in proc.stderr and "Traceback" not in proc.stderr


def _watch_for_unparsable_names(pdir: str, seconds: float) -> None:
    """Poll ``pdir`` for ``seconds``: a ``*.cleaned``/``*.swap`` file whose name does not start with a number would
    make Kafka's loader throw NumberFormatException (LogFileUtils.offsetFromFile) and the broker fail to start."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            names = os.listdir(pdir)
        except FileNotFoundError:
            names = []
        bad = [n for n in names if n.endswith((".cleaned", ".swap")) and not n.split(".", 1)[0].isdigit()]
        assert not bad, f"the broker could not start with {bad} in the partition directory"
        time.sleep(0.002)


def test_truncate_crash_leaves_old_or_new(tmp_path):
    src = str(tmp_path / "src" / "logs" / "t-0")
    random_partition(src, 6)
    ref = str(tmp_path / "ref" / "logs" / "t-0")
    shutil.copytree(src, ref)
    # the truncation's own commit (kill_after_delays copies the partition dir alone, no clean-shutdown marker: the
    # default would recover first, another commit); the combined path: test_crash_steps' truncate-after-crash
    assert run_cli(ref, "--to-offset", "50", "--execute", "--no-recover-first", "--backup-dir",
                   str(tmp_path / "refbk"))[0] == 0
    seen = kill_after_delays(str(tmp_path), src, _hashes(ref),
                             lambda work, bk: ["truncate-to-epoch", "--execute", "--no-recover-first", "--to-offset",
                                               "50", "--backup-dir", bk, work],
                             [0.05, 0.15, 0.3, 0.45, 0.6, 0.8, 1.1], wait=_watch_for_unparsable_names)
    assert seen


def test_clean_shutdown_marker_survives_no_backup_and_failed_commit(tmp_path, monkeypatch):
    """The marker is removed inside the transaction: its backup outlives --no-backup, and a commit that fails puts
    it back (it was once removed before the commit and never restored)."""
    from kafkalog_cli.errors import WriteFailedError
    from kafkalog_cli.ops import safety, truncate

    pdir = str(tmp_path / "logs" / "t-0")
    off = _unreplayable(pdir)
    marker = tmp_path / "logs" / ".kafka_cleanshutdown"
    marker.write_text('{"version":0,"brokerEpoch":3}')
    old = _hashes(pdir)
    monkeypatch.setenv(safety.BACKUP_ENV, str(tmp_path / "journals"))

    def fail_once_marker_gone() -> None:
        if not marker.exists():
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(safety.files, "count_step", fail_once_marker_gone)
    with pytest.raises(WriteFailedError):
        truncate.run(pdir, None, off, execute=True, backup_dir=str(tmp_path / "bk1"))
    assert marker.read_text().startswith('{"version"')
    assert _hashes(pdir) == old
    assert safety.recover_interrupted(pdir) == []
    monkeypatch.setattr(safety.files, "count_step", lambda: None)
    code, text = run_cli(pdir, "--to-offset", str(off), "--execute", "--no-backup", "--backup-dir", str(tmp_path / "bk"))
    assert code == 0, text
    assert not marker.exists()
    found = [os.path.join(r, f) for r, _, fs in os.walk(tmp_path / "bk") for f in fs]
    assert [os.path.basename(f) for f in found] == [".kafka_cleanshutdown"]
    assert open(found[0]).read().startswith('{"version"')


def test_cut_at_first_batch_in_file_order_with_non_monotonic_offsets(tmp_path):
    """Kafka cuts at the start position of the first batch, in file order, whose lastOffset >= T. The cut was once
    placed after the last batch with lastOffset < T, which kept a batch above T when offsets went backwards."""
    from kafkalog_cli.format.encoder import RecordSpec, encode_batch
    from kafkalog_cli.ops import truncate

    pdir = tmp_path / "logs" / "t-0"
    pdir.mkdir(parents=True)
    batches = [encode_batch([RecordSpec(key=b"k", value=b"v%d" % i, timestamp=1000 + i) for i in range(5)],
                            base_offset=base) for base in (0, 10, 5)]
    (pdir / "00000000000000000000.log").write_bytes(b"".join(batches))
    plan = truncate.plan_truncation(str(pdir), to_offset=8)
    assert plan.cut_position == len(batches[0]) and plan.new_log_end_offset == 5
    assert [(r.first_offset, r.last_offset, r.batches, r.records) for r in plan.lost] == [(5, 14, 2, 10)]
    assert any("not monotonic" in n for n in plan.notes)
    truncate.run(str(pdir), None, 8, execute=True, backup_dir=str(tmp_path / "bk"))
    assert (pdir / "00000000000000000000.log").read_bytes() == batches[0]
