"""Dump behaviours checked against the spec text (found by black-box QA): the Dumping line of ignored files,
the partial batch line before an unknown codec aborts, the 2.0-2.2 time-index zero-slot rule, --max-bytes cuts."""

from __future__ import annotations

import struct

from click.testing import CliRunner

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format.encoder import RecordSpec, encode_batch, reseal_crc
from kafkalog_cli.storage.index import encode_offset_index, encode_time_index

T0 = 1_700_000_000_000


def run(args: list[str]):  # noqa: ANN201
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def test_unknown_files_get_a_dumping_line_first(tmp_path) -> None:  # noqa: ANN001
    f = tmp_path / "x.tmp"
    f.write_bytes(b"")
    r = run(["dump", str(f)])
    assert r.stdout == f"Dumping {f}\n"
    assert r.stderr == f"Ignoring unknown file {f}\n"
    assert r.exit_code == 0


def test_unknown_codec_prints_the_line_start_then_a_located_error(tmp_path) -> None:  # noqa: ANN001
    bad = bytearray(encode_batch([RecordSpec(b"k", b"v", timestamp=T0)], partition_leader_epoch=0))
    bad[22] = (bad[22] & 0xF8) | 5
    data = reseal_crc(bytes(bad)) + encode_batch([RecordSpec(b"k", b"w", timestamp=T0)], base_offset=1)
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(data)
    r = run(["dump", "--kafka-version", "3.6", str(p)])
    assert r.stdout.splitlines()[-1] == (
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        "partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty"
    )
    assert "at byte 22: Unknown compression type id: 5" in r.stderr and "found 5" in r.stderr
    assert r.exit_code == 1


def _ix_partition(tmp_path):  # noqa: ANN001, ANN202
    """Offsets 100..111 in 4 batches of 3; a time index of 4 entries + 3 zero slots (preallocated tail)."""
    log = b""
    entries = []
    for b in range(4):
        base = 100 + 3 * b
        log += encode_batch([RecordSpec(b"k", b"v", timestamp=T0 + 10 * base + i) for i in range(3)], base_offset=base)
        entries.append((T0 + 10 * base + 2, base + 2))
    d = tmp_path / "p-0"
    d.mkdir()
    (d / "00000000000000000100.log").write_bytes(log)
    (d / "00000000000000000100.index").write_bytes(encode_offset_index(100, []))
    (d / "00000000000000000100.timeindex").write_bytes(encode_time_index(100, entries) + bytes(36))
    return d / "00000000000000000100.timeindex", entries


def test_timeindex_zero_slots_from_23_stop_the_dump(tmp_path) -> None:  # noqa: ANN001
    path, entries = _ix_partition(tmp_path)
    r = run(["dump", "--kafka-version", "2.3", str(path)])
    assert r.stdout.splitlines()[1:] == [f"timestamp: {ts} offset: {off}" for ts, off in entries]
    assert r.stderr == ""


def test_timeindex_zero_slots_in_22_are_printed_and_not_found(tmp_path) -> None:  # noqa: ANN001
    path, entries = _ix_partition(tmp_path)
    r = run(["dump", "--kafka-version", "2.2", str(path)])
    expected = [f"timestamp: {ts} offset: {off}" for ts, off in entries] + ["timestamp: 0 offset: 100"] * 3
    assert r.stdout.splitlines()[1:] == expected
    assert r.stderr.splitlines() == ["The following indexed offsets are not found in the log."] + [
        "Indexed offset: 100, found log offset: 102"
    ] * 3


def test_max_bytes_cut_is_not_a_problem(tmp_path) -> None:  # noqa: ANN001
    data = b"".join(encode_batch([RecordSpec(b"k", b"v", timestamp=T0)], base_offset=i) for i in range(3))
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(data)
    r = run(["dump", "--kafka-version", "3.6", "--max-bytes", "100", str(p)])
    assert r.exit_code == 0
    assert "invalid bytes" not in r.stdout
    assert struct.calcsize(">q") == 8
