"""The compiled NDJSON run (``_accel.export_ndjson_run`` through ``NdjsonSink.run`` and ``Exporter._file``): whole
runs of plain v2 batches in one call give exactly the bytes and the summary of the per-batch paths, on generated
partitions with transactions, compression, corrupt batches, offsets that go back, log-append time, several
segments and merged directories; and the run really takes batches (the comparison is not vacuous)."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from partition_gen import random_partition

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format import codecs
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.render import export_accel
from kafkalog_cli.storage import accel

pytestmark = pytest.mark.skipif(accel.module() is None or not hasattr(accel.module(), "export_ndjson_run"),
                                reason="the compiled accelerator is not built")


def _export(tmp: Path, name: str, args: list[str], mode: str, monkeypatch) -> tuple[bytes, dict]:
    calls = {"batches": 0}
    with monkeypatch.context() as m:
        if mode == "python":
            m.setenv("KAFKALOG_NO_ACCEL", "1")
        elif mode == "per-batch":
            m.setattr(export_accel, "ndjson_run", lambda: None)
        else:
            real = export_accel.ndjson_run()

            def counted(*a):
                got = real(*a)
                calls["batches"] += got[3]
                return got

            m.setattr(export_accel, "ndjson_run", lambda: counted)
        out = tmp / f"{name}-{mode}.ndjson"
        r = CliRunner().invoke(cli, ["export", *args, "--out", str(out), "--summary-format", "json"],
                               catch_exceptions=False)
    assert r.exit_code in (0, 1), r.output
    doc = json.loads(r.output)
    doc.pop("out")
    for p in doc["partitions"]:
        p.pop("output")
    doc["run_batches"] = calls["batches"]
    return out.read_bytes(), doc


def _same_three_ways(tmp_path, args, monkeypatch, name="o") -> int:
    run_bytes, run_doc = _export(tmp_path, name, args, "run", monkeypatch)
    taken = run_doc.pop("run_batches")
    for mode in ("per-batch", "python"):
        b, d = _export(tmp_path, name, args, mode, monkeypatch)
        d.pop("run_batches")
        assert b == run_bytes, mode
        assert d == run_doc, mode
    return taken


def _messy_segment(path: Path, seed: int) -> None:
    """Plain, compressed, transactional (with markers), log-append-time batches; corrupt CRCs; an offset that goes
    back (a duplicate range); zero-record batch; garbage between batches."""
    rnd = random.Random(seed)
    path.mkdir(parents=True)
    data = b""
    off = 0
    for n in range(120):
        recs = [RecordSpec(f"k{off + i}".encode(), rnd.choice([b"v", b"\xff\xfe", "\u2603".encode(), None]),
                           headers=[("h", b"x")] if i % 3 == 0 else [], timestamp=1_700_000_000_000 + off + i)
                for i in range(rnd.randint(1, 5))]
        kind = rnd.random()
        txn = kind < 0.1
        codec = codecs.LZ4 if 0.1 <= kind < 0.2 else codecs.NONE
        base = off - 3 if 0.2 <= kind < 0.25 and off > 3 else off  # offsets going back: duplicates
        b = bytearray(encode_batch(recs, base_offset=base, codec=codec, timestamp_type=1 if n % 9 == 4 else 0,
                                   transactional=txn, producer_id=5 if txn else -1, producer_epoch=0 if txn else -1,
                                   base_sequence=0 if txn else -1, partition_leader_epoch=n // 40))
        if 0.25 <= kind < 0.3:
            b[-1] ^= 1  # CRC mismatch
        data += bytes(b)
        if 0.3 <= kind < 0.32:
            data += b"\x00garbage\x01" * 3
        off = max(off, base + len(recs))
    (path / "00000000000000000000.log").write_bytes(data)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_messy_segments_the_same_three_ways(tmp_path, monkeypatch, seed):
    _messy_segment(tmp_path / "t-0", seed)
    taken = _same_three_ways(tmp_path, [str(tmp_path / "t-0")], monkeypatch)
    assert taken > 0
    _same_three_ways(tmp_path, [str(tmp_path / "t-0"), "--isolation", "read_uncommitted", "--keep-control"],
                     monkeypatch, name="u")


@pytest.mark.parametrize("seed", [4, 5])
def test_generated_partitions_and_merged_copies_the_same_three_ways(tmp_path, monkeypatch, seed):
    d = tmp_path / "a" / "orders-0"
    random_partition(str(d), seed, batches=80, codec_choices=(0, 0, 0, 3))
    assert _same_three_ways(tmp_path, [str(d)], monkeypatch) > 0
    shutil.copytree(d, tmp_path / "b" / "orders-0")
    os.unlink(sorted((tmp_path / "b" / "orders-0").glob("*.log"))[0])
    _same_three_ways(tmp_path, [str(d), str(tmp_path / "b" / "orders-0"), "--merge"], monkeypatch, name="m")
