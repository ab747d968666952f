"""verify-crc's index, time-index, companion-file and cross-segment checks on generated partitions."""

from __future__ import annotations

from kafkalog_cli.ops.verify import verify_paths, verify_segment
from kafkalog_cli.storage.companions import (
    AbortedTxn,
    ProducerEntry,
    encode_leader_epoch_checkpoint,
    encode_producer_snapshot,
    encode_txn_index,
)
from kafkalog_cli.storage.index import encode_offset_index, encode_time_index
from tests.verify_helpers import make_segment, write_segment


def kinds(report, severity=None):
    items = report.problems + report.notes
    return sorted((p.kind, p.severity) for p in items if severity is None or p.severity == severity)


def partition(tmp_path, index_entries=None, time_entries=None, *, index_tail=b"", time_tail=b"", n_batches=8):
    seg = make_segment(n_batches=n_batches)
    log = write_segment(tmp_path / "t-0", seg.data)
    if index_entries is not None:
        (tmp_path / "t-0" / "00000000000000000000.index").write_bytes(
            encode_offset_index(0, index_entries(seg)) + index_tail)
    if time_entries is not None:
        (tmp_path / "t-0" / "00000000000000000000.timeindex").write_bytes(
            encode_time_index(0, time_entries(seg)) + time_tail)
    for ext in ("index", "timeindex"):  # the one not under test: empty (a missing one is a finding of its own)
        other = tmp_path / "t-0" / f"00000000000000000000.{ext}"
        if not other.exists():
            other.write_bytes(b"")
    return seg, str(log)


def test_recovery_rule_indexes_are_clean(tmp_path):
    seg, log = partition(
        tmp_path,
        lambda s: [(s.last[i], s.starts[i]) for i in (2, 4, 6)],
        lambda s: [(s.max_ts[i], s.last[i]) for i in (2, 4, 6, 7)],
    )
    assert kinds(verify_segment(log)) == []


def test_chunk_style_entries_are_info_only(tmp_path):
    # broker <= 3.9: (last offset of the whole append chunk, start of the chunk)
    seg, log = partition(tmp_path, lambda s: [(s.last[3], s.starts[2]), (s.last[6], s.starts[5])])
    r = verify_segment(log)
    assert kinds(r) == [("index-chunk-entries", "info")]
    assert "2 entries" in r.notes[0].message


def test_index_entry_inside_a_batch(tmp_path):
    seg, log = partition(tmp_path, lambda s: [(s.last[2], s.starts[2] + 5)])
    r = verify_segment(log)
    assert [(p.kind, p.position, p.end, p.severity) for p in r.problems] == [("index-position", 0, 8, "error")]


def test_index_offset_before_the_batch_it_points_at(tmp_path):
    seg, log = partition(tmp_path, lambda s: [(s.last[1], s.starts[3])])
    r = verify_segment(log)
    assert [p.kind for p in r.problems] == ["index-offset"]


def test_index_not_monotonic_and_past_end(tmp_path):
    seg, log = partition(tmp_path, lambda s: [(s.last[4], s.starts[4]), (s.last[2], s.starts[2]),
                                              (s.last[7] + 50, len(s.data) + 100)])
    r = verify_segment(log)
    assert sorted(p.kind for p in r.problems) == ["index-order", "index-position"]
    assert {p.position for p in r.problems} == {8, 16}


def test_index_offset_beyond_log_end(tmp_path):
    seg, log = partition(tmp_path, lambda s: [(s.last[7] + 10, s.starts[7])])
    r = verify_segment(log)
    assert [p.kind for p in r.problems] == ["index-offset"]


def test_preallocated_index_tails_are_info(tmp_path):
    seg, log = partition(tmp_path, lambda s: [(s.last[3], s.starts[3])], lambda s: [(s.max_ts[3], s.last[3])],
                         index_tail=bytes(8 * 1000), time_tail=bytes(12 * 1000))
    r = verify_segment(log)
    assert kinds(r) == [("index-zero-tail", "info"), ("timeindex-zero-tail", "info")]
    assert {(n.position, n.end) for n in r.notes} == {(8, 8 * 1001), (12, 12 * 1001)}


def test_index_partial_entry(tmp_path):
    seg, log = partition(tmp_path, lambda s: [(s.last[3], s.starts[3])], index_tail=b"\x01\x02\x03")
    r = verify_segment(log)
    assert [(p.kind, p.position, p.end) for p in r.problems] == [("index-size", 8, 11)]


def test_timeindex_record_offset_form_of_kafka_36_is_valid(tmp_path):
    # <= 3.6 leaders store the offset of the record holding the max timestamp, inside the batch (errata E4)
    seg, log = partition(tmp_path, None, lambda s: [(s.max_ts[2], s.first[2] + 1), (s.max_ts[5], s.last[5] - 1)])
    assert kinds(verify_segment(log)) == []


def test_timeindex_wrong_timestamp_and_order(tmp_path):
    seg, log = partition(tmp_path, None, lambda s: [(s.max_ts[2] + 1, s.last[2]), (s.max_ts[1], s.last[4])])
    r = verify_segment(log)
    assert sorted(p.kind for p in r.problems) == ["timeindex-mismatch", "timeindex-order"]


def test_companion_files(tmp_path):
    d = tmp_path / "t-0"
    seg = make_segment()
    write_segment(d, seg.data)
    good_snap = encode_producer_snapshot([ProducerEntry(7, 0, 3, 5, 3, 1, -1, -1)])
    (d / "00000000000000000032.snapshot").write_bytes(good_snap)
    bad_snap = bytearray(good_snap)
    bad_snap[-1] ^= 1
    (d / "00000000000000000010.snapshot").write_bytes(bytes(bad_snap))
    (d / "leader-epoch-checkpoint").write_text(encode_leader_epoch_checkpoint([(0, 0), (3, 10), (2, 20)]))
    (d / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA")
    (d / "00000000000000000000.txnindex").write_bytes(encode_txn_index([AbortedTxn(0, 7, 5, 9, 10)]) + b"xx")
    for ext in ("index", "timeindex"):  # present and empty: a missing index is a finding of its own
        (d / f"00000000000000000000.{ext}").write_bytes(b"")
    res = verify_paths([str(tmp_path)])
    found = sorted((p.file.rsplit("/", 1)[1], p.kind, p.severity) for p in res.all_problems())
    assert found == [
        ("00000000000000000000.txnindex", "txnindex", "warning"),
        ("00000000000000000010.snapshot", "snapshot", "error"),
        ("leader-epoch-checkpoint", "leader-epoch-checkpoint", "error"),
        ("partition.metadata", "partition-metadata", "error"),
    ]
    assert res.exit_code() == 1


def test_segments_overlapping_across_files(tmp_path):
    d = tmp_path / "t-0"
    a = make_segment(base=0)  # offsets 0..31
    b = make_segment(base=20)  # offsets 20..51 in a file named 20: overlaps the first segment
    write_segment(d, a.data, 0)
    write_segment(d, b.data, 20)
    res = verify_paths([str(d)])
    assert [(p.kind, p.file.rsplit("/", 1)[1]) for p in res.all_problems()] == [
        ("segment-order", "00000000000000000020.log")]
    c = make_segment(base=32)
    (d / "00000000000000000020.log").unlink()
    write_segment(d, c.data, 32)
    assert verify_paths([str(d)]).exit_code() == 0


def test_parallel_jobs_give_the_same_result(tmp_path):
    d = tmp_path / "t-0"
    for k in range(3):
        seg = make_segment(base=32 * k, seed=k)
        data = bytearray(seg.data)
        data[seg.starts[k] + 70] ^= 1
        write_segment(d, bytes(data), 32 * k)
    one = verify_paths([str(d)])
    two = verify_paths([str(d)], jobs=2)
    key = [(p.file, p.position, p.end, p.kind, p.last_good_offset, p.first_good_offset) for p in one.all_problems()]
    assert len(key) == 3
    assert key == [(p.file, p.position, p.end, p.kind, p.last_good_offset, p.first_good_offset)
                   for p in two.all_problems()]


def test_index_position_into_corrupt_region_is_warning(tmp_path):
    seg, log = partition(tmp_path, lambda s: [(s.last[3], s.starts[3])])
    data = bytearray(seg.data)
    data[seg.starts[3] + 70] ^= 1
    with open(log, "wb") as f:
        f.write(bytes(data))
    r = verify_segment(log)
    assert sorted((p.kind, p.severity) for p in r.problems) == [("crc-mismatch", "error"),
                                                                ("index-position", "warning")]
