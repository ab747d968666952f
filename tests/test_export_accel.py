"""The compiled export walks (``_accel.export_ndjson`` / ``export_columns``) give exactly what the Python reference
gives: the NDJSON bytes and the Parquet tables with the accelerator on and off (KAFKALOG_NO_ACCEL=1), on every
fixture, generated partitions, odd records (invalid UTF-8, null header values, many headers, tombstones, empty keys)
and window selections; and the compiled walk really takes the batches it should (the comparison is not vacuous)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from partition_gen import random_partition

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format import codecs
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.storage import accel

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
pytestmark = pytest.mark.skipif(accel.module() is None or not hasattr(accel.module(), "export_ndjson"),
                                reason="the compiled accelerator is not built")


def export(tmp: Path, name: str, src: Path, *args: str, accel_on: bool) -> Path:
    out = tmp / name
    env = {} if accel_on else {"KAFKALOG_NO_ACCEL": "1"}
    saved = os.environ.pop("KAFKALOG_NO_ACCEL", None)
    try:
        os.environ.update(env)
        r = CliRunner().invoke(cli, ["export", str(src), "--out", str(out), *args], catch_exceptions=False)
    finally:
        os.environ.pop("KAFKALOG_NO_ACCEL", None)
        if saved is not None:
            os.environ["KAFKALOG_NO_ACCEL"] = saved
    assert r.exit_code in (0, 1), r.output
    return out


def odd_partition(path: Path, seed: int) -> None:
    rnd = random.Random(seed)
    path.mkdir(parents=True)
    data = b""
    off = 0
    pool = [b"", b"plain", b"\xff\xfe", "snow\u2603 \"q\" \\ \n\t\x01".encode(), b"\xc3\x28", b"\xed\xa0\x80",
            "\U0001f600".encode(), None]
    for n in range(40):
        recs = []
        for _ in range(rnd.randint(1, 6)):
            nh = rnd.choice([0, 0, 1, 3, 70 if n % 13 == 0 else 2])
            hdrs = [(rnd.choice([b"h", b"\xff", "\u00e9".encode()]), rnd.choice(pool)) for _ in range(nh)]
            recs.append(RecordSpec(key=rnd.choice(pool), value=rnd.choice(pool), headers=hdrs,
                                   timestamp=1_700_000_000_000 + rnd.randrange(-5, 1000)))
        codec = rnd.choice([codecs.NONE, codecs.NONE, codecs.GZIP, codecs.LZ4, codecs.ZSTD])
        ts_type = 1 if n % 7 == 3 else 0
        pid = rnd.choice([-1, 7])
        data += encode_batch(recs, base_offset=off, codec=codec, timestamp_type=ts_type, producer_id=pid,
                             producer_epoch=0 if pid >= 0 else -1, base_sequence=(2**31 - 3) if pid >= 0 else -1,
                             partition_leader_epoch=n // 10)
        off += len(recs)
    (path / "00000000000000000000.log").write_bytes(data)


SOURCES = ["partition/orders-0", "sample-logdir", "codecs/c-0", "legacy/l-0", "seed231/demo-0", "corrupt/bad-0"]
WINDOWS = [(), ("--offset", "7", "--count", "9"), ("--start-time", "1700000000100", "--end-time", "1700000000600")]


@pytest.mark.parametrize("window", WINDOWS)
def test_ndjson_is_the_same_with_and_without_the_accelerator(tmp_path, window):
    srcs = [FIXTURES / s for s in SOURCES]
    for seed in (1, 2):
        random_partition(str(tmp_path / f"g{seed}" / "t-0"), seed, batches=40)
        srcs.append(tmp_path / f"g{seed}" / "t-0")
        odd_partition(tmp_path / f"odd{seed}" / "o-0", seed)
        srcs.append(tmp_path / f"odd{seed}" / "o-0")
    for i, src in enumerate(srcs):
        for iso in (("--isolation", "read_uncommitted", "--keep-control"), ()):
            a = export(tmp_path, f"a{i}{len(iso)}.ndjson", src, *iso, *window, accel_on=True)
            b = export(tmp_path, f"b{i}{len(iso)}.ndjson", src, *iso, *window, accel_on=False)
            assert a.read_bytes() == b.read_bytes(), src


@pytest.mark.parametrize("window", WINDOWS[:2])
def test_parquet_is_the_same_with_and_without_the_accelerator(tmp_path, window):
    pq = pytest.importorskip("pyarrow.parquet")
    srcs = [FIXTURES / "partition/orders-0", FIXTURES / "codecs/c-0", FIXTURES / "legacy/l-0"]
    odd_partition(tmp_path / "odd" / "o-0", 3)
    srcs.append(tmp_path / "odd" / "o-0")
    random_partition(str(tmp_path / "g" / "t-0"), 4, batches=40)
    srcs.append(tmp_path / "g" / "t-0")
    for i, src in enumerate(srcs):
        a = export(tmp_path, f"a{i}.parquet", src, "--format", "parquet", "--isolation", "read_uncommitted",
                   "--keep-control", *window, accel_on=True)
        b = export(tmp_path, f"b{i}.parquet", src, "--format", "parquet", "--isolation", "read_uncommitted",
                   "--keep-control", *window, accel_on=False)
        ta, tb = pq.read_table(a), pq.read_table(b)
        assert ta.num_rows > 0 and ta.to_pylist() == tb.to_pylist(), src


def test_the_compiled_walk_takes_plain_batches_and_declines_malformed_ones():
    mod = accel.module()
    data = encode_batch([RecordSpec(key=b"k", value=b"\xff", headers=[("h", None)], timestamp=5)], base_offset=3)
    pieces = (b"{", b",", b",", b",", b"}\n")
    got = mod.export_ndjson(data, 61, len(data), 1, 3, 5, 5, False, -1, pieces, -(1 << 63), -(1 << 63),
                            (1 << 63) - 1, -1)
    assert got is not None and got[1] == 1 and b'"payload_encoding":"base64"' in got[0]
    bad = bytearray(data)
    bad[61] = 0x7F
    assert mod.export_ndjson(bytes(bad), 61, len(bad), 1, 3, 5, 5, False, -1, pieces, -(1 << 63), -(1 << 63),
                             (1 << 63) - 1, -1) is None
    outs = tuple(bytearray() for _ in range(15))
    assert mod.export_columns(bytes(bad), 61, len(bad), 1, 3, 5, 5, False, -1, -(1 << 63), -(1 << 63),
                              (1 << 63) - 1, -1, outs) == -1
    assert not any(outs)
    assert mod.export_columns(data, 61, len(data), 1, 3, 5, 5, False, -1, -(1 << 63), -(1 << 63), (1 << 63) - 1, -1,
                              outs) == 1


def test_the_parquet_run_gives_the_rows_of_batch_by_batch_and_stops_where_python_must_go_on():
    """``export_columns_run`` over plain batches: the record columns ``export_columns`` gives batch by batch, one
    batch entry per batch with records, and it stops before a batch whose CRC fails (and at a row group's end)."""
    mod = accel.module()
    if not hasattr(mod, "export_columns_run"):
        pytest.skip("accelerator without export_columns_run")
    specs = [[RecordSpec(key=b"k%d" % i, value=None if i == 1 else b"v" * i, headers=[("h", b"x")] if i else [],
                         timestamp=10 + i) for i in range(n)] for n in (3, 2, 4)]
    bases = (0, 3, 5)
    blobs = [encode_batch(s, base_offset=o, partition_leader_epoch=5, timestamp_type=1 if o == 3 else 0)
             for s, o in zip(specs, bases)]
    data = b"".join(blobs)
    one = tuple(bytearray() for _ in range(15))
    pos = 0
    for b, s, o in zip(blobs, specs, bases):
        assert mod.export_columns(data, pos + 61, pos + len(b), len(s), o, 10, 10 + len(s) - 1, o == 3, -1,
                                  -(1 << 63), -(1 << 63), (1 << 63) - 1, -1, one) == len(s)
        pos += len(b)
    outs = tuple(bytearray() for _ in range(15))
    bouts = tuple(bytearray() for _ in range(7))
    create, append = b"\1\0\0\0", b"\2\0\0\0"
    got = mod.export_columns_run(data, 0, len(data), -(1 << 63), 1 << 20, outs, bouts, create, append, 0, 0, 0,
                                 1 << 20, 1 << 30)
    assert got == (len(data), 3, 9, 0, 8, 8, len(data))
    assert outs == one
    bno = [int.from_bytes(bouts[0][i:i + 4], "little") for i in range(0, len(bouts[0]), 4)]
    assert bno == [0, 0, 0, 1, 1, 2, 2, 2, 2]
    assert bytes(bouts[6]) == create + append + create  # the second batch with records is LogAppendTime
    bad = bytearray(data)
    bad[len(blobs[0]) + len(blobs[1]) + 70] ^= 1  # inside the third batch's records (CRC-covered)
    outs2 = tuple(bytearray() for _ in range(15))
    bouts2 = tuple(bytearray() for _ in range(7))
    got = mod.export_columns_run(bytes(bad), 0, len(bad), -(1 << 63), 1 << 20, outs2, bouts2, create, append, 0, 0,
                                 0, 1 << 20, 1 << 30)
    assert got[:3] == (len(blobs[0]) + len(blobs[1]), 2, 5) and bytes(outs2[0]) == bytes(one[0][:40])
    got = mod.export_columns_run(data, 0, len(data), -(1 << 63), 1 << 20, tuple(bytearray() for _ in range(15)),
                                 tuple(bytearray() for _ in range(7)), create, append, 0, 0, 0, 3, 1 << 30)
    assert got[:3] == (len(blobs[0]), 1, 3)  # the row group is full after the first batch


def test_the_parquet_codes_and_validity_kernels_match_the_python_ones():
    from kafkalog_cli.render import export_parquet as ep

    mod = accel.module()
    if not hasattr(mod, "export_codes"):
        pytest.skip("accelerator without export_codes")
    rnd = random.Random(5)
    k = 4
    entries = 30
    codes = b"".join(rnd.choice([-1, 0, 1, 7]).to_bytes(4, "little", signed=True) for _ in range(entries * k))
    bno = b"".join(sorted(rnd.randrange(entries) for _ in range(203))[i].to_bytes(4, "little") for i in range(203))
    assert mod.export_codes(codes, k, bno) == ep._codes_python(codes, k, bno)
    for width in (4, 8):
        vals = b"".join(rnd.choice([-1, 0, 5, -2]).to_bytes(width, "little", signed=True) for _ in range(77))
        assert mod.export_valid(vals, width) == ep._valid_python(vals, width)
