"""The compiled accelerator (kafkalog_cli/_accel.c) against the pure-Python reference path: identical output on
every golden case and on random and mutated batches; and proof that the fast path really runs."""

from __future__ import annotations

import random

import pytest
from golden import run_case
from golden_cases import CASES

from kafkalog_cli.format import codecs
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.ops.dump import Dumper, DumpOptions, FormattedBatch
from kafkalog_cli.render import accel
from kafkalog_cli.render.dls import DlsRenderer
from kafkalog_cli.render.parsers import DecoderParser
from kafkalog_cli.versions import profile_for


def test_accelerator_is_built() -> None:
    # pip builds it wherever a C compiler exists (CI has one); a missing build would silently cost 10x speed
    assert accel._accel is not None


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_case_identical_without_accelerator(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with_accel = run_case(CASES[name])
    monkeypatch.setenv("KAFKALOG_NO_ACCEL", "1")
    assert run_case(CASES[name]) == with_accel


def _render(path: str, *, fast: bool, print_data: bool = True, version: str = "3.6") -> tuple[str, int]:
    lines: list[str] = []
    errs: list[str] = []
    prof = profile_for(version)
    deep = version >= "3.0"
    prof_tomb = profile_for(version).tombstone_key
    opts = DumpOptions(print_data_log=print_data and deep, deep_iteration=deep,
                       parser=DecoderParser(tombstone_key=bool(prof_tomb)))
    r = DlsRenderer(prof, opts, lines.append, errs.append)
    if fast:
        opts.fast = r.fast_formatter()
        assert opts.fast is not None
    d = Dumper(prof, opts)
    used = 0
    for ev in d.run([path]):
        used += isinstance(ev, FormattedBatch)
        r.handle(ev)
    r.summary(d.summary)
    return "\n".join(lines) + "\n--stderr--\n" + "\n".join(errs), used


def _random_segment(rng: random.Random) -> bytes:
    data = b""
    off = rng.randint(0, 10**6)
    for _ in range(rng.randint(1, 8)):
        n = rng.randint(0, 20)
        recs = []
        for _ in range(n):
            key = None if rng.random() < 0.2 else rng.choice([b"k", "ключ".encode(), rng.randbytes(rng.randint(0, 8))])
            value = None if rng.random() < 0.2 else rng.choice([b"v" * rng.randint(0, 50), "значение😀".encode(), rng.randbytes(5)])
            headers = [(rng.choice(["h", "ü", "a,b"]), None if rng.random() < 0.5 else b"x") for _ in range(rng.randint(0, 3))]
            recs.append(RecordSpec(key, value, headers=headers, timestamp=1_700_000_000_000 + rng.randint(-1000, 1000),
                                   offset_delta=None))
        data += encode_batch(
            recs, base_offset=off, codec=rng.choice([0, 0, 1, 2, 3, 4]), base_sequence=rng.choice([-1, 5, 2**31 - 3]),
            timestamp_type=rng.choice([0, 1]), producer_id=rng.choice([-1, 9]), producer_epoch=0,
        )
        off += n + rng.choice([0, 0, 3])
    return data


def test_random_and_mutated_segments_identical(tmp_path) -> None:  # noqa: ANN001
    rng = random.Random(7)
    used_total = 0
    for i in range(150):
        data = bytearray(_random_segment(rng))
        if i % 3 == 0 and data:
            for _ in range(rng.randint(1, 4)):  # mutate record bytes (CRC ignored by the record decoder)
                p = rng.randrange(61, len(data)) if len(data) > 61 else 0
                data[p] = rng.randrange(256)
        path = tmp_path / f"{i:020d}.log"
        path.write_bytes(bytes(data))
        for print_data, version in ((True, "3.6"), (False, "4.3"), (True, "3.0"), (False, "2.4")):
            slow, _ = _render(str(path), fast=False, print_data=print_data, version=version)
            fast, used = _render(str(path), fast=True, print_data=print_data, version=version)
            assert fast == slow, (i, print_data, version)
            used_total += used
    assert used_total > 100  # the fast path really ran on most batches


def test_formatter_declines_other_versions() -> None:
    opts = DumpOptions(print_data_log=True, deep_iteration=True, parser=DecoderParser())
    assert DlsRenderer(profile_for("2.8"), opts, print, print).fast_formatter() is None
    assert DlsRenderer(profile_for("2.3"), opts, print, print).fast_formatter() is None
    assert DlsRenderer(profile_for("2.1"), DumpOptions(), print, print).fast_formatter() is None
    assert DlsRenderer(profile_for("2.3"), DumpOptions(), print, print).fast_formatter() is not None  # shallow lines
    assert codecs.NONE == 0
