"""``truncate-to-epoch`` writes the producer snapshot at the cut, as the broker's ``UnifiedLog.truncateTo`` does
(rebuildProducerState after LocalLog.truncateTo; ProducerStateManager.truncateAndReload + takeSnapshot).

The expected snapshot is computed independently here: a fresh ``producer_state`` replay of the files left on disk
after the truncation, encoded by the snapshot writer that is byte-equal to real broker snapshots.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from partition_gen import PartitionBuilder, random_partition

from kafkalog_cli.broker import producer_state_manager as pst
from kafkalog_cli.cli.main import cli
from kafkalog_cli.format.batch import Batch
from kafkalog_cli.ops import truncate
from kafkalog_cli.storage.companions import parse_producer_snapshot
from kafkalog_cli.storage.segment import MappedFile, entries

NOW = "1700000001000"  # partition_gen's timestamps are 1700000000000 + n: no producer has expired at this clock


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.output


def replay_on_disk(pdir: str, upto: int | None = None) -> pst.ProducerState:
    """Producer state from the segments on disk, batches with last offset < ``upto`` (all when None)."""
    st = pst.ProducerState(0)
    for name in sorted(n for n in os.listdir(pdir) if n.endswith(".log")):
        path = os.path.join(pdir, name)
        with MappedFile(path) as mf:
            infos = [pst.batch_info(e, mf.buf) for e in entries(mf.buf, file=path) if isinstance(e, Batch)]
        st.replay(b for b in infos if upto is None or b.last_offset < upto)
    return st


def snapshots(pdir: str) -> dict[int, bytes]:
    return {int(n.split(".")[0]): open(os.path.join(pdir, n), "rb").read()
            for n in os.listdir(pdir) if n.endswith(".snapshot")}


def make(tmp_path: Path, seed: int, *, marker: bool, broker_snapshots: bool) -> tuple[str, object]:
    logdir = tmp_path / "logs"
    pdir = str(logdir / "t-0")
    pb = random_partition(pdir, seed)
    (logdir / "meta.properties").write_text("version=1\ncluster.id=x\nnode.id=1\n")
    if broker_snapshots:
        # the snapshots a broker leaves (one per segment end), written by the loader model's unclean-start pass
        code, out = run("recover", "--execute", "--backup-dir", str(tmp_path / "bk0"), "--now-ms", NOW, pdir)
        assert code == 0, out
        assert snapshots(pdir)
    if marker:
        (logdir / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":3}')
    return pdir, pb


@pytest.mark.parametrize("seed,offset", [(3, 70), (5, 40), (7, 100)])
@pytest.mark.parametrize("marker", [True, False])
def test_snapshot_at_cut_equals_replay_and_recover_changes_nothing(tmp_path, seed, offset, marker):
    pdir, _pb = make(tmp_path, seed, marker=marker, broker_snapshots=True)
    before = snapshots(pdir)
    plan = truncate.plan_truncation(pdir, to_offset=offset)
    leo = plan.new_log_end_offset
    assert leo <= offset and not plan.remove_clean_shutdown
    # Kafka 4.0's truncateTo writes the snapshot at the target itself, also inside a batch (issue 26, checked
    # against kafka-real Truncate in tests/test_oracle_truncate.py)
    if offset in before:  # a segment base the broker snapshotted at its roll: takeSnapshot writes none there
        assert offset not in {w.offset for w in plan.snapshot_writes}
    else:
        assert plan.snapshot_writes[-1].offset == offset
    code, out = run("truncate-to-epoch", "--to-offset", str(offset), "--execute", "--no-backup", "--now-ms", NOW, pdir)
    assert code == 0, out
    assert (f"write   {offset:020d}.snapshot" in out) == (offset not in before)
    assert os.path.exists(tmp_path / "logs" / ".kafka_cleanshutdown") == marker  # kept: the snapshot is there
    after = snapshots(pdir)
    # the broker's truncateAndReload: nothing above the target survives, everything at or below it is kept as is
    assert max(after) == offset
    written = {w.offset for w in plan.snapshot_writes}
    assert ({o: d for o, d in before.items() if 0 < o <= offset and o != offset}
            == {o: d for o, d in after.items() if o != offset and o not in written})
    state = replay_on_disk(pdir)
    assert after[offset] == state.snapshot_bytes(java_map=True)
    assert parse_producer_snapshot(after[offset]).entries == state.snapshot_entries()
    for w in plan.snapshot_writes:  # snapshots taken at segment bases passed by the replay hold the state there
        if w.offset != offset:
            assert after[w.offset] == replay_on_disk(pdir, w.offset).snapshot_bytes()
    code, out = run("recover", "--format", "json", "--now-ms", NOW, pdir)
    doc = json.loads(out)
    [p] = doc if isinstance(doc, list) else [doc]
    if offset == leo:
        # the broker's next start finds producer state consistent and has no snapshot to write or delete; without
        # the marker every segment is recovered: the cut segment's rebuilt time index must match too
        assert p["snapshots_written"] == [] and p["snapshots_deleted"] == [], out
        assert code == 0 and p["changes"] == [], out
    else:
        # the target lay inside a batch: the log on disk ends at the batch's base, and the next start deletes the
        # snapshot above it, as it does after Kafka's own truncation
        assert offset in p["snapshots_deleted"], out


def test_dump_of_the_written_snapshot_names_the_producers(tmp_path):
    pdir, _pb = make(tmp_path, 3, marker=False, broker_snapshots=False)
    code, out = run("truncate-to-epoch", "--to-offset", "70", "--execute", "--no-backup", "--now-ms", NOW, pdir)
    assert code == 0, out
    snap = os.path.join(pdir, f"{70:020d}.snapshot")  # at the target, as Kafka 4.0 writes it
    code, out = run("dump", snap)
    assert code == 0, out
    state = replay_on_disk(pdir)
    lines = [ln for ln in out.splitlines() if ln.startswith("producerId:")]
    assert [int(ln.split()[1]) for ln in lines] == [e.producer_id for e in state.snapshot_entries()]
    # the transactions the cut leaves open are in the snapshot (currentTxnFirstOffset), as the broker keeps them
    open_txns = {e.producer_id: e.current_txn_first_offset for e in state.snapshot_entries()
                 if e.current_txn_first_offset >= 0}
    assert open_txns
    for pid, first in open_txns.items():
        assert any(ln.split()[1] == str(pid) and f"currentTxnFirstOffset: OptionalLong[{first}]" in ln for ln in lines)


def test_stale_snapshots_deleted_and_existing_one_at_the_cut_kept(tmp_path):
    """truncateAndReload deletes snapshots above the end and at/below the log start; takeSnapshot writes none where
    one exists (the existing file is what the broker loads)."""
    pdir, _pb = make(tmp_path, 3, marker=True, broker_snapshots=True)
    leo = 70  # the target: where the broker's truncateTo takes its snapshot
    # a snapshot at the log start (0) and one at the cut already present
    at_start = os.path.join(pdir, f"{0:020d}.snapshot")
    at_cut = os.path.join(pdir, f"{leo:020d}.snapshot")
    existing = replay_on_disk(pdir, leo).snapshot_bytes()
    open(at_start, "wb").write(existing)
    open(at_cut, "wb").write(existing)
    plan = truncate.plan_truncation(pdir, to_offset=70)
    assert f"{0:020d}.snapshot" in plan.snapshot_deletes
    assert all(int(n.split(".")[0]) > leo for n in plan.snapshot_deletes if n != f"{0:020d}.snapshot")
    assert leo not in {w.offset for w in plan.snapshot_writes}
    assert any("exists already" in n for n in plan.notes)
    code, out = run("truncate-to-epoch", "--to-offset", "70", "--execute", "--no-backup", pdir)
    assert code == 0, out
    assert not os.path.exists(at_start) and open(at_cut, "rb").read() == existing


def test_no_replay_possible_falls_back_to_removing_the_clean_shutdown_marker(tmp_path):
    """A kept log the broker cannot replay (InvalidTxnStateException) gets no snapshot; with the marker present the
    marker goes, so the broker does not skip producer-state rebuilding (spec §7.2)."""
    logdir = tmp_path / "logs"
    pdir = str(logdir / "t-0")
    pb = PartitionBuilder(pdir)
    pb.batch([(b"a", b"1")], pid=5, txn=True)
    pb.batch([(b"b", b"2")], pid=5, txn=False)
    for i in range(6):
        pb.batch([(b"c", str(i).encode())], pid=6)
    pb.write()
    (logdir / ".kafka_cleanshutdown").write_text("{}")
    plan = truncate.plan_truncation(pdir, to_offset=5)
    assert plan.snapshot_writes == [] and plan.remove_clean_shutdown
    assert any("InvalidTxnStateException" in n for n in plan.notes)
    code, out = run("truncate-to-epoch", "--to-offset", "5", "--execute", "--no-backup", pdir)
    assert code == 0, out
    assert not (logdir / ".kafka_cleanshutdown").exists()
    assert not snapshots(pdir)


def test_no_snapshot_when_nothing_is_cut(tmp_path):
    """truncateTo past the log end only truncates the epoch cache: producer state and snapshots are untouched."""
    pdir, pb = make(tmp_path, 3, marker=False, broker_snapshots=False)
    plan = truncate.plan_truncation(pdir, to_offset=pb.next_offset + 5)
    assert plan.snapshot_writes == [] and plan.snapshot_deletes == []
