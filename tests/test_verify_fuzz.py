"""Robustness: verify-crc and dump over thousands of mutated segments. No traceback (only KafkalogError subclasses
may leave the engine; Dumper turns them into FileError events), no hang (a per-case alarm), CLI exit 0/1/2."""

from __future__ import annotations

import random
import signal
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format import codecs
from kafkalog_cli.format.encoder import encode_legacy_wrapper
from kafkalog_cli.ops.dump import Dumper, DumpOptions, FileError
from kafkalog_cli.ops.verify import verify_segment
from kafkalog_cli.versions import DEFAULT_VERSION, profile_for
from tests.verify_helpers import REALDATA, make_legacy_segment, make_segment

CASE_SECONDS = 5


class Hang(Exception):
    pass


@contextmanager
def time_bound(seconds: int = CASE_SECONDS):
    def on_alarm(signum, frame):
        raise Hang(f"case exceeded {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run_engines(path: Path, index_bytes: bytes | None = None) -> None:
    """verify_segment must return; Dumper must only yield FileError for bad input."""
    with time_bound():
        rep = verify_segment(str(path), deep=True, max_batch_size=1 << 20)
        assert rep.bytes_checked == path.stat().st_size
        for p in rep.problems:
            assert 0 <= p.position <= p.end
        opts = DumpOptions(print_data_log=True, deep_iteration=True, decompress_limit=1 << 20)
        from kafkalog_cli.render.parsers import DecoderParser, resolve_decoder

        opts.parser = DecoderParser(resolve_decoder(None), resolve_decoder(None))
        dumper = Dumper(profile_for(DEFAULT_VERSION), opts)
        files = [str(path)]
        if index_bytes is not None:
            files += [str(path)[:-4] + ".index", str(path)[:-4] + ".timeindex"]
        for ev in dumper.run(files):
            if isinstance(ev, FileError):
                assert ev.error.describe()


def mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        n = len(b)
        if n == 0:
            b += rng.randbytes(rng.randint(1, 100))
            continue
        i = rng.randrange(n)
        if op == 0:
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[i] = rng.choice([0, 0xFF, 0x7F, 0x80, 2, 1])
        elif op == 2:
            del b[i:i + rng.randint(1, 64)]
        elif op == 3:
            b[i:i] = rng.randbytes(rng.randint(1, 64))
        elif op == 4:
            del b[i:]
        elif op == 5:
            b[i:i + rng.randint(1, 200)] = bytes(min(200, n - i))
        else:  # a 4-byte field (size, count, varint area) set to an extreme
            b[i:i + 4] = rng.choice([b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\xff\xff\xff\xff", b"\x00\x00\x00\x00"])
    return bytes(b)


def seeds() -> list[bytes]:
    out = [make_segment(n_batches=4, records=3, codec=c, seed=c).data for c in
           (codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD)]
    out.append(make_legacy_segment(magic=0).data + make_legacy_segment(magic=1, base=6).data)
    out.append(encode_legacy_wrapper([(b"k", b"v1", 1), (None, b"v2", 2)], offset=1, codec=codecs.GZIP))
    return out


SEEDS = seeds()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed_index=st.integers(0, len(SEEDS) - 1), rnd=st.randoms(use_true_random=False))
def test_hypothesis_mutations(tmp_path_factory, seed_index, rnd):
    d = tmp_path_factory.mktemp("fz")
    path = d / "00000000000000000000.log"
    path.write_bytes(mutate(SEEDS[seed_index], rnd))
    idx = mutate(b"\x00\x00\x00\x03\x00\x00\x00\x50" * 3, rnd)
    (d / "00000000000000000000.index").write_bytes(idx)
    (d / "00000000000000000000.timeindex").write_bytes(mutate(bytes(24), rnd))
    run_engines(path, idx)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=600))
def test_hypothesis_arbitrary_bytes(tmp_path_factory, data):
    d = tmp_path_factory.mktemp("fz")
    path = d / "00000000000000000000.log"
    path.write_bytes(data)
    run_engines(path)


def test_seeded_mutation_loop(tmp_path):
    """A few thousand seeded mutations of generated segments, bounded in time."""
    rng = random.Random(20261101)
    deadline = time.monotonic() + 12
    cases = 0
    path = tmp_path / "00000000000000000000.log"
    while time.monotonic() < deadline and cases < 3000:
        path.write_bytes(mutate(rng.choice(SEEDS), rng))
        with time_bound():
            verify_segment(str(path), deep=True, max_batch_size=1 << 20)
        cases += 1
    assert cases >= 500


def test_realdata_mutations(tmp_path):
    if not REALDATA.is_dir():
        pytest.skip("shared/realdata is absent")
    logs = sorted(p for p in REALDATA.rglob("*.log") if 0 < p.stat().st_size <= 64 * 1024)
    assert logs
    rng = random.Random(7)
    deadline = time.monotonic() + 10
    cases = 0
    target = tmp_path / "00000000000000000000.log"
    while time.monotonic() < deadline:
        src = rng.choice(logs)
        target.write_bytes(mutate(src.read_bytes(), rng))
        run_engines(target)
        cases += 1
    assert cases >= 50


def test_cli_on_mutated_inputs(tmp_path):
    rng = random.Random(3)
    runner = CliRunner()
    for k in range(30):
        d = tmp_path / f"p-{k}"
        d.mkdir()
        (d / "00000000000000000000.log").write_bytes(mutate(rng.choice(SEEDS), rng))
        for args in (["verify-crc", "--deep", str(d)], ["verify-crc", "--format", "json", str(d)],
                     ["dump", "--deep-iteration", "--print-data-log", str(d / "00000000000000000000.log")]):
            res = runner.invoke(cli, args)
            assert res.exit_code in (0, 1, 2), (args, res.output, res.exception)
            assert not isinstance(res.exception, Exception) or isinstance(res.exception, SystemExit), res.exception
