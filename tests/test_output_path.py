"""The stdout path of ``dump`` (issue 20): the compiled formatter's text goes out as UTF-8 bytes through one large
buffer (``StdoutSink``), byte-identical to the pure-Python reference, and stderr lines stay in order with it."""

from __future__ import annotations

import os
import subprocess
import sys

from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.ops.dump import Dumper, DumpOptions, FormattedBatch
from kafkalog_cli.render import accel
from kafkalog_cli.render.dls import DlsRenderer
from kafkalog_cli.render.parsers import DecoderParser
from kafkalog_cli.versions import profile_for


def _segment(base: int, batches: int = 30) -> bytes:
    out = b""
    for k in range(batches):
        recs = [RecordSpec(f"ключ-{i}".encode(), (f"значение😀 {i}" + "x" * (i * 7)).encode(), headers=[("ü", b"1")] if i % 3 else [],
                           timestamp=1_700_000_000_000 + i) for i in range(20)]
        out += encode_batch(recs, base_offset=base + 20 * k, codec=k % 2, partition_leader_epoch=1)
    return out


def _cli(args: list[str], *, accel_on: bool, stderr=subprocess.PIPE) -> subprocess.CompletedProcess:  # noqa: ANN001
    env = dict(os.environ)
    env.pop("KAFKALOG_NO_ACCEL", None)
    if not accel_on:
        env["KAFKALOG_NO_ACCEL"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    return subprocess.run([sys.executable, "-m", "kafkalog_cli", *args], stdout=subprocess.PIPE, stderr=stderr,
                          env=env, check=False)


def test_formatter_hands_bytes_to_a_byte_writer() -> None:
    if not accel.available():
        return
    chunks: list[bytes] = []
    opts = DumpOptions(print_data_log=True, deep_iteration=True, parser=DecoderParser())
    r = DlsRenderer(profile_for("3.6"), opts, lambda s: None, lambda s: None, out_bytes=chunks.append)
    opts.fast = r.fast_formatter()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "00000000000000000000.log")
        with open(path, "wb") as f:
            f.write(_segment(0, 3))
        events = [ev for ev in Dumper(profile_for("3.6"), opts).run([path]) if isinstance(ev, FormattedBatch)]
    assert events and all(isinstance(ev.text, bytes) for ev in events)  # no str round trip


def test_cli_dump_bytes_identical_to_reference_and_streams_in_order(tmp_path) -> None:  # noqa: ANN001
    d = tmp_path / "t-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(_segment(0))
    (d / "00000000000000000600.log").write_bytes(_segment(600))
    (d / "notes.txt").write_text("x")
    args = ["dump", "--deep-iteration", "--print-data-log", "--files",
            f"{d}/00000000000000000000.log,{d}/notes.txt,{d}/00000000000000000600.log"]
    fast = _cli(args, accel_on=True, stderr=subprocess.STDOUT)
    slow = _cli(args, accel_on=False, stderr=subprocess.STDOUT)
    assert fast.returncode == slow.returncode == 0
    assert fast.stdout == slow.stdout
    text = fast.stdout.decode()
    ignoring = text.index("Ignoring unknown file")
    assert text.index("Dumping " + str(d / "00000000000000000000.log")) < ignoring
    assert ignoring < text.index("Dumping " + str(d / "00000000000000000600.log"))
    assert "значение😀" in text and text.count("\n| offset: ") == 1200


def _json_lines(path: str, *, fast: bool, print_data: bool) -> tuple[list[str], int]:
    import json as _json

    from kafkalog_cli.render.jsonl import JsonRenderer

    lines: list[str] = []
    opts = DumpOptions(print_data_log=print_data, deep_iteration=True, parser=DecoderParser())
    r = JsonRenderer(opts, lines.append, lines.append, out_bytes=lambda b: lines.extend(b.decode().split("\n")[:-1]))
    if fast:
        opts.fast = r.fast_formatter()
        assert opts.fast is not None
    d = Dumper(profile_for("3.9"), opts)
    used = 0
    for ev in d.run([path]):
        used += isinstance(ev, FormattedBatch)
        r.handle(ev)
    r.summary(d.summary)
    for line in lines:
        _json.loads(line)
    return lines, used


def test_json_formatter_identical_to_reference(tmp_path) -> None:  # noqa: ANN001
    """Random batches with JSON-hostile text (quotes, backslashes, control bytes, invalid UTF-8, 4-byte UTF-8,
    null keys/values/header values), compressed or not, some mutated: the compiled JSON lines equal json.dumps'."""
    import random

    if not accel.available():
        return
    rng = random.Random(20)
    texts = [b'"q"', b"back\\slash", b"nl\n\r\t\b\f", bytes(range(0, 32)), b"\x7f", "ключ😀\u2028".encode(),
             b"\xff\xfe", b"\xed\xa0\x80", b"", b"plain"]
    used_total = 0
    for i in range(60):
        seg = bytearray()
        off = 0
        for _ in range(rng.randint(1, 5)):
            recs = []
            for _ in range(rng.randint(1, 15)):
                key = None if rng.random() < 0.2 else rng.choice(texts)
                value = None if rng.random() < 0.2 else rng.choice(texts) + rng.randbytes(rng.randint(0, 3) * (i % 2))
                headers = [(rng.choice(["h", "ü", 'a"b']), None if rng.random() < 0.3 else rng.choice(texts))
                           for _ in range(rng.randint(0, 3))]
                recs.append(RecordSpec(key, value, headers=headers, timestamp=1_700_000_000_000 + rng.randint(0, 9)))
            b = bytearray(encode_batch(recs, base_offset=off, codec=rng.choice([0, 0, 1, 3]),
                                       timestamp_type=rng.choice([0, 1]), base_sequence=rng.choice([-1, 7])))
            if rng.random() < 0.15:
                b[rng.randrange(61, len(b))] ^= 0x55  # a malformed record (and a bad CRC): the reference prints it
            seg += b
            off += len(recs) + rng.choice([0, 0, 2])
        path = tmp_path / f"{i:020d}.log"
        path.write_bytes(bytes(seg))
        for print_data in (True, False):
            slow, _ = _json_lines(str(path), fast=False, print_data=print_data)
            fast, used = _json_lines(str(path), fast=True, print_data=print_data)
            assert fast == slow, (i, print_data)
            used_total += used
    assert used_total > 40  # the compiled path really ran (batches with invalid UTF-8 go to the reference)


def test_cli_json_identical_to_reference_over_several_files(tmp_path) -> None:  # noqa: ANN001
    d = tmp_path / "t-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(_segment(0, 5))
    (d / "00000000000000000100.log").write_bytes(_segment(100, 5))
    args = ["dump", "--deep-iteration", "--print-data-log", "--format", "json", str(d)]
    fast, slow = _cli(args, accel_on=True), _cli(args, accel_on=False)
    assert fast.returncode == slow.returncode == 0
    assert fast.stdout == slow.stdout and fast.stderr == slow.stderr
    assert fast.stdout.count(b'"file":"' + str(d / "00000000000000000100.log").encode() + b'"') > 100
