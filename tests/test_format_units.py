"""Format-level facts: the spec's test vectors, CRC implementations, codecs and their framings, varints."""

from __future__ import annotations

import os
import struct

import pytest

from kafkalog_cli.errors import CompressionError, SizeLimitError
from kafkalog_cli.format import codecs, crc
from kafkalog_cli.format import control as c
from kafkalog_cli.format.encoder import RecordSpec, encode_batch, encode_legacy_message
from kafkalog_cli.format.text import increment_sequence, java_utf8
from kafkalog_cli.format.varint import read_varint, read_varlong, write_varint, write_varlong

T0 = 1700000000000


def test_spec_58_vectors() -> None:
    assert encode_batch([RecordSpec(b"k", b"v", timestamp=T0)], partition_leader_epoch=0).hex() == (
        "00000000000000000000003a0000000002e99b8dd80000000000000000018bcfe568000000018bcfe56800ffffffffffffffffffffffffffff0000000110000000026b027600"
    )
    marker = encode_batch([RecordSpec(c.encode_control_key(c.COMMIT), c.encode_end_txn_marker(5), timestamp=T0 + 1)],
                          base_offset=1, producer_id=1000, producer_epoch=0, partition_leader_epoch=0, transactional=True,
                          control=True)
    assert marker.hex() == (
        "0000000000000001000000420000000002af192fb70030000000000000018bcfe568010000018bcfe5680100000000000003e80000ffffffff000000012000000008000000010c00000000000500"
    )
    assert encode_legacy_message(offset=2, key=b"k", value=b"v", magic=1, timestamp=T0 + 2).hex() == (
        "000000000000000200000018614a35f201000000018bcfe56802000000016b0000000176"
    )
    assert encode_legacy_message(offset=3, key=b"k", value=b"v", magic=0).hex() == (
        "0000000000000003000000101fecd70a0000000000016b0000000176"
    )


def test_errata_e12_batch_hex() -> None:
    a = encode_batch([RecordSpec(b"k0", b"v0", headers=[("h1", b"x")], timestamp=T0), RecordSpec(b"k1", None, timestamp=T0 + 5)],
                     partition_leader_epoch=0)
    assert a.hex() == (
        "00000000000000000000004a000000000263923c820000000000010000018bcfe568000000018bcfe56805ffffffffffffffffffffffffffff"
        "000000021e000000046b3004763002046831027810000a02046b310100"
    )


def test_seed_batch_crc_and_size() -> None:
    b = encode_batch([RecordSpec(b"DemoKey", b"DemoValue", timestamp=1599887411245)], partition_leader_epoch=5)
    assert len(b) == 84
    assert struct.unpack_from(">I", b, 17)[0] == 3888717251


def test_crc32c_is_compiled_and_correct() -> None:
    assert crc.crc32c(b"123456789") == 0xE3069283
    assert crc.implementation() in ("accel-sse4.2-3way", "accel-slicing-by-8", "crc32c-hardware", "crc32c-software-c",
                                    "crcmod-c")
    import crc32c as mod

    assert mod.hardware_based, "crc32c package fell back to software: check SSE4.2 / the wheel"


def test_crc32c_without_the_accelerator_is_the_package() -> None:
    """KAFKALOG_NO_ACCEL=1 (the reference path) takes its CRC-32C from the crc32c package, not from _accel; with the
    accelerator built, format.crc uses it and never imports the package (start-up time)."""
    import subprocess
    import sys

    code = ("import sys; from kafkalog_cli.format import crc; "
            "print(crc.implementation(), 'crc32c' in sys.modules, crc.crc32c(b'123456789'))")
    env = {k: v for k, v in os.environ.items() if k != "KAFKALOG_NO_ACCEL"}
    ref = subprocess.run([sys.executable, "-c", code], env={**env, "KAFKALOG_NO_ACCEL": "1"}, capture_output=True,
                         text=True, check=True).stdout.split()
    assert ref == ["crc32c-hardware", "True", str(0xE3069283)] or ref[0] == "crc32c-software-c"
    built = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           check=True).stdout.split()
    if built[0].startswith("accel-"):
        assert built[1:] == ["False", str(0xE3069283)]


def test_crcmod_fallback_is_the_c_extension() -> None:
    import crcmod.predefined
    from crcmod import _crcfunext  # noqa: F401  (ImportError here = the 1000x slower pure-Python fallback)

    assert crcmod.predefined.mkCrcFun("crc-32c")(b"123456789") == 0xE3069283


def test_crc32c_accepts_memoryview_slices() -> None:
    data = os.urandom(1000)
    assert crc.crc32c(memoryview(data)[21:]) == crc.crc32c(data[21:])


def test_lz4_header_checksum_vectors() -> None:
    assert (codecs.xxh32(bytes([0x60, 0x40])) >> 8) & 0xFF == 0x82
    assert (codecs.xxh32(bytes([0x04, 0x22, 0x4D, 0x18, 0x60, 0x40])) >> 8) & 0xFF == 0x1A


def test_xxh32_against_xxhash() -> None:
    xxhash = pytest.importorskip("xxhash")
    for n in (0, 1, 3, 4, 15, 16, 17, 100):
        data = os.urandom(n)
        assert codecs.xxh32(data) == xxhash.xxh32(data).intdigest()


@pytest.mark.parametrize("codec", [codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD])
def test_codec_round_trip(codec: int) -> None:
    data = os.urandom(5000) + b"a" * 300_000
    assert codecs.decompress(codec, codecs.compress(codec, data)) == data


def test_lz4_v0_quirk() -> None:
    data = b"hello world" * 100
    v0 = codecs.compress_lz4(data, magic=0)
    assert v0[6] == 0x1A  # broken HC written for v0
    assert codecs.decompress(codecs.LZ4, v0, magic=0) == data  # skipped when reading v0
    with pytest.raises(CompressionError):
        codecs.decompress(codecs.LZ4, v0, magic=1)  # verified for v1/v2


def test_lz4_rejects_dependent_blocks() -> None:
    import lz4.frame

    linked = lz4.frame.compress(os.urandom(10) + b"x" * 200_000, block_linked=True, block_size=lz4.frame.BLOCKSIZE_MAX64KB)
    with pytest.raises(CompressionError, match="dependent"):
        codecs.decompress(codecs.LZ4, linked)


def test_snappy_raw_fallback_and_concatenated_streams() -> None:
    import cramjam

    data = b"raw snappy payload " * 50
    assert codecs.decompress(codecs.SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data
    two = codecs.compress_snappy(data) + codecs.compress_snappy(data)
    assert codecs.decompress(codecs.SNAPPY, two) == data + data


def test_zstd_without_content_size_and_multiple_frames() -> None:
    import zstandard

    cctx = zstandard.ZstdCompressor(write_content_size=False)
    frames = cctx.compress(b"a" * 1000) + cctx.compress(b"b" * 1000)
    assert codecs.decompress(codecs.ZSTD, frames) == b"a" * 1000 + b"b" * 1000


def test_gzip_concatenated_members() -> None:
    assert codecs.decompress(codecs.GZIP, codecs.compress_gzip(b"one") + codecs.compress_gzip(b"two")) == b"onetwo"


@pytest.mark.parametrize("codec", [codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD])
def test_decompression_cap(codec: int) -> None:
    bomb = codecs.compress(codec, b"\0" * 2_000_000)
    with pytest.raises(SizeLimitError):
        codecs.decompress(codec, bomb, limit=100_000)


def test_unknown_codec_ids() -> None:
    for cid in (5, 6, 7):
        with pytest.raises(CompressionError, match=f"Unknown compression type id: {cid}"):
            codecs.codec_name(cid)


@pytest.mark.parametrize("value", [0, 1, -1, 63, -64, 64, 2**31 - 1, -(2**31)])
def test_varint_round_trip(value: int) -> None:
    out = bytearray()
    write_varint(value, out)
    assert read_varint(out, 0, len(out)) == (value, len(out))


@pytest.mark.parametrize("value", [0, -1, 2**63 - 1, -(2**63), 1700000000000])
def test_varlong_round_trip(value: int) -> None:
    out = bytearray()
    write_varlong(value, out)
    assert read_varlong(out, 0, len(out)) == (value, len(out))


def test_sequence_wrap() -> None:
    assert increment_sequence(2147483646, 1) == 2147483647
    assert increment_sequence(2147483646, 2) == 0
    assert increment_sequence(2147483647, 5) == 4


def test_java_utf8_surrogates() -> None:
    assert java_utf8(b"\xed\xa0\x80") == "\ufffd"
    assert java_utf8(b"\xed\xa0\x41") == "\ufffdA"
    assert java_utf8(b"\xc0\xaf") == b"\xc0\xaf".decode("utf-8", "replace")
    assert java_utf8("héllo".encode()) == "héllo"
