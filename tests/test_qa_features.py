"""QA regressions for recover / salvage / compare-replicas / transactions / explain-*: black-box scenarios
written with the encoder, expected outcomes derived by hand from Kafka's rules (cited per test)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format.encoder import RecordSpec, encode_batch

TS = 1_700_000_000_000


def batch(base: int, n: int = 3, *, epoch: int = 0, ts: int = TS, key: bytes | None = None) -> bytes:
    recs = [RecordSpec(key=key or b"k%d" % (base + i), value=b"v", timestamp=ts + i) for i in range(n)]
    return encode_batch(recs, base_offset=base, partition_leader_epoch=epoch)


def corrupt(b: bytes) -> bytes:
    out = bytearray(b)
    out[-1] ^= 0xFF
    return bytes(out)


def partition(logdir: Path, segments: list[tuple[int, list[bytes]]], *, topic: str = "t", p: int = 0,
              rp: int | None = None, clean: bool = False) -> Path:
    pdir = logdir / f"{topic}-{p}"
    pdir.mkdir(parents=True, exist_ok=True)
    for base, batches in segments:
        (pdir / f"{base:020d}.log").write_bytes(b"".join(batches))
        (pdir / f"{base:020d}.index").write_bytes(b"")
        (pdir / f"{base:020d}.timeindex").write_bytes(b"")
    if rp is not None:
        (logdir / "recovery-point-offset-checkpoint").write_text(f"0\n1\n{topic} {p} {rp}\n")
    if clean:
        (logdir / ".kafka_cleanshutdown").write_text("")
    return pdir


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.stdout


# ------------------------------------------------------------------------------------------------ recover
def test_recover_clean_shutdown_log_end_is_the_readers_view_not_the_crc_checked_prefix(tmp_path):
    """With .kafka_cleanshutdown nothing is recovered, and the log end offset comes from LogSegment.readNextOffset
    (LogSegment.java 605-613), which walks batch headers through FileLogInputStream.nextBatch without any CRC check
    (FileLogInputStream.java 62-93): a CRC-bad batch in the middle still counts, so LEO is 9, not 3."""
    pdir = partition(tmp_path, [(0, [batch(0), corrupt(batch(3)), batch(6)])], rp=0, clean=True)
    code, out = run("recover", str(pdir), "--format", "json")
    plan = json.loads(out)
    plan = plan[0] if isinstance(plan, list) else plan
    text = json.dumps(plan)
    assert '"log_end_offset": 9' in text
    assert "00000000000000000003.snapshot" not in text


# ------------------------------------------------------------------------------------------------ explain-cleaner
def txn_batch(base: int, pid: int, *, key: bytes = b"a") -> bytes:
    recs = [RecordSpec(key=key, value=b"v", timestamp=TS + i) for i in range(3)]
    return encode_batch(recs, base_offset=base, producer_id=pid, producer_epoch=0, base_sequence=0,
                        transactional=True)


def test_explain_cleaner_names_the_high_watermark_when_it_bounds_the_lso_below_an_open_transaction(tmp_path):
    """UnifiedLog.lastStableOffset = min(firstUnstableOffset, highWatermark): with the high watermark at 4 and a
    transaction open at 9, the bound is the high watermark (LogCleanerManager.cleanableOffsets uses the LSO), and
    the first uncleanable offset 4 rounds down to the segment base 0 (calculateCleanableBytes)."""
    pdir = partition(tmp_path, [(0, [batch(0, key=b"a"), batch(3, key=b"a")]),
                                (6, [batch(6, key=b"a"), txn_batch(9, 5)]), (12, [batch(12, key=b"a")])])
    (tmp_path / "replication-offset-checkpoint").write_text("0\n1\nt 0 4\n")
    code, out = run("explain-cleaner", str(pdir), "--format", "json")
    assert code == 0
    p = json.loads(out)["partitions"][0]
    assert (p["last_stable_offset"], p["first_uncleanable_offset_unrounded"], p["first_uncleanable_offset"]) == (4, 4, 0)
    assert "high watermark" in p["uncleanable_reason"] and "open transaction" not in p["uncleanable_reason"]
    # without the high watermark bound, the open transaction is the reason
    (tmp_path / "replication-offset-checkpoint").write_text("0\n1\nt 0 15\n")
    p = json.loads(run("explain-cleaner", str(pdir), "--format", "json")[1])["partitions"][0]
    assert (p["first_uncleanable_offset_unrounded"], p["first_uncleanable_offset"]) == (9, 6)
    assert "open transaction" in p["uncleanable_reason"]


# ------------------------------------------------------------------------------------------------ salvage
def test_salvage_of_a_log_dir_is_not_stopped_by_a_partition_without_segments(tmp_path):
    """A log dir holding a partition directory without any .log (the broker would create an empty segment at
    load) must still salvage its other partitions; only that partition is reported as having nothing to do."""
    (tmp_path / "empty-0").mkdir()
    (tmp_path / "empty-0" / "leader-epoch-checkpoint").write_text("0\n0\n")
    bad = partition(tmp_path, [(0, [batch(0), corrupt(batch(3)), batch(6)])], rp=0)
    code, out = run("salvage", str(tmp_path), "--format", "json")
    assert code == 1, out
    plans = {os.path.basename(p["partition_dir"]): p for p in json.loads(out)}
    assert plans["empty-0"]["has_changes"] is False
    assert plans[bad.name]["kept_batches"] == 2 and plans[bad.name]["salvage_lost_offsets"] == [[3, 5]]
    # named on its own, a partition without segments is still refused like every repair command refuses it
    assert run("salvage", str(tmp_path / "empty-0"))[0] == 2


def _snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_salvage_execute_of_a_log_dir_writes_nothing_when_a_later_partition_is_refused(tmp_path):
    """'Refuse (exit 2, nothing written)': a-0 (salvageable) sorts before b-0 (an open transaction whose marker is
    in the cut bytes, its header readable: refused); a-0 must not be rewritten before b-0's refusal."""
    from kafkalog_cli.format.control import COMMIT, encode_control_key, encode_end_txn_marker

    commit = encode_batch([RecordSpec(key=encode_control_key(COMMIT), value=encode_end_txn_marker(0), timestamp=TS)],
                          base_offset=6, producer_id=7, producer_epoch=0, transactional=True, control=True)
    logdir = tmp_path / "logs"
    partition(logdir, [(0, [batch(0), corrupt(batch(3)), batch(6)])], topic="a", rp=0)
    partition(logdir, [(0, [batch(0), txn_batch(3, 7), corrupt(commit), batch(7)])], topic="b")
    before = _snapshot(logdir)
    code, out = run("salvage", str(logdir), "--execute", "--backup-dir", str(tmp_path / "bk"))
    assert code == 2
    assert _snapshot(logdir) == before


def test_recover_execute_of_a_log_dir_writes_nothing_when_a_later_partition_is_fatal(tmp_path):
    """A stray 'backup.log' makes the broker fail to start (errata E15, LogLoader.java 356-373): recover refuses
    it, and must do so before truncating the earlier partition a-0 of the same log dir."""
    logdir = tmp_path / "logs"
    partition(logdir, [(0, [batch(0), corrupt(batch(3)), batch(6)])], topic="a", rp=0)
    pb = partition(logdir, [(0, [batch(0)])], topic="b")
    (pb / "backup.log").write_bytes(b"")
    (logdir / "recovery-point-offset-checkpoint").write_text("0\n2\na 0 0\nb 0 0\n")
    before = _snapshot(logdir)
    code, out = run("recover", str(logdir), "--execute", "--backup-dir", str(tmp_path / "bk"))
    assert code == 2
    assert _snapshot(logdir) == before


# ------------------------------------------------------------------------------------------------ compare-replicas
def one(base: int, epoch: int, **kw: int) -> bytes:
    return encode_batch([RecordSpec(key=b"k%d" % base, value=b"v", timestamp=TS)], base_offset=base,
                        partition_leader_epoch=epoch, **kw)


def replica(root: Path, broker: int, batches: list[bytes], epochs: list[tuple[int, int]]) -> Path:
    pdir = partition(root / f"b{broker}", [(0, batches)])
    (pdir / "leader-epoch-checkpoint").write_text(f"0\n{len(epochs)}\n" + "".join(f"{e} {o}\n" for e, o in epochs))
    return pdir


def test_compare_replicas_named_leader_with_an_older_epoch_still_truncates_the_diverged_follower(tmp_path):
    """KAFKA-10751 shape: broker 1 led epoch 1 and wrote 0..9; broker 2 (had 0..4) was elected uncleanly at epoch 2
    and wrote 5..7. Broker 1 is named leader again (--leader 1): becoming leader it assigns a newer epoch at its log
    end (Partition.makeLeader -> maybeAssignEpochStartOffset, spec §10.1), so broker 2's fetch at epoch 2 gets the
    diverging epoch (1, 10) (Partition.scala 1533-1565) and it truncates to its own end of epoch 1: offset 5,
    losing 5..7 (3 records of producer 42). Without the new epoch the leader's cache answers UNDEFINED and broker 2
    would wrongly keep its divergent records."""
    b1 = replica(tmp_path, 1, [one(i, 1) for i in range(10)], [(1, 0)])
    b2 = replica(tmp_path, 2, [one(i, 1) for i in range(5)]
                 + [one(i, 2, producer_id=42, producer_epoch=0, base_sequence=i - 5) for i in range(5, 8)],
                 [(1, 0), (2, 5)])
    code, out = run("compare-replicas", "--names", "1,2", "--leader", "1", "--format", "json", str(b1), str(b2))
    assert code == 1
    d = json.loads(out)
    assert d["first_divergent_offset"] == 5
    reps = {r["broker_id"]: r for r in d["replicas"]}
    assert reps[2]["truncation_offset"] == 5
    assert reps[2]["lost_records"]["count"] == 3 and reps[2]["lost_records"]["producer_ids"] == [42]
    assert reps[1]["truncation_offset"] == 10 and reps[1]["lost_records"]["count"] == 0
