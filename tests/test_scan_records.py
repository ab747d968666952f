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


# ------------------------------------------------------------------------------------- window facts (scan_table)
def _fact_segments(root: Path, seed: int) -> list[str]:
    """Two segments of one partition with producers, sequence gaps and wraps, timestamps going back, control and
    empty batches; the second segment's base offset below the first's last offset (segment-order)."""
    import random

    rnd = random.Random(seed)
    part = root / f"facts{seed}-0"
    part.mkdir()
    seqs: dict[tuple[int, int], int] = {}
    off = 0
    paths = []
    for seg_no in range(2):
        batches = []
        base_name = off - 5 if seg_no else 0
        for _ in range(300):
            pid, ep = rnd.choice([-1, 3, 4] + ([5 + rnd.randint(0, 30)] if rnd.random() < 0.1 else [])), rnd.choice([0, 1])
            n = rnd.randint(1, 3)
            seq = seqs.get((pid, ep), 0) + (rnd.choice([-2, 4]) if rnd.random() < 0.05 else 0)
            if rnd.random() < 0.02:
                seq = 2147483647 - 1
            ts = TS + off * 10 - (rnd.choice([0, 0, 0, 50_000]) if rnd.random() < 0.1 else 0)
            kind = rnd.random()
            recs = [] if kind < 0.03 else [RecordSpec(key=b"k", value=b"v", timestamp=ts + i) for i in range(n)]
            batches.append(encode_batch(recs, base_offset=off, producer_id=pid,
                                        producer_epoch=ep if pid >= 0 else -1,
                                        base_sequence=seq if pid >= 0 else -1, control=0.03 <= kind < 0.06,
                                        codec=rnd.choice([codecs.NONE, codecs.LZ4]),
                                        partition_leader_epoch=rnd.choice([1, 2, -1]),
                                        last_offset_delta=max(len(recs), 1) - 1))
            if pid >= 0:
                last = seq + max(len(recs), 1) - 1
                seqs[(pid, ep)] = (last - 2147483648 + 1) if last >= 2147483647 else last + 1
            off += max(len(recs), 1)
        p = part / f"{base_name:020d}.log"
        p.write_bytes(b"".join(batches))
        paths.append(str(p))
    return paths


@pytest.mark.parametrize("seed", [1, 2])
def test_window_facts_give_the_problems_and_report_of_the_rows(tmp_path: Path, seed: int) -> None:
    """The partition pass and the report from scan_table's facts equal what the same chunks give without them
    (the columnar and row paths), with windows of every size (state carried across many chunks)."""
    from kafkalog_cli.scan.columns import facts_of, strip_facts
    from kafkalog_cli.scan.partition import PartitionPass
    from kafkalog_cli.scan.summary import Summary

    paths = _fact_segments(tmp_path, seed)
    for window in (700, 5000, 1 << 22):
        chunks = [t for p in paths for name, t in scan_segment_chunks(p, window=window) if name == "batches"]
        assert any(facts_of(t) is not None for t in chunks)
        with_facts, without = PartitionPass(), PartitionPass()
        got = [p for t in chunks for p in with_facts.feed(t)]
        want = [p for t in chunks for p in without.feed(strip_facts(t))]
        assert got == want, window
        assert {p["kind"] for p in want} == {"segment-order", "sequence-gap", "timestamp-order"}
        s1, s2 = Summary(paths), Summary(paths)
        for t in chunks:
            s1.add("batches", t)
            s2.add("batches", strip_facts(t))
        assert s1.result() == s2.result(), window


def test_facts_of_a_changed_table_are_not_used(tmp_path: Path) -> None:
    from kafkalog_cli.scan.columns import facts_of

    path = _fact_segments(tmp_path, 3)[0]
    t = next(t for name, t in scan_segment_chunks(path) if name == "batches")
    assert facts_of(t) is not None and facts_of(t.slice(1)) is None


def test_a_batch_appended_after_the_verify_pass_has_its_crc_checked(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk trusts verify's checksums only for the file size verify saw; a corrupt batch appended between the
    two passes (a live broker) still gets crc_ok = false, with the accelerator and without."""
    part = tmp_path / "grow-0"
    part.mkdir()
    seg = part / "00000000000000000000.log"
    good = b"".join(encode_batch(_recs(3, f"g{i}"), base_offset=i * 10) for i in range(4))
    bad = bytearray(encode_batch(_recs(3, "late"), base_offset=40))
    bad[-2] ^= 0xFF  # CRC no longer matches
    real = extract.open_segment

    def open_then_append(path: str) -> tuple[int, int]:
        with open(path, "ab") as f:
            f.write(bad)
        return real(path)

    for use_accel in (True, False):
        seg.write_bytes(good)
        monkeypatch.setattr(extract, "open_segment", open_then_append)
        rows = _rows(seg, use_accel=use_accel)
        assert [b["crc_ok"] for b in rows["batches"]] == [True] * 4 + [False], use_accel
        assert rows["batches"][-1]["position"] == len(good)
        assert not [r for r in rows["records"] if r["batch_position"] == len(good)]
        assert len(rows["records"]) == 12
