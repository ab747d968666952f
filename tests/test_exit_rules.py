"""One set of exit-code rules for every command (issue 19): a real Ctrl-C exits 130, a closed pipe (``| head``)
exits 0 without a traceback, and dry runs exit 1 exactly when they would change something.

The signal and pipe tests run ``kafkalog`` as a real subprocess: the behaviour under test is the interpreter's and
click's handling of SIGINT and EPIPE, which CliRunner cannot reproduce.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from shipping_helpers import ROOT, python_argv

from kafkalog_cli.format.encoder import RecordSpec, encode_batch

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
