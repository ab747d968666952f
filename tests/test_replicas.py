"""``kafkalog compare-replicas``: generated replica sets (clean, lagging, unclean leader election as in KAFKA-10751,
diverged epochs needing several truncation rounds, differently compacted, cleaning divergence, missing range, a
corrupt batch), checked for the first divergent offset, the truncation points and the lost-record counts.

Replicas are written with the engine's encoder through ``partition_gen.PartitionBuilder``: two builders fed the
same steps write the same bytes, so a shared history is byte-identical and a divergence is exactly where the steps
part. The oracle is the scenario itself (offsets and counts chosen by hand, Kafka's rules worked out in comments).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable

import pytest
from click.testing import CliRunner
from partition_gen import PartitionBuilder, random_partition

from kafkalog_cli.cli.main import cli
from kafkalog_cli.ops import replicas as rp
from kafkalog_cli.ops import truncate as tr
from kafkalog_cli.ops.compact import CompactOptions
from kafkalog_cli.ops.compact import run as compact_run
from kafkalog_cli.storage.meta_properties import broker_id_of, parse_properties

Step = Callable[[PartitionBuilder], None]


def rec(key: str | None, value: str | None, *, epoch: int = 0, pid: int = -1, txn: bool = False) -> Step:
    """One single-record batch."""
    def step(pb: PartitionBuilder) -> None:
        pb.batch([(key.encode() if key is not None else None, value.encode() if value is not None else None)],
                 pid=pid, txn=txn, leader_epoch=epoch)
    return step


def skip(n: int = 1, *, markers: int = 0) -> Step:
    """Offsets this replica does not hold (as a cleaner or a hole leaves them); timestamps advance as if the ``n``
    records were written (a marker, of which ``markers`` are among them, takes no new timestamp)."""
    def step(pb: PartitionBuilder) -> None:
        pb.next_offset += n
        pb.ts += n - markers
    return step


def marker(pid: int, *, abort: bool = False, epoch: int = 0) -> Step:
    def step(pb: PartitionBuilder) -> None:
        pb.marker(pid, abort=abort, leader_epoch=epoch)
    return step


def roll() -> Step:
    return lambda pb: pb.roll()


def replica(root: str, broker: int, steps: list[Step], *, epochs: list[tuple[int, int]] | None = None,
            part: str = "orders-0") -> str:
    logdir = os.path.join(root, f"broker{broker}")
    pdir = os.path.join(logdir, part)
    pb = PartitionBuilder(pdir)
    for s in steps:
        s(pb)
    if epochs is not None:
        pb.epochs = list(epochs)
    pb.write()
    with open(os.path.join(logdir, "meta.properties"), "w") as f:
        f.write(f"#\n#Mon Nov 23 21:00:00 UTC 2026\nversion=0\nbroker.id={broker}\ncluster.id=abc\n")
    return pdir


def values(n: int, start: int = 0, *, epoch: int = 0, tag: str = "v", pid: int = -1) -> list[Step]:
    return [rec(f"k{i}", f"{tag}{i}", epoch=epoch, pid=pid) for i in range(start, start + n)]


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, ["compare-replicas", *args])
    return res.exit_code, res.output


def run_json(*dirs: str, extra: tuple[str, ...] = ()) -> tuple[int, dict]:
    code, out = run("--format", "json", *extra, *dirs)
    assert code in (0, 1), out
    return code, json.loads(out)


def by_broker(doc: dict) -> dict[int, dict]:
    return {r["broker_id"]: r for r in doc["replicas"]}


# ------------------------------------------------------------------------------------------ agreement
def test_identical_replicas_agree(tmp_path):
    steps = values(8) + [roll()] + values(6, 8, epoch=1) + values(6, 14, epoch=3)
    dirs = [replica(str(tmp_path), b, steps) for b in (1, 2, 3)]
    code, out = run(*dirs)
    assert code == 0, out
    assert "replicas agree up to offset 20; all replicas end at the same offset" in out
    code, doc = run_json(*dirs)
    assert code == 0
    assert doc["first_divergent_offset"] is None and doc["divergence_kind"] is None
    for r in doc["replicas"]:
        assert r["log_end_offset"] == 20 and r["truncation_offset"] == 20 and r["lost_records"]["count"] == 0
    assert sorted(by_broker(doc)) == [1, 2, 3]


def test_lagging_follower_is_not_divergence(tmp_path):
    full = values(10) + values(10, 10, epoch=2)
    leader = replica(str(tmp_path), 1, full)
    behind = replica(str(tmp_path), 2, values(7))  # missed the leader change to epoch 2 as well
    code, out = run(leader, behind)
    assert code == 0, out
    assert "replicas agree up to offset 7; 1 is ahead" in out
    code, doc = run_json(leader, behind)
    assert doc["agree"] and doc["ahead"] == "1" and doc["leader"] == "1"
    f = by_broker(doc)[2]
    assert f["truncation_offset"] == 7 and f["lost_records"]["count"] == 0
    # the leader validates the fetch (epoch 0 ends at 10 >= 7): no truncation step
    assert f["truncation_steps"][-1]["truncate_to"] is None


# ------------------------------------------------------------------------------------------ unclean election
def kafka_10751(root: str, *, new_leader_writes: bool) -> tuple[str, str, str]:
    """KAFKA-10751's example: A (leader) has offsets 0..9, B 0..4, C 0..1; C is elected uncleanly (epoch 1).
    A must truncate 8 records and B 3."""
    a = replica(root, 1, values(10, pid=7))
    b = replica(root, 2, values(5, pid=7))
    if new_leader_writes:
        c = replica(root, 3, values(2, pid=7) + values(3, 2, epoch=1, tag="new", pid=9))
    else:
        c = replica(root, 3, values(2, pid=7), epochs=[(0, 0), (1, 2)])  # epoch assigned on election, no write
    return a, b, c


@pytest.mark.parametrize("writes", [True, False])
def test_unclean_election_kafka_10751(tmp_path, writes):
    a, b, c = kafka_10751(str(tmp_path), new_leader_writes=writes)
    code, doc = run_json(a, b, c)
    assert code == 1
    assert doc["leader"] == "3"
    assert doc["first_divergent_offset"] == 2
    assert doc["divergence_kind"] == ("different-epoch" if writes else "missing-range")
    reps = by_broker(doc)
    assert reps[1]["truncation_offset"] == 2 and reps[1]["lost_records"]["count"] == 8
    assert reps[2]["truncation_offset"] == 2 and reps[2]["lost_records"]["count"] == 3
    assert reps[3]["truncation_offset"] == reps[3]["log_end_offset"] and reps[3]["lost_records"]["count"] == 0
    lost_a = reps[1]["lost_records"]
    assert lost_a["offsets"] == [[2, 9]] and lost_a["producer_ids"] == [7]
    p = lost_a["producers"][0]
    assert (p["first_sequence"], p["last_sequence"], p["records"]) == (2, 9, 8)
    assert lost_a["first_timestamp"] < lost_a["last_timestamp"]


def test_truncation_matches_truncate_to_epoch_plan(tmp_path):
    """The lost-record count is the one truncate-to-epoch's own plan gives for the same target (batch aligned)."""
    a, b, c = kafka_10751(str(tmp_path), new_leader_writes=True)
    _code, doc = run_json(a, b, c)
    for broker, pdir in ((1, a), (2, b)):
        r = by_broker(doc)[broker]
        plan = tr.plan_truncation(pdir, to_offset=r["truncation_offset"])
        assert sum(x.records for x in plan.lost) == r["lost_records"]["count"]
        assert plan.new_log_end_offset == r["truncation_offset"]


def test_diverged_epochs_need_several_rounds(tmp_path):
    """KIP-279: A holds epochs 0@0 1@5 3@8 (LEO 10), the leader B 0@0 2@5 4@7 (LEO 9).
    Round 1: A fetches with epoch 3; B answers epoch 2 ends at 7; A does not know epoch 2: truncate to the end of
    its epoch 1 (8) and ask again. Round 2: epoch 1; B answers epoch 0 ends at 5; A's epoch 0 ends at 5: truncate
    to 5. Round 3: epoch 0 at 5: accepted. A loses offsets 5..9."""
    root = str(tmp_path)
    common = values(5)
    a = replica(root, 1, common + values(3, 5, epoch=1, tag="a") + values(2, 8, epoch=3, tag="a"))
    b = replica(root, 2, common + values(2, 5, epoch=2, tag="b") + values(2, 7, epoch=4, tag="b"))
    code, doc = run_json(a, b)
    assert code == 1
    assert doc["leader"] == "2" and doc["first_divergent_offset"] == 5 and doc["divergence_kind"] == "different-epoch"
    ra = by_broker(doc)[1]
    assert ra["truncation_offset"] == 5 and ra["lost_records"]["count"] == 5
    assert [s["truncate_to"] for s in ra["truncation_steps"]] == [8, 5, None]
    # the direct cross-check on the engine function
    assert tr.end_offset_for([(0, 0), (2, 5), (4, 7)], 3, 9) == (2, 7)


def test_leader_override_and_follower_ahead_in_same_epoch(tmp_path):
    """A replica longer than the chosen leader in the same epoch is cut to the leader's end: that range is lost."""
    root = str(tmp_path)
    long = replica(root, 1, values(12))
    short = replica(root, 2, values(9))
    code, doc = run_json(long, short, extra=("--leader", "2"))
    assert code == 1
    assert doc["first_divergent_offset"] == 9 and doc["divergence_kind"] == "missing-range"
    r = by_broker(doc)[1]
    assert r["truncation_offset"] == 9 and r["lost_records"]["count"] == 3


# ------------------------------------------------------------------------------------------ compaction
def keyed_history() -> list[tuple[str, str | None]]:
    return [("k1", "a"), ("k2", "b"), ("k1", "c"), ("k3", "d"), ("k2", "e"), ("k4", "f"), ("k1", None), ("k5", "g"),
            ("k3", "h"), ("k6", "i")]


def history(drop: set[int], n: int | None = None) -> list[Step]:
    out: list[Step] = []
    for i, (k, v) in enumerate(keyed_history()[:n]):
        out.append(skip() if i in drop else rec(k, v))
    return out


def test_compacted_replica_by_whole_batches_agrees(tmp_path):
    """Superseded records removed (0: k1 by 2, 1: k2 by 4, 2: k1 by 6, 3: k3 by 8): every surviving offset holds
    the same batch bytes, so no divergence, and the tombstone at 6 is kept as the cleaner keeps it."""
    root = str(tmp_path)
    full = replica(root, 1, history(set()))
    compacted = replica(root, 2, history({0, 1, 2, 3}))
    code, out = run(full, compacted)
    assert code == 0, out
    assert "replicas agree up to offset 10" in out


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_compacted_by_the_cleaner_agrees(tmp_path, seed):
    """A replica compacted by ``kafkalog compact`` (the cleaner's rules: rewritten batches, aborted data and keyless
    records removed, empty batches kept for producer state) against its uncompacted twin: no divergence."""
    a = os.path.join(tmp_path, "broker1", "orders-0")
    random_partition(a, seed, batches=50)
    b = os.path.join(tmp_path, "broker2", "orders-0")
    shutil.copytree(a, b)
    plan, _rec, _w = compact_run(b, CompactOptions(now_ms=1_700_000_100_000), execute=True, backup_dir=str(tmp_path / "bk"))
    assert plan.has_changes
    code, out = run("--names", "1,2", a, b)
    assert code == 0, out
    code, out = run("--names", "2,1", b, a)
    assert code == 0, out


def test_latest_value_differs_is_cleaning_divergence(tmp_path):
    """The compacted replica dropped 0 and 1 legitimately, but also 8 (k3's latest value) while keeping k3 at 3."""
    root = str(tmp_path)
    full = replica(root, 1, history(set()))
    bad = replica(root, 2, history({0, 1, 8}))
    code, doc = run_json(full, bad)
    assert code == 1
    assert doc["first_divergent_offset"] == 8 and doc["divergence_kind"] == "cleaning-divergence"
    assert "latest value of key 'k3' differs" in doc["detail"]


def test_tombstone_on_one_replica_only(tmp_path):
    """One replica lost k1's tombstone (6) but still holds k1's older value (2): k1 is alive again there."""
    root = str(tmp_path)
    full = replica(root, 1, history(set()))
    gone = replica(root, 2, history({0, 1, 6}))
    code, doc = run_json(full, gone)
    assert code == 1
    assert doc["first_divergent_offset"] == 6 and doc["divergence_kind"] == "cleaning-divergence"
    assert "tombstone" in doc["detail"]


def test_tombstone_removed_past_its_horizon_with_all_older_values_agrees(tmp_path):
    """A replica cleaned once more removed k1's tombstone after k1's older values: same keys and values survive."""
    root = str(tmp_path)
    full = replica(root, 1, history(set()))
    gone = replica(root, 2, history({0, 1, 2, 3, 6}))
    code, out = run(full, gone)
    assert code == 0, out


def test_tombstone_missing_on_an_uncleaned_replica_is_divergence(tmp_path):
    """Nothing else was cleaned on the lacker (it keeps every superseded record): a missing tombstone is not a
    cleaner's doing."""
    root = str(tmp_path)
    full = replica(root, 1, history(set()) + [rec("k1", "z")])
    gone = replica(root, 2, history({6}) + [rec("k1", "z")])
    code, doc = run_json(full, gone)
    assert code == 1 and doc["first_divergent_offset"] == 6 and doc["divergence_kind"] == "cleaning-divergence"


def test_transaction_marker_kept_on_one_only(tmp_path):
    root = str(tmp_path)
    head = [rec("k1", "a", pid=5, txn=True), rec("k2", "b", pid=5, txn=True)]
    tail = [rec("k3", "c"), rec("k4", "d")]
    a = replica(root, 1, head + [marker(5)] + tail)
    b = replica(root, 2, head + [skip(markers=1)] + tail)
    code, doc = run_json(a, b)
    assert code == 1
    assert doc["first_divergent_offset"] == 2 and doc["divergence_kind"] == "cleaning-divergence"


def test_missing_range_in_an_uncompacted_replica(tmp_path):
    """Keys repeat (k0..k3), so 8..11 are 'superseded' later on the lacker; but the lacker still keeps superseded
    records from offset 4 on, so no cleaner cleaned past 4: the hole is a missing range, not compaction."""
    root = str(tmp_path)
    steps = [rec(f"k{i % 4}", f"v{i}") for i in range(20)]
    holed = steps[:8] + [skip(4)] + steps[12:]
    a = replica(root, 1, steps)
    b = replica(root, 2, holed)
    code, doc = run_json(a, b)
    assert code == 1
    assert doc["first_divergent_offset"] == 8 and doc["divergence_kind"] == "missing-range"
    assert "lacks offsets 8..11" in doc["detail"]


def test_different_batch_same_epoch(tmp_path):
    root = str(tmp_path)
    a = replica(root, 1, values(6) + [rec("k6", "x", pid=3)] + values(3, 7))
    b = replica(root, 2, values(6) + [rec("k6", "x", pid=4)] + values(3, 7))
    code, doc = run_json(a, b)
    assert code == 1
    assert doc["first_divergent_offset"] == 6 and doc["divergence_kind"] == "different-batch"
    assert "producer 3/0 vs 4/0" in doc["detail"]


# ------------------------------------------------------------------------------------------ corruption, usage
def test_corrupt_batch_on_one_replica(tmp_path):
    root = str(tmp_path)
    a = replica(root, 1, values(10))
    b = replica(root, 2, values(10))
    seg = os.path.join(b, "00000000000000000000.log")
    data = bytearray(open(seg, "rb").read())
    batches = []
    pos = 0
    while pos < len(data):
        batches.append(pos)
        pos += 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
    data[batches[4] + 70] ^= 0xFF  # a byte of batch 4's record
    open(seg, "wb").write(bytes(data))
    code, doc = run_json(a, b)
    assert code == 1
    assert doc["first_divergent_offset"] == 4 and doc["divergence_kind"] == "corrupt-batch"
    corrupt = by_broker(doc)[2]["corrupt"]
    assert corrupt[0]["position"] == batches[4] and corrupt[0]["file"] == seg
    code, out = run(a, b)
    assert code == 1 and "DIVERGED at offset 4: corrupt-batch" in out and f"at byte {batches[4]}" in out


def test_usage_and_unreadable(tmp_path):
    a = replica(str(tmp_path), 1, values(3))
    code, out = run(a)
    assert code == 2 and "at least two" in out
    code, out = run(a, str(tmp_path / "nope"))
    assert code == 2 and "Traceback" not in out and "nope" in out
    code, out = run("--names", "x", a, a)
    assert code == 2
    code, out = run("--leader", "9", a, a)
    assert code == 2 and "--leader 9" in out


def test_names_override_meta_properties(tmp_path):
    a = replica(str(tmp_path), 1, values(3))
    b = replica(str(tmp_path), 2, values(3))
    _code, doc = run_json(a, b, extra=("--names", "11,12"))
    assert [r["broker_id"] for r in doc["replicas"]] == [11, 12]


def test_meta_properties_parsing(tmp_path):
    props = parse_properties("# c\n! c2\nnode.id = 4\nprocess.roles: broker\nlong=a\\\n  b\n")
    assert props == {"node.id": "4", "process.roles": "broker", "long": "ab"}
    (tmp_path / "meta.properties").write_text("version=1\nnode.id=5\n")
    assert broker_id_of(str(tmp_path)) == 5
    assert broker_id_of(str(tmp_path / "none")) is None
    (tmp_path / "meta.properties").write_text("broker.id=x\n")
    with pytest.raises(rp.UnreadableFileError):
        broker_id_of(str(tmp_path))


def test_aborted_transaction_and_its_marker_removed_agrees(tmp_path):
    """The cleaner removes an aborted transaction's data, then its marker past the horizon: not divergence."""
    root = str(tmp_path)
    head = [rec("k1", "a", pid=5, txn=True), rec("k2", "b", pid=5, txn=True), marker(5, abort=True)]
    tail = [rec("k3", "c"), rec("k4", "d")]
    a = replica(root, 1, head + tail)
    b = replica(root, 2, [skip(3, markers=1)] + tail)
    code, out = run(a, b)
    assert code == 0, out


@pytest.mark.realdata
def test_realdata_copies_agree_and_a_truncated_copy_lags(tmp_path):
    """Real broker partitions (shared/realdata, skipped when absent): a copy agrees with the original, and a copy
    cut back by truncate-to-epoch is a lagging follower that loses nothing."""
    from scan_data import realdata_dirs

    dirs = realdata_dirs(limit=6)
    if not dirs:
        pytest.skip("shared/realdata not present")
    checked = 0
    for n, src in enumerate(dirs):
        a = tmp_path / f"a{n}" / src.name
        b = tmp_path / f"b{n}" / src.name
        shutil.copytree(src, a)
        shutil.copytree(src, b)
        cmp = rp.compare([str(a), str(b)], ["1", "2"])
        if any(r.replica.corrupt for r in cmp.replicas):
            assert cmp.divergence_kind == "corrupt-batch"
            continue
        assert not cmp.diverged, (src, cmp.detail)
        leo = cmp.replicas[0].replica.log_end_offset
        bases = [x.base for x in cmp.replicas[1].replica.batches]
        if len(bases) < 2:
            continue
        cut = bases[len(bases) // 2]
        tr.run(str(b), None, cut, execute=True, backup_dir=str(tmp_path / "bk"))
        cmp = rp.compare([str(a), str(b)], ["1", "2"])
        assert not cmp.diverged, (src, cmp.detail)
        follower = next(r for r in cmp.replicas if r.role == "follower")
        assert follower.replica.log_end_offset == cut < leo and follower.lost.count == 0
        checked += 1
    assert checked


def _replicas_without_epochs(root: str, hw_checkpoint: str) -> list[str]:
    """Two replicas of 6 records without leader epochs, each log dir with this replication-offset-checkpoint."""
    dirs = []
    for broker in (1, 2):
        pdir = replica(root, broker, values(6, epoch=-1))
        os.remove(os.path.join(pdir, "leader-epoch-checkpoint"))
        with open(os.path.join(os.path.dirname(pdir), "replication-offset-checkpoint"), "w") as f:
            f.write(hw_checkpoint)
        dirs.append(pdir)
    return dirs


def test_no_epochs_truncates_to_high_watermark_but_refetches_identical_records(tmp_path):
    """Without leader epochs the follower truncates to its high watermark (replication-offset-checkpoint); what it
    removes there is held identically by the leader, so it is fetched again: nothing is lost, no divergence (found on
    shared/realdata's __consumer_offsets-40 of xpxwo100/bullShit, a false positive before)."""
    dirs = _replicas_without_epochs(str(tmp_path), "0\n1\norders 0 3\n")
    code, doc = run_json(*dirs)
    assert code == 0, doc
    f = next(r for r in doc["replicas"] if r["role"] == "follower")
    assert f["truncation_offset"] == 3 and f["lost_records"]["count"] == 0 and f["lost_records"]["refetched"] == 3
    code, out = run(*dirs)
    assert "loses nothing (3 records removed are held identically by the leader" in out


def test_high_watermark_named_twice_last_entry_wins(tmp_path):
    """replication-offset-checkpoint naming the partition twice: the broker's map keeps the last entry
    (OffsetCheckpointFile.java:65-69), so the follower truncates to 3, not to the first entry's 1."""
    dirs = _replicas_without_epochs(str(tmp_path), "0\n2\norders 0 1\norders 0 3\n")
    code, doc = run_json(*dirs)
    assert code == 0, doc
    f = next(r for r in doc["replicas"] if r["role"] == "follower")
    assert f["truncation_offset"] == 3 and f["lost_records"]["refetched"] == 3


def test_new_empty_follower_lags_without_truncation(tmp_path):
    """A freshly assigned replica (empty directory, no leader epoch yet) is a lagging follower, not unknown."""
    leader = replica(str(tmp_path), 1, values(5))
    empty = os.path.join(tmp_path, "broker2", "orders-0")
    os.makedirs(empty)
    code, doc = run_json(leader, empty)
    assert code == 0
    f = next(r for r in doc["replicas"] if r["role"] == "follower")
    assert f["truncation_offset"] == 0 and f["log_end_offset"] == 0 and f["lost_records"]["count"] == 0
