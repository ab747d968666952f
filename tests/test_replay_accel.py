"""replay's compiled record walk (``_accel.replay_items`` / ``replay_count`` / ``replay_map_lines``,
accel/replay_records.c) gives exactly what the Python reference gives: the produce() tuples of ``chunks`` and the
plan's counts with the accelerator on and off (KAFKALOG_NO_ACCEL=1), and both agree with the record-by-record
reference ``stream``, on fixtures, generated partitions (codecs, transactions, LogAppendTime, odd bytes, sparse
offsets, a second copy of a partition), both isolations, both partitioners, with and without the offset header;
the compiled walk really takes the batches (the comparison is not vacuous) and declines malformed records, which
the reference reports as a located ``bad-record`` finding."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from partition_gen import random_partition
from test_export_accel import odd_partition

from kafkalog_cli.format.encoder import RecordSpec, encode_batch, reseal_crc
from kafkalog_cli.ops import replay as rp
from kafkalog_cli.ops import replay_source as rs
from kafkalog_cli.storage import accel

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
INT64_MIN = -(1 << 63)
pytestmark = pytest.mark.skipif(accel.module() is None or not hasattr(accel.module(), "replay_items"),
                                reason="the compiled accelerator is not built")


@contextmanager
def no_accel(off: bool) -> Iterator[None]:
    saved = os.environ.pop("KAFKALOG_NO_ACCEL", None)
    if off:
        os.environ["KAFKALOG_NO_ACCEL"] = "1"
    try:
        yield
    finally:
        os.environ.pop("KAFKALOG_NO_ACCEL", None)
        if saved is not None:
            os.environ["KAFKALOG_NO_ACCEL"] = saved


def sparse_partition(path: Path, seed: int) -> None:
    """Batches whose records skip offsets (a compacted log's), LogAppendTime batches, timestamps <= 0."""
    rnd = random.Random(seed)
    path.mkdir(parents=True)
    data, off = b"", 0
    for n in range(30):
        deltas = sorted(rnd.sample(range(12), rnd.randint(1, 5)))
        recs = [RecordSpec(key=b"k%d" % rnd.randrange(5) if rnd.random() < 0.8 else None,
                           value=None if rnd.random() < 0.1 else b"v%d" % d,
                           headers=[(b"h", b"x")] if d % 2 else [], timestamp=rnd.choice([-1, 0, 5, 1_700_000_000_000 + d]),
                           offset_delta=d) for d in deltas]
        data += encode_batch(recs, base_offset=off, timestamp_type=1 if n % 5 == 2 else 0,
                             max_timestamp=1_700_000_009_999 if n % 5 == 2 else None)
        off += deltas[-1] + 1
    (path / "00000000000000000000.log").write_bytes(data)


def inputs(tmp: Path) -> list[list[str]]:
    out = [[str(FIXTURES / s)] for s in ("partition/orders-0", "codecs/c-0", "legacy/l-0", "seed231/demo-0",
                                          "corrupt/bad-0")]
    for seed in (1, 2):
        random_partition(str(tmp / f"g{seed}" / "t-0"), seed, batches=40)
        odd_partition(tmp / f"odd{seed}" / "o-0", seed)
        sparse_partition(tmp / f"sp{seed}" / "s-0", seed)
        out += [[str(tmp / f"g{seed}" / "t-0")], [str(tmp / f"odd{seed}" / "o-0")], [str(tmp / f"sp{seed}" / "s-0")]]
    # a shorter copy first, then the whole partition: the second adds only its extra records (duplicates)
    short = tmp / "short" / "t-0"
    short.mkdir(parents=True)
    whole = (tmp / "g1" / "t-0" / "00000000000000000000.log").read_bytes()
    (short / "00000000000000000000.log").write_bytes(whole[: len(whole) // 2])
    out.append([str(short), str(tmp / "g1" / "t-0")])
    return out


def produced(args: list[str], opts: rp.ReplayOptions, partitions: int) -> tuple[list, list]:
    sources, _ = rp.open_sources(args)
    chunks = [(k2, dps, items) for k2, dps, items in rp.chunks(sources, opts, partitions)]
    flat = [(k2, dp, it) for k2, dps, items in chunks
            for it, dp in zip(items, dps if isinstance(dps, list) else [dps] * len(items))]
    return chunks, flat


def reference(args: list[str], opts: rp.ReplayOptions, partitions: int) -> list:
    """``stream``'s records, record by record in Python, as the produce loop's tuples."""
    sources, _ = rp.open_sources(args)
    out = []
    for r, dp in rp.stream(sources, opts, partitions):
        hs = list(r.headers)
        if opts.offset_header:
            hs.append((opts.offset_header, rp.offset_header_value(r.topic, r.partition, r.offset)))
        ts = r.timestamp if r.timestamp > 0 and r.tstype != "none" else 0
        out.append(((r.topic, r.partition), dp, (r.offset, ts, r.key, r.value, hs or None)))
    return out


OPTIONS = [dict(), dict(isolation="read_uncommitted"), dict(partitioner="murmur2"), dict(offset_header=None)]


@pytest.mark.parametrize("extra", OPTIONS, ids=["default", "read_uncommitted", "murmur2", "no-offset-header"])
def test_chunks_and_plan_are_the_same_with_and_without_the_accelerator(tmp_path: Path, extra: dict,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    mod = accel.module()
    calls = {"replay_items": 0, "replay_count": 0}
    for name in calls:
        real = getattr(mod, name)

        def counted(*a: object, _real: object = real, _name: str = name) -> object:
            calls[_name] += 1
            return _real(*a)  # type: ignore[operator]

        monkeypatch.setattr(mod, name, counted)
    opts = rp.ReplayOptions(bootstrap="x:1", topic="dst", **extra)
    for args in inputs(tmp_path):
        with no_accel(False):
            fast_chunks, fast = produced(args, opts, 4)
            fast_plan = rp.plan(rp.open_sources(args)[0], opts, 4)
        with no_accel(True):
            slow_chunks, slow = produced(args, opts, 4)
            slow_plan = rp.plan(rp.open_sources(args)[0], opts, 4)
            ref = reference(args, opts, 4)
        assert fast_chunks == slow_chunks, args
        assert fast == slow == ref, args
        assert fast_plan.partitions == slow_plan.partitions, args
        assert [f.to_dict() for f in fast_plan.findings] == [f.to_dict() for f in slow_plan.findings], args
        # the plan's counts are the produced records'
        for key, pp in fast_plan.partitions.items():
            mine = [it for k2, _dp, it in fast if k2 == key]
            assert pp.records == len(mine), args
            if mine:
                assert (pp.first_offset, pp.last_offset) == (mine[0][0], mine[-1][0]), args
            dests: dict[int, int] = {}
            for k2, dp, _it in fast:
                if k2 == key:
                    dests[dp] = dests.get(dp, 0) + 1
            assert pp.destinations == dests, args
    assert calls["replay_items"] > 50 and calls["replay_count"] > 50  # the compiled walk did the work


def test_the_walks_agree_on_single_batches_and_decline_malformed_records() -> None:
    mod = accel.module()
    recs = [RecordSpec(key=b"k", value=b"\xff", headers=[(b"h\xff", None), (b"n", b"")], timestamp=5, offset_delta=0),
            RecordSpec(key=None, value=None, timestamp=-3, offset_delta=2),
            RecordSpec(key=b"", value=b"v", timestamp=7, offset_delta=5)]
    data = encode_batch(recs, base_offset=100, base_timestamp=5)
    src = [rs.SourceRecord("t", 3, 100 + r.offset_delta, r.timestamp, "create", r.key, r.value,
                           [(k.decode("utf-8", "replace"), v) for k, v in r.headers]) for r in recs]
    for after in (None, 99, 100, 101, 102, 104, 105):
        a = INT64_MIN if after is None else after
        for header in (None, "kafkalog.source.offset"):
            prefix = b"t-3@" if header else b""
            got = mod.replay_items(data, 61, len(data), 3, 100, 5, 7, False, a, header, prefix)
            assert got == rs.python_items(src, after, header, prefix), (after, header)
        assert mod.replay_count(data, 61, len(data), 3, 100, a) == rs.python_count(src, after), after
    # LogAppendTime: every record reads the batch's max timestamp
    got = mod.replay_items(data, 61, len(data), 3, 100, 5, 1234, True, INT64_MIN, None, b"")
    assert [g[1] for g in got] == [1234, 1234, 1234]
    bad = bytearray(data)
    bad[61] = 0x7F  # the first record's length: past the batch's end
    assert mod.replay_items(bytes(bad), 61, len(bad), 3, 100, 5, 7, False, INT64_MIN, None, b"") is None
    assert mod.replay_count(bytes(bad), 61, len(bad), 3, 100, INT64_MIN) is None
    # an offset past int64: declined (Python wraps it as Java's long does)
    assert mod.replay_items(data, 61, len(data), 3, (1 << 63) - 2, 5, 7, False, INT64_MIN, None, b"") is None
    assert mod.replay_count(data, 61, len(data), 3, (1 << 63) - 2, INT64_MIN) is None
    assert mod.replay_count(data, 61, len(data), -1, 100, INT64_MIN) is None


def test_a_malformed_record_behind_a_valid_crc_is_a_bad_record_finding_both_ways(tmp_path: Path) -> None:
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    good = encode_batch([RecordSpec(key=b"a", value=b"1", timestamp=1)], base_offset=0)
    bad = bytearray(encode_batch([RecordSpec(key=b"b", value=b"2", timestamp=2)], base_offset=1))
    bad[61] = 0x7F
    tail = encode_batch([RecordSpec(key=b"c", value=b"3", timestamp=3)], base_offset=2)
    (pdir / "00000000000000000000.log").write_bytes(good + reseal_crc(bad) + tail)
    opts = rp.ReplayOptions(bootstrap="x:1", topic="dst")
    for off in (False, True):
        with no_accel(off):
            sources, _ = rp.open_sources([str(pdir)])
            plan = rp.plan(sources, opts, 4)
            (f,) = plan.findings
            assert f.kind == "bad-record" and f.position == len(good) and f.end == 2 * len(good)
            assert plan.records == 2
            assert [it[0] for _k, _d, items in rp.chunks(sources, opts, 4) for it in items] == [0, 2]


@pytest.mark.parametrize("seed", range(5))
def test_offset_map_lines_are_the_reference(seed: int) -> None:
    mod = accel.module()
    rnd = random.Random(seed)
    n = rnd.randint(1, 300)
    dos = [rnd.randrange(-1, 1 << 62) for _ in range(n)]
    offs: int | list[int] = rnd.randrange(-5, 1 << 40) if seed % 2 else sorted(rnd.sample(range(1 << 50), n))
    prefix = b'"we,ird",3,' if seed == 3 else b"orders,0,"
    start = rnd.randrange(n)
    stop = rnd.randint(start, n)
    got = mod.replay_map_lines(prefix, offs if isinstance(offs, int) else 0, None if isinstance(offs, int) else offs,
                               b",dst,7,", dos, start, stop)
    assert got == rp.map_lines(prefix, offs, b",dst,7,", dos, start, stop)
    assert got.count(b"\n") == stop - start


@pytest.fixture(scope="module")
def mock():  # noqa: ANN201
    pytest.importorskip("confluent_kafka")
    from replay_world import MockCluster

    return MockCluster(3)


@pytest.mark.parametrize("off", [False, True], ids=["compiled", "python"])
def test_replay_into_the_mock_cluster_is_the_reference_both_ways(mock, tmp_path: Path, off: bool,  # noqa: ANN001
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end, with the accelerator on and off: what an independent consumer reads back is the reference
    stream's records (key, value, headers with the offset header, timestamp, partition), and the offset map has
    one line per record consumed, with its destination offset: dense batches, batches with offset gaps (their
    source offsets as a list), LogAppendTime, transactions, two source partitions in a chunk's queue each."""
    import csv
    import json

    from click.testing import CliRunner
    from test_replay import rich_partition

    from kafkalog_cli.cli.main import cli

    if off:
        monkeypatch.setenv("KAFKALOG_NO_ACCEL", "1")
    else:
        monkeypatch.delenv("KAFKALOG_NO_ACCEL", raising=False)
    topic = f"rt-accel-{int(off)}"
    assert mock.create_topic(topic) == 4
    logs = tmp_path / "logs"
    rich_partition(str(logs / "orders-0"))
    sparse_partition(logs / "orders-1", 7)
    rich_partition(str(logs / "orders-2"))
    args = [str(logs / f"orders-{sp}") for sp in range(3)]
    r = CliRunner().invoke(cli, ["replay", *args, "--bootstrap-server", mock.bootstrap, "--topic", topic,
                                 "--state-dir", str(tmp_path / "st"), "--execute", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    opts = rp.ReplayOptions(bootstrap="x:1", topic=topic)
    want = sorted((dp, it[0], it[2], it[3], it[4], it[1]) for _k2, dp, it in reference(args, opts, 4))
    consumed = mock.consume(topic)
    got = []
    for part, _off, key, value, headers, (_tstype, ts) in consumed:
        src = rp.parse_offset_header(dict(headers)[rp.DEFAULT_OFFSET_HEADER])
        assert src is not None and src[1] == part
        got.append((part, src[2], key, value, headers, ts))
    # a record sent with timestamp 0 gets the client's time: compare the others' timestamps exactly
    assert [g[:5] for g in sorted(got)] == [w[:5] for w in want]
    assert all(g[5] == w[5] for g, w in zip(sorted(got), want) if w[5] > 0)
    assert doc["produced"] == len(want)
    with open(doc["offset_map"], newline="") as f:
        rows = list(csv.reader(f))[1:]
    assert sorted((int(r[1]), int(r[2]), int(r[4]), int(r[5])) for r in rows) == sorted(
        (c[0], rp.parse_offset_header(dict(c[4])[rp.DEFAULT_OFFSET_HEADER])[2], c[0], c[1]) for c in consumed)
