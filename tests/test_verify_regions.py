"""verify-crc on generated segments corrupted at known positions: exact regions and recovered offsets.

The oracle is the encoder's own batch lengths (positions) and the offsets we asked it for; the corruptions are
made on bytes, never through the code under test."""

from __future__ import annotations

import os
import struct

import pytest

from kafkalog_cli.format import codecs
from kafkalog_cli.format.encoder import reseal_crc
from kafkalog_cli.ops.verify import verify_segment
from tests.verify_helpers import make_legacy_segment, make_segment, write_segment


def regions(report):
    return [(p.position, p.end, p.kind, p.last_good_offset, p.first_good_offset)
            for p in report.problems if p.last_good_offset is not None or p.first_good_offset is not None
            or p.kind in ("crc-mismatch", "bad-size", "bad-magic", "truncated", "zero-filled", "size-too-large")]


def verify_bytes(tmp_path, data, base=0, **kw):
    return verify_segment(str(write_segment(tmp_path, bytes(data), base)), **kw)


@pytest.mark.parametrize("codec", [codecs.NONE, codecs.LZ4, codecs.GZIP])
def test_clean_segment_has_no_problems(tmp_path, codec):
    seg = make_segment(codec=codec)
    r = verify_bytes(tmp_path, seg.data, deep=True)
    assert r.problems == [] and r.notes == []
    assert r.batches == 8 and r.first_offset == 0 and r.last_offset == seg.last[-1]
    assert r.bytes_checked == len(seg.data)


@pytest.mark.parametrize("where", [21, 30, 60, 70, -1])  # attributes, lastOffsetDelta, recordsCount, records, last byte
def test_flipped_bit_in_one_batch(tmp_path, where):
    seg = make_segment()
    a, b = seg.batch(3)
    data = bytearray(seg.data)
    data[(b - 1) if where == -1 else a + where] ^= 0x10
    r = verify_bytes(tmp_path, data)
    assert regions(r) == [(a, b, "crc-mismatch", seg.last[2], seg.first[4])]
    assert r.batches == 7  # every other batch still verified


def test_flipped_bit_in_crc_field(tmp_path):
    seg = make_segment()
    a, b = seg.batch(0)
    data = bytearray(seg.data)
    data[a + 18] ^= 1
    r = verify_bytes(tmp_path, data)
    assert regions(r) == [(a, b, "crc-mismatch", None, seg.first[1])]


def test_length_field_flipped_to_past_eof(tmp_path):
    seg = make_segment()
    a, b = seg.batch(2)
    data = bytearray(seg.data)
    data[a + 9] ^= 0x40  # size += 4 MiB: runs past the end of the file
    r = verify_bytes(tmp_path, data)
    assert regions(r) == [(a, b, "bad-size", seg.last[1], seg.first[3])]


def test_length_field_flipped_inside_file_lands_on_later_batch(tmp_path):
    seg = make_segment()
    a, b = seg.batch(2)
    c = seg.starts[4]
    data = bytearray(seg.data)
    struct.pack_into(">i", data, a + 8, c - a - 12)  # now "covers" batches 2 and 3 exactly
    r = verify_bytes(tmp_path, data)
    # batch 3 is intact and must not be swallowed by the bad length
    assert regions(r) == [(a, b, "crc-mismatch", seg.last[1], seg.first[3])]
    assert r.batches == 7


@pytest.mark.parametrize("size", [-1, -2147483648, 0, 13, 48])
def test_negative_or_too_small_length(tmp_path, size):
    seg = make_segment()
    a, b = seg.batch(4)
    data = bytearray(seg.data)
    struct.pack_into(">i", data, a + 8, size)
    r = verify_bytes(tmp_path, data)
    assert regions(r) == [(a, b, "bad-size", seg.last[3], seg.first[5])]


def test_absurd_length_is_reported_not_read(tmp_path):
    seg = make_segment()
    a, b = seg.batch(1)
    data = bytearray(seg.data)
    struct.pack_into(">i", data, a + 8, 2_000_000_000)
    r = verify_bytes(tmp_path, data, max_batch_size=1 << 20)
    assert regions(r) == [(a, b, "size-too-large", seg.last[0], seg.first[2])]


def test_bad_magic(tmp_path):
    seg = make_segment()
    a, b = seg.batch(5)
    data = bytearray(seg.data)
    data[a + 16] = 0x7F
    r = verify_bytes(tmp_path, data)
    assert regions(r) == [(a, b, "bad-magic", seg.last[4], seg.first[6])]


def test_two_adjacent_corrupt_batches_reported_separately(tmp_path):
    seg = make_segment()
    data = bytearray(seg.data)
    for i in (2, 3):
        data[seg.starts[i] + 70] ^= 1
    r = verify_bytes(tmp_path, data)
    assert regions(r) == [
        (seg.starts[2], seg.starts[3], "crc-mismatch", seg.last[1], seg.first[4]),
        (seg.starts[3], seg.starts[4], "crc-mismatch", seg.last[1], seg.first[4]),
    ]


@pytest.mark.parametrize("cut", [3, 8, 16, 17, 40, 61, 100])
def test_truncated_tail(tmp_path, cut):
    seg = make_segment()
    a, _b = seg.batch(7)
    data = seg.data[: a + cut]
    r = verify_bytes(tmp_path, data)
    if any(data[a:]):
        assert regions(r) == [(a, a + cut, "truncated", seg.last[6], None)]
    else:  # the cut kept only the zero high bytes of baseOffset: indistinguishable from a zero tail
        assert r.problems == [] and [n.kind for n in r.notes] == ["zero-tail"]
    assert r.batches == 7 and r.last_offset == seg.last[6]


@pytest.mark.parametrize("zeros", [5, 17, 18, 4096, 100_000])
def test_zero_filled_tail_is_info_not_corruption(tmp_path, zeros):
    seg = make_segment()
    r = verify_bytes(tmp_path, seg.data + bytes(zeros))
    assert r.problems == []
    assert [(n.position, n.end, n.kind, n.severity) for n in r.notes] == [
        (len(seg.data), len(seg.data) + zeros, "zero-tail", "info")]


def test_zero_filled_region_in_the_middle(tmp_path):
    seg = make_segment()
    a, b = seg.batch(3)
    data = bytearray(seg.data)
    data[a:b] = bytes(b - a)
    r = verify_bytes(tmp_path, data)
    assert regions(r) == [(a, b, "zero-filled", seg.last[2], seg.first[4])]


@pytest.mark.parametrize("garbage_len", [1, 7, 17, 333, 5000])
def test_garbage_between_batches(tmp_path, garbage_len):
    seg = make_segment()
    a = seg.starts[4]
    junk = bytes((i * 37 + 11) % 251 + 3 for i in range(garbage_len))  # never a plausible magic run
    data = seg.data[:a] + junk + seg.data[a:]
    r = verify_bytes(tmp_path, data)
    [reg] = regions(r)
    assert reg[0] == a and reg[1] == a + garbage_len
    assert reg[3:] == (seg.last[3], seg.first[4])
    assert r.batches == 8


def test_random_garbage_block_resyncs(tmp_path):
    seg = make_segment(n_batches=12)
    a = seg.starts[6]
    junk = os.urandom(20_000)
    data = seg.data[:a] + junk + seg.data[a:]
    r = verify_bytes(tmp_path, data)
    assert [(p.position, p.end) for p in r.problems] == [(a, a + len(junk))]
    assert r.problems[0].first_good_offset == seg.first[6]
    assert r.batches == 12


def test_corrupt_compressed_payload_with_valid_crc_needs_deep(tmp_path):
    seg = make_segment(codec=codecs.LZ4)
    a, b = seg.batch(2)
    data = bytearray(seg.data)
    data[a + 61:a + 65] = b"\x00\x00\x00\x00"  # break the LZ4 frame magic, then reseal the CRC
    data[a:b] = reseal_crc(bytes(data[a:b]))
    assert verify_bytes(tmp_path, data).problems == []
    r = verify_bytes(tmp_path, data, deep=True)
    assert [(p.position >= a and p.end == b, p.kind, p.offset) for p in r.problems] == [
        (True, "bad-records", seg.first[2])]


def test_records_count_vs_last_offset_delta(tmp_path):
    seg = make_segment()
    a, b = seg.batch(1)
    data = bytearray(seg.data)
    struct.pack_into(">i", data, a + 57, 9)  # recordsCount 9 > lastOffsetDelta 3 + 1
    data[a:b] = reseal_crc(bytes(data[a:b]))
    r = verify_bytes(tmp_path, data)
    assert [(p.kind, p.position, p.end) for p in r.problems] == [("bad-count", a, b)]
    # fewer records than the delta (compaction) is legitimate
    struct.pack_into(">i", data, a + 57, 1)
    data[a:b] = reseal_crc(bytes(data[a:b]))
    assert verify_bytes(tmp_path, data).problems == []


def test_base_offset_flip_is_an_ordering_problem(tmp_path):
    seg = make_segment()
    a, b = seg.batch(3)
    data = bytearray(seg.data)
    struct.pack_into(">q", data, a, 1)  # baseOffset is not covered by the CRC
    r = verify_bytes(tmp_path, data)
    assert [(p.kind, p.position) for p in r.problems] == [("offset-order", a)]


def test_first_batch_below_file_base_offset(tmp_path):
    seg = make_segment(base=100)
    r = verify_bytes(tmp_path, seg.data, base=200)
    assert [(p.kind, p.position) for p in r.problems][:1] == [("offset-below-base", 0)]


def test_leader_epoch_decrease_is_a_warning(tmp_path):
    seg = make_segment(epoch=5)
    a, _b = seg.batch(4)
    data = bytearray(seg.data)
    struct.pack_into(">i", data, a + 12, 2)
    r = verify_bytes(tmp_path, data)
    assert [(p.kind, p.severity, p.position) for p in r.problems] == [("leader-epoch", "warning", a)]


def test_implausible_timestamp(tmp_path):
    seg = make_segment()
    a, b = seg.batch(2)
    data = bytearray(seg.data)
    struct.pack_into(">q", data, a + 35, -5)  # maxTimestamp
    data[a:b] = reseal_crc(bytes(data[a:b]))
    r = verify_bytes(tmp_path, data)
    assert [(p.kind, p.position) for p in r.problems] == [("timestamp", a)]


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_crc_and_resync(tmp_path, magic):
    seg = make_legacy_segment(magic=magic)
    assert verify_bytes(tmp_path, seg.data, deep=True).problems == []
    a, b = seg.batch(2)
    data = bytearray(seg.data)
    data[b - 1] ^= 0xFF
    r = verify_bytes(tmp_path, data)
    assert regions(r) == [(a, b, "crc-mismatch", seg.last[1], seg.first[3])]


def test_corrupt_first_bytes_of_legacy_file_resync(tmp_path):
    seg = make_legacy_segment(magic=1)
    data = b"\xff" * 30 + seg.data
    r = verify_bytes(tmp_path, data)
    assert regions(r) == [(0, 30, "bad-magic", None, seg.first[0])]
    assert r.batches == 6


def test_file_readonly_and_unchanged(tmp_path):
    seg = make_segment()
    data = bytearray(seg.data)
    data[seg.starts[2] + 70] ^= 1
    path = write_segment(tmp_path, bytes(data) + bytes(100))
    os.chmod(path, 0o444)
    os.utime(path, ns=(1_000_000_000, 2_000_000_000))
    before = (path.read_bytes(), os.stat(path).st_mtime_ns, os.stat(path).st_atime_ns)
    verify_segment(str(path), deep=True)
    after = (path.read_bytes(), os.stat(path).st_mtime_ns)
    assert after == before[:2]
