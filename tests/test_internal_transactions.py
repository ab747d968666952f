"""Open-transaction finder and its CLI on synthetic segments."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format import control
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.internal_topics.transactions import find_open, segment_files


def _data(base: int, pid: int, n: int = 2, ts: int = 1000) -> bytes:
    return encode_batch([RecordSpec(key=b"k", value=b"v", timestamp=ts)] * n, base_offset=base, transactional=True,
                        producer_id=pid, producer_epoch=3, base_sequence=0)


def _marker(base: int, pid: int, ctype: int) -> bytes:
    rec = RecordSpec(key=control.encode_control_key(ctype), value=control.encode_end_txn_marker(0), timestamp=2000)
    return encode_batch([rec], base_offset=base, transactional=True, control=True, producer_id=pid, producer_epoch=3)


def test_find_open(tmp_path: Path) -> None:
    seg0 = tmp_path / "00000000000000000000.log"
    seg0.write_bytes(_data(0, 10) + _data(2, 11) + _marker(4, 10, control.COMMIT))
    seg1 = tmp_path / "00000000000000000005.log"
    seg1.write_bytes(_data(5, 11, ts=3000) + _data(7, 12) + _marker(9, 12, control.ABORT))
    files = segment_files(str(tmp_path))
    assert [Path(f).name for f in files] == [seg0.name, seg1.name]
    found, warnings = find_open(files)
    assert warnings == []
    assert [(t.producer_id, t.first_offset, t.last_offset, t.last_timestamp, t.batches) for t in found] == [(11, 2, 6, 3000, 2)]
    assert found[0].segment == str(seg1)

    r = CliRunner().invoke(cli, ["transactions", str(tmp_path)])
    assert r.exit_code == 1 and "producerId: 11" in r.output
    r = CliRunner().invoke(cli, ["transactions", str(seg0), "--format", "json"])
    assert r.exit_code == 1 and '"producer_id": 11' in r.output


def test_none_open_and_unreadable(tmp_path: Path) -> None:
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(_data(0, 10) + _marker(2, 10, control.ABORT))
    r = CliRunner().invoke(cli, ["transactions", str(tmp_path)])
    assert r.exit_code == 0 and "No open transactions" in r.output
    r = CliRunner().invoke(cli, ["transactions", str(tmp_path / "missing")])
    assert r.exit_code == 2 and "Traceback" not in r.output
