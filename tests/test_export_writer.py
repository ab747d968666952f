"""ops/export_writer.DirectWriter: export's output file (large chunks written by a thread, O_DIRECT where the file
system takes it). The bytes must be exactly what was written, whatever the chunking, the tail and the path to disk."""

from __future__ import annotations

import os
import random

import pytest

from kafkalog_cli.ops import export_writer
from kafkalog_cli.ops.export_writer import DirectWriter


@pytest.mark.parametrize("direct", [True, False])
@pytest.mark.parametrize("sizes", [[0], [1], [4096], [export_writer.CHUNK], [export_writer.CHUNK + 1],
                                   [3, export_writer.CHUNK - 3, 4097, 1 << 20], "random"])
def test_bytes_are_exactly_what_was_written(tmp_path, monkeypatch, direct, sizes):
    if not direct:
        monkeypatch.setenv("KAFKALOG_NO_DIRECT_IO", "1")
    rng = random.Random(7)
    if sizes == "random":
        sizes = [rng.choice([1, 17, 4095, 4096, 65537, 1 << 20, 3 << 20]) for _ in range(20)]
    chunks = [rng.randbytes(n) for n in sizes]
    path = tmp_path / "out.ndjson"
    w = DirectWriter(str(path))
    for c in chunks:
        assert w.write(memoryview(c)) == len(c)
    assert w.tell() == sum(sizes)
    w.close()
    assert path.read_bytes() == b"".join(chunks)
    if not direct:
        assert not w.direct


def test_direct_io_is_used_where_the_file_system_takes_it(tmp_path):
    """The output bypasses the page cache (bench/HISTORY.md "Issue 31: export, by size"): on a file system with
    O_DIRECT the writer keeps it on for the aligned chunks (the tail turns it off)."""
    probe = tmp_path / "probe"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_DIRECT)
        os.close(fd)
    except OSError:
        pytest.skip("this file system refuses O_DIRECT")
    w = DirectWriter(str(tmp_path / "o"))
    assert w.direct
    w.write(b"x" * export_writer.CHUNK * 2)
    w.flush()
    w.close()
    assert (tmp_path / "o").stat().st_size == export_writer.CHUNK * 2


def test_never_overwrites(tmp_path):
    p = tmp_path / "exists"
    p.write_bytes(b"old")
    with pytest.raises(FileExistsError):
        DirectWriter(str(p))
    assert p.read_bytes() == b"old"


def test_a_write_error_reaches_the_caller(tmp_path, monkeypatch):
    w = DirectWriter(str(tmp_path / "o"))
    real = os.write

    def full(fd, data):
        if fd == w._fd:
            raise OSError(28, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(os, "write", full)
    w.write(b"x" * export_writer.CHUNK)  # handed to the thread
    with pytest.raises(OSError, match="No space"):
        w.close()


def test_abort_writes_nothing_more(tmp_path):
    w = DirectWriter(str(tmp_path / "o"))
    w.write(b"y" * 100)
    w.abort()
    assert w.closed
    assert (tmp_path / "o").stat().st_size == 0
