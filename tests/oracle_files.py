"""Comparing two partition directories file by file (tests only): the differential tests' notion of "the same".

Bytes are compared everywhere, gzip, lz4 and zstd batches included: kafkalog re-encodes them with Kafka's own bytes
(format/codecs.compress_kafka; tests/test_codecs_lz4_java.py). Only snappy is not reproducible (snappy-java links
C++ snappy 1.1.10, kafkalog the Rust port in cramjam: about 1 batch in 12 comes out a byte longer or shorter), so a
snappy batch is compared by its header fields (all but length and CRC) and its decompressed records, and index
positions are compared as "the start of the N-th batch" (the two logs' batches may then have other sizes).
"""

from __future__ import annotations

import struct
from pathlib import Path

from kafkalog_cli.format import codecs

HEADER = 61
LOOSE_CODECS = (codecs.SNAPPY,)  # the codecs whose batches are compared by their records, not their bytes


def _batches(data: bytes) -> list[tuple[int, object]]:
    """(position, comparable view) of every v2 batch and v0/v1 entry of a ``.log``; a torn tail is one opaque item."""
    out: list[tuple[int, object]] = []
    pos = 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        size = 12 + length
        magic = data[pos + 16] if pos + 16 < len(data) else -1
        if magic in (0, 1) and length >= 14 and pos + size <= len(data):
            out.append((pos, _legacy(data, pos, size, magic)))
            pos += size
            continue
        if length < 0 or pos + size > len(data) or size < HEADER or magic != 2:
            out.append((pos, ("tail", data[pos:])))
            return out
        raw = data[pos : pos + size]
        codec = struct.unpack_from(">h", raw, 21)[0] & 7
        if codec not in LOOSE_CODECS:
            out.append((pos, raw))
        else:
            records = bytes(codecs.decompress(codec, raw[HEADER:], magic=2))
            out.append((pos, ("compressed", raw[0:8], raw[12:17], raw[21:HEADER], records)))
        pos += size
    if pos < len(data):
        out.append((pos, ("tail", data[pos:])))
    return out


def _legacy(data: bytes, pos: int, size: int, magic: int) -> object:
    """A v0/v1 entry: its bytes, or for a compressed wrapper its header fields (offset, magic, attributes, v1
    timestamp, key) and its decompressed inner messages (the codec's bytes depend on the library, as for v2)."""
    raw = data[pos : pos + size]
    codec = raw[17] & 7
    if codec not in LOOSE_CODECS:
        return raw
    from kafkalog_cli.format.legacy import LegacyEntry

    key, value = LegacyEntry(data, pos).key_value(data)
    inner = bytes(codecs.decompress(codec, value or b"", magic=magic))
    return ("legacy-compressed", raw[0:8], raw[16:18], raw[18:26] if magic == 1 else b"", key, inner)


def view(d: Path) -> dict[str, object]:
    """name -> comparable view of every regular file of partition directory ``d``."""
    files = {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}
    ordinals: dict[str, dict[int, int]] = {}
    out: dict[str, object] = {}
    for name, data in files.items():
        if name.endswith(".log"):
            bs = _batches(data)
            ordinals[name[: -len(".log")]] = {pos: i for i, (pos, _) in enumerate(bs)}
            out[name] = [v for _, v in bs]
    for name, data in files.items():
        if name.endswith(".log"):
            continue
        stem, _, ext = name.partition(".")
        if ext == "index" and len(data) % 8 == 0 and stem in ordinals:
            entries = struct.iter_unpack(">ii", data)
            out[name] = [(rel, ("batch", ordinals[stem][p]) if p in ordinals[stem] else ("pos", p)) for rel, p in entries]
        else:
            out[name] = data
    return out


def differences(a: Path, b: Path) -> list[str]:
    """The names of the files that differ (or exist on one side only) between partition directories a and b."""
    va, vb = view(a), view(b)
    return sorted(n for n in set(va) | set(vb) if va.get(n) != vb.get(n))
