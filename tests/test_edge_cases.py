"""Edge cases found in review: Java's silent 64-bit wrap-around and a record body of 0 bytes (found in review)."""

from __future__ import annotations

import struct

import pytest

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.format import codecs
from kafkalog_cli.format.encoder import RecordSpec, encode_batch, reseal_crc
from kafkalog_cli.ops.dump import Dumper, DumpOptions, FileError
from kafkalog_cli.render.dls import DlsRenderer
from kafkalog_cli.render.parsers import DecoderParser
from kafkalog_cli.storage.segment import entries
from kafkalog_cli.versions import profile_for

INT64_MAX = 2**63 - 1


def _dump(path: str, fast: bool) -> str:
    lines: list[str] = []
    prof = profile_for("3.6")
    opts = DumpOptions(print_data_log=True, deep_iteration=True, parser=DecoderParser())
    r = DlsRenderer(prof, opts, lines.append, lines.append)
    if fast:
        opts.fast = r.fast_formatter()
    d = Dumper(prof, opts)
    for ev in d.run([path]):
        r.handle(ev)
    r.summary(d.summary)
    return "\n".join(lines)


def test_offsets_wrap_like_java_longs(tmp_path) -> None:  # noqa: ANN001
    data = encode_batch([RecordSpec(b"a", b"1", timestamp=5), RecordSpec(b"b", b"2", timestamp=6)], base_offset=INT64_MAX)
    data += encode_batch([RecordSpec(b"c", b"3", timestamp=7)], base_offset=5)
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(data)
    batch = next(entries(data))
    assert batch.last_offset == -(2**63)
    assert [r.offset for r in batch.iter_records(data)] == [INT64_MAX, -(2**63)]
    slow, fast = _dump(str(p), False), _dump(str(p), True)
    assert slow == fast
    assert "lastOffset: -9223372036854775808" in slow
    assert "-9223372036854775808 is followed by 5" in slow


@pytest.mark.parametrize("codec", [codecs.NONE, codecs.GZIP])
def test_zero_length_record_is_a_typed_error(tmp_path, codec: int) -> None:  # noqa: ANN001
    # one record whose length varint is 0, as the last bytes of the payload
    head = bytearray(encode_batch([RecordSpec(b"k", b"v", timestamp=1000)], codec=codecs.NONE))
    payload = b"\x00"
    if codec != codecs.NONE:
        payload = codecs.compress(codec, payload)
    raw = bytearray(head[:61]) + payload
    struct.pack_into(">i", raw, 8, len(raw) - 12)
    raw[22] = (raw[22] & ~0x07) | codec
    data = reseal_crc(bytes(raw))
    with pytest.raises(InvalidRecordError, match="invalid record structure"):
        list(next(entries(data)).iter_records(data))
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(data)
    events = list(Dumper(profile_for("3.6"), DumpOptions(deep_iteration=True)).run([str(p)]))
    assert isinstance(events[-1], FileError)


def test_non_utf8_leader_epoch_checkpoint_is_a_clean_refusal(tmp_path) -> None:  # noqa: ANN001
    from click.testing import CliRunner

    from kafkalog_cli.cli.main import cli

    pdir = tmp_path / "kafka-logs" / "t-0"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(encode_batch([RecordSpec(b"k", b"v", timestamp=5)]))
    (pdir / "leader-epoch-checkpoint").write_bytes(b"0\n1\n\xff 0\n")
    r = CliRunner().invoke(cli, ["truncate-to-epoch", str(pdir), "0"], catch_exceptions=False)
    assert r.exit_code == 2
    assert "not UTF-8" in r.stderr and "internal error" not in r.stderr


def test_segment_name_beyond_int64_is_refused(tmp_path) -> None:  # noqa: ANN001
    from click.testing import CliRunner

    from kafkalog_cli.cli.main import cli

    pdir = tmp_path / "kafka-logs" / "t-0"
    pdir.mkdir(parents=True)
    (pdir / "99999999999999999999.log").write_bytes(encode_batch([RecordSpec(b"k", b"v", timestamp=5)]))
    for args in (["rebuild-index", str(pdir)], ["compact", str(pdir)], ["truncate-to-epoch", str(pdir), "--to-offset", "0"],
                 ["seek-offset", str(pdir), "3"]):
        r = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert r.exit_code == 2, args
        assert "not a valid offset" in r.stderr and "internal error" not in r.stderr, args
