"""The compiled CRC-32C and header walks of kafkalog_cli/_accel.c against their pure-Python references.

* ``crc32c`` (SSE4.2 three-stream and the portable slicing-by-8 code) against the ``crc32c`` package;
* ``scan_v2`` against ``storage.segment.walk`` + ``Batch``;
* ``rebuild_index`` against ``rebuild_segment_py`` (bytes, counts and the exact stop problem);
* ``verify_run`` through ``verify_segment``/the CLI JSON, with and without ``KAFKALOG_NO_ACCEL`` (tests/conftest.py
  additionally runs every tests/test_verify_*.py case both ways);
on generated segments, mutated ones (the mutations of test_verify_fuzz) and every real ``.log`` when present.
"""

from __future__ import annotations

import json
import os
import random
import struct
from pathlib import Path
from types import SimpleNamespace

import crc32c as crc32c_pkg
import pytest
from click.testing import CliRunner
from index_partition_gen import make_partition
from realdata_path import REALDATA
from test_verify_fuzz import SEEDS, mutate

from kafkalog_cli.cli.main import cli
from kafkalog_cli.errors import CorruptRecordError
from kafkalog_cli.format.batch import HEADER
from kafkalog_cli.format.encoder import RecordSpec, encode_batch, encode_legacy_message
from kafkalog_cli.ops import rebuild_index as ri
from kafkalog_cli.ops import verify
from kafkalog_cli.storage import accel, segment_check
from kafkalog_cli.storage.segment import walk

pytestmark = pytest.mark.skipif(accel.module() is None, reason="compiled accelerator not built or disabled")


def real_logs() -> list[Path]:
    if not REALDATA.is_dir():
        return []
    return sorted(p for p in REALDATA.rglob("*.log") if p.is_file() and len(p.name) == 24)


def sample_buffers(n_random: int = 60) -> list[tuple[bytes, int]]:
    """(segment bytes, base offset): clean generated partitions, their mutations, fuzz seeds, legacy prefixes."""
    import tempfile

    rng = random.Random(7)
    out: list[tuple[bytes, int]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(12):
            for path in make_partition(os.path.join(tmp, f"p{seed}"), seed, segments=2, max_batches=30,
                                       write_indexes=False):
                out.append((open(path, "rb").read(), int(os.path.basename(path)[:20])))
    clean = list(out)
    for _ in range(n_random):
        data, base = rng.choice(clean)
        out.append((mutate(data, rng), base + rng.choice([0, 0, 0, 1, -1, 10**6])))
    for s in SEEDS:
        out.append((s, 0))
        out.append((mutate(s, rng), 0))
    legacy = b"".join(encode_legacy_message(offset=i, key=b"k", value=b"v" * 50, magic=i % 2) for i in range(5))
    out.append((legacy + clean[0][0], 0))
    out.append((clean[0][0] + legacy, 0))
    out.append((b"", 0))
    out.append((bytes(100), 0))
    return out


SAMPLES = sample_buffers()


# ------------------------------------------------------------------------------------------------ CRC-32C
def test_crc_check_value() -> None:
    mod = accel.module()
    assert mod.crc32c(b"123456789") == 0xE3069283
    assert mod.crc32c_portable(b"123456789") == 0xE3069283
    assert mod.crc_implementation() in ("sse4.2-3way", "slicing-by-8")


@pytest.mark.parametrize("fn", ["crc32c", "crc32c_portable"])
def test_crc_every_length_and_alignment(fn: str) -> None:
    f = getattr(accel.module(), fn)
    rng = random.Random(1)
    big = rng.randbytes(400)
    mv = memoryview(big)
    for n in range(301):
        for align in (0, 1, 3, 7):
            piece = mv[align : align + n]
            assert f(piece) == crc32c_pkg.crc32c(piece), (n, align)


@pytest.mark.parametrize("fn", ["crc32c", "crc32c_portable"])
def test_crc_large_and_continued(fn: str) -> None:
    f = getattr(accel.module(), fn)
    rng = random.Random(2)
    # around the 3-stream block sizes (3*256, 3*2048) and a few large ones
    for n in (767, 768, 769, 6143, 6144, 6145, 16384, 16384 + 5, 1 << 20, 3 * (1 << 20) + 13):
        d = rng.randbytes(n)
        assert f(d) == crc32c_pkg.crc32c(d), n
        cut = rng.randrange(n)
        assert f(d[cut:], f(d[:cut])) == crc32c_pkg.crc32c(d), n
    d = bytes(5_000_003)
    assert f(d) == crc32c_pkg.crc32c(d)


# ------------------------------------------------------------------------------------------------ scan_v2
def python_scan(buf: bytes) -> tuple[list[tuple], int, str]:
    """The reference of scan_v2: walk() and the 61-byte header, stopping where scan_v2 documents it stops."""
    out: list[tuple] = []
    stop = 0
    try:
        for pos, size, magic in walk(buf):
            if magic != 2:
                return out, pos, "magic"
            if size < 61:
                return out, pos, "small"
            h = HEADER.unpack_from(buf, pos)
            (base, _len, epoch, magic, crc, attrs, lod, base_ts, max_ts, pid, pepoch, seq, count) = h
            ok = crc32c_pkg.crc32c(buf[pos + 21 : pos + size]) == crc
            out.append((pos, size, magic, ok, attrs, base, lod, count, base_ts, max_ts, epoch, pid, pepoch, seq, crc))
            stop = pos + size
    except CorruptRecordError as exc:
        return out, exc.position, "bad-size"
    return out, stop, "end"


def test_scan_v2_matches_walk() -> None:
    for data, _base in SAMPLES:
        got, stop, why = accel.scan_v2(data)
        assert ([tuple(b) for b in got], stop, why) == python_scan(data)


def test_scan_v2_range_and_arguments() -> None:
    data = SAMPLES[0][0]
    full, _stop, _why = accel.scan_v2(data)
    second = full[1].position
    part, _stop, _why = accel.scan_v2(data, second, full[3].position + full[3].size)
    assert part == full[1:4]
    with pytest.raises(ValueError):
        accel.module().scan_v2(data, 0, len(data) + 1)


# ------------------------------------------------------------------------------------------------ rebuild_index
def rebuilt_tuple(rb: ri.Rebuilt) -> tuple:
    p = rb.problem
    return (rb.log_size, rb.valid_bytes, rb.batches, rb.last_offset, rb.index, rb.timeindex,
            None if p is None else (type(p), p.describe(), p.position, p.file))


def test_rebuild_index_matches_python_reference() -> None:
    rng = random.Random(3)
    used = 0
    for data, base in SAMPLES:
        for _ in range(3):
            interval = rng.randint(0, 20000)
            sib = rng.choice([ri.DEFAULT_SEGMENT_INDEX_BYTES] * 3 + [0, 8, 24, 100])
            ref = ri.rebuild_segment_py(data, base, interval, file="x.log", segment_index_bytes=sib)
            used += accel.module().rebuild_index(data, base, interval, sib) is not None
            got = ri.rebuild_segment(data, base, interval, file="x.log", segment_index_bytes=sib)
            assert rebuilt_tuple(got) == rebuilt_tuple(ref), (base, interval, sib)
    assert used > len(SAMPLES) * 2  # the C loop ran for most of them (legacy entries fall back)


def test_rebuild_index_legacy_falls_back() -> None:
    legacy = encode_legacy_message(offset=0, key=b"k", value=b"v", magic=1)
    v2 = encode_batch([RecordSpec(b"k", b"v", timestamp=5)], base_offset=1)
    assert accel.module().rebuild_index(legacy + v2, 0, 0, 1 << 20) is None
    assert rebuilt_tuple(ri.rebuild_segment(legacy + v2, 0, 0)) == rebuilt_tuple(ri.rebuild_segment_py(legacy + v2, 0, 0))


@pytest.mark.realdata
def test_rebuild_index_realdata_identical() -> None:
    logs = real_logs()
    if not logs:
        pytest.skip("shared/realdata not present")
    for path in logs:
        data = path.read_bytes()
        base = int(path.name[:20])
        for interval in (0, 4096):
            assert rebuilt_tuple(ri.rebuild_segment(data, base, interval)) == rebuilt_tuple(
                ri.rebuild_segment_py(data, base, interval)), path


# ------------------------------------------------------------------------------------------------ verify
def both_ways(fn, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN001, ANN201
    monkeypatch.delenv("KAFKALOG_NO_ACCEL", raising=False)
    fast = fn()
    monkeypatch.setenv("KAFKALOG_NO_ACCEL", "1")
    ref = fn()
    monkeypatch.delenv("KAFKALOG_NO_ACCEL")
    return fast, ref


def cli_json(paths: list[str]) -> dict:
    res = CliRunner().invoke(cli, ["verify-crc", "--format", "json", *paths])
    assert res.exit_code in (0, 1), res.output
    doc = json.loads(res.output)
    for f in doc["files"]:
        f.pop("seconds", None)
    return doc


def mutated_partitions(root: Path, count: int) -> list[str]:
    """Partitions with recovery-rule indexes whose .log (and sometimes .index/.timeindex) are then mutated."""
    rng = random.Random(11)
    out = []
    for seed in range(count):
        pdir = root / f"t-{seed}"
        logs = make_partition(str(pdir), seed, segments=2, max_batches=30, interval=rng.choice([0, 300, 4096]))
        for log in logs:
            if rng.random() < 0.8:
                Path(log).write_bytes(mutate(Path(log).read_bytes(), rng))
            for suffix in (".index", ".timeindex"):
                idx = Path(log[:-4] + suffix)
                if idx.exists() and idx.stat().st_size and rng.random() < 0.3:
                    idx.write_bytes(mutate(idx.read_bytes(), rng))
        out.append(str(pdir))
    return out


def test_verify_json_identical_on_mutated_partitions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = mutated_partitions(tmp_path, 40)
    for p in paths:
        fast, ref = both_ways(lambda p=p: cli_json([p]), monkeypatch)
        assert fast == ref, p


def test_verify_progress_and_fast_path_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Progress increments are the same (C stops at each progress boundary), and the C run really takes batches."""
    data = b"".join(encode_batch([RecordSpec(b"k", b"v" * 300, timestamp=1000 + i)], base_offset=i) for i in range(200))
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    monkeypatch.setattr(segment_check, "PROGRESS_EVERY", 5000)
    taken = []
    real = accel.module()

    def counting(*args):  # noqa: ANN002, ANN202
        res = real.verify_run(*args)
        taken.append(res[1])
        return res

    monkeypatch.setattr(accel, "_mod", SimpleNamespace(verify_run=counting))

    def run() -> tuple:
        steps: list[int] = []
        rep = verify.verify_segment(str(path), progress=steps.append)
        return steps, rep.batches, rep.records, rep.last_offset

    fast, ref = both_ways(run, monkeypatch)
    assert fast == ref and ref[1] == 200
    assert sum(taken) == 200


@pytest.mark.realdata
def test_verify_json_identical_on_realdata(monkeypatch: pytest.MonkeyPatch) -> None:
    if not real_logs():
        pytest.skip("shared/realdata not present")
    fast, ref = both_ways(lambda: cli_json([str(REALDATA)]), monkeypatch)
    assert fast == ref


def test_verify_identical_on_epoch_timestamp_and_offset_edges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches that pass the CRC but trip one on_v2 check each: the C run must hand each one to Python."""
    ts = 1_700_000_000_000
    cases = {
        "epoch-down": [dict(partition_leader_epoch=5), dict(partition_leader_epoch=3)],
        "epoch-none": [dict(partition_leader_epoch=-1), dict(partition_leader_epoch=2)],
        "future": [dict(), dict(ts=ts * 10)],
        "below-base": [dict(base=-5)],
        "offset-order": [dict(), dict(base=0)],
        "log-append": [dict(timestamp_type=1, max_timestamp=ts - 10)],
    }
    for name, specs in cases.items():
        data = b""
        for i, spec in enumerate(specs):
            spec = dict(spec)
            base = spec.pop("base", i * 10)
            t = spec.pop("ts", ts + i)
            data += encode_batch([RecordSpec(b"k", b"v", timestamp=t), RecordSpec(b"k", b"w", timestamp=t + 1)],
                                 base_offset=base, **spec)
        path = tmp_path / name / "00000000000000000000.log"
        path.parent.mkdir()
        path.write_bytes(data)
        fast, ref = both_ways(lambda p=path: cli_json([str(p)]), monkeypatch)
        assert fast == ref, name


def test_packed_formats_match_the_c_record_sizes() -> None:
    assert accel.SCAN_FORMAT.size == 70 and accel.RUN_FORMAT.size == 36
    assert struct.calcsize("<qiqqq") == 36


def _both(data: bytes | memoryview, base: int, interval: int, sib: int = ri.DEFAULT_SEGMENT_INDEX_BYTES):
    """(C result, Python reference); asserts they agree and that the C loop handled it."""
    assert accel.module().rebuild_index(data, base, interval, sib) is not None
    got = ri.rebuild_segment(data, base, interval, file="x.log", segment_index_bytes=sib)
    ref = ri.rebuild_segment_py(data, base, interval, file="x.log", segment_index_bytes=sib)
    assert rebuilt_tuple(got) == rebuilt_tuple(ref)
    return got, ref


def test_rebuild_final_time_entry_going_backwards_is_a_problem() -> None:
    """The final maybeAppend throws InvalidOffsetException (recovery empties the segment); it was silently skipped."""
    data = (encode_batch([RecordSpec(b"k", b"x" * 500, timestamp=100)], base_offset=0)
            + encode_batch([RecordSpec(b"k", b"v", timestamp=200)], base_offset=10)
            + encode_batch([RecordSpec(b"k", b"v", timestamp=300)], base_offset=5))  # not an index point
    got, _ref = _both(data, 0, 200)
    assert got.problem is not None and "final entry" in got.problem.message
    assert got.problem.position == len(data)


def test_rebuild_full_time_index_is_a_problem_before_the_timestamp_test() -> None:
    """TimeIndex.maybeAppend checks isFull first: a full index is fatal even when the timestamp would not be added."""
    data = b"".join(encode_batch([RecordSpec(b"k", b"v", timestamp=100)], base_offset=i) for i in range(4))
    got, _ref = _both(data, 0, 0, sib=24)  # room for 1 time entry before the final one, 3 offset entries
    assert got.problem is not None and "time index over capacity" in got.problem.message


def test_rebuild_batch_position_above_int_max_is_a_problem(tmp_path) -> None:
    """A batch starting past 2^31-1: reported (the broker refuses such a segment), never a struct.error."""
    import mmap

    big = (1 << 31) - 1  # length field of one huge batch: the next batch starts at 2^31 + 11
    header = bytearray(61)
    struct.pack_into(">qiib", header, 0, 0, big, 0, 2)
    struct.pack_into(">hiqqqhii", header, 21, 0, 0, 100, 100, -1, -1, -1, 1)
    path = tmp_path / "00000000000000000000.log"
    tail = encode_batch([RecordSpec(b"k", b"v", timestamp=200)], base_offset=1)
    with open(path, "wb") as f:
        f.write(header)
        f.truncate(big + 12)
        f.seek(big + 12)
        f.write(tail)
    crc = accel.module().crc32c(bytes(header[21:]))
    zeros = bytes(1 << 26)
    left = big + 12 - 61
    while left:
        n = min(left, len(zeros))
        crc = accel.module().crc32c(zeros[:n] if n < len(zeros) else zeros, crc)
        left -= n
    with open(path, "r+b") as f:
        f.seek(17)
        f.write(struct.pack(">I", crc))
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        view = memoryview(m)
        try:
            got = ri.rebuild_segment(view, 0, 4096, file=str(path))
            assert got.problem is not None and "2^31-1" in got.problem.message
            assert got.problem.position == big + 12 and got.batches == 1
        finally:
            view.release()
