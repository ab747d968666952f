"""Helpers shared by the shipping tests (completion, binary, CLI UX): a fixture partition, a ``kafkalog`` on PATH
that runs this tree, and a pseudo-terminal driver for real interactive shells."""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from kafkalog_cli.format import codecs
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.storage.index import encode_offset_index, encode_time_index

ROOT = Path(__file__).resolve().parent.parent
ANSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>]")
BASE_TS = 1_700_000_000_000


def make_partition(parent: Path, name: str = "orders-0") -> Path:
    """A small partition directory: one segment with a batch per codec (none, gzip, snappy, lz4, zstd), its
    offset and time index. Every codec is exercised by ``dump --deep-iteration --print-data-log``."""
    part = parent / name
    part.mkdir(parents=True)
    log = bytearray()
    offset_entries: list[tuple[int, int]] = []
    time_entries: list[tuple[int, int]] = []
    offset = 0
    for i, codec in enumerate((codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD)):
        records = [
            RecordSpec(key=f"k{offset + j}".encode(), value=f"value {offset + j} ".encode() * 20,
                       timestamp=BASE_TS + offset + j, headers=[("h", b"v")] if j == 0 else [])
            for j in range(3)
        ]
        offset_entries.append((offset, len(log)))
        time_entries.append((BASE_TS + offset + 2, offset))
        log += encode_batch(records, base_offset=offset, codec=codec, producer_id=1000 + i, producer_epoch=0,
                            base_sequence=offset, partition_leader_epoch=3)
        offset += len(records)
    stem = "0" * 20
    (part / f"{stem}.log").write_bytes(bytes(log))
    (part / f"{stem}.index").write_bytes(encode_offset_index(0, offset_entries[1:]))
    (part / f"{stem}.timeindex").write_bytes(encode_time_index(0, time_entries[1:]))
    return part


def kafkalog_wrapper(bin_dir: Path) -> Path:
    """Put a ``kafkalog`` executable in ``bin_dir`` that runs this tree with this interpreter (shells call it by name
    at every TAB, and an installed console script might belong to another checkout)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    exe = bin_dir / "kafkalog"
    exe.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" -m kafkalog_cli "$@"\n')
    exe.chmod(0o755)
    return exe


def python_argv() -> list[str]:
    return [sys.executable, "-m", "kafkalog_cli"]


def have(program: str) -> bool:
    return shutil.which(program) is not None


def strip_ansi(data: bytes) -> str:
    return ANSI.sub(b"", data).replace(b"\r", b"").decode(errors="replace")


def run_in_pty(argv: list[str], env: dict[str, str], cwd: str | Path | None = None,
               timeout: float = 30.0) -> tuple[int, bytes]:
    """Run ``argv`` with stdin/stdout/stderr on a fresh pseudo-terminal; (exit code, raw bytes it wrote)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, start_new_session=True)
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        else:
            proc.kill()
        return proc.wait(timeout=5), bytes(out)
    finally:
        os.close(master)


class InteractiveShell:
    """A real interactive shell on a pseudo-terminal, driven by keystrokes (TAB included), so completion is tested
    the way an operator triggers it: readline/ZLE call the completion function and insert what it offers."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
                                     start_new_session=True)
        os.close(slave)
        self.output = bytearray()

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def expect(self, marker: str, timeout: float = 20.0) -> str:
        """Read until ``marker`` appears in the ANSI-stripped output; return that output (fails on timeout)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = strip_ansi(bytes(self.output))
            if marker in text:
                return text
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    self.output += os.read(self.master, 65536)
                except OSError:
                    break
        raise AssertionError(f"{marker!r} not seen within {timeout}s; shell printed:\n{strip_ansi(bytes(self.output))}")

    def run_marked(self, command: str, timeout: float = 20.0) -> None:
        """Run ``command`` and wait for it to finish (a marker the typed line itself cannot contain)."""
        self.send(f"{command}; echo DONE''MARK\n")
        self.expect("DONEMARK", timeout)

    def complete_line(self, partial: str, timeout: float = 20.0) -> str:
        """Type ``partial``, press TAB, then turn the edited line into ``echo LINE: ...`` and run it; return the line
        as completion left it (the shell's own echo of the buffer is ambiguous, this output line is not)."""
        self.output.clear()
        self.send(partial + "\t")
        time.sleep(0.3)  # keys typed after TAB wait in the pty until the completion (a kafkalog run) returns
        self.send("\x01echo LI''NE: \n")  # Ctrl-A: start of line (emacs keymap in bash and zsh -f)
        text = self.expect("LINE: kafkalog", timeout)
        tail = text[text.rindex("LINE: kafkalog"):]
        return tail.split("\n", 1)[0][len("LINE: "):].strip()

    def close(self) -> None:
        try:
            self.send("\x15exit\n")
            self.proc.wait(timeout=5)
        except Exception:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)
        finally:
            os.close(self.master)
