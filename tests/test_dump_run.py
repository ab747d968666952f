"""``_accel.dump_run`` (issue 20): whole runs of clean v2 batches formatted in one compiled call, text and JSON,
byte-identical to the pure-Python reference on random, mutated, compressed and gapped segments; a run that stops
at its output cap or before a batch it declines resumes exactly where the per-batch path takes over."""

from __future__ import annotations

import random

import pytest
from test_accel import _random_segment

from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.ops.dump import Dumper, DumpOptions, FormattedRun
from kafkalog_cli.render import accel
from kafkalog_cli.render.dls import DlsRenderer
from kafkalog_cli.render.jsonl import JsonRenderer
from kafkalog_cli.render.parsers import DecoderParser
from kafkalog_cli.versions import profile_for

pytestmark = pytest.mark.skipif(not accel.available(), reason="accelerator not built or disabled")


def _dump(path: str, *, fmt: str, mode: str, print_data: bool, version: str, deep: bool = True,
          limit: int | None = None) -> tuple[bytes, int]:
    """The dump's stdout as bytes: ``mode`` is "reference" (no accelerator), "batch" (per-batch formatter) or "run"
    (per-batch formatter and the run formatter, as the CLI sets them); returns the text and the FormattedRun count."""
    out: list[bytes] = []
    prof = profile_for(version)
    opts = DumpOptions(print_data_log=print_data, deep_iteration=deep,
                       parser=DecoderParser(tombstone_key=bool(prof.tombstone_key)))
    if limit is not None:
        opts.decompress_limit = limit

    def line(s: str) -> None:
        out.append((s + "\n").encode("utf-8", "replace"))

    r: DlsRenderer | JsonRenderer
    if fmt == "json":
        r = JsonRenderer(opts, line, line, out_bytes=out.append)
    else:
        r = DlsRenderer(prof, opts, line, line, out_bytes=out.append)
    if mode != "reference":
        opts.fast = r.fast_formatter()
        assert opts.fast is not None
    if mode == "run":
        opts.fast_run = r.fast_run()
        assert opts.fast_run is not None
    d = Dumper(prof, opts)
    runs = 0
    for ev in d.run([path]):
        runs += isinstance(ev, FormattedRun)
        r.handle(ev)
    r.summary(d.summary)
    return b"".join(out), runs


def _gapped_segment(rng: random.Random) -> bytes:
    """Mostly clean uncompressed batches, some compressed, some with binary (non-UTF-8) values, offset gaps, a
    control-attribute batch, a bad CRC: every reason for the run to stop, between clean stretches."""
    data = bytearray()
    off = rng.randint(0, 1000)
    for _ in range(rng.randint(3, 25)):
        n = rng.randint(1, 12)
        binary = rng.random() < 0.15
        recs = [RecordSpec(b"k%d" % i, rng.randbytes(6) if binary else "значение😀 %d".encode() % i,
                           headers=[("h", b"1")] if i % 2 else [], timestamp=1_700_000_000_000 + i) for i in range(n)]
        b = bytearray(encode_batch(recs, base_offset=off, codec=rng.choice([0, 0, 0, 0, 3]),
                                   timestamp_type=rng.choice([0, 0, 1]), base_sequence=rng.choice([-1, 3])))
        if rng.random() < 0.1:
            b[rng.randrange(61, len(b))] ^= 0x21  # bad CRC (and maybe malformed records)
        data += b
        off += n + rng.choice([0, 0, 0, 5])
    return bytes(data)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_run_identical_to_reference_and_per_batch(tmp_path, fmt: str) -> None:  # noqa: ANN001
    rng = random.Random(2020)
    runs_total = 0
    for i in range(60):
        seg = _gapped_segment(rng) if i % 2 else _random_segment(rng)
        path = tmp_path / f"{i:020d}.log"
        path.write_bytes(seg)
        for print_data, version in ((True, "3.6"), (False, "4.3"), (True, "3.0")):
            ref, _ = _dump(str(path), fmt=fmt, mode="reference", print_data=print_data, version=version)
            batch, _ = _dump(str(path), fmt=fmt, mode="batch", print_data=print_data, version=version)
            run, runs = _dump(str(path), fmt=fmt, mode="run", print_data=print_data, version=version)
            assert run == batch == ref, (i, print_data, version)
            runs_total += runs
    assert runs_total > 100  # the run formatter really ran


def test_shallow_run_takes_compressed_batches(tmp_path) -> None:  # noqa: ANN001
    """Without --deep-iteration a batch line needs no decompression: the run takes compressed batches too."""
    rng = random.Random(5)
    path = tmp_path / "00000000000000000000.log"
    data = b""
    for k in range(20):
        recs = [RecordSpec(b"k", b"v" * rng.randint(0, 40), timestamp=1_700_000_000_000 + i) for i in range(5)]
        data += encode_batch(recs, base_offset=5 * k, codec=k % 5)
    path.write_bytes(data)
    for version in ("3.6", "2.4"):
        ref, _ = _dump(str(path), fmt="text", mode="reference", print_data=False, version=version, deep=False)
        run, runs = _dump(str(path), fmt="text", mode="run", print_data=False, version=version, deep=False)
        assert run == ref and runs == 1, version


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_run_resumes_after_its_output_cap(tmp_path, monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:  # noqa: ANN001
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(
        encode_batch([RecordSpec(b"k", b"x" * 300, timestamp=1_700_000_000_000)] * 10, base_offset=10 * k)
        for k in range(40)))
    ref, _ = _dump(str(path), fmt=fmt, mode="reference", print_data=True, version="3.6")
    whole, runs_whole = _dump(str(path), fmt=fmt, mode="run", print_data=True, version="3.6")
    monkeypatch.setattr(accel, "RUN_MAX_OUT", 5000)  # a few batches per call
    capped, runs_capped = _dump(str(path), fmt=fmt, mode="run", print_data=True, version="3.6")
    assert capped == whole == ref
    assert runs_whole == 1 and runs_capped > 5


def test_progress_counts_the_bytes_of_a_run() -> None:
    from kafkalog_cli.cli.dump import _with_progress

    steps: list[int] = []
    evs = [FormattedRun(b"x", 3 << 20, 10), FormattedRun(b"y", 2 << 20, 7), FormattedRun(b"z", 100, 1)]
    assert list(_with_progress(iter(evs), steps.append)) == evs
    assert steps == [5 << 20, 100]


def _with_crc(batch: bytearray) -> bytes:
    from kafkalog_cli.format.crc import crc32c

    batch[17:21] = crc32c(bytes(batch[21:])).to_bytes(4, "big")
    return bytes(batch)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_compressed_batch_that_fails_to_decompress_is_left_to_the_reference(tmp_path, fmt: str) -> None:  # noqa: ANN001
    """A CRC-valid lz4/gzip batch whose payload does not decompress, and batches over the size cap: the run stops
    before them (the decompressor's KafkalogError is the run's "not mine"), the reference words the error."""
    good = [encode_batch([RecordSpec(b"k", b"v%d" % i * 30, timestamp=1_700_000_000_000)] * 5, base_offset=5 * i,
                         codec=(0, 3, 1)[i % 3]) for i in range(9)]
    bad = bytearray(encode_batch([RecordSpec(b"k", b"zz" * 200, timestamp=1_700_000_000_000)] * 5, base_offset=45,
                                 codec=3))
    bad[61] ^= 0xFF  # the lz4 frame's magic
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(good[:6]) + _with_crc(bad) + b"".join(good[6:]))
    ref, _ = _dump(str(path), fmt=fmt, mode="reference", print_data=True, version="3.6")
    run, runs = _dump(str(path), fmt=fmt, mode="run", print_data=True, version="3.6")
    assert run == ref and runs >= 1
    assert b"lz4 frame magic is wrong" in ref  # the reference's error about the bad frame is in both
    small = tmp_path / "small"
    small.mkdir()
    (small / "00000000000000000000.log").write_bytes(b"".join(good))
    small_seg = str(small / "00000000000000000000.log")
    capped_ref, _ = _dump(small_seg, fmt=fmt, mode="reference", print_data=True, version="3.6", limit=100)
    capped_run, _ = _dump(small_seg, fmt=fmt, mode="run", print_data=True, version="3.6", limit=100)
    assert capped_run == capped_ref



def test_run_text_kept_by_a_consumer_is_never_reused(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """dump_run's bytearrays are pooled: one a consumer still holds must not be written again."""
    monkeypatch.setattr(accel, "RUN_MAX_OUT", 3000)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(
        encode_batch([RecordSpec(b"k", b"%d" % k * 100, timestamp=1_700_000_000_000)] * 10, base_offset=10 * k)
        for k in range(60)))
    kept: list[bytes | bytearray] = []
    copies: list[bytes] = []
    seen = 0

    def out_bytes(chunk: bytes | bytearray) -> None:
        nonlocal seen
        seen += 1
        if seen % 3 == 1:  # keep every third chunk, drop the others (their buffers go back to the pool)
            kept.append(chunk)
            copies.append(bytes(chunk))

    prof = profile_for("3.6")
    opts = DumpOptions(print_data_log=True, deep_iteration=True, parser=DecoderParser())
    r = DlsRenderer(prof, opts, lambda s: None, lambda s: None, out_bytes=out_bytes)
    opts.fast, opts.fast_run = r.fast_formatter(), r.fast_run()
    for ev in Dumper(prof, opts).run([str(path)]):
        r.handle(ev)
    assert seen > 20 and len(kept) > 6
    assert [bytes(k) for k in kept] == copies


def test_json_base64_of_every_length(tmp_path) -> None:  # noqa: ANN001
    """The compiled base64 (6 bytes per step, then 3, then the padded tail) against the reference for values and
    keys of every length 0..70, and the decoded bytes against the records."""
    import base64
    import json

    rng = random.Random(64)
    recs = [RecordSpec(rng.randbytes(i % 9).hex().encode(), bytes(rng.randrange(32, 127) for _ in range(i)),
                       timestamp=1_700_000_000_000) for i in range(71)]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(encode_batch(recs, base_offset=0))
    ref, _ = _dump(str(path), fmt="json", mode="reference", print_data=True, version="3.6")
    run, runs = _dump(str(path), fmt="json", mode="run", print_data=True, version="3.6")
    assert run == ref and runs == 1
    objs = [json.loads(line) for line in run.decode().splitlines()]
    values = [base64.b64decode(o["value_b64"]) for o in objs if o["type"] == "record"]
    assert values == [r.value for r in recs]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_utf8_check_at_every_position(tmp_path, fmt: str) -> None:  # noqa: ANN001
    """The compiled UTF-8 check skips ASCII 32 and 8 bytes at a time: a non-ASCII byte (valid or not) at every
    position of a 0..80-byte value must be seen exactly as the reference sees it."""
    seqs = [b"\xff", "é".encode(), b"\xed\xa0\x80", "😀".encode(), b"\xc3"]
    data = b""
    off = 0
    for p in range(0, 80, 3):
        for seq in seqs:
            value = b"a" * p + seq + b"b" * (80 - p)
            data += encode_batch([RecordSpec(b"k" * (p % 40), value, timestamp=1_700_000_000_000)], base_offset=off)
            off += 1
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    ref, _ = _dump(str(path), fmt=fmt, mode="reference", print_data=True, version="3.6")
    run, runs = _dump(str(path), fmt=fmt, mode="run", print_data=True, version="3.6")
    assert run == ref
    assert runs > 10  # valid and invalid batches alternate: the run formatter takes the valid ones
