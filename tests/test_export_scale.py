"""What the scale runs (bench/export_scale_bench.py) made us change, checked without timing anything.

``export --format kafka`` used to map each segment it had written and run ``rebuild_segment`` over it for the
indexes: a 1 GiB segment made the export 1 GiB resident (peak RSS 1,045 MiB for a 1 GiB partition, 148 MiB for
128 MiB). It now feeds ``broker/log_segment.IndexBuilder`` each batch as it writes it; these tests hold it to the
reference rule (``rebuild_segment_py``, and the compiled ``rebuild_segment``) byte for byte, problems included. The
leader-epoch list it kept per batch is now kept per epoch.
"""

from __future__ import annotations

import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from partition_gen import random_partition

from kafkalog_cli.broker.log_segment import IndexBuilder, rebuild_segment, rebuild_segment_py
from kafkalog_cli.format.encoder import RecordSpec, encode_batch

ROOT = Path(__file__).resolve().parent.parent


def _batches(log: bytes) -> list[tuple[int, int, int]]:
    """(last offset, max timestamp, size) of each v2 batch of a log."""
    out, pos = [], 0
    while pos + 12 <= len(log):
        base, length = struct.unpack_from(">qi", log, pos)
        delta, = struct.unpack_from(">i", log, pos + 23)
        max_ts, = struct.unpack_from(">q", log, pos + 35)
        out.append((base + delta, max_ts, 12 + length))
        pos += 12 + length
    return out


def _fed(log: bytes, base: int, interval: int, index_bytes: int):  # noqa: ANN202
    ib = IndexBuilder(base, interval, file="x", segment_index_bytes=index_bytes)
    for last, ts, size in _batches(log):
        ib.add(last, ts, size)
    return ib.finish(len(log))


def _same(a, b) -> None:  # noqa: ANN001
    assert (a.index, a.timeindex, a.valid_bytes, a.batches, a.last_offset) == \
        (b.index, b.timeindex, b.valid_bytes, b.batches, b.last_offset)
    assert (a.problem is None) == (b.problem is None), (a.problem, b.problem)
    if a.problem is not None:
        assert (a.problem.message, a.problem.position, a.problem.expected, a.problem.found) == \
            (b.problem.message, b.problem.position, b.problem.expected, b.problem.found)


def _log(rng: random.Random, n: int, base: int, ts_mode: str) -> bytes:
    out = bytearray()
    off = base
    ts = 1_700_000_000_000
    for _ in range(n):
        k = rng.randint(1, 8)
        if ts_mode == "down":
            ts -= rng.randint(0, 50)
        elif ts_mode == "random":
            ts = 1_700_000_000_000 + rng.randint(-1000, 1000)
        elif ts_mode == "none":
            ts = -1
        else:
            ts += rng.randint(0, 50)
        recs = [RecordSpec(b"k%d" % i, b"v" * rng.randint(0, 700), timestamp=ts + i if ts >= 0 else -1,
                           offset_delta=i) for i in range(k)]
        out += encode_batch(recs, base_offset=off, partition_leader_epoch=0)
        off += k + rng.choice([0, 0, 0, 5])  # offset gaps, as a compacted log has
        if rng.random() < 0.01:
            off += 2**30  # past the segment's 32-bit relative range after two of these
    return bytes(out)


@pytest.mark.parametrize("seed", range(60))
def test_index_builder_is_the_recovery_rule(seed: int) -> None:
    rng = random.Random(seed)
    base = rng.choice([0, 1000, 2**31 - 50])  # the last one leaves the 32-bit relative range
    log = _log(rng, rng.randint(1, 300), base, rng.choice(["up", "up", "down", "random", "none"]))
    interval = rng.choice([0, 1, 100, 4096, 10**9])
    index_bytes = rng.choice([10 * 1024 * 1024, 80, 24, 8])  # small: the capacity stops
    base += rng.choice([0, 0, 0, 3])  # a segment base above its first batch: offsets below the relative range
    want = rebuild_segment_py(log, base, interval, file="x", segment_index_bytes=index_bytes)
    _same(_fed(log, base, interval, index_bytes), want)
    _same(rebuild_segment(log, base, interval, file="x", segment_index_bytes=index_bytes), want)


def test_kafka_export_indexes_are_the_rebuilt_ones(tmp_path: Path) -> None:
    """End to end: every segment of a Kafka-format export has exactly the indexes rebuild_segment gives its .log."""
    for p in range(3):
        random_partition(str(tmp_path / "logs" / f"orders-{p}"), 70 + p, batches=80, roll_every=20)
    out = tmp_path / "restored"
    r = subprocess.run([sys.executable, "-m", "kafkalog_cli", "export", str(tmp_path / "logs"), "--format", "kafka",
                        "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    logs = sorted(out.glob("*/*.log"))
    assert len(logs) >= 9
    for log in logs:
        rb = rebuild_segment_py(log.read_bytes(), int(log.stem), file=str(log))
        assert rb.problem is None
        assert log.with_suffix(".index").read_bytes() == rb.index, log
        assert log.with_suffix(".timeindex").read_bytes() == rb.timeindex, log


def _mappings() -> int:
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)


def test_closed_output_files_release_their_buffers(tmp_path: Path) -> None:
    """An export of N partitions opens N output files (``Destination.open_file``, one ``DirectWriter`` each, three
    4 MiB chunk buffers): once closed, their buffers are unmapped and the Destination forgets them, so the process's
    mappings and memory do not grow with N (20,000 partitions held 60,000 mappings, near vm.max_map_count)."""
    from kafkalog_cli.ops.export import Destination

    dest = Destination(str(tmp_path / "out"), directory=True)
    before = _mappings()
    for i in range(300):
        w = dest.open_file(dest.path(f"p-{i}.ndjson"))
        w.write(b"x" * (5000 + i))
        w.close()
    assert _mappings() - before < 30, "the closed writers' buffers are still mapped"
    assert len(dest._writers) <= 1
    w = dest.open_file(dest.path("aborted.ndjson"))
    w.write(b"y" * 100)
    dest.abort()  # an open writer is still stopped by abort
    assert w.closed and not (tmp_path / "out.kafkalog-partial").exists()
    assert _mappings() - before < 30


def test_replay_walk_gives_back_the_pages_behind_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """replay's walks of a partition's segments (the transaction pass and the records pass) release the mapped
    pages behind them (a 1 GiB segment made the replay 1.1 GiB resident), and what they read is the same."""
    from kafkalog_cli.ops import replay as rp
    from kafkalog_cli.ops import replay_source as rs
    from kafkalog_cli.storage.segment import MappedFile

    pdir = tmp_path / "orders-0"
    pdir.mkdir()
    with open(pdir / ("0" * 20 + ".log"), "wb") as f:
        for b in range(60):
            recs = [RecordSpec(b"k%d" % i, b"v%d-" % (b * 50 + i) * 40, timestamp=1_700_000_000_000 + i,
                               offset_delta=i) for i in range(50)]
            f.write(encode_batch(recs, base_offset=b * 50))
    size = (pdir / ("0" * 20 + ".log")).stat().st_size
    opts = rp.ReplayOptions(bootstrap="127.0.0.1:1", topic="t", state_dir=str(tmp_path / "st"))

    def read() -> list:
        sources, _ = rp.open_sources([str(pdir)])
        return [(r.partition, r.offset, r.key, r.value, r.timestamp) for r, _dp in rp.stream(sources, opts, 4)]

    whole = read()
    calls: list[tuple[int, int]] = []
    real = MappedFile.release_pages

    def spy(self: MappedFile, start: int, length: int) -> bool:
        calls.append((start, length))
        return real(self, start, length)

    monkeypatch.setattr(rs, "RELEASE_STEP", 64 << 10)
    monkeypatch.setattr(MappedFile, "release_pages", spy)
    assert read() == whole and len(whole) == 3000
    # both passes released nearly the whole segment behind them, in order, page-aligned
    assert sum(n for _s, n in calls) >= 2 * (size - 2 * (64 << 10) - 8192), (calls, size)
    assert all(s % 4096 == 0 and n > 0 for s, n in calls)
