"""One set of exit-code rules for every command (issue 19): a real Ctrl-C exits 130, a closed pipe (``| head``)
exits 0 without a traceback, and dry runs exit 1 exactly when they would change something.

The signal and pipe tests run ``kafkalog`` as a real subprocess: the behaviour under test is the interpreter's and
click's handling of SIGINT and EPIPE, which CliRunner cannot reproduce.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from shipping_helpers import ROOT, python_argv

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.storage.index import encode_offset_index, encode_time_index

STEM = "0" * 20


def big_partition(parent: Path, batches: int = 200, per_batch: int = 10) -> Path:
    """A partition whose ``dump --print-data-log`` prints far more than a pipe buffer (64 KiB), so a writer whose
    reader stops reading blocks in write() and is still running when the test signals it."""
    part = parent / "big-0"
    part.mkdir()
    log = bytearray()
    offset = 0
    for _ in range(batches):
        specs = [RecordSpec(key=b"k%d" % (offset + i), value=b"v" * 200, timestamp=1_700_000_000_000 + offset + i,
                            offset_delta=i) for i in range(per_batch)]
        log += encode_batch(specs, base_offset=offset, producer_id=-1)
        offset += per_batch
    (part / f"{STEM}.log").write_bytes(bytes(log))
    return part


def _default_sigint() -> None:
    # a non-interactive parent may ignore SIGINT, and the child would inherit that: give it the terminal's default
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_exits_130(tmp_path: Path) -> None:
    part = big_partition(tmp_path)
    proc = subprocess.Popen(python_argv() + ["dump", "--print-data-log", str(part)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_default_sigint)
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith(b"Dumping")
        time.sleep(0.5)  # the pipe fills up and the dump blocks in write(), mid-command
        assert proc.poll() is None, "the dump finished before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert b"Traceback" not in stderr and b"Aborted!" not in stderr
    assert b"kafkalog: interrupted" in stderr


@pytest.mark.parametrize("argv", [
    ["dump", "--print-data-log"],
    ["dump", "--format", "json", "--print-data-log"],
])
def test_head_closing_the_pipe_exits_0(tmp_path: Path, argv: list[str]) -> None:
    part = big_partition(tmp_path)
    writer = subprocess.Popen(python_argv() + argv + [str(part)], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    head = subprocess.run(["head", "-1"], stdin=writer.stdout, capture_output=True, timeout=30)
    assert writer.stdout is not None
    writer.stdout.close()  # only head holds the read end now: its exit closes the pipe
    _, stderr = writer.communicate(timeout=30)
    assert head.stdout.count(b"\n") == 1
    assert writer.returncode == 0, stderr
    assert stderr == b""


# ---------------------------------------------------------------------------------------------- one health signal
def chunk_form_partition(parent: Path) -> Path:
    """A healthy partition whose indexes are in the form brokers up to 3.9 write: one offset entry per append chunk
    of two batches (the chunk's last offset, at the chunk's first batch), and time entries at a record inside the
    batch that reached the timestamp (not the batch's last offset). Kafka's DumpLogSegments reports both as
    mismatches / not found, yet every entry is valid for lookups."""
    part = parent / "chunks-0"
    part.mkdir(parents=True)
    log = bytearray()
    batches: list[tuple[int, int, int]] = []  # (position, last offset, max timestamp)
    ts = 1_700_000_000_000
    for b in range(12):
        specs = []
        for i in range(4):
            ts += 1
            specs.append(RecordSpec(key=b"k", value=b"x" * 400, timestamp=ts if i != 1 else ts + 1000, offset_delta=i))
        batches.append((len(log), b * 4 + 3, max(s.timestamp for s in specs)))
        log += encode_batch(specs, base_offset=b * 4)
    (part / f"{STEM}.log").write_bytes(bytes(log))
    offsets = [(batches[i + 1][1], batches[i][0]) for i in range(2, 12, 2)]  # chunks of two batches, after the first
    times = [(batches[i][2], i * 4 + 1) for i in range(2, 12, 2)]  # record 1 of the batch holds its max timestamp
    (part / f"{STEM}.index").write_bytes(encode_offset_index(0, offsets))
    (part / f"{STEM}.timeindex").write_bytes(encode_time_index(0, times))
    return part


def test_valid_chunk_form_indexes_are_not_a_problem_for_dump(tmp_path: Path) -> None:
    part = chunk_form_partition(tmp_path)
    r = CliRunner().invoke(cli, ["dump", str(part)])
    assert "Mismatches in :" in r.stderr and "The following indexed offsets are not found in the log." in r.stderr
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["verify-crc", str(part)])
    assert r.exit_code == 0, r.output


def test_invalid_index_is_still_a_problem_for_dump(tmp_path: Path) -> None:
    part = chunk_form_partition(tmp_path)
    # an entry at a byte that is not a batch start: a lookup would read garbage
    (part / f"{STEM}.index").write_bytes(encode_offset_index(0, [(11, 7)]))
    r = CliRunner().invoke(cli, ["dump", str(part)])
    assert r.exit_code == 1, r.output


def test_rebuild_index_keeps_valid_chunk_form_indexes(tmp_path: Path) -> None:
    part = chunk_form_partition(tmp_path / "logs")
    before = {p.name: p.read_bytes() for p in part.iterdir()}
    r = CliRunner().invoke(cli, ["rebuild-index", str(part)])
    assert r.exit_code == 0, r.output
    assert "valid for lookups" in r.output and "so the file is kept" in r.output
    backups = tmp_path / "bk"
    r = CliRunner().invoke(cli, ["rebuild-index", "--execute", "--backup-dir", str(backups), str(part)])
    assert r.exit_code == 0, r.output
    assert {p.name: p.read_bytes() for p in part.iterdir()} == before
    # asked to, it makes them byte-identical to what recovery writes: then the dry run has something to do
    r = CliRunner().invoke(cli, ["rebuild-index", "--rewrite-valid", str(part)])
    assert r.exit_code == 1, r.output
    r = CliRunner().invoke(cli, ["rebuild-index", "--rewrite-valid", "--execute", "--backup-dir", str(backups), str(part)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["dump", str(part)])
    assert r.exit_code == 0 and "Mismatches" not in r.stderr, r.output


# ---------------------------------------------------------------------------------------------- one dry-run rule
def test_dry_runs_exit_1_with_changes_and_0_with_nothing_to_do(tmp_path: Path) -> None:
    """compact, truncate-to-epoch and rebuild-index: a dry run exits 1 when --execute would change files, 0 when
    there is nothing to do (and an --execute that succeeded exits 0)."""
    from partition_gen import mark_clean_shutdown, random_partition

    pdir = tmp_path / "logs" / "t-0"
    pb = random_partition(str(pdir), 2)
    # a cleanly stopped broker's partition: without the marker the broker's start-up recovers it first, so
    # --execute would change files (the recovery) even at the log end
    mark_clean_shutdown(str(pdir))
    leo = pb.next_offset
    bk = str(tmp_path / "bk")

    def run(*args: str) -> int:
        r = CliRunner().invoke(cli, list(args))
        assert "Traceback" not in r.output
        return r.exit_code

    assert run("truncate-to-epoch", "--to-offset", str(leo), str(pdir)) == 0  # at the log end: nothing to cut
    assert run("truncate-to-epoch", "--to-offset", str(leo - 1), str(pdir)) == 1
    now = "1800000000000"
    assert run("compact", "--now-ms", now, str(pdir)) == 1
    # the first clean removes records, the second sets the delete horizons (as the broker's second pass does)
    for _ in range(2):
        assert run("compact", "--now-ms", now, "--execute", "--backup-dir", bk, str(pdir)) == 0
    assert run("compact", "--now-ms", now, str(pdir)) == 0  # already compact
    assert run("rebuild-index", str(pdir)) == 0
    for name in os.listdir(pdir):
        if name.endswith(".timeindex"):
            os.unlink(pdir / name)
            break
    assert run("rebuild-index", str(pdir)) == 1
