"""``export --isolation read_committed`` and the partition's ``.txnindex``: an aborted transaction the index lists
is aborted even when its ABORT marker is not among the batches exported (a marker batch skipped as corrupt, a marker
in a segment that is not among the sources), as the broker's fetch path tells a read_committed consumer
(UnifiedLog.collectAbortedTransactions -> LogSegment.collectAbortedTxns -> TransactionIndex.collectAbortedTxns);
where the walk does see the marker, the marker decides. Partitions built with our encoder (the spec's layouts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format import control
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.storage.companions import AbortedTxn, encode_txn_index

PID = 7


def _data(base: int, keys: list[str], *, txn: bool) -> bytes:
    return encode_batch([RecordSpec(k.encode(), b"v-" + k.encode()) for k in keys], base_offset=base,
                        transactional=txn, producer_id=PID if txn else -1, producer_epoch=0 if txn else -1,
                        base_sequence=base if txn else -1)


def _marker(base: int, ctype: int) -> bytes:
    return encode_batch([RecordSpec(control.encode_control_key(ctype), control.encode_end_txn_marker(3))],
                        base_offset=base, transactional=True, control=True, producer_id=PID, producer_epoch=0)


def _partition(root: Path, *, corrupt_abort: bool, first_marker: int = control.ABORT, index: bool = True) -> Path:
    """offsets 0-1: a transaction of PID closed by ``first_marker`` at 2 (its CRC broken with ``corrupt_abort``);
    3-4: a transaction of PID committed at 5; 6: a plain record. The .txnindex lists (PID, 0, 2) when ``index``."""
    d = root / "t-0"
    d.mkdir(parents=True)
    m = bytearray(_marker(2, first_marker))
    if corrupt_abort:
        m[-1] ^= 0xFF  # the record's last byte: the batch CRC no longer verifies
    seg = _data(0, ["a0", "a1"], txn=True) + bytes(m) + _data(3, ["c3", "c4"], txn=True) + _marker(5, control.COMMIT) \
        + _data(6, ["p6"], txn=False)
    (d / "00000000000000000000.log").write_bytes(seg)
    if index:
        (d / "00000000000000000000.txnindex").write_bytes(encode_txn_index([AbortedTxn(0, PID, 0, 2, 0)]))
    return d


def _export(src: Path, out: Path, *extra: str) -> tuple[int, list[dict], dict]:
    r = CliRunner().invoke(cli, ["export", str(src), "--out", str(out), "--summary-format", "json", *extra],
                           catch_exceptions=False)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return r.exit_code, rows, json.loads(r.output)


@pytest.mark.parametrize("accel", [True, False])
def test_indexed_abort_whose_marker_is_corrupt_is_dropped(tmp_path, monkeypatch, accel):
    if not accel:
        monkeypatch.setenv("KAFKALOG_NO_ACCEL", "1")
    d = _partition(tmp_path, corrupt_abort=True)
    code, rows, doc = _export(d, tmp_path / "o.ndjson")
    assert code == 1  # the corrupt marker batch is reported
    assert [r["offset"] for r in rows] == [3, 4, 6]
    [part] = doc["partitions"]
    assert part["aborted_records"] == 2 and part["corrupt_batches"] == 1
    assert any(".txnindex" in n for n in part["notes"])
    _code, rows, _doc = _export(d, tmp_path / "u.ndjson", "--isolation", "read_uncommitted")
    assert [(r["offset"], r["txn"]) for r in rows] == [(0, "aborted"), (1, "aborted"), (3, "committed"),
                                                      (4, "committed"), (6, None)]


def test_without_the_index_the_corrupt_marker_leaves_the_transaction_unknown(tmp_path):
    """The same partition without its .txnindex: the log alone cannot tell (the next COMMIT of the producer closes
    what looks like one transaction): the txnindex is what tells them apart above."""
    d = _partition(tmp_path, corrupt_abort=True, index=False)
    _code, rows, _doc = _export(d, tmp_path / "o.ndjson")
    assert [r["offset"] for r in rows] == [0, 1, 3, 4, 6]


def test_a_lone_segment_uses_its_directory_index(tmp_path):
    d = _partition(tmp_path, corrupt_abort=True)
    _code, rows, _doc = _export(d / "00000000000000000000.log", tmp_path / "o.ndjson")
    assert [r["offset"] for r in rows] == [3, 4, 6]


def test_the_marker_in_the_log_decides_over_the_index(tmp_path):
    """An index entry that disagrees with an intact marker (a COMMIT at that offset): the log's marker wins, no note."""
    d = _partition(tmp_path, corrupt_abort=False, first_marker=control.COMMIT)
    code, rows, doc = _export(d, tmp_path / "o.ndjson")
    assert code == 0
    assert [r["offset"] for r in rows] == [0, 1, 3, 4, 6]
    assert not doc["partitions"][0]["notes"]


def test_consistent_index_and_markers_change_nothing(tmp_path):
    d = _partition(tmp_path, corrupt_abort=False)
    code, rows, doc = _export(d, tmp_path / "o.ndjson")
    assert code == 0
    assert [r["offset"] for r in rows] == [3, 4, 6]
    assert doc["partitions"][0]["aborted_records"] == 2 and not doc["partitions"][0]["notes"]


def test_an_index_of_a_later_version_is_not_used(tmp_path):
    """Kafka's TransactionIndex throws for an entry version > 0: such a file is not trusted."""
    d = _partition(tmp_path, corrupt_abort=True, index=False)
    (d / "00000000000000000000.txnindex").write_bytes(encode_txn_index([AbortedTxn(1 << 8, PID, 0, 2, 0)]))
    _code, rows, _doc = _export(d, tmp_path / "o.ndjson")
    assert [r["offset"] for r in rows] == [0, 1, 3, 4, 6]
