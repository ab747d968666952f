"""``scan --records`` through the compiled record walk (``accel/scan_records.c``, ``scan/records.py``): identical rows
and problems to the pure-Python walk, the reference, on every codec, on nulls and headers, and on malformed records
(where the C walk must decline and the Python walk produce the rows and the problem)."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalog_cli.format import codecs
from kafkalog_cli.format.crc import crc32c
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.scan import extract
from kafkalog_cli.scan.extract import scan_segment_chunks
from kafkalog_cli.storage import accel

pytestmark = pytest.mark.skipif(accel.module() is None or not hasattr(accel.module(), "scan_records_run"),
                                reason="the compiled accelerator is not built")
TS = 1_700_000_000_000


def _recs(n: int, tag: str, **kw: object) -> list[RecordSpec]:
    return [RecordSpec(key=None if i % 3 == 2 else f"{tag}-k{i}".encode(), value=None if i % 4 == 3 else b"v" * i,
                       timestamp=TS + i * 7, headers=[("h1", b"x"), ("ключ", None)] if i % 2 else [], **kw)
            for i in range(n)]


def _refix_crc(batch: bytes) -> bytes:
    """``batch`` with a CRC that matches its (possibly altered) bytes: malformed records behind a sound checksum."""
    b = bytearray(batch)
    struct.pack_into(">I", b, 17, crc32c(bytes(b[21:])))
    return bytes(b)


def _segment(path: Path) -> tuple[int, int]:
    """A segment of varied batches; returns (batches, batches with malformed records)."""
    batches: list[bytes] = []
    off = 0

    def add(recs: list[RecordSpec], **kw: object) -> None:
        nonlocal off
        batches.append(encode_batch(recs, base_offset=off, **kw))
        off += max(len(recs), 1) + 2

    for codec in (codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD):
        add(_recs(5, f"c{codec}"), codec=codec)
        add(_recs(3, f"t{codec}"), codec=codec, timestamp_type=1, max_timestamp=TS + 99)  # LogAppendTime
    add([RecordSpec(key=b"k", value=b"v", timestamp=TS, headers=[(b"\xff\xfebad", b"v")])])  # not UTF-8: replaced
    add([RecordSpec(key=b"", value=b"", timestamp=-1)])  # empty key, timestamp -1 -> null
    add([], base_timestamp=-1)  # the cleaner's empty batch: no records
    add(_recs(40, "many"), producer_id=7, producer_epoch=0, base_sequence=0)
    bad = 0
    # malformed behind a sound CRC: fewer records than declared (uncompressed: the good ones, then a problem)
    add(_recs(2, "short"), records_count=3)
    bad += 1
    # more records than declared: "records still remaining"
    add(_recs(2, "long"), records_count=1)
    bad += 1
    # the same, compressed: no rows, one problem
    add(_recs(2, "zshort"), records_count=3, codec=codecs.LZ4)
    bad += 1
    # the first record's length varint one more than its body (zigzag: + 2)
    b = bytearray(encode_batch(_recs(2, "cut"), base_offset=off))
    b[61] += 2
    batches.append(_refix_crc(bytes(b)))
    off += 4
    bad += 1
    # garbage compressed payload (decompression fails)
    g = bytearray(encode_batch(_recs(3, "garbage"), base_offset=off, codec=codecs.GZIP))
    g[70:80] = b"\x00" * 10
    batches.append(_refix_crc(bytes(g)))
    off += 5
    bad += 1
    add(_recs(6, "after"))  # the walk goes on
    path.write_bytes(b"".join(batches))
    return len(batches), bad


def _rows(path: Path, **kw: object) -> dict[str, list]:
    out: dict[str, list] = {"batches": [], "problems": [], "records": []}
    for name, t in scan_segment_chunks(str(path), records=True, **kw):
        out[name].extend(t.to_pylist())
    return out


@pytest.fixture(scope="module")
def segment(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, int]:
    part = tmp_path_factory.mktemp("rec") / "rec-0"
    part.mkdir()
    seg = part / "00000000000000000000.log"
    n, bad = _segment(seg)
    return seg, n, bad


@pytest.mark.parametrize("window", [64, 999, 1 << 22])
def test_compiled_record_walk_equals_the_python_walk(segment: tuple[Path, int, int], window: int,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    seg, n, bad = segment
    reference = _rows(seg, use_accel=False)
    assert len(reference["batches"]) == n
    kinds = [p["kind"] for p in reference["problems"]]
    assert kinds.count("bad-records") == bad, reference["problems"]
    assert any(r["timestamp"] is None for r in reference["records"])
    assert any("\ufffd" in k for r in reference["records"] for k in r["header_keys"])
    # count the batches the Python walk decodes with the accelerator on: only the ones C declines
    calls: list[int] = []
    real = extract._SegmentScan._records_of

    def spy(self, w, base, positions, oks):  # type: ignore[no-untyped-def]
        calls.extend(positions)
        return real(self, w, base, positions, oks)

    monkeypatch.setattr(extract._SegmentScan, "_records_of", spy)
    got = _rows(seg, use_accel=True, window=window)
    assert got == reference
    # the malformed batches and the one with a non-UTF-8 header key; nothing else goes the Python way
    assert len(set(calls)) == bad + 1, calls


def test_records_equal_with_kafkalog_no_accel(segment: tuple[Path, int, int], tmp_path: Path) -> None:
    """The CLI end to end, KAFKALOG_NO_ACCEL=1 against the accelerator: the same records dataset."""
    import pyarrow.parquet as pq

    seg, _n, _bad = segment
    tables = {}
    for flag in ("0", "1"):
        out = tmp_path / f"out{flag}"
        env = {**os.environ, "KAFKALOG_NO_ACCEL": flag} if flag == "1" else {
            k: v for k, v in os.environ.items() if k != "KAFKALOG_NO_ACCEL"}
        res = subprocess.run([sys.executable, "-m", "kafkalog_cli", "scan", str(seg.parent), "--out", str(out),
                              "--records", "--jobs", "1"], capture_output=True, text=True, env=env)
        assert res.returncode == 1, res.stderr  # the bad-records problems
        tables[flag] = pq.read_table(out / "records", partitioning=None).to_pylist()
    assert tables["0"] == tables["1"] and len(tables["0"]) > 60
