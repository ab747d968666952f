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
from kafkalog_cli.render.versions import profile_for


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
