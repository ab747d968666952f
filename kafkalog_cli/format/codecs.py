"""Kafka's compression codecs and their framings, both directions.

* gzip (id 1): RFC 1952 stream, concatenated members accepted (Java GZIPInputStream).
* snappy (id 2): xerial snappy-java stream framing (magic ``\\x82SNAPPY\\x00``, two int32 versions, then
  length-prefixed raw snappy blocks); like snappy-java, input without that header is read as one raw block.
* lz4 (id 3): LZ4 frame with Kafka's restrictions: independent blocks only, and for magic v0 the frame's header
  checksum is skipped (Kafka 0.8/0.9 computed it over the magic too and still writes it that way for v0).
* zstd (id 4): frames usually lack a content size (Java writes them with a streaming compressor), so we
  stream-decode across frames.

Every decoder takes ``limit``: the largest decompressed size it may produce. Beyond it a SizeLimitError is raised
before the memory is allocated, so a forged or corrupt length cannot exhaust memory.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

from kafkalog_cli.errors import CompressionError, SizeLimitError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
CODEC_IDS = {name: cid for cid, name in CODEC_NAMES.items()}

DEFAULT_LIMIT = 256 * 1024 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK = 32 * 1024

LZ4_MAGIC = 0x184D2204
LZ4_BLOCK_SIZES = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}


def codec_name(codec_id: int) -> str:
    """Lower-case name of a codec id; raises CompressionError for ids 5..7 like Kafka."""
    try:
        return CODEC_NAMES[codec_id]
    except KeyError:
        raise CompressionError(f"Unknown compression type id: {codec_id}") from None


# --------------------------------------------------------------------------------------------------- xxHash32
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes | memoryview, seed: int = 0) -> int:
    """xxHash32, used only for the few bytes of an LZ4 frame descriptor (pure Python is fine there)."""
    n = len(data)
    i = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        while i + 16 <= n:
            a, b, c, d = struct.unpack_from("<IIII", data, i)
            v1 = (_rotl((v1 + a * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + b * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + c * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + d * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        (k,) = struct.unpack_from("<I", data, i)
        h = (_rotl((h + k * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


# --------------------------------------------------------------------------------------------------- decoders
def _too_big(codec: str, limit: int) -> SizeLimitError:
    return SizeLimitError(
        f"{codec} payload decompresses to more than the {limit}-byte cap",
        expected=f"at most {limit} bytes",
        found="more",
    )


STEP = 1 << 20  # decompressed bytes produced per call: the output grows in place, never held twice


def decompress_gzip(data: bytes | memoryview, limit: int = DEFAULT_LIMIT) -> bytearray:
    """Inflate gzip members (as Java's GZIPInputStream does) into one growing buffer, STEP bytes at a time, so that
    a bomb costs at most ``limit`` + STEP bytes before it is refused (never a second copy of the output, nor of the
    input). The pieces are ``iter_decompress``'s: it used to loop forever on a member that ends in a call cut at
    STEP bytes with bytes after it (zlib then keeps ``unconsumed_tail`` set after ``eof``)."""
    out = bytearray()
    for chunk in _gzip_chunks(data, limit):
        out += chunk
    return out


def _snappy_raw(block: bytes | memoryview, limit: int) -> bytes | memoryview:
    import cramjam

    try:
        size = cramjam.snappy.decompress_raw_len(bytes(block))
    except Exception as exc:  # cramjam raises its own error type
        raise CompressionError(f"snappy block header is corrupt: {exc}") from None
    if size > limit:
        raise _too_big("snappy", limit)
    try:
        return memoryview(cramjam.snappy.decompress_raw(bytes(block)))  # no copy of a large block
    except Exception as exc:
        raise CompressionError(f"snappy decompression failed: {exc}") from None


def _snappy_blocks(data: bytes | memoryview, limit: int) -> Iterator[bytes | memoryview]:
    """The decoded blocks of a xerial snappy stream (one raw block without that header)."""
    buf = memoryview(data)
    if len(buf) < 16 or buf[:8] != XERIAL_MAGIC:
        yield _snappy_raw(buf, limit)
        return
    pos, total = 16, 0
    n = len(buf)
    while pos + 4 <= n:
        # snappy-java >= 1.1.x skips a repeated stream header (concatenated streams)
        if buf[pos : pos + 8] == XERIAL_MAGIC and pos + 16 <= n:
            pos += 16
            continue
        (clen,) = struct.unpack_from(">i", buf, pos)
        pos += 4
        if clen < 0 or pos + clen > n:
            raise CompressionError(
                "snappy chunk runs past the end of the payload",
                expected=f"{clen} bytes of chunk",
                found=f"{n - pos} bytes",
            )
        piece = _snappy_raw(buf[pos : pos + clen], limit - total)
        total += len(piece)
        yield piece
        pos += clen


def decompress_snappy(data: bytes | memoryview, limit: int = DEFAULT_LIMIT) -> bytes | bytearray | memoryview:
    buf = bytes(data)
    if len(buf) < 16 or buf[:8] != XERIAL_MAGIC:
        return _snappy_raw(buf, limit)
    out = bytearray()
    for piece in _snappy_blocks(buf, limit):
        out += piece
    return out


def decompress_lz4(data: bytes | memoryview, limit: int = DEFAULT_LIMIT, *, check_header: bool = True) -> bytearray:
    """Decode one Kafka LZ4 frame; ``check_header=False`` for magic v0 (the broken-HC quirk)."""
    out = bytearray()
    for piece in _lz4_blocks(data, limit, check_header):
        out += piece
    return out


def _lz4_blocks(data: bytes | memoryview, limit: int, check_header: bool) -> Iterator[bytes | memoryview]:
    import lz4.block

    buf = memoryview(data)  # no copy of the compressed bytes: a large payload is in the mapped segment already
    n = len(buf)
    if n < 6:
        raise CompressionError("lz4 stream ended prematurely (frame header)")
    (magic,) = struct.unpack_from("<I", buf, 0)
    if magic != LZ4_MAGIC:
        raise CompressionError("lz4 frame magic is wrong", expected=hex(LZ4_MAGIC), found=hex(magic))
    flg, bd = buf[4], buf[5]
    if flg & 0x03:
        raise CompressionError("lz4 frame descriptor: reserved bits must be 0", found=hex(flg))
    if (flg >> 6) != 1:
        raise CompressionError("lz4 frame descriptor: version unsupported", expected="1", found=str(flg >> 6))
    if not flg & 0x20:
        raise CompressionError("lz4 frame: dependent block stream is unsupported", found=f"FLG {flg:#04x}")
    if bd & 0x8F:
        raise CompressionError("lz4 frame descriptor: reserved BD bits must be 0", found=hex(bd))
    size_id = (bd >> 4) & 0x07
    if size_id not in LZ4_BLOCK_SIZES:
        raise CompressionError("lz4 block size id must be between 4 and 7", found=str(size_id))
    max_block = LZ4_BLOCK_SIZES[size_id]
    pos = 6
    if flg & 0x08:
        pos += 8
    if pos >= n:
        raise CompressionError("lz4 stream ended prematurely (frame descriptor)")
    if check_header:
        hc = (xxh32(buf[4:pos]) >> 8) & 0xFF
        if buf[pos] != hc:
            raise CompressionError("lz4 stream frame descriptor corrupted", expected=hex(hc), found=hex(buf[pos]))
    pos += 1
    block_checksum = bool(flg & 0x10)
    total = 0
    while True:
        if pos + 4 > n:
            raise CompressionError("lz4 stream ended prematurely (no end mark)")
        (word,) = struct.unpack_from("<I", buf, pos)
        pos += 4
        if word == 0:
            break
        size = word & 0x7FFFFFFF
        if size > max_block:
            raise CompressionError("lz4 block size exceeded max", expected=f"<= {max_block}", found=str(size))
        if pos + size > n:
            raise CompressionError("lz4 stream ended prematurely (block)", expected=f"{size} bytes", found=f"{n - pos}")
        block = buf[pos : pos + size]
        pos += size
        if word & 0x80000000:
            piece = block
        else:
            try:
                piece = lz4.block.decompress(block, uncompressed_size=max_block)
            except Exception as exc:
                raise CompressionError(f"lz4 block decompression failed: {exc}") from None
        if total + len(piece) > limit:
            raise _too_big("lz4", limit)
        total += len(piece)
        yield piece
        if block_checksum:
            pos += 4


def decompress_zstd(data: bytes | memoryview, limit: int = DEFAULT_LIMIT) -> bytearray:
    import zstandard

    out = bytearray()
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(bytes(data), read_across_frames=True)
        while True:
            chunk = reader.read(min(1 << 20, limit - len(out) + 1))
            if not chunk:
                break
            out += chunk
            if len(out) > limit:
                raise _too_big("zstd", limit)
    except zstandard.ZstdError as exc:
        raise CompressionError(f"zstd decompression failed: {exc}") from None
    return out


# A compressed payload this large is decoded as a stream (``iter_decompress``) instead of into one buffer: with a
# payload near the cap, holding the compressed bytes, their copy and the output at once was 3x the cap (issue 27).
# Below it, the whole output (<= the cap) plus the compressed bytes stays under the cap + 2 x STREAM_THRESHOLD.
STREAM_THRESHOLD = 16 << 20


def streams(codec: int, compressed_size: int) -> bool:
    """Whether a payload of ``compressed_size`` bytes in ``codec`` is decoded as a stream."""
    return codec != NONE and compressed_size >= STREAM_THRESHOLD


def _gzip_chunks(data: bytes | memoryview, limit: int) -> Iterator[bytes]:
    view = memoryview(data)
    pos, total = 0, 0
    try:
        while pos < len(view):
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            full = False  # the last call filled STEP: output may be pending without more input
            while not d.eof:
                src: bytes | memoryview
                if d.unconsumed_tail:
                    src = d.unconsumed_tail
                elif full:
                    src = b""
                else:
                    src = view[pos:pos + STEP]
                    if not src:
                        raise CompressionError("gzip stream ended prematurely (Unexpected end of ZLIB input stream)")
                    pos += len(src)
                chunk = d.decompress(src, STEP)
                full = len(chunk) == STEP
                total += len(chunk)
                if total > limit:
                    raise _too_big("gzip", limit)
                if chunk:
                    yield chunk
            tail = d.unused_data
            pos -= len(tail)
            # Java's GZIPInputStream stops at trailing bytes that are not another gzip member
            if bytes(view[pos:pos + 2]) != b"\x1f\x8b":
                break
    except zlib.error as exc:
        raise CompressionError(f"gzip decompression failed: {exc}") from None


def _zstd_chunks(data: bytes | memoryview, limit: int) -> Iterator[bytes]:
    import zstandard

    total = 0
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(memoryview(data), read_across_frames=True)
        while True:
            chunk = reader.read(STEP)
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                raise _too_big("zstd", limit)
            yield chunk
    except zstandard.ZstdError as exc:
        raise CompressionError(f"zstd decompression failed: {exc}") from None


def iter_decompress(codec: int, data: bytes | memoryview, limit: int = DEFAULT_LIMIT, *,
                    magic: int = 2) -> Iterator[bytes | bytearray | memoryview]:
    """``decompress`` as a sequence of pieces (about STEP bytes each for gzip and zstd), so that a large payload is
    never held whole: the same bytes, the same errors and the same cap (raised once the output passes it). lz4 and
    snappy yield their frames' blocks (<= 4 MiB; a snappy payload without the xerial header is one raw block)."""
    if codec == GZIP:
        yield from _gzip_chunks(data, limit)
    elif codec == ZSTD:
        yield from _zstd_chunks(data, limit)
    elif codec == LZ4:
        yield from _lz4_blocks(data, limit, magic != 0)
    elif codec == SNAPPY:
        yield from _snappy_blocks(data, limit)
    else:
        yield decompress(codec, data, limit, magic=magic)


def decompress(codec: int, data: bytes | memoryview, limit: int = DEFAULT_LIMIT, *,
               magic: int = 2) -> bytes | bytearray | memoryview:
    """Decompress a batch payload (v2) or a wrapper message value (v0/v1). The result is bytes-like (often the
    growing buffer itself: no final copy, so a bomb at the cap is held once)."""
    if codec == GZIP:
        return decompress_gzip(data, limit)
    if codec == SNAPPY:
        return decompress_snappy(data, limit)
    if codec == LZ4:
        return decompress_lz4(data, limit, check_header=magic != 0)
    if codec == ZSTD:
        return decompress_zstd(data, limit)
    if codec == NONE:
        return bytes(data)
    raise CompressionError(f"Unknown compression type id: {codec}")


# --------------------------------------------------------------------------------------------------- encoders
def compress_gzip(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, mtime=0)


def compress_snappy(data: bytes) -> bytes:
    import cramjam

    out = bytearray(XERIAL_HEADER)
    for i in range(0, max(len(data), 1), XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(data[i : i + XERIAL_BLOCK]))
        out += struct.pack(">i", len(block))
        out += block
    return bytes(out)


def compress_lz4(data: bytes, *, magic: int = 2) -> bytes:
    """Kafka's LZ4 frame: FLG 0x60 (v1, independent blocks), BD 0x40 (64 KiB), no checksums.

    The blocks are liblz4's frame compressor's (``lz4.frame``), not ``lz4.block``'s: Kafka's Lz4BlockOutputStream
    compresses each 64 KiB block with lz4-java's fastCompressor, which for an input under 64 KiB + 11 bytes uses
    LZ4's 16-bit position table and 4-byte hash (LZ4_compress_fast_extState's byU16 path). ``lz4.frame`` with
    independent 64 KiB blocks takes that path and gives lz4-java 1.11's bytes exactly (tests/test_codecs_lz4_java.py);
    ``lz4.block.compress`` takes the 32-bit table with the 5-byte hash and framed other sizes (about 8% larger), so
    a batch the cleaner re-encodes came out with other bytes than Kafka's. A block that does not shrink is stored
    raw in both (Lz4BlockOutputStream: compressedLength >= bufferOffset; LZ4F: no room below the input's size).
    For magic v0 the header checksum is computed the broken way Kafka does it (over magic + FLG + BD).
    """
    import lz4.frame

    frame = lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                               content_checksum=False, block_checksum=False, store_size=False, compression_level=0)
    flg, bd = 0x60, 0x40
    header = struct.pack("<I", LZ4_MAGIC) + bytes([flg, bd])
    if frame[:6] != header or not frame.endswith(b"\x00\x00\x00\x00"):
        raise CompressionError("lz4.frame wrote another frame layout than Kafka's",
                               expected=header.hex(), found=bytes(frame[:6]).hex())
    hc_input = header if magic == 0 else header[4:]
    return header + bytes([(xxh32(hc_input) >> 8) & 0xFF]) + frame[7:]


def compress_zstd(data: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor(level=3, write_content_size=False).compress(data)


JAVA_GZIP_HEADER = bytes.fromhex("1f8b08000000000000ff")  # java.util.zip.GZIPOutputStream's (no mtime, OS 255)


def compress_kafka(codec: int, data: bytes, *, magic: int = 2) -> bytes:
    """``compress`` with Kafka 4.0's own bytes where they are reproducible, for the batches a repair re-encodes in
    place of the broker (compact): gzip as GzipCompression writes it (GZIPOutputStream's header, Deflater's default
    level 6, CRC-32 and size), zstd as zstd-jni's stream under ZstdCompression (level 3, the data in blocks not
    marked last because the builder's close flushes, then an empty last block). Checked byte for byte against the
    batches of kafka-real (1eb7644): 284 of 284 gzip, 238 of 238 zstd. lz4 as ``compress`` (already Kafka's bytes:
    compress_lz4); snappy as ``compress`` (cramjam's snappy: not always snappy-java's bytes, docs/testing.md)."""
    import zlib

    if codec == GZIP:
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        body = c.compress(data) + c.flush()
        return JAVA_GZIP_HEADER + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    if codec == ZSTD:
        import zstandard

        z = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
        return z.compress(data) + z.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK) + z.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH)
    return compress(codec, data, magic=magic)


def compress(codec: int, data: bytes, *, magic: int = 2) -> bytes:
    if codec == NONE:
        return data
    if codec == GZIP:
        return compress_gzip(data)
    if codec == SNAPPY:
        return compress_snappy(data)
    if codec == LZ4:
        return compress_lz4(data, magic=magic)
    if codec == ZSTD:
        if magic < 2:
            raise CompressionError("zstd is not allowed in message format v0/v1")
        return compress_zstd(data)
    raise CompressionError(f"Unknown compression type id: {codec}")
