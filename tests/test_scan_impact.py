"""``scan --low-impact`` leaves the page cache as it found it (pages the scan brought in are dropped, pages that
were cached before stay), and ``--max-read-rate`` bounds the average read rate. Measured with mincore on the real
page cache of this machine; skipped where mincore or posix_fadvise is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.scan import impact

KAFKALOG = [sys.executable, "-m", "kafkalog_cli"]

if not hasattr(os, "posix_fadvise") or impact.resident(__file__) is None:
    pytest.skip("needs mincore and posix_fadvise (Linux)", allow_module_level=True)


def make_big_partition(root: Path, segments: int, mib: int) -> list[Path]:
    """``segments`` segments of about ``mib`` MiB each (64 KiB incompressible records), written and evicted."""
    part = root / "kafka-logs" / "big-0"
    part.mkdir(parents=True)
    paths, offset = [], 0
    for _s in range(segments):
        batches = []
        base = offset
        for _b in range(mib * 4):
            recs = [RecordSpec(key=None, value=os.urandom(64 << 10), timestamp=1_700_000_000_000 + offset + i)
                    for i in range(4)]
            batches.append(encode_batch(recs, base_offset=offset))
            offset += 4
        p = part / f"{base:020d}.log"
        p.write_bytes(b"".join(batches))
        paths.append(p)
    for p in paths:
        evict(p)
    return paths


def evict(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def cached_bytes(path: Path) -> int:
    vec = impact.resident(str(path)) or bytearray()
    return sum(b & 1 for b in vec) * impact.PAGE


def test_low_impact_drops_what_the_scan_read(tmp_path: Path) -> None:
    paths = make_big_partition(tmp_path, 2, 4)
    total = sum(p.stat().st_size for p in paths)
    if sum(cached_bytes(p) for p in paths) > total // 20:
        pytest.skip("this file system keeps the pages cached after DONTNEED (tmpfs?)")
    r = subprocess.run([*KAFKALOG, "scan", str(tmp_path / "kafka-logs"), "--low-impact", "-j", "1", "--format", "json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["totals"]["batches"] == 2 * 16
    assert sum(cached_bytes(p) for p in paths) <= total * 5 // 100
    # and without --low-impact the same scan leaves them cached (the test can fail)
    r = subprocess.run([*KAFKALOG, "scan", str(tmp_path / "kafka-logs"), "-j", "1"], capture_output=True, text=True)
    assert sum(cached_bytes(p) for p in paths) > total // 2


def test_low_impact_keeps_pages_cached_before(tmp_path: Path) -> None:
    """The broker's hot tail stays: pages cached before the scan are not dropped."""
    (path,) = make_big_partition(tmp_path, 1, 4)
    size = path.stat().st_size
    with open(path, "rb") as f:  # the tail half is "hot"
        f.seek(size // 2)
        f.read()
    before = cached_bytes(path)
    if before < size // 2 - impact.PAGE or before > size * 3 // 4:
        pytest.skip("page cache does not behave as expected here")
    r = subprocess.run([*KAFKALOG, "scan", str(path), "--low-impact", "-j", "1"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    vec = impact.resident(str(path))
    tail = sum(b & 1 for b in vec[len(vec) // 2 + 1:]) * impact.PAGE
    head = sum(b & 1 for b in vec[: len(vec) // 2 - 1]) * impact.PAGE
    assert tail >= (size // 2) * 95 // 100  # still cached
    assert head <= size // 20  # brought in by the scan, dropped again


def test_max_read_rate_bounds_the_average(tmp_path: Path) -> None:
    paths = make_big_partition(tmp_path, 3, 1)  # 3 x ~1 MiB
    total = sum(p.stat().st_size for p in paths)
    t0 = time.monotonic()
    r = subprocess.run([*KAFKALOG, "scan", str(tmp_path / "kafka-logs"), "--max-read-rate", "1M", "-j", "1"],
                       capture_output=True, text=True)
    elapsed = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    assert elapsed >= total / (1 << 20) * 0.95  # about 3 s for 3 MiB at 1 MiB/s


def test_parse_rate() -> None:
    assert impact.parse_rate("50M") == 50 << 20
    assert impact.parse_rate("1048576") == 1 << 20
    assert impact.parse_rate("2GiB/s") == 2 << 30
    with pytest.raises(ValueError):
        impact.parse_rate("fast")
